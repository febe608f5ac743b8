//! `biquad`: RBJ Audio EQ Cookbook low-pass, high-pass and band-pass filters.

use std::f64::consts::TAU;

use crate::{check_channels, invalid, CHANNELS};
use downbeat_graph::{
    denormal::flush as flush_output, float_param_accepts, math, AudioMut, AudioRef, Node,
    NodeConfig, NodeType, ParamError, ParamKind, ParamSpec, Params, ProcessContext, Unit,
};

/// The response of a [`Biquad`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterMode {
    /// Second-order low-pass; gain at `freq` is `q` (−3 dB for `q = 1/√2`).
    Lowpass,
    /// Second-order high-pass; gain at `freq` is `q` (−3 dB for `q = 1/√2`).
    Highpass,
    /// Band-pass with a constant 0 dB peak gain at `freq`; `q` sets the bandwidth.
    Bandpass,
}

impl FilterMode {
    /// The word used for this mode in project files.
    pub fn name(self) -> &'static str {
        match self {
            FilterMode::Lowpass => "lowpass",
            FilterMode::Highpass => "highpass",
            FilterMode::Bandpass => "bandpass",
        }
    }

    /// The mode named `name` in project files.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "lowpass" => Some(FilterMode::Lowpass),
            "highpass" => Some(FilterMode::Highpass),
            "bandpass" => Some(FilterMode::Bandpass),
            _ => None,
        }
    }
}

/// Normalized biquad coefficients (`a0 = 1`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Coeffs {
    b0: f64,
    b1: f64,
    b2: f64,
    a1: f64,
    a2: f64,
}

impl Coeffs {
    /// Filters one sample (transposed direct form II, in `f64`).
    #[inline(always)]
    fn tick(&self, i: f32, s: &mut [f64; 2]) -> f32 {
        let x = f64::from(i);
        let y = self.b0 * x + s[0];
        s[0] = self.b1 * x - self.a1 * y + s[1];
        s[1] = self.b2 * x - self.a2 * y;
        // A tail below f32's normal range would be a subnormal number or 0 depending on the
        // processor's flush mode: 0 in both.
        flush_output(y as f32)
    }

    /// The RBJ cookbook design. `freq` must be in `(0, sample_rate / 2)` and `q > 0`.
    fn rbj(mode: FilterMode, sample_rate: f64, freq: f64, q: f64) -> Self {
        let w0 = TAU * freq / sample_rate;
        let (sin, cos) = math::sin_cos(w0);
        let alpha = sin / (2.0 * q);
        let (b0, b1, b2) = match mode {
            FilterMode::Lowpass => ((1.0 - cos) / 2.0, 1.0 - cos, (1.0 - cos) / 2.0),
            FilterMode::Highpass => ((1.0 + cos) / 2.0, -(1.0 + cos), (1.0 + cos) / 2.0),
            FilterMode::Bandpass => (alpha, 0.0, -alpha),
        };
        let a0 = 1.0 + alpha;
        Self {
            b0: b0 / a0,
            b1: b1 / a0,
            b2: b2 / a0,
            a1: -2.0 * cos / a0,
            a2: (1.0 - alpha) / a0,
        }
    }
}

/// Below this magnitude a filter state is flushed to exactly zero, so a silent input decays
/// to exact silence instead of lingering in (slow) subnormal numbers.
const FLUSH: f64 = 1e-20;

/// The response, corner frequency and quality factor of a [`Biquad`]; the defaults are the
/// `biquad` node type's (a Butterworth low-pass at 1 kHz).
///
/// ```
/// use downbeat_nodes::{BiquadSettings, FilterMode};
///
/// let hp = BiquadSettings { mode: FilterMode::Highpass, freq: 80.0, ..BiquadSettings::default() };
/// assert_eq!(hp.q, std::f64::consts::FRAC_1_SQRT_2);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BiquadSettings {
    /// The response (low-pass).
    pub mode: FilterMode,
    /// Corner (or center) frequency in Hz, below half the sample rate (1000).
    pub freq: f64,
    /// Quality factor, above 0 (`1/√2`, Butterworth).
    pub q: f64,
}

impl Default for BiquadSettings {
    fn default() -> Self {
        Self {
            mode: FilterMode::Lowpass,
            freq: 1000.0,
            q: std::f64::consts::FRAC_1_SQRT_2,
        }
    }
}

/// A state with its tiny values set to exactly zero.
fn flush(s: [f64; 2]) -> [f64; 2] {
    s.map(|v| if v.abs() < FLUSH { 0.0 } else { v })
}

/// A second-order IIR filter from Robert Bristow-Johnson's Audio EQ Cookbook, in transposed
/// direct form II with `f64` coefficients and state, one state per channel.
///
/// `freq` and `q` can be changed while running; the coefficients are recomputed at once and
/// the state is kept.
///
/// ```
/// use downbeat_nodes::{Biquad, BiquadSettings, FilterMode};
/// use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};
///
/// let settings = BiquadSettings { mode: FilterMode::Lowpass, freq: 1000.0, q: 0.7071 };
/// let mut lp = Biquad::new(1, 48000, &settings).unwrap();
/// // A constant input passes a low-pass unchanged once it has settled.
/// let input = [1.0f32; 4800];
/// let mut out = [0.0f32; 4800];
/// let ctx = ProcessContext::new(48000, 4800, 0);
/// lp.process(&ctx, AudioRef::new(&input, 1, 4800, 4800), AudioMut::new(&mut out, 1, 4800, 4800));
/// assert!((out[4799] - 1.0).abs() < 1e-4);
///
/// // Frequencies at or above Nyquist are refused.
/// let too_high = BiquadSettings { freq: 24000.0, ..settings };
/// assert!(Biquad::new(1, 48000, &too_high).is_err());
/// ```
#[derive(Debug)]
pub struct Biquad {
    mode: FilterMode,
    sample_rate: f64,
    freq: f64,
    q: f64,
    coeffs: Coeffs,
    /// `[s1, s2]` per channel.
    state: Vec<[f64; 2]>,
}

impl Biquad {
    /// A filter on `channels` channels at `sample_rate`, as `settings` say.
    ///
    /// # Errors
    /// [`ParamError::Invalid`] naming `freq` when it is not in `(0, sample_rate / 2)`, `q`
    /// when it is not positive, `channels` when it is not in `1..=32`.
    pub fn new(
        channels: usize,
        sample_rate: u32,
        settings: &BiquadSettings,
    ) -> Result<Self, ParamError> {
        let BiquadSettings { mode, freq, q } = *settings;
        check_channels(channels)?;
        let sample_rate = f64::from(sample_rate);
        check_freq(freq, sample_rate)?;
        if !(q.is_finite() && q > 0.0) {
            return Err(invalid("q", format!("got {q}, expected a positive number")));
        }
        Ok(Self {
            mode,
            sample_rate,
            freq,
            q,
            coeffs: Coeffs::rbj(mode, sample_rate, freq, q),
            state: vec![[0.0; 2]; channels],
        })
    }

    /// The filter's response.
    pub fn mode(&self) -> FilterMode {
        self.mode
    }

    /// The current corner (or center) frequency in Hz.
    pub fn freq(&self) -> f64 {
        self.freq
    }

    /// The current quality factor.
    pub fn q(&self) -> f64 {
        self.q
    }

    /// Clears the filter state of every channel.
    pub fn reset(&mut self) {
        self.state.fill([0.0; 2]);
    }
}

/// Whether `freq` is a usable corner frequency. Apart from [`check_freq`] so that
/// `set_param` can refuse on the audio thread without building the error's message.
fn freq_ok(freq: f64, sample_rate: f64) -> bool {
    freq.is_finite() && freq > 0.0 && freq < sample_rate / 2.0
}

fn check_freq(freq: f64, sample_rate: f64) -> Result<(), ParamError> {
    let nyquist = sample_rate / 2.0;
    if freq_ok(freq, sample_rate) {
        Ok(())
    } else {
        Err(invalid(
            "freq",
            format!(
                "{freq} Hz is not between 0 and half the sample rate ({nyquist} Hz), exclusive"
            ),
        ))
    }
}

const P_FREQ: usize = 2;
const P_Q: usize = 3;

static PARAMS: &[ParamSpec] = &[
    CHANNELS,
    ParamSpec {
        name: "mode",
        doc: "filter response; bandpass has a constant 0 dB peak gain",
        kind: ParamKind::Choice {
            options: &["lowpass", "highpass", "bandpass"],
            default: "lowpass",
        },
        unit: Unit::None,
        live: false,
    },
    ParamSpec {
        name: "freq",
        doc: "corner (lowpass/highpass) or center (bandpass) frequency in Hz; \
              must be below half the sample rate",
        kind: ParamKind::Float {
            min: 1.0,
            max: 96_000.0,
            default: 1000.0,
        },
        unit: Unit::Hz,
        live: true,
    },
    ParamSpec {
        name: "q",
        doc: "quality factor: 0.7071 is maximally flat (Butterworth) for lowpass/highpass; \
              higher is narrower for bandpass",
        kind: ParamKind::Float {
            min: 0.05,
            max: 50.0,
            default: std::f64::consts::FRAC_1_SQRT_2,
        },
        unit: Unit::None,
        live: true,
    },
];

pub(crate) const TYPE: NodeType = NodeType {
    name: "biquad",
    doc: "RBJ cookbook biquad filter: lowpass, highpass or constant-0-dB-peak bandpass",
    params: PARAMS,
    build,
};

fn build(p: &Params, cfg: &NodeConfig) -> Result<Box<dyn Node>, ParamError> {
    let mode = FilterMode::from_name(p.choice("mode"))
        .ok_or_else(|| invalid("mode", "expected lowpass, highpass or bandpass"))?;
    let settings = BiquadSettings {
        mode,
        freq: p.float("freq"),
        q: p.float("q"),
    };
    Ok(Box::new(Biquad::new(
        p.int("channels") as usize,
        cfg.sample_rate,
        &settings,
    )?))
}

impl Node for Biquad {
    fn type_name(&self) -> Option<&'static str> {
        Some(TYPE.name)
    }

    fn input_channels(&self) -> usize {
        self.state.len()
    }

    fn output_channels(&self) -> usize {
        self.state.len()
    }

    fn process(&mut self, _ctx: &ProcessContext, input: AudioRef<'_>, mut output: AudioMut<'_>) {
        let coeffs = self.coeffs;
        // Each channel's recursion is a chain of dependent operations; two channels stepped
        // side by side fill each other's waits (and the same operations per channel keep
        // the bits of one channel after the other).
        let mut outs = output.channels_mut();
        let mut states = self.state.chunks_exact_mut(2);
        let mut c = 0;
        for pair in &mut states {
            let (Some(o0), Some(o1)) = (outs.next(), outs.next()) else {
                return;
            };
            let (x0, x1) = (input.channel(c), input.channel(c + 1));
            let (mut s0, mut s1) = (pair[0], pair[1]);
            for (k, (a, b)) in o0.iter_mut().zip(o1.iter_mut()).enumerate() {
                *a = coeffs.tick(x0[k], &mut s0);
                *b = coeffs.tick(x1[k], &mut s1);
            }
            pair[0] = flush(s0);
            pair[1] = flush(s1);
            c += 2;
        }
        if let ([s], Some(o)) = (states.into_remainder(), outs.next()) {
            let mut st = *s;
            for (o, &i) in o.iter_mut().zip(input.channel(c)) {
                *o = coeffs.tick(i, &mut st);
            }
            *s = flush(st);
        }
    }

    fn set_param(&mut self, index: usize, value: f32) -> bool {
        if !float_param_accepts(PARAMS, index, value) {
            return false;
        }
        let value = f64::from(value);
        match index {
            P_FREQ if freq_ok(value, self.sample_rate) => self.freq = value,
            P_Q => self.q = value,
            _ => return false,
        }
        self.coeffs = Coeffs::rbj(self.mode, self.sample_rate, self.freq, self.q);
        true
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    // Coefficients cost a cosine, a sine and a division: a moving `freq` or `q` is
    // updated every `CONTROL_FRAMES` by the schedule rather than followed per sample.
    fn get_param(&self, index: usize) -> Option<f32> {
        match index {
            P_FREQ => Some(self.freq as f32),
            P_Q => Some(self.q as f32),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_names_round_trip() {
        for mode in [
            FilterMode::Lowpass,
            FilterMode::Highpass,
            FilterMode::Bandpass,
        ] {
            assert_eq!(FilterMode::from_name(mode.name()), Some(mode));
        }
        assert_eq!(FilterMode::from_name("notch"), None);
    }

    #[test]
    fn set_param_refuses_nyquist_and_keeps_coefficients() {
        let settings = BiquadSettings {
            mode: FilterMode::Highpass,
            freq: 500.0,
            q: 0.7,
        };
        let mut f = Biquad::new(1, 48000, &settings).unwrap();
        let before = f.coeffs;
        assert!(!f.set_param(P_FREQ, 30000.0));
        assert_eq!(f.coeffs, before);
        assert!(f.set_param(P_FREQ, 2000.0));
        assert_ne!(f.coeffs, before);
        assert_eq!(f.freq(), 2000.0);
    }
}
