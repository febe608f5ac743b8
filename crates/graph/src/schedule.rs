//! [`Schedule`]: a compiled graph the audio thread runs block by block.

use crate::buffer::{AudioMut, AudioRef};
use crate::compile::CompileConfig;
use crate::node::{Node, ProcessContext};

/// Where a node's input comes from, decided at compile time.
#[derive(Debug)]
pub(crate) enum InputPlan {
    /// No incoming edge: the input buffer holds zeros forever.
    Silence,
    /// One incoming edge: read the predecessor's output in place, no copy.
    Direct(usize),
    /// Several incoming edges: sum the predecessors' outputs into the input buffer.
    Sum(Vec<usize>),
}

pub(crate) struct Slot {
    pub(crate) node: Box<dyn Node>,
    pub(crate) in_ch: usize,
    pub(crate) out_ch: usize,
    pub(crate) input: InputPlan,
    pub(crate) in_buf: Vec<f32>,
    pub(crate) out_buf: Vec<f32>,
    pub(crate) successors: Vec<usize>,
}

/// A compiled, immutable graph: nodes in topological order with every buffer allocated.
///
/// Built by [`Graph::compile`](crate::Graph::compile) off the audio thread. Its shape never
/// changes; to edit the graph, compile a new schedule and swap it in.
/// [`process`](Schedule::process) neither allocates, frees, locks nor makes system calls
/// (beyond what the nodes themselves do, and the built-in nodes do none of it).
///
/// ```
/// use downbeat_graph::{nodes::{Output, Sine}, CompileConfig, Graph};
///
/// let mut g = Graph::new();
/// let osc = g.add("osc", Sine::new(2, 48000.0, 440.0, 0.5, 0.0));
/// let out = g.add("out", Output::new(2));
/// g.connect(osc, out);
/// g.set_output(out);
/// let mut schedule = g.compile(CompileConfig { sample_rate: 48000.0, max_block: 128 }).unwrap();
/// schedule.process(128);
/// let left = schedule.output().channel(0);
/// assert!(left.iter().any(|&s| s != 0.0));
/// ```
pub struct Schedule {
    slots: Vec<Slot>,
    names: Vec<String>,
    original: Vec<usize>,
    output: usize,
    cfg: CompileConfig,
    position: u64,
    frames: usize,
}

impl Schedule {
    pub(crate) fn new(
        slots: Vec<Slot>,
        names: Vec<String>,
        original: Vec<usize>,
        output: usize,
        cfg: CompileConfig,
    ) -> Self {
        Self {
            slots,
            names,
            original,
            output,
            cfg,
            position: 0,
            frames: 0,
        }
    }

    /// Runs every node once for a block of `frames` frames, in topological order.
    ///
    /// # Panics
    /// If `frames` is 0 or exceeds the `max_block` the schedule was compiled for.
    pub fn process(&mut self, frames: usize) {
        assert!(
            frames > 0 && frames <= self.cfg.max_block,
            "block of {frames} frames outside 1..={}",
            self.cfg.max_block
        );
        let stride = self.cfg.max_block;
        let ctx = ProcessContext {
            sample_rate: self.cfg.sample_rate,
            frames,
            position: self.position,
        };
        for i in 0..self.slots.len() {
            // Compilation placed every predecessor before its successors, so the
            // predecessors' outputs live in `done` while this node is borrowed mutably.
            let (done, rest) = self.slots.split_at_mut(i);
            let slot = &mut rest[0];
            let input = match &slot.input {
                InputPlan::Silence => AudioRef::new(&slot.in_buf, slot.in_ch, stride, frames),
                InputPlan::Direct(p) => {
                    AudioRef::new(&done[*p].out_buf, slot.in_ch, stride, frames)
                }
                InputPlan::Sum(preds) => {
                    for c in 0..slot.in_ch {
                        let range = c * stride..c * stride + frames;
                        let dst = &mut slot.in_buf[range.clone()];
                        dst.copy_from_slice(&done[preds[0]].out_buf[range.clone()]);
                        for &p in &preds[1..] {
                            for (d, s) in dst.iter_mut().zip(&done[p].out_buf[range.clone()]) {
                                *d += s;
                            }
                        }
                    }
                    AudioRef::new(&slot.in_buf, slot.in_ch, stride, frames)
                }
            };
            let output = AudioMut::new(&mut slot.out_buf, slot.out_ch, stride, frames);
            slot.node.process(&ctx, input, output);
        }
        self.position += frames as u64;
        self.frames = frames;
    }

    /// The output node's output for the last processed block.
    pub fn output(&self) -> AudioRef<'_> {
        let slot = &self.slots[self.output];
        AudioRef::new(&slot.out_buf, slot.out_ch, self.cfg.max_block, self.frames)
    }

    /// Writes the last processed block into `out`, interleaved frame by frame.
    ///
    /// # Panics
    /// If `out` is not exactly `frames × channels` long.
    pub fn output_interleaved(&self, out: &mut [f32]) {
        let audio = self.output();
        let ch = audio.channels();
        assert_eq!(out.len(), audio.frames() * ch, "interleaved buffer size");
        for c in 0..ch {
            for (frame, &s) in out.chunks_exact_mut(ch).zip(audio.channel(c)) {
                frame[c] = s;
            }
        }
    }

    /// Output channels of the output node.
    pub fn channels(&self) -> usize {
        self.slots[self.output].out_ch
    }

    /// The sample rate and block size the schedule was compiled for.
    pub fn config(&self) -> CompileConfig {
        self.cfg
    }

    /// Frames processed since the schedule was created.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True when the schedule has no nodes.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Node names in processing order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// For each position in processing order, the node's index in the original graph.
    pub fn order(&self) -> &[usize] {
        &self.original
    }

    /// Successors of the node at processing position `i`, as processing positions.
    pub fn successors(&self, i: usize) -> &[usize] {
        &self.slots[i].successors
    }

    /// Predecessors of the node at processing position `i`, as processing positions.
    pub fn predecessors(&self, i: usize) -> &[usize] {
        match &self.slots[i].input {
            InputPlan::Silence => &[],
            InputPlan::Direct(p) => std::slice::from_ref(p),
            InputPlan::Sum(p) => p,
        }
    }
}

impl std::fmt::Debug for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schedule")
            .field("nodes", &self.names)
            .field("output", &self.names[self.output])
            .field("config", &self.cfg)
            .finish()
    }
}
