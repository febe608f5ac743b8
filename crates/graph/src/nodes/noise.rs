//! `noise`: uniform white noise.

use crate::buffer::{AudioMut, AudioRef};
use crate::node::{Node, ProcessContext};
use crate::nodes::{curve_accepts, float_param_accepts, Pcg32, CHANNELS, SEED};
use crate::param::{ParamError, ParamKind, ParamSpec, Params};
use crate::registry::{NodeConfig, NodeType};
use crate::smooth::ParamCurve;

/// Uniform white noise in `(-amp, amp)`: mean 0, RMS `amp / sqrt(3)`.
///
/// Each channel has its own independent PCG32 stream, so channels are uncorrelated. The
/// output depends only on `seed` and the number of samples produced so far: the same seed
/// gives bit-identical output whatever the block sizes. A moving `amp` is followed sample
/// by sample.
///
/// ```
/// use downbeat_graph::nodes::Noise;
/// use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};
///
/// let render = |seed| {
///     let mut noise = Noise::new(2, 0.25, seed);
///     let ctx = ProcessContext { sample_rate: 48000.0, frames: 64, position: 0 };
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
    /// White noise of peak amplitude `amp` on `channels` channels, generated from `seed`.
    pub fn new(channels: usize, amp: f32, seed: u64) -> Self {
        Self {
            rngs: (0..channels as u64).map(|c| Pcg32::new(seed, c)).collect(),
            amp,
            curve: None,
        }
    }
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
    Ok(Box::new(Noise::new(
        p.int("channels") as usize,
        p.float("amp") as f32,
        p.int("seed") as u64,
    )))
}

impl Node for Noise {
    fn input_channels(&self) -> usize {
        0
    }

    fn output_channels(&self) -> usize {
        self.rngs.len()
    }

    fn process(&mut self, _ctx: &ProcessContext, _input: AudioRef<'_>, mut output: AudioMut<'_>) {
        let amp = f64::from(self.amp);
        for (rng, ch) in self.rngs.iter_mut().zip(output.channels_mut()) {
            match &self.curve {
                None => ch
                    .iter_mut()
                    .for_each(|o| *o = (amp * rng.bipolar()) as f32),
                Some(curve) => {
                    for (k, o) in ch.iter_mut().enumerate() {
                        *o = (f64::from(curve.at(k)) * rng.bipolar()) as f32;
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
