//! The [`Node`] trait: one unit of DSP in a graph.

use crate::buffer::{AudioMut, AudioRef};

/// What a node knows about the block it is processing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProcessContext {
    /// Sample rate in Hz.
    pub sample_rate: f32,
    /// Frames in this block (at most the schedule's maximum block size).
    pub frames: usize,
    /// Frame position of the first sample of this block since the schedule started.
    pub position: u64,
}

/// One unit of DSP in a graph.
///
/// A node has one input port and one output port, each with a fixed number of channels.
/// The schedule sums every edge arriving at a node into its input before calling
/// [`process`](Node::process), so a node never sees edges, only audio.
///
/// `process` runs on the audio thread: it must not allocate, free, lock, or make system
/// calls. Allocate everything the node needs in its constructor, which runs off the audio
/// thread.
///
/// ```
/// use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};
///
/// /// Halves its input.
/// struct Half;
///
/// impl Node for Half {
///     fn input_channels(&self) -> usize { 2 }
///     fn output_channels(&self) -> usize { 2 }
///     fn process(&mut self, _ctx: &ProcessContext, input: AudioRef<'_>, mut output: AudioMut<'_>) {
///         for c in 0..output.channels() {
///             let inp = input.channel(c);
///             for (o, i) in output.channel_mut(c).iter_mut().zip(inp) {
///                 *o = 0.5 * i;
///             }
///         }
///     }
/// }
/// ```
pub trait Node: Send + 'static {
    /// Channels of the input port; 0 for a source.
    fn input_channels(&self) -> usize;

    /// Channels of the output port.
    fn output_channels(&self) -> usize;

    /// Computes one block. `input` holds the sum of every incoming edge (silence for a
    /// source); `output` must be fully written, it holds the previous block's data.
    fn process(&mut self, ctx: &ProcessContext, input: AudioRef<'_>, output: AudioMut<'_>);

    /// Changes the parameter at `index` (its position in the node type's parameter list)
    /// from the audio thread. Returns `false` when the parameter cannot change while
    /// running. Must be real-time safe.
    fn set_param(&mut self, index: usize, value: f32) -> bool {
        let _ = (index, value);
        false
    }
}
