//! `mix`: a bus with gain and pan.

use std::f64::consts::{FRAC_PI_4, SQRT_2};

use crate::CHANNELS;
use downbeat_graph::{
    curve_accepts, float_param_accepts, math, AudioMut, AudioRef, Node, NodeConfig, NodeType,
    ParamCurve, ParamError, ParamKind, ParamSpec, Params, ProcessContext, Unit,
};

/// The level and pan of a [`Mix`]; the defaults are the `mix` node type's.
///
/// ```
/// use downbeat_nodes::MixSettings;
///
/// let quieter = MixSettings { gain_db: -6.0, ..MixSettings::default() };
/// assert_eq!(quieter.pan, 0.0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MixSettings {
    /// Gain in dB (0).
    pub gain_db: f64,
    /// Pan, `-1` (left) to `1` (right), used only with two channels (0, the centre).
    pub pan: f64,
}

/// A mix bus: the schedule sums every edge into its input; the bus applies a gain in dB and,
/// when it has exactly two channels, an equal-power pan.
///
/// Pan law (stereo only): with `θ = (pan + 1) π/4`, left is multiplied by `√2 cos θ` and right
/// by `√2 sin θ`. The sum of the squared gains is constant (equal power), the center
/// (`pan = 0`) is exactly unity on both sides, and a hard pan (`±1`) gives +3 dB on one side
/// and exact silence on the other. With any other channel count `pan` is ignored.
///
/// Gains are computed in `f64` and applied as one `f32` factor per channel. A change made
/// with [`set_param`](Node::set_param) applies at once; a moving `gain_db` or `pan` (a
/// schedule's smoothing or ramp) is followed sample by sample.
///
/// ```
/// use downbeat_nodes::{Mix, MixSettings};
/// use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};
///
/// let mut bus = Mix::new(2, &MixSettings { pan: 1.0, ..MixSettings::default() }); // hard right
/// let ctx = ProcessContext::new(48000, 2, 0);
/// let input = [0.5, 0.5, 0.5, 0.5]; // left, then right
/// let mut out = [0.0f32; 4];
/// bus.process(&ctx, AudioRef::new(&input, 2, 2, 2), AudioMut::new(&mut out, 2, 2, 2));
/// assert_eq!(&out[..2], &[0.0, 0.0]);
/// assert_eq!(out[2], (0.5 * std::f64::consts::SQRT_2) as f32);
/// ```
#[derive(Debug)]
pub struct Mix {
    channels: usize,
    gain_db: f64,
    pan: f64,
    /// Factor per channel applied at the end of the last block.
    /// Factor per channel, gain and pan combined.
    factors: Vec<f32>,
    /// Curves over the next block of the parameters that move.
    gain_curve: Option<ParamCurve>,
    pan_curve: Option<ParamCurve>,
}

impl Mix {
    /// A bus of `channels` channels at the level and pan of `settings`.
    pub fn new(channels: usize, settings: &MixSettings) -> Self {
        let MixSettings { gain_db, pan } = *settings;
        let mut mix = Self {
            channels,
            gain_db,
            pan: pan.clamp(-1.0, 1.0),
            factors: vec![0.0; channels],
            gain_curve: None,
            pan_curve: None,
        };
        mix.update_factors();
        mix
    }

    /// The factor applied to each channel (gain and pan combined), once any ramp is over.
    pub fn factors(&self) -> &[f32] {
        &self.factors
    }

    fn update_factors(&mut self) {
        let (gain_db, pan) = (self.gain_db, self.pan);
        for (c, f) in self.factors.iter_mut().enumerate() {
            *f = factor(self.channels, c, gain_db, pan);
        }
    }
}

/// The factor of channel `c` of `channels` for `gain_db` and `pan`.
fn factor(channels: usize, c: usize, gain_db: f64, pan: f64) -> f32 {
    let gain = math::db_to_gain(gain_db);
    if channels == 2 {
        let (left, right) = pan_law(pan);
        (gain * if c == 0 { left } else { right }) as f32
    } else {
        gain as f32
    }
}

/// Equal-power pan gains `(left, right)`, exactly `(1, 1)` at the center and exactly 0 on
/// the silent side of a hard pan.
fn pan_law(pan: f64) -> (f64, f64) {
    if pan == 0.0 {
        return (1.0, 1.0);
    }
    let theta = (pan + 1.0) * FRAC_PI_4;
    let snap = |g: f64| if g.abs() < 1e-12 { 0.0 } else { g };
    let (sin, cos) = math::sin_cos(theta);
    (snap(SQRT_2 * cos), snap(SQRT_2 * sin))
}

const P_GAIN_DB: usize = 1;
const P_PAN: usize = 2;

static PARAMS: &[ParamSpec] = &[
    CHANNELS,
    ParamSpec {
        name: "gain_db",
        doc: "gain in dB applied to the summed inputs",
        kind: ParamKind::Float {
            min: -120.0,
            max: 24.0,
            default: 0.0,
        },
        unit: Unit::Decibels,
        live: true,
    },
    ParamSpec {
        name: "pan",
        doc: "equal-power pan for 2 channels: -1 left, 0 center (unity), 1 right; \
              ignored otherwise",
        kind: ParamKind::Float {
            min: -1.0,
            max: 1.0,
            default: 0.0,
        },
        unit: Unit::None,
        live: true,
    },
];

pub(crate) const TYPE: NodeType = NodeType {
    name: "mix",
    doc: "mix bus: sums its inputs, applies gain in dB and (stereo) equal-power pan",
    params: PARAMS,
    build,
};

fn build(p: &Params, _cfg: &NodeConfig) -> Result<Box<dyn Node>, ParamError> {
    let settings = MixSettings {
        gain_db: p.float("gain_db"),
        pan: p.float("pan"),
    };
    Ok(Box::new(Mix::new(p.int("channels") as usize, &settings)))
}

impl Node for Mix {
    fn type_name(&self) -> Option<&'static str> {
        Some(TYPE.name)
    }

    fn input_channels(&self) -> usize {
        self.channels
    }

    fn output_channels(&self) -> usize {
        self.channels
    }

    fn process(&mut self, _ctx: &ProcessContext, input: AudioRef<'_>, mut output: AudioMut<'_>) {
        if self.gain_curve.is_none() && self.pan_curve.is_none() {
            for c in 0..self.channels {
                let g = self.factors[c];
                let out = output.channel_mut(c).iter_mut().zip(input.channel(c));
                out.for_each(|(o, i)| *o = g * i);
            }
            return;
        }
        // A moving gain or pan costs a `powf` (and a sine and cosine) per frame: worked out
        // once per frame for every channel, each channel's factor as `factor` makes it.
        for k in 0..output.frames() {
            let gain_db = self.gain_curve.map_or(self.gain_db, |v| f64::from(v.at(k)));
            let pan = self.pan_curve.map_or(self.pan, |v| f64::from(v.at(k)));
            let gain = math::db_to_gain(gain_db);
            let sides = (self.channels == 2).then(|| pan_law(pan));
            for c in 0..self.channels {
                let f = match sides {
                    Some((left, right)) => (gain * if c == 0 { left } else { right }) as f32,
                    None => gain as f32,
                };
                output.channel_mut(c)[k] = f * input.channel(c)[k];
            }
        }
    }

    fn set_param(&mut self, index: usize, value: f32) -> bool {
        if !float_param_accepts(PARAMS, index, value) {
            return false;
        }
        match index {
            P_GAIN_DB => {
                self.gain_db = f64::from(value);
                self.gain_curve = None;
            }
            P_PAN => {
                self.pan = f64::from(value);
                self.pan_curve = None;
            }
            _ => return false,
        }
        self.update_factors();
        true
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn get_param(&self, index: usize) -> Option<f32> {
        match index {
            P_GAIN_DB => Some(self.gain_db as f32),
            P_PAN => Some(self.pan as f32),
            _ => None,
        }
    }

    fn follow_param(&mut self, index: usize, curve: ParamCurve) -> bool {
        if !curve_accepts(PARAMS, index, &curve) {
            return false;
        }
        match index {
            P_GAIN_DB => self.gain_curve = Some(curve),
            P_PAN => self.pan_curve = Some(curve),
            _ => return false,
        }
        true
    }
}
