//! `gain`: multiplies its input by a constant.

use crate::CHANNELS;
use downbeat_graph::{
    curve_accepts, denormal::flush, float_param_accepts, AudioMut, AudioRef, Node, NodeConfig,
    NodeType, ParamCurve, ParamError, ParamKind, ParamSpec, Params, ProcessContext, Unit,
};

/// Multiplies every channel by a linear gain. A moving gain is followed sample by sample.
///
/// ```
/// use downbeat_nodes::Gain;
/// use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};
///
/// let mut gain = Gain::new(1, 0.5);
/// let ctx = ProcessContext::new(48000, 3, 0);
/// let input = [1.0, -2.0, 4.0];
/// let mut out = [0.0f32; 3];
/// gain.process(&ctx, AudioRef::new(&input, 1, 3, 3), AudioMut::new(&mut out, 1, 3, 3));
/// assert_eq!(out, [0.5, -1.0, 2.0]);
/// ```
#[derive(Debug)]
pub struct Gain {
    channels: usize,
    gain: f32,
    /// The gain's curve over the next block while it moves.
    curve: Option<ParamCurve>,
}

impl Gain {
    /// A gain stage of `channels` channels multiplying by `gain` (linear).
    pub fn new(channels: usize, gain: f32) -> Self {
        Self {
            channels,
            gain,
            curve: None,
        }
    }
}

const P_GAIN: usize = 1;

static PARAMS: &[ParamSpec] = &[
    CHANNELS,
    ParamSpec {
        name: "gain",
        doc: "linear gain factor",
        kind: ParamKind::Float {
            min: 0.0,
            max: 16.0,
            default: 1.0,
        },
        unit: Unit::None,
        live: true,
    },
];

pub(crate) const TYPE: NodeType = NodeType {
    name: "gain",
    doc: "multiplies its input by a linear gain",
    params: PARAMS,
    build,
};

fn build(p: &Params, _cfg: &NodeConfig) -> Result<Box<dyn Node>, ParamError> {
    Ok(Box::new(Gain::new(
        p.int("channels") as usize,
        p.float("gain") as f32,
    )))
}

impl Node for Gain {
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
        for c in 0..self.channels {
            let out = output.channel_mut(c).iter_mut().zip(input.channel(c));
            match &self.curve {
                // A tiny gain times a quiet input is 0 below `TINY`, whatever the
                // processor's flush mode.
                None => out.for_each(|(o, i)| *o = flush(self.gain * i)),
                Some(curve) => out
                    .enumerate()
                    .for_each(|(k, (o, i))| *o = flush(curve.at(k) * i)),
            }
        }
    }

    fn set_param(&mut self, index: usize, value: f32) -> bool {
        if index != P_GAIN || !float_param_accepts(PARAMS, index, value) {
            return false;
        }
        self.gain = value;
        self.curve = None;
        true
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn get_param(&self, index: usize) -> Option<f32> {
        (index == P_GAIN).then_some(self.gain)
    }

    fn follow_param(&mut self, index: usize, curve: ParamCurve) -> bool {
        if index != P_GAIN || !curve_accepts(PARAMS, index, &curve) {
            return false;
        }
        self.curve = Some(curve);
        true
    }
}
