//! `output`: the graph's sink, whose input is what the device plays.

use crate::CHANNELS;
use downbeat_graph::{
    AudioMut, AudioRef, Node, NodeConfig, NodeType, ParamError, ParamSpec, Params, ProcessContext,
};

/// The graph's sink: copies the sum of its inputs to the device. Every graph has exactly one.
///
/// ```
/// use downbeat_nodes::Output;
/// use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};
///
/// let mut out_node = Output::new(2);
/// let ctx = ProcessContext::new(48000, 2, 0);
/// let input = [0.25, 0.5, -0.25, -0.5];
/// let mut out = [0.0f32; 4];
/// out_node.process(&ctx, AudioRef::new(&input, 2, 2, 2), AudioMut::new(&mut out, 2, 2, 2));
/// assert_eq!(out, input);
/// ```
#[derive(Debug)]
pub struct Output {
    channels: usize,
}

impl Output {
    /// An output with `channels` channels.
    pub fn new(channels: usize) -> Self {
        Self { channels }
    }
}

static PARAMS: &[ParamSpec] = &[CHANNELS];

pub(crate) const TYPE: NodeType = NodeType {
    name: "output",
    doc: "the graph's sink: what arrives here is sent to the device (exactly one per graph)",
    params: PARAMS,
    build,
};

fn build(p: &Params, _cfg: &NodeConfig) -> Result<Box<dyn Node>, ParamError> {
    Ok(Box::new(Output::new(p.int("channels") as usize)))
}

impl Node for Output {
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
            output.channel_mut(c).copy_from_slice(input.channel(c));
        }
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }
}
