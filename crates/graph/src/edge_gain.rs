//! [`EdgeGain`]: the level of an edge that has one (`"vox -> reverb @ -12 dB"`).

use crate::{
    buffer::{AudioMut, AudioRef},
    denormal::flush,
    math,
    node::{Node, ProcessContext},
    param::{curve_accepts, float_param_accepts, ParamKind, ParamSpec, Unit},
    smooth::ParamCurve,
};

/// The lowest level an edge takes, in dB: the edge is silent there (a gain of 0).
pub const EDGE_GAIN_FLOOR_DB: f64 = -144.0;

static PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "gain_db",
    doc: "the edge's level in dB; -144 and below is silence",
    kind: ParamKind::Float {
        min: EDGE_GAIN_FLOOR_DB,
        max: 24.0,
        default: 0.0,
    },
    unit: Unit::Decibels,
    live: true,
}];

/// What compile puts on an edge that has a level: a gain in dB, live and sample-accurate
/// like any parameter (a ramp is followed sample by sample, in dB). It is a node of the
/// schedule named after its edge, `"FROM -> TO"` (with the ports the edge names), so that
/// events, OSC (`/edge/FROM/TO/gain_db`) and watchers reach it as they reach any node's
/// parameter; a live edit that keeps the edge keeps the node and its level.
///
/// ```
/// use downbeat_graph::EdgeGain;
/// use downbeat_nodes::{Output, Sine, SineSettings};
/// use downbeat_graph::{CompileConfig, Graph};
///
/// let mut g = Graph::new();
/// let one = g.add("one", Sine::new(1, 48_000, &SineSettings { freq: 0.0, amp: 1.0, phase: 0.25 })); // a constant 1.0
/// let out = g.add("out", Output::new(1));
/// g.connect_gain(one, out, -6.0);
/// g.set_output(out);
/// let mut s = g.compile(CompileConfig { sample_rate: 48_000, max_block: 64 }).unwrap();
/// s.process(64);
/// assert!((s.output().channel(0)[0] - EdgeGain::linear(-6.0)).abs() < 1e-7);
/// assert!(s.param_table().resolve("one -> out", "gain_db").is_ok());
/// ```
#[derive(Debug)]
pub struct EdgeGain {
    channels: usize,
    db: f32,
    gain: f32,
    curve: Option<ParamCurve>,
}

impl EdgeGain {
    /// A level of `db` on `channels` channels.
    pub fn new(channels: usize, db: f32) -> Self {
        Self {
            channels,
            db,
            gain: Self::linear(db),
            curve: None,
        }
    }

    /// The linear gain of `db`: `10^(db/20)`, 0 at [`EDGE_GAIN_FLOOR_DB`] and below. The
    /// same math on every target (see [`math`](crate::math)), so a level renders the same bits
    /// natively and in wasm.
    pub fn linear(db: f32) -> f32 {
        if f64::from(db) <= EDGE_GAIN_FLOOR_DB {
            0.0
        } else {
            math::exp(f64::from(db) * std::f64::consts::LN_10 / 20.0) as f32
        }
    }
}

impl Node for EdgeGain {
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
                None => out.for_each(|(o, i)| *o = flush(self.gain * i)),
                // A moving level: the curve is in dB, each sample's gain from its own value.
                Some(curve) => out
                    .enumerate()
                    .for_each(|(k, (o, i))| *o = flush(Self::linear(curve.at(k)) * i)),
            }
        }
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn set_param(&mut self, index: usize, value: f32) -> bool {
        if !float_param_accepts(PARAMS, index, value) {
            return false;
        }
        self.db = value;
        self.gain = Self::linear(value);
        self.curve = None;
        true
    }

    fn get_param(&self, index: usize) -> Option<f32> {
        (index == 0).then_some(self.db)
    }

    fn follow_param(&mut self, index: usize, curve: ParamCurve) -> bool {
        if !curve_accepts(PARAMS, index, &curve) {
            return false;
        }
        self.curve = Some(curve);
        true
    }
}
