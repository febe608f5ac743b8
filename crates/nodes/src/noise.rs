//! `noise`: uniform white noise.

use crate::{Pcg32, CHANNELS, SEED};
use downbeat_graph::{
    curve_accepts, denormal::flush, float_param_accepts, AudioMut, AudioRef, Node, NodeConfig,
    NodeType, ParamCurve, ParamError, ParamKind, ParamSpec, Params, ProcessContext, Unit,
};

/// The level and seed of a [`Noise`]; the defaults are the `noise` node type's.
///
/// ```
/// use downbeat_nodes::NoiseSettings;
///
/// let quiet = NoiseSettings { amp: 0.05, ..NoiseSettings::default() };
/// assert_eq!(quiet.seed, 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NoiseSettings {
    /// Peak amplitude (0.25).
    pub amp: f32,
    /// Seed of the random numbers: the same seed gives bit-identical output (1).
    pub seed: u64,
}

impl Default for NoiseSettings {
    fn default() -> Self {
        Self { amp: 0.25, seed: 1 }
    }
}

/// Uniform white noise in `(-amp, amp)`: mean 0, RMS `amp / sqrt(3)`.
///
/// Each channel has its own independent PCG32 stream, so channels are uncorrelated. The
/// output depends only on `seed` and the number of samples produced so far: the same seed
/// gives bit-identical output whatever the block sizes. A moving `amp` is followed sample
/// by sample.
///
/// ```
/// use downbeat_nodes::{Noise, NoiseSettings};
/// use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};
///
/// let render = |seed| {
///     let mut noise = Noise::new(2, &NoiseSettings { amp: 0.25, seed });
///     let ctx = ProcessContext::new(48000, 64, 0);
///     let mut out = vec![0.0f32; 128];
///     noise.process(&ctx, AudioRef::new(&[], 0, 64, 64), AudioMut::new(&mut out, 2, 64, 64));
///     out
/// };
/// assert_eq!(render(7), render(7));
/// assert_ne!(render(7), render(8));
/// assert!(render(7).iter().all(|s| s.abs() < 0.25));
/// ```
#[derive(Debug)]
pub struct Noise {
    rngs: Vec<Pcg32>,
    amp: f32,
    curve: Option<ParamCurve>,
}

impl Noise {
    /// White noise on `channels` channels, as `settings` say.
    pub fn new(channels: usize, settings: &NoiseSettings) -> Self {
        let NoiseSettings { amp, seed } = *settings;
        Self {
            rngs: (0..channels as u64).map(|c| Pcg32::new(seed, c)).collect(),
            amp,
            curve: None,
        }
    }
}

/// Samples generated at a time: the random bits of a chunk wait on the stack.
const CHUNK: usize = 64;

/// The generator's next `out.len()` outputs, exactly as `Pcg32::next_u32` would give them
/// one after another, computed as four interleaved streams: each lane jumps four steps of
/// the linear congruential recurrence at once (`state · M⁴ + inc · (1 + M + M² + M³)`,
/// all wrapping), so four independent multiply chains keep the processor busy where one
/// would wait on each multiplication's latency.
fn fill_bits(rng: &mut Pcg32, out: &mut [u32]) {
    let m = Pcg32::MULT;
    let m2 = m.wrapping_mul(m);
    let m3 = m2.wrapping_mul(m);
    let m4 = m3.wrapping_mul(m);
    let inc = rng.inc;
    let inc4 = inc.wrapping_mul(1u64.wrapping_add(m).wrapping_add(m2).wrapping_add(m3));
    let mut lanes = [rng.state; 4];
    for j in 1..4 {
        lanes[j] = lanes[j - 1].wrapping_mul(m).wrapping_add(inc);
    }
    let mut groups = out.chunks_exact_mut(4);
    for group in &mut groups {
        for (o, s) in group.iter_mut().zip(lanes.iter_mut()) {
            *o = Pcg32::output(*s);
            *s = s.wrapping_mul(m4).wrapping_add(inc4);
        }
    }
    rng.state = lanes[0];
    for o in groups.into_remainder() {
        *o = rng.next_u32();
    }
}

/// The sample `Pcg32::bipolar` makes of the random bits `bits`, in `f32`: the top 24 bits
/// `k` give `(2k + 1 - 2^24) / 2^24`, an odd integer over a power of two, exact in `f32`
/// (so `amp` times it rounds once, as the `f64` product converted to `f32` did).
#[inline(always)]
fn bipolar(bits: u32) -> f32 {
    let k = (bits >> 8) as i32;
    (2 * k + 1 - (1 << 24)) as f32 * (1.0 / 16_777_216.0)
}

const P_AMP: usize = 1;

static PARAMS: &[ParamSpec] = &[
    CHANNELS,
    ParamSpec {
        name: "amp",
        doc: "linear peak amplitude; the RMS level is amp / sqrt(3)",
        kind: ParamKind::Float {
            min: 0.0,
            max: 16.0,
            default: 0.25,
        },
        unit: Unit::None,
        live: true,
    },
    SEED,
];

pub(crate) const TYPE: NodeType = NodeType {
    name: "noise",
    doc: "uniform white noise, an independent deterministic stream per channel",
    params: PARAMS,
    build,
};

fn build(p: &Params, _cfg: &NodeConfig) -> Result<Box<dyn Node>, ParamError> {
    let settings = NoiseSettings {
        amp: p.float("amp") as f32,
        seed: p.int("seed") as u64,
    };
    Ok(Box::new(Noise::new(p.int("channels") as usize, &settings)))
}

impl Node for Noise {
    fn type_name(&self) -> Option<&'static str> {
        Some(TYPE.name)
    }

    fn input_channels(&self) -> usize {
        0
    }

    fn output_channels(&self) -> usize {
        self.rngs.len()
    }

    fn process(&mut self, _ctx: &ProcessContext, _input: AudioRef<'_>, mut output: AudioMut<'_>) {
        let mut bits = [0u32; CHUNK];
        for (rng, ch) in self.rngs.iter_mut().zip(output.channels_mut()) {
            for (c, out) in ch.chunks_mut(CHUNK).enumerate() {
                let bits = &mut bits[..out.len()];
                fill_bits(rng, bits);
                match &self.curve {
                    None => {
                        for (o, &b) in out.iter_mut().zip(bits.iter()) {
                            *o = flush(self.amp * bipolar(b));
                        }
                    }
                    Some(curve) => {
                        let first = c * CHUNK;
                        for (k, (o, &b)) in out.iter_mut().zip(bits.iter()).enumerate() {
                            *o = flush(curve.at(first + k) * bipolar(b));
                        }
                    }
                }
            }
        }
    }

    fn set_param(&mut self, index: usize, value: f32) -> bool {
        match index {
            P_AMP if float_param_accepts(PARAMS, index, value) => {
                self.amp = value;
                self.curve = None;
                true
            }
            _ => false,
        }
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn get_param(&self, index: usize) -> Option<f32> {
        (index == P_AMP).then_some(self.amp)
    }

    fn follow_param(&mut self, index: usize, curve: ParamCurve) -> bool {
        if index != P_AMP || !curve_accepts(PARAMS, index, &curve) {
            return false;
        }
        self.curve = Some(curve);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four interleaved streams give the generator's own sequence, for any length (whole
    /// groups of four and a remainder), and carry on from where it stands.
    #[test]
    fn fill_bits_is_the_generators_sequence() {
        let mut fast = Pcg32::new(7, 3);
        let mut slow = fast.clone();
        for len in [64, 3, 1, 0, 17, 64, 5] {
            let mut bits = vec![0u32; len];
            fill_bits(&mut fast, &mut bits);
            let want: Vec<u32> = (0..len).map(|_| slow.next_u32()).collect();
            assert_eq!(bits, want, "length {len}");
        }
    }

    /// The `f32` sample is exactly the `f64` one, and `amp` times it rounds as before.
    #[test]
    fn bipolar_in_f32_is_the_f64_sample() {
        let mut a = Pcg32::new(1, 0);
        let mut b = a.clone();
        for _ in 0..10_000 {
            let old = b.bipolar();
            let new = bipolar(a.next_u32());
            assert_eq!(f64::from(new), old);
            assert_eq!(0.3f32 * new, (f64::from(0.3f32) * old) as f32);
        }
    }
}
