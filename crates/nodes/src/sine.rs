//! `sine`: a sine oscillator.

use crate::{
    dsp::{hz_to_phase_inc, phase_to_turns, sin_turn, turns_to_phase, SineFill},
    invalid, CHANNELS,
};
use downbeat_graph::{
    curve_accepts, denormal::flush, float_param_accepts, AudioMut, AudioRef, Node, NodeConfig,
    NodeType, ParamCurve, ParamError, ParamKind, ParamSpec, Params, ProcessContext, Unit,
};

/// What a [`Sine`] plays; the defaults are the `sine` node type's.
///
/// ```
/// use downbeat_nodes::SineSettings;
///
/// let a3 = SineSettings { freq: 220.0, ..SineSettings::default() };
/// assert_eq!((a3.amp, a3.phase), (0.5, 0.0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SineSettings {
    /// Frequency in Hz (440).
    pub freq: f64,
    /// Linear amplitude (0.5).
    pub amp: f32,
    /// Starting phase in cycles, `0..1`; 0.25 starts at the peak (0).
    pub phase: f64,
}

impl Default for SineSettings {
    fn default() -> Self {
        Self {
            freq: 440.0,
            amp: 0.5,
            phase: 0.0,
        }
    }
}

/// A sine oscillator: `amp * sin(2π (freq t + phase))`, the same signal on every channel.
///
/// The phase is a 32-bit fraction of a cycle advanced by an integer increment, so the
/// frequency (exact to `sample_rate / 2^32`) does not drift over hours of rendering, and the
/// sine is a polynomial evaluated a whole block at a time ([`crate::dsp::sine`]), every spur
/// more than 120 dB under the tone. Changing `freq` while running keeps the phase
/// continuous; a moving `freq` or `amp` is followed sample by sample.
///
/// ```
/// use downbeat_nodes::{Sine, SineSettings};
/// use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};
///
/// // A quarter-cycle phase offset starts the wave at its peak.
/// let settings = SineSettings { freq: 1000.0, amp: 0.5, phase: 0.25 };
/// let mut sine = Sine::new(1, 48000, &settings);
/// let ctx = ProcessContext::new(48000, 4, 0);
/// let mut out = [0.0f32; 4];
/// sine.process(&ctx, AudioRef::new(&[], 0, 4, 4), AudioMut::new(&mut out, 1, 4, 4));
/// assert_eq!(out[0], 0.5);
/// assert!(out[1] < 0.5 && out[1] > 0.49);
/// ```
#[derive(Debug)]
pub struct Sine {
    channels: usize,
    sample_rate: f64,
    /// Phase and increment, in 2^-32 cycles.
    osc: SineFill,
    amp: f32,
    /// Curves over the next block of the parameters that move.
    freq_curve: Option<ParamCurve>,
    amp_curve: Option<ParamCurve>,
}

impl Sine {
    /// A sine on `channels` channels at `sample_rate`, as `settings` say. Frequencies at or
    /// above half the sample rate alias; the `sine` node type refuses them.
    pub fn new(channels: usize, sample_rate: u32, settings: &SineSettings) -> Self {
        let SineSettings { freq, amp, phase } = *settings;
        let sample_rate = f64::from(sample_rate);
        Self {
            channels,
            sample_rate,
            osc: SineFill {
                phase: turns_to_phase(phase),
                inc: hz_to_phase_inc(freq, sample_rate),
            },
            amp,
            freq_curve: None,
            amp_curve: None,
        }
    }

    /// The current frequency in Hz (folded into `0..sample_rate`).
    pub fn freq(&self) -> f64 {
        phase_to_turns(self.osc.inc) * self.sample_rate
    }
}

const P_FREQ: usize = 1;
const P_AMP: usize = 2;

static PARAMS: &[ParamSpec] = &[
    CHANNELS,
    ParamSpec {
        name: "freq",
        doc: "frequency in Hz; must be below half the sample rate",
        kind: ParamKind::Float {
            min: 0.0,
            max: 96_000.0,
            default: 440.0,
        },
        unit: Unit::Hz,
        live: true,
    },
    ParamSpec {
        name: "amp",
        doc: "linear peak amplitude",
        kind: ParamKind::Float {
            min: 0.0,
            max: 16.0,
            default: 0.5,
        },
        unit: Unit::None,
        live: true,
    },
    ParamSpec {
        name: "phase",
        doc: "starting phase in cycles (0.25 starts at the positive peak)",
        kind: ParamKind::Float {
            min: 0.0,
            max: 1.0,
            default: 0.0,
        },
        unit: Unit::Cycles,
        live: false,
    },
];

pub(crate) const TYPE: NodeType = NodeType {
    name: "sine",
    doc: "sine oscillator, the same signal on every channel",
    params: PARAMS,
    build,
};

fn build(p: &Params, cfg: &NodeConfig) -> Result<Box<dyn Node>, ParamError> {
    let freq = p.float("freq");
    let nyquist = f64::from(cfg.sample_rate) / 2.0;
    if freq >= nyquist {
        return Err(invalid(
            "freq",
            format!("{freq} Hz is not below half the sample rate ({nyquist} Hz)"),
        ));
    }
    let settings = SineSettings {
        freq,
        amp: p.float("amp") as f32,
        phase: p.float("phase"),
    };
    Ok(Box::new(Sine::new(
        p.int("channels") as usize,
        cfg.sample_rate,
        &settings,
    )))
}

impl Node for Sine {
    fn type_name(&self) -> Option<&'static str> {
        Some(TYPE.name)
    }

    fn input_channels(&self) -> usize {
        0
    }

    fn output_channels(&self) -> usize {
        self.channels
    }

    fn process(&mut self, _ctx: &ProcessContext, _input: AudioRef<'_>, mut output: AudioMut<'_>) {
        let mut channels = output.channels_mut();
        let Some(first) = channels.next() else {
            return;
        };
        if self.freq_curve.is_none() && self.amp_curve.is_none() {
            self.osc.fill(first, self.amp);
        } else {
            let mut phase = self.osc.phase;
            for (k, o) in first.iter_mut().enumerate() {
                let amp = self.amp_curve.map_or(self.amp, |c| c.at(k));
                let inc = self.freq_curve.map_or(self.osc.inc, |c| {
                    hz_to_phase_inc(f64::from(c.at(k)), self.sample_rate)
                });
                *o = flush(amp * sin_turn(phase));
                phase = phase.wrapping_add(inc);
            }
            self.osc.phase = phase;
        }
        for ch in channels {
            ch.copy_from_slice(first);
        }
    }

    fn set_param(&mut self, index: usize, value: f32) -> bool {
        if !float_param_accepts(PARAMS, index, value) {
            return false;
        }
        match index {
            P_FREQ if f64::from(value) < self.sample_rate / 2.0 => {
                self.osc.inc = hz_to_phase_inc(f64::from(value), self.sample_rate);
                self.freq_curve = None;
                true
            }
            P_AMP => {
                self.amp = value;
                self.amp_curve = None;
                true
            }
            _ => false,
        }
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn get_param(&self, index: usize) -> Option<f32> {
        match index {
            P_FREQ => Some(self.freq() as f32),
            P_AMP => Some(self.amp),
            _ => None,
        }
    }

    fn follow_param(&mut self, index: usize, curve: ParamCurve) -> bool {
        if !curve_accepts(PARAMS, index, &curve) {
            return false;
        }
        match index {
            P_FREQ if f64::from(curve.bounds().1) < self.sample_rate / 2.0 => {
                self.freq_curve = Some(curve);
            }
            P_AMP => self.amp_curve = Some(curve),
            _ => return false,
        }
        true
    }
}
