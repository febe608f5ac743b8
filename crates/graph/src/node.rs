//! The [`Node`] trait: one unit of DSP in a graph.

use crate::buffer::{AudioMut, AudioRef};
use crate::monitor::SharedMonitor;
use crate::note::{NoteError, NoteEvent};
use crate::param::ParamSpec;
use crate::revision::SharedRevision;
use crate::smooth::ParamCurve;
use crate::state::{NodeState, StateError};
use crate::time::MusicalPosition;

/// What a node knows about the block it is processing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProcessContext {
    /// Sample rate in Hz.
    pub sample_rate: u32,
    /// Frames in this block (at most the schedule's maximum block size).
    pub frames: usize,
    /// Frame position of the first sample of this block since the schedule started.
    pub position: u64,
    /// The song's musical position at the first frame: beat, bar, tempo, signature, and
    /// whether the transport plays and loops. The engine cuts blocks at every tempo point,
    /// signature change, loop wrap and transport command, so [`MusicalPosition::at`] gives
    /// any later frame of the block exactly.
    pub musical: MusicalPosition,
}

impl ProcessContext {
    /// A context for a block of `frames` frames at `position`, with the transport stopped
    /// at the start of a 120 bpm 4/4 song ([`MusicalPosition::stopped`]): for driving a
    /// node by hand.
    ///
    /// ```
    /// use downbeat_graph::ProcessContext;
    /// let ctx = ProcessContext::new(48000, 64, 128);
    /// assert_eq!((ctx.frames, ctx.position, ctx.musical.playing), (64, 128, false));
    /// ```
    pub fn new(sample_rate: u32, frames: usize, position: u64) -> Self {
        Self {
            sample_rate,
            frames,
            position,
            musical: MusicalPosition::stopped(sample_rate),
        }
    }
}

/// A named group of a node's input or output channels: `main`, `sidechain`, `aux`. A node's
/// ports ([`Node::input_ports`], [`Node::output_ports`]) split its channels in order, so a
/// compressor with a stereo `main` and a stereo `sidechain` input has four input channels,
/// the sidechain's being channels 2 and 3. An edge connects one output port to one input
/// port of the same channel count (`"kick -> comp:sidechain"`); an edge that names no port
/// uses `main`.
///
/// ```
/// use downbeat_graph::Port;
/// let ports = [Port::main(2), Port::new("sidechain", 2)];
/// assert_eq!(ports.iter().map(|p| p.channels).sum::<usize>(), 4);
/// assert_eq!(ports[0].name, Port::MAIN);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Port {
    /// The port's name, unique among the node's ports on its side.
    pub name: String,
    /// Its channels.
    pub channels: usize,
}

impl Port {
    /// The name of the port an edge uses when it names none.
    pub const MAIN: &'static str = "main";

    /// A port called `name` of `channels` channels.
    pub fn new(name: impl Into<String>, channels: usize) -> Self {
        Self {
            name: name.into(),
            channels,
        }
    }

    /// The `main` port of `channels` channels.
    pub fn main(channels: usize) -> Self {
        Self::new(Self::MAIN, channels)
    }
}

/// One unit of DSP in a graph.
///
/// A node has input and output channels, grouped in named [`Port`]s (one `main` port on
/// each side by default). The schedule sums every edge arriving at a port into the port's
/// channels of the node's input before calling [`process`](Node::process), so a node never
/// sees edges, only audio.
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

    /// The input channels grouped in ports, in channel order; their channels add up to
    /// [`input_channels`](Node::input_channels). Read when the graph is compiled. The
    /// default is one [`main`](Port::main) port with every input channel (none for a
    /// source).
    fn input_ports(&self) -> Vec<Port> {
        match self.input_channels() {
            0 => Vec::new(),
            n => vec![Port::main(n)],
        }
    }

    /// The output channels grouped in ports, in channel order; their channels add up to
    /// [`output_channels`](Node::output_channels). Read when the graph is compiled. The
    /// default is one [`main`](Port::main) port with every output channel.
    fn output_ports(&self) -> Vec<Port> {
        vec![Port::main(self.output_channels())]
    }

    /// Changes the parameter at `index` (its position in the node type's parameter list)
    /// from the audio thread, from the next sample the node computes on: a step, not a ramp
    /// (the schedule smooths live parameters and ramps them, see
    /// [`follow_param`](Node::follow_param)). Ends any curve the parameter was following.
    /// Returns `false` when the parameter cannot change while running or refuses the value.
    /// Must be real-time safe.
    fn set_param(&mut self, index: usize, value: f32) -> bool {
        let _ = (index, value);
        false
    }

    /// The parameters the node declares, in [`set_param`](Node::set_param) order: its node
    /// type's list. A schedule lets controllers move the ones marked
    /// [`live`](ParamSpec::live) whose value [`get_param`](Node::get_param) reports. The
    /// default declares none.
    fn params(&self) -> &'static [ParamSpec] {
        &[]
    }

    /// The name of the node's type in project files (`"sine"`), which error messages about
    /// its parameters give. The default, `None`, suits a node that has no type of its own.
    fn type_name(&self) -> Option<&'static str> {
        None
    }

    /// The current value of live parameter `index`, or `None` when it is not live. The
    /// schedule reads it once, when it compiles, to know where ramps start.
    fn get_param(&self, index: usize) -> Option<f32> {
        let _ = index;
        None
    }

    /// The node's outputs: values it computes while it plays (a meter's level, a plugin's
    /// control outputs) for a host to read, in [`output_value`](Node::output_value) order,
    /// each with its name and range (`kind` is a [`ParamKind::Float`](crate::ParamKind);
    /// `live` is ignored). An output is named like a parameter and read like one
    /// (a watcher's `value("node", "name")`, [`Schedule::param_value`](crate::Schedule::param_value)),
    /// but it is read-only: an event for it is refused
    /// ([`ControlError::Output`](crate::ControlError::Output)). Its name must not be a
    /// parameter's. Read once, when the graph is compiled; the default declares none, and a
    /// node without outputs costs the schedule nothing.
    ///
    /// ```
    /// use downbeat_graph::{AudioMut, AudioRef, CompileConfig, ControlError, Graph, Node, ParamKind, ParamSpec, ProcessContext, Unit};
    /// use downbeat_nodes::Output;
    ///
    /// static PEAK: &[ParamSpec] = &[ParamSpec {
    ///     name: "peak",
    ///     doc: "the highest absolute sample of the latest block",
    ///     kind: ParamKind::Float { min: 0.0, max: f64::INFINITY, default: 0.0 },
    ///     unit: Unit::None,
    ///     live: false,
    /// }];
    ///
    /// /// Passes its input through and publishes its peak.
    /// struct Meter(f32);
    /// impl Node for Meter {
    ///     fn input_channels(&self) -> usize { 1 }
    ///     fn output_channels(&self) -> usize { 1 }
    ///     fn process(&mut self, _: &ProcessContext, input: AudioRef<'_>, mut out: AudioMut<'_>) {
    ///         out.channel_mut(0).copy_from_slice(input.channel(0));
    ///         self.0 = input.channel(0).iter().fold(0.0f32, |p, x| p.max(x.abs()));
    ///     }
    ///     fn outputs(&self) -> &'static [ParamSpec] { PEAK }
    ///     fn output_value(&self, _: usize) -> f32 { self.0 }
    /// }
    ///
    /// let mut g = Graph::new();
    /// let m = g.add("m", Meter(0.0));
    /// let out = g.add("out", Output::new(1));
    /// g.connect(m, out);
    /// g.set_output(out);
    /// let mut s = g.compile(CompileConfig { sample_rate: 48_000, max_block: 64 }).unwrap();
    /// let table = s.param_table();
    /// let peak = table.resolve_watched("m", "peak").unwrap();
    /// s.process(64);
    /// assert_eq!(s.param_value(peak), Some(0.0)); // silence in
    /// let err = table.resolve("m", "peak").unwrap_err();
    /// assert!(matches!(err, ControlError::Output { .. }));
    /// assert_eq!(err.message(), "`peak` of node `m` is an output, it cannot be set");
    /// ```
    fn outputs(&self) -> &'static [ParamSpec] {
        &[]
    }

    /// The current value of output `index` (see [`outputs`](Node::outputs)): as of the end
    /// of the latest [`process`](Node::process). The schedule calls it on the audio thread
    /// after a block, when a watcher looks ([`Schedule::take_param_changes`](crate::Schedule::take_param_changes)),
    /// so it must be real-time safe: a load from the node's own state. The default is 0.
    fn output_value(&self, index: usize) -> f32 {
        let _ = index;
        0.0
    }

    /// Asks the node to follow live parameter `index` sample by sample over the next call
    /// to [`process`](Node::process): the value at frame `k` of that call is
    /// `curve.at(k)`, until the next `follow_param` or [`set_param`](Node::set_param) for
    /// the same index. Returns `false` (the default) when the node does not follow curves
    /// or refuses this one; the schedule then calls `set_param` at least every
    /// [`CONTROL_FRAMES`](crate::CONTROL_FRAMES) frames while the parameter moves.
    ///
    /// Nodes for which a parameter is cheap to apply per sample (a gain, an amplitude, an
    /// oscillator's frequency) follow; those for which it is costly (filter coefficients)
    /// let the schedule update them at control rate. Must be real-time safe.
    fn follow_param(&mut self, index: usize, curve: ParamCurve) -> bool {
        let _ = (index, curve);
        false
    }

    /// True for a node that takes parameter changes with their frame offsets, through
    /// [`set_param_at`](Node::set_param_at), and computes every block in one
    /// [`process`](Node::process) call; false (the default) for one whose block the schedule
    /// cuts at each change. A plugin host says true: a CLAP plugin wants one call per block
    /// with its events time-stamped inside it. Read once per block.
    fn takes_param_offsets(&self) -> bool {
        false
    }

    /// For a node that [`takes_param_offsets`](Node::takes_param_offsets): changes
    /// parameter `index` to `value` from frame `frame` of the next
    /// [`process`](Node::process) call. Calls for one block come in frame order, before
    /// that block's `process`; a moving (smoothed or ramped) parameter arrives as a change
    /// every [`CONTROL_FRAMES`](crate::CONTROL_FRAMES) frames, as for a node that does not
    /// [`follow_param`](Node::follow_param). Returns `false` when the value is refused. The
    /// default ignores `frame` and calls [`set_param`](Node::set_param). Must be real-time
    /// safe.
    fn set_param_at(&mut self, frame: usize, index: usize, value: f32) -> bool {
        let _ = frame;
        self.set_param(index, value)
    }

    /// Frames by which the node's output lags its input: an FFT's frame, a plugin's
    /// look-ahead. [`Graph::compile`](crate::Graph::compile) delays the other paths into
    /// every node so they arrive aligned, and
    /// [`Schedule::latency`](crate::Schedule::latency) adds up the graph's total. Read
    /// once, when the graph is compiled. The default is 0.
    fn latency(&self) -> usize {
        0
    }

    /// True for an instrument: a node that plays [`NoteEvent`]s given to
    /// [`note`](Node::note). The engine sends notes (from MIDI, say) to every such node.
    fn plays_notes(&self) -> bool {
        false
    }

    /// Takes a note event to apply at `frame`, counted from the first frame of the next
    /// block [`process`](Node::process) computes; frames beyond that block carry over to
    /// the following ones. Events at the same frame apply in the order given. Must be
    /// real-time safe: an instrument keeps a list of fixed capacity.
    ///
    /// # Errors
    /// [`NoteError::NotAnInstrument`] from a node that does not play notes (the default);
    /// from an instrument, an out-of-range field or a full list.
    fn note(&mut self, frame: usize, event: NoteEvent) -> Result<(), NoteError> {
        let _ = (frame, event);
        Err(NoteError::NotAnInstrument)
    }

    /// For an instrument: how long a note goes on sounding after its note off, in seconds
    /// (so that a player of a MIDI file knows how long to run after the file's last
    /// event). Read when the schedule's [`ParamTable`](crate::ParamTable) is made. The
    /// default is 0.
    fn release_seconds(&self) -> f64 {
        0.0
    }

    /// Tells the node whether it runs offline (`true`: rendered faster or slower than real
    /// time, to a file, where waiting costs nothing but time) or on a real-time device
    /// (`false`, the default a node starts with). A node that depends on another thread
    /// (a file player whose reader decodes ahead) waits for it offline, so that the output
    /// is the same however slow that thread is, and never waits in real time.
    /// [`Schedule::set_offline`](crate::Schedule::set_offline) calls it on every node. Must
    /// be real-time safe (a schedule taking over from another passes the flag on, on the
    /// audio thread). The default ignores it.
    fn set_offline(&mut self, offline: bool) {
        let _ = offline;
    }

    /// A handle to counters the node keeps while it plays (input it dropped, work it
    /// skipped), for a host to read from another thread; see [`NodeMonitor`](crate::NodeMonitor). Called once,
    /// when the graph is compiled, before the node moves to the audio thread; the schedule
    /// hands the handles out through [`Schedule::monitors`](crate::Schedule::monitors). The
    /// default has none.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    /// use downbeat_graph::{AudioMut, AudioRef, CompileConfig, Graph, Node, NodeCount, NodeMonitor, ProcessContext, SharedMonitor};
    /// use downbeat_nodes::Output;
    ///
    /// struct Blocks(AtomicU64);
    /// impl NodeMonitor for Blocks {
    ///     fn counts(&self) -> Vec<NodeCount> {
    ///         vec![NodeCount { name: "blocks", value: self.0.load(Ordering::Relaxed), loss: false }]
    ///     }
    /// }
    ///
    /// /// A silent source that counts its blocks.
    /// struct Counting(Arc<Blocks>);
    /// impl Node for Counting {
    ///     fn input_channels(&self) -> usize { 0 }
    ///     fn output_channels(&self) -> usize { 1 }
    ///     fn process(&mut self, _: &ProcessContext, _: AudioRef<'_>, mut out: AudioMut<'_>) {
    ///         out.channel_mut(0).fill(0.0);
    ///         self.0 .0.fetch_add(1, Ordering::Relaxed);
    ///     }
    ///     fn monitor(&self) -> Option<SharedMonitor> {
    ///         Some(self.0.clone())
    ///     }
    /// }
    ///
    /// let mut g = Graph::new();
    /// let src = g.add("src", Counting(Arc::new(Blocks(AtomicU64::new(0)))));
    /// let out = g.add("out", Output::new(1));
    /// g.connect(src, out);
    /// g.set_output(out);
    /// let mut schedule = g.compile(CompileConfig { sample_rate: 48_000, max_block: 64 }).unwrap();
    /// let monitors = schedule.monitors(); // before the schedule moves to the audio thread
    /// schedule.process(64);
    /// schedule.process(64);
    /// assert_eq!(monitors[0].0, "src");
    /// assert_eq!(monitors[0].1.counts()[0].value, 2);
    /// ```
    fn monitor(&self) -> Option<SharedMonitor> {
        None
    }

    /// A handle through which the node's owner publishes a new latency or parameter list
    /// while the node runs (see [`Revision`](crate::Revision)); `None` (the default) for a
    /// node whose latency and parameters never change. Read once, when the node is added
    /// to a graph or an editor, before it moves to the audio thread.
    fn revision(&self) -> Option<SharedRevision> {
        None
    }

    /// The node's state, for a later run to start from (a plugin's parameters and
    /// internal settings, in the plugin format's own state format), or `None` for a node
    /// with nothing to save (the default). Called on the main thread, after the run, on
    /// the node the schedule gave back (see
    /// [`Schedule::save_states`](crate::Schedule::save_states)), so it may allocate and
    /// block.
    ///
    /// ```
    /// use downbeat_graph::{AudioMut, AudioRef, Node, NodeState, ProcessContext, StateError};
    ///
    /// /// A constant whose level is its state.
    /// struct Level(f32);
    /// impl Node for Level {
    ///     fn input_channels(&self) -> usize { 0 }
    ///     fn output_channels(&self) -> usize { 1 }
    ///     fn process(&mut self, _: &ProcessContext, _: AudioRef<'_>, mut out: AudioMut<'_>) {
    ///         out.channel_mut(0).fill(self.0);
    ///     }
    ///     fn save_state(&mut self) -> Result<Option<NodeState>, StateError> {
    ///         Ok(Some(NodeState { bytes: self.0.to_le_bytes().to_vec(), extension: "level" }))
    ///     }
    /// }
    ///
    /// let state = Level(0.5).save_state().unwrap().unwrap();
    /// assert_eq!(state.bytes, 0.5f32.to_le_bytes());
    /// ```
    fn save_state(&mut self) -> Result<Option<NodeState>, StateError> {
        Ok(None)
    }
}
