//! [`Schedule`]: a compiled graph the audio thread runs block by block, serially or on a
//! [`Pool`].

use downbeat_rt::denormals::FlushDenormals;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use downbeat_rt::pool::{available_cores, Pool};

use crate::buffer::{AudioMut, AudioRef};
use crate::compile::CompileConfig;
use crate::event::{
    Applied, Change, ControlError, Event, EventStats, NodeEvent, NodeParams, OnBeat, ParamId,
    ParamTable,
};
use crate::key::{KeyMap, NodeKey, Target};
use crate::monitor::SharedMonitor;
use crate::node::{Node, ProcessContext};
use crate::parallel::{Kahn, Parallel};
use crate::param::ParamKind;
use crate::profile::{NodeSample, Profile};
use crate::smooth::{ParamCurve, Segment, Shape};
use crate::song_timeline::{SongEntry, SongTimeline};
use crate::state::{NodeState, StateError};
use crate::sum_group::SumGroups;
use crate::time::{checked_beat, TempoMap, Transport};
use crate::waiting::{Due, Entry, Waiting, WAITING_CAPACITY};

/// Events a schedule holds by default: waiting for their frame, and due in one block.
/// [`Schedule::set_event_capacity`] changes it.
pub const DEFAULT_EVENT_CAPACITY: usize = 1024;

/// Longest stretch, in frames, over which a node that does not follow a moving parameter
/// sample by sample (see [`Node::follow_param`]) holds one value. Stretches are aligned to
/// multiples of this on the schedule's timeline, so where they fall does not depend on the
/// block size.
pub const CONTROL_FRAMES: u64 = 32;

/// Frames of an input sum added up at once, input after input: 16 `f32`s, a cache line
/// (and one or two vector registers).
const SUM_CHUNK: usize = 16;

/// How long a [`Change::Set`] takes to reach its value by default: long enough that a jump
/// of a gain or a frequency makes no click, short enough to feel immediate.
pub const DEFAULT_SMOOTHING: Duration = Duration::from_millis(5);

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Where a node's input comes from, decided at compile time.
#[derive(Debug)]
pub(crate) enum InputPlan {
    /// No incoming edge: the input buffer holds zeros forever.
    Silence,
    /// One incoming edge: read the predecessor's output in place, no copy.
    Direct(usize),
    /// Several incoming edges: sum the predecessors' outputs, in index order, into the
    /// input buffer. The fixed order makes serial and parallel output bit-identical.
    Sum(Vec<usize>),
    /// Edges into ports, or from ports, that are not the whole input and output: each
    /// input channel is the sum, in this order, of the output channels routed to it
    /// (silence when none is).
    Routed(Vec<RouteFrom>),
}

/// Which channels an edge carries: `channels` output channels of its source from channel
/// `from` on, into the destination's input channels from `to` on (its ports' ranges).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Route {
    pub(crate) from: usize,
    pub(crate) to: usize,
    pub(crate) channels: usize,
}

/// A [`Route`] from the node at position `pred`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RouteFrom {
    pub(crate) pred: usize,
    pub(crate) route: Route,
}

pub(crate) struct Slot {
    pub(crate) node: Box<dyn Node>,
    pub(crate) in_ch: usize,
    pub(crate) out_ch: usize,
    pub(crate) input: InputPlan,
    pub(crate) in_buf: Vec<f32>,
    pub(crate) out_buf: Vec<f32>,
    /// One entry per declared parameter.
    params: Box<[ParamState]>,
    /// Parameters whose segment is still ramping.
    moving: usize,
    /// Some parameter changed since the last [`Schedule::take_param_changes`].
    touched: bool,
    /// Per [`Node::outputs`] entry: the value [`Schedule::take_param_changes`] reported
    /// last (empty for a node without outputs).
    outputs: Box<[f32]>,
    /// Values the node refused.
    refused: u64,
    level: NodeLevel,
}

impl Slot {
    pub(crate) fn new(
        node: Box<dyn Node>,
        input: InputPlan,
        in_buf: Vec<f32>,
        out_buf: Vec<f32>,
    ) -> Self {
        let params = node
            .params()
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                let value = match spec.kind {
                    ParamKind::Float { .. } if spec.live => node.get_param(i),
                    _ => None,
                };
                ParamState {
                    live: value.is_some(),
                    segment: Segment::constant(value.unwrap_or(0.0)),
                    moving: false,
                    reported: value.unwrap_or(0.0),
                    changed: false,
                }
            })
            .collect();
        let outputs = (0..node.outputs().len())
            .map(|k| node.output_value(k))
            .collect();
        Self {
            in_ch: node.input_channels(),
            out_ch: node.output_channels(),
            node,
            input,
            in_buf,
            out_buf,
            params,
            moving: 0,
            touched: false,
            outputs,
            refused: 0,
            level: NodeLevel::default(),
        }
    }
}

impl Slot {
    /// Takes over `old`'s node and everything that belongs to the node rather than to the
    /// plan (its output buffer, parameter segments, reported outputs, counters, level),
    /// leaving this slot's stand-ins in `old`. The input plan and input buffer stay: they
    /// belong to this schedule's edges. Real-time safe: fields are swapped, nothing is
    /// allocated or freed.
    fn adopt(&mut self, old: &mut Slot) {
        std::mem::swap(&mut self.node, &mut old.node);
        std::mem::swap(&mut self.out_buf, &mut old.out_buf);
        if self.params.len() == old.params.len() {
            std::mem::swap(&mut self.params, &mut old.params);
        } else {
            // The node revised its parameter list (see `Revision`): the parameters it kept
            // carry their state over by position; the new ones start from this slot's.
            for (new, running) in self.params.iter_mut().zip(old.params.iter()) {
                *new = *running;
            }
        }
        std::mem::swap(&mut self.outputs, &mut old.outputs);
        std::mem::swap(&mut self.moving, &mut old.moving);
        std::mem::swap(&mut self.touched, &mut old.touched);
        std::mem::swap(&mut self.refused, &mut old.refused);
        std::mem::swap(&mut self.level, &mut old.level);
    }
}

/// The nodes a new schedule keeps from the one it will replace: see
/// [`Schedule::take_over`].
#[derive(Debug, Default)]
pub(crate) struct Kept {
    /// The id of the schedule the kept nodes run in.
    pub(crate) from: Option<u64>,
    /// (position in the new schedule, position in `from`).
    pub(crate) slots: Vec<(u32, u32)>,
}

/// Where one live parameter is on the timeline.
#[derive(Clone, Copy, Debug)]
struct ParamState {
    live: bool,
    segment: Segment,
    /// On a ramp that the node has not been handed the end of yet.
    moving: bool,
    /// The value [`Schedule::take_param_changes`] reported last.
    reported: f32,
    /// Changed since the last [`Schedule::take_param_changes`].
    changed: bool,
}

/// The level of one node's output over the blocks since it was last taken, for per-node
/// meters (see [`Schedule::set_levels`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NodeLevel {
    /// Highest absolute sample value, over every channel.
    pub peak: f32,
    /// Sum of the squares of every sample of every channel.
    pub sum_squares: f64,
    /// Samples summed (frames times channels).
    pub samples: u64,
}

impl NodeLevel {
    /// Root mean square of the samples (0 when there are none).
    ///
    /// ```
    /// use downbeat_graph::NodeLevel;
    /// let l = NodeLevel { peak: 1.0, sum_squares: 2.0, samples: 8 };
    /// assert_eq!(l.rms(), 0.5);
    /// ```
    pub fn rms(&self) -> f32 {
        if self.samples == 0 {
            0.0
        } else {
            (self.sum_squares / self.samples as f64).sqrt() as f32
        }
    }

    #[allow(clippy::disallowed_methods)] // a meter's peak of magnitudes, not rendered audio
    fn add(&mut self, audio: AudioRef<'_>) {
        for c in 0..audio.channels() {
            let mut peak = self.peak;
            let mut sum = 0.0f32;
            for &x in audio.channel(c) {
                peak = peak.max(x.abs());
                sum += x * x;
            }
            self.peak = peak;
            self.sum_squares += f64::from(sum);
            self.samples += audio.frames() as u64;
        }
    }
}

/// An event waiting for its frame, or due in the current block.
#[derive(Clone, Copy, Debug)]
struct Pending {
    frame: u64,
    /// Arrival order, breaking ties between events at the same frame.
    seq: u64,
    /// In the queue, the node's position in this schedule; in the preloaded timeline, its
    /// key's index ([`NodeKey`]), which an edit does not change, so that the timeline can
    /// move to the edited schedule as it is.
    node: u32,
    body: NodeEvent,
}

impl Pending {
    fn key(&self) -> (u64, u64) {
        (self.frame, self.seq)
    }
}

/// A due event in a node's list for the current block.
#[derive(Clone, Copy, Debug)]
struct SlotEvent {
    offset: u32,
    body: NodeEvent,
}

/// The event path's storage, all allocated off the audio thread.
///
/// Live events wait in `heap` (a binary min-heap on frame, then arrival); preloaded ones
/// (automation, a replay) in `timeline`, sorted. At the start of each block the due events
/// of both are merged in frame order into `due`, then laid out node by node in `block`
/// (`ranges[node]` is that node's stretch), so that every node reads its own list while
/// nodes run in parallel. Everything has a fixed capacity: a push into a full heap is
/// refused, and due events beyond the block's capacity stay where they are for the next
/// block (counted in [`EventStats::carried`]).
struct Events {
    capacity: usize,
    heap: Vec<Pending>,
    timeline: Vec<Pending>,
    cursor: usize,
    due: Vec<Pending>,
    block: Vec<SlotEvent>,
    ranges: Box<[(u32, u32)]>,
    counts: Box<[u32]>,
    ranges_dirty: bool,
    seq: u64,
    /// The frame of the schedule's timeline that the preloaded timeline's frame 0 is: 0, or
    /// the frame at which this schedule took over from another.
    origin: u64,
    record: bool,
    applied: Vec<Applied>,
    stats: EventStats,
}

/// An empty vector with room for `capacity` elements whose memory has been written, so that
/// filling it on the audio thread takes no page fault.
fn reserved<T: Copy>(capacity: usize, filler: T) -> Vec<T> {
    let mut v = vec![filler; capacity];
    v.clear();
    v
}

const NO_EVENT: NodeEvent = NodeEvent::Param {
    index: 0,
    change: Change::Step(0.0),
};

impl Events {
    fn new(nodes: usize, capacity: usize) -> Self {
        let mut events = Self {
            capacity: 0,
            heap: Vec::new(),
            timeline: Vec::new(),
            cursor: 0,
            due: Vec::new(),
            block: Vec::new(),
            ranges: vec![(0, 0); nodes].into_boxed_slice(),
            counts: vec![0; nodes].into_boxed_slice(),
            ranges_dirty: false,
            seq: 0,
            origin: 0,
            record: false,
            applied: Vec::new(),
            stats: EventStats::default(),
        };
        events.reserve(capacity);
        events
    }

    /// Gives every list room for `capacity` events, written once so that the audio thread
    /// never faults them in.
    fn reserve(&mut self, capacity: usize) {
        let pending = Pending {
            frame: 0,
            seq: 0,
            node: 0,
            body: NO_EVENT,
        };
        let mut heap = reserved(capacity, pending);
        heap.extend(self.heap.iter().take(capacity));
        debug_assert!(heap.len() == self.heap.len(), "queued events are kept");
        self.heap = heap;
        self.capacity = capacity;
        self.due = reserved(capacity, pending);
        self.block = reserved(
            capacity,
            SlotEvent {
                offset: 0,
                body: NO_EVENT,
            },
        );
        self.applied = reserved(
            capacity,
            Applied {
                frame: 0,
                node: NodeKey(0),
                body: NO_EVENT,
            },
        );
    }

    fn heap_push(&mut self, e: Pending) {
        debug_assert!(self.heap.len() < self.heap.capacity());
        self.heap.push(e);
        let mut i = self.heap.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[parent].key() <= self.heap[i].key() {
                break;
            }
            self.heap.swap(parent, i);
            i = parent;
        }
    }

    fn heap_pop(&mut self) -> Option<Pending> {
        let last = self.heap.len().checked_sub(1)?;
        self.heap.swap(0, last);
        let top = self.heap.pop();
        let n = self.heap.len();
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if l < n && self.heap[l].key() < self.heap[least].key() {
                least = l;
            }
            if r < n && self.heap[r].key() < self.heap[least].key() {
                least = r;
            }
            if least == i {
                break;
            }
            self.heap.swap(i, least);
            i = least;
        }
        top
    }

    /// Moves the events due before `end` into `due` and lays them out per node. Real-time
    /// safe: every vector stays within the capacity it was given.
    fn distribute(&mut self, start: u64, end: u64, keys: &KeyMap) {
        if self.ranges_dirty {
            self.ranges.fill((0, 0));
            self.ranges_dirty = false;
        }
        self.due.clear();
        self.applied.clear();
        // The timeline's frames count from `origin`; compared here on the schedule's timeline.
        let end_timeline = end.saturating_sub(self.origin);
        loop {
            let from_timeline = self
                .timeline
                .get(self.cursor)
                .filter(|e| e.frame < end_timeline)
                .map(|e| e.frame + self.origin);
            let from_heap = self.heap.first().filter(|e| e.frame < end).map(|e| e.frame);
            let take_timeline = match (from_timeline, from_heap) {
                (None, None) => break,
                (Some(t), Some(h)) => t <= h,
                (t, _) => t.is_some(),
            };
            if self.due.len() == self.capacity {
                self.stats.carried += self.timeline[self.cursor..]
                    .iter()
                    .take_while(|e| e.frame < end_timeline)
                    .count() as u64;
                self.stats.carried += self.heap.iter().filter(|e| e.frame < end).count() as u64;
                break;
            }
            let e = if take_timeline {
                self.cursor += 1;
                let mut e = self.timeline[self.cursor - 1];
                e.frame += self.origin;
                // The node may have been removed by an edit since the timeline was set.
                let Some(slot) = keys.slot(NodeKey(e.node)) else {
                    self.stats.stale += 1;
                    continue;
                };
                e.node = slot as u32;
                e
            } else {
                self.heap_pop().expect("the heap has a due event")
            };
            if e.frame < start {
                self.stats.late += 1;
            }
            self.due.push(e);
        }
        if self.due.is_empty() {
            return;
        }
        self.stats.applied += self.due.len() as u64;
        for e in &self.due {
            self.counts[e.node as usize] = 0;
        }
        for e in &self.due {
            self.counts[e.node as usize] += 1;
        }
        self.block.clear();
        self.block.resize(
            self.due.len(),
            SlotEvent {
                offset: 0,
                body: self.due[0].body,
            },
        );
        let mut at = 0u32;
        for e in &self.due {
            let n = e.node as usize;
            if self.counts[n] > 0 {
                self.ranges[n] = (at, at);
                at += self.counts[n];
                self.counts[n] = 0;
            }
            let frame = e.frame.max(start);
            self.block[self.ranges[n].1 as usize] = SlotEvent {
                offset: (frame - start) as u32,
                body: e.body,
            };
            self.ranges[n].1 += 1;
            if self.record {
                self.applied.push(Applied {
                    frame,
                    node: keys.key(n),
                    body: e.body,
                });
            }
        }
        self.ranges_dirty = true;
    }
}

/// A compiled, immutable graph: nodes in topological order with every buffer allocated.
///
/// Built by [`Graph::compile`](crate::Graph::compile) off the audio thread. Its shape never
/// changes; to edit the graph, compile a new schedule and swap it in.
/// [`process`](Schedule::process) neither allocates, frees, locks nor makes system calls
/// (beyond what the nodes themselves do, and the built-in nodes do none of it).
///
/// ```
/// use downbeat_graph::{CompileConfig, Graph};
/// use downbeat_nodes::{Output, Sine, SineSettings};
///
/// let mut g = Graph::new();
/// let osc = g.add("osc", Sine::new(2, 48000, &SineSettings::default()));
/// let out = g.add("out", Output::new(2));
/// g.connect(osc, out);
/// g.set_output(out);
/// let mut schedule = g.compile(CompileConfig { sample_rate: 48000, max_block: 128 }).unwrap();
/// schedule.process(128);
/// let left = schedule.output().channel(0);
/// assert!(left.iter().any(|&s| s != 0.0));
/// ```
pub struct Schedule {
    // Each slot is touched mutably by exactly one thread at a time: the serial processor
    // holds `&mut self`; the parallel one hands a node to one thread once all its
    // predecessors are done (see `Kahn`).
    slots: Box<[UnsafeCell<Slot>]>,
    // Topology, outside the cells so any thread may read it while nodes run.
    preds: Box<[Box<[usize]>]>,
    /// Per node with [`InputPlan::Routed`], its routes (empty for every other node).
    routes: Box<[Box<[RouteFrom]>]>,
    succs: Box<[Box<[usize]>]>,
    /// The inputs of the nodes with more than [`SUM_GROUP`](crate::SUM_GROUP) edges, cut
    /// into groups added up apart.
    groups: SumGroups,
    parallel: Parallel,
    /// Per node, then per group (numbered after the nodes, as the parallel processor
    /// numbers them).
    profile: Profile,
    names: Vec<String>,
    /// Each node's [`NodeKey`] and the way back to its position.
    keys: KeyMap,
    /// The positions of the nodes that play notes: where a note for
    /// [`Target::Instruments`] goes.
    instruments: Box<[u32]>,
    /// The positions of the nodes with [`Node::outputs`]: the only ones
    /// [`take_param_changes`](Schedule::take_param_changes) asks for them.
    with_outputs: Box<[u32]>,
    /// Each node's [`Node::monitor`], taken at compile time: the nodes cannot be asked
    /// once they run.
    monitors: Box<[Option<SharedMonitor>]>,
    original: Vec<usize>,
    output: usize,
    cfg: CompileConfig,
    position: u64,
    frames: usize,
    id: u64,
    events: Events,
    /// Frames a [`Change::Set`] takes.
    smoothing: u64,
    levels: bool,
    /// Whether the current block is timed.
    timed: bool,
    /// Whether the schedule renders offline ([`Schedule::set_offline`]).
    offline: bool,
    /// Whether `process` sets the flush mode ([`Schedule::set_flush_denormals`]).
    flush: bool,
    /// The nodes this schedule keeps from the one it replaces (an [`Editor`](crate::Editor)'s
    /// commit): (position here, position there). Their slots hold stand-ins until
    /// [`take_over`](Schedule::take_over) moves the running instances in.
    keep: Box<[(u32, u32)]>,
    /// The schedule `keep` refers to, when it is not empty.
    predecessor: Option<u64>,
    /// The schedule an [`Editor`](crate::Editor) committed this one as an edit of (even
    /// one that keeps no node): its preloaded timeline goes on here.
    edited_from: Option<u64>,
    /// The song: tempo map, playing or not, where, looping.
    transport: Transport,
    /// Events waiting for a beat, and transport commands waiting for their frame.
    waiting: Waiting,
    /// The preloaded events timed in beats.
    song: SongTimeline,
}

impl Schedule {
    pub(crate) fn new(
        slots: Vec<Slot>,
        succs: Vec<Vec<usize>>,
        names: Vec<String>,
        original: Vec<usize>,
        output: usize,
        cfg: CompileConfig,
        keep: Kept,
    ) -> Self {
        let n = slots.len();
        let preds: Box<[Box<[usize]>]> = slots
            .iter()
            .map(|s| match &s.input {
                InputPlan::Silence => Box::from([]),
                InputPlan::Direct(p) => Box::from([*p]),
                InputPlan::Sum(p) => p.clone().into_boxed_slice(),
                InputPlan::Routed(r) => {
                    let mut p: Vec<usize> = r.iter().map(|r| r.pred).collect();
                    p.dedup();
                    p.into_boxed_slice()
                }
            })
            .collect();
        let routes = slots
            .iter()
            .map(|s| match &s.input {
                InputPlan::Routed(r) => r.clone().into_boxed_slice(),
                _ => Box::from([]),
            })
            .collect();
        let succs: Box<[Box<[usize]>]> = succs.into_iter().map(Vec::into_boxed_slice).collect();
        let groups = SumGroups::new(
            &preds,
            |i| matches!(slots[i].input, InputPlan::Sum(_)),
            |i| slots[i].in_ch,
            cfg.max_block,
        );
        let (task_preds, task_succs) = groups.with_groups(&preds, &succs);
        let mut parallel = Parallel::new(&task_preds, &task_succs, available_cores());
        parallel.set_stateless_from(n);
        let monitors = slots.iter().map(|s| s.node.monitor()).collect();
        let keys = slots
            .iter()
            .zip(&names)
            .map(|(s, name)| {
                let params: Vec<&'static str> = s.node.params().iter().map(|p| p.name).collect();
                let outputs: Vec<&'static str> = s.node.outputs().iter().map(|p| p.name).collect();
                NodeKey::intern(name, &params, &outputs, s.node.plays_notes())
            })
            .collect();
        let instruments = (0..n as u32)
            .filter(|&i| slots[i as usize].node.plays_notes())
            .collect();
        let with_outputs = (0..n as u32)
            .filter(|&i| !slots[i as usize].outputs.is_empty())
            .collect();
        Self {
            slots: slots.into_iter().map(UnsafeCell::new).collect(),
            preds,
            routes,
            succs,
            profile: Profile::new(n + groups.len()),
            groups,
            parallel,
            names,
            keys: KeyMap::new(keys),
            instruments,
            with_outputs,
            monitors,
            original,
            output,
            cfg,
            position: 0,
            frames: 0,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            events: Events::new(n, DEFAULT_EVENT_CAPACITY),
            smoothing: (DEFAULT_SMOOTHING.as_secs_f64() * f64::from(cfg.sample_rate)).round()
                as u64,
            levels: false,
            timed: false,
            offline: false,
            flush: true,
            predecessor: (!keep.slots.is_empty()).then_some(keep.from).flatten(),
            edited_from: keep.from,
            keep: keep.slots.into_boxed_slice(),
            transport: Transport::new(
                TempoMap::constant(120.0, cfg.sample_rate).unwrap_or_else(|_| TempoMap::default()),
            ),
            waiting: Waiting::new(WAITING_CAPACITY),
            song: SongTimeline::default(),
        }
    }

    /// Runs every node once for a block of `frames` frames, in topological order, on the
    /// calling thread, with subnormal numbers flushed to zero (as on the pool's workers;
    /// unless [`set_flush_denormals`](Schedule::set_flush_denormals) turned that off).
    ///
    /// # Panics
    /// If `frames` is 0 or exceeds the `max_block` the schedule was compiled for.
    pub fn process(&mut self, frames: usize) {
        let _flush = self.flush.then(FlushDenormals::new);
        let ctx = self.begin(frames, false);
        for i in 0..self.slots.len() {
            // SAFETY: `&mut self` excludes every other access, and slots run in
            // topological order, so predecessors are complete (and the groups of a node's
            // sum were added up right after their last input).
            unsafe {
                self.run_slot(i, &ctx, 0, false);
                for &g in self.groups.after(i) {
                    self.sum_group(g, &ctx, 0);
                }
            }
        }
        self.end(frames);
    }

    /// Runs every node once for a block of `frames` frames on `pool` and the calling
    /// thread, with Kahn's algorithm: a node runs as soon as its last predecessor is done,
    /// and the thread that finishes that predecessor runs the successor with the longest
    /// path ahead of it itself. Sources start longest path first, and a ready node waits on
    /// the thread that ran it last unless another runs out of work (critical path first,
    /// cache affinity; the ranks come from the nodes' measured times, see
    /// [`set_profiling`](Schedule::set_profiling)). The output is bit-identical to
    /// [`process`](Schedule::process): every thread flushes subnormals to zero, the calling
    /// one while this runs, the pool's workers for their whole life; a node's result must not
    /// depend on the thread that ran it. A node whose input sum takes long (measured) has it
    /// added up by every thread, each over its own frames, before it runs; each frame is
    /// summed in the serial order, so that too keeps the bits.
    ///
    /// Real-time safe: every structure it uses was allocated by `compile`; the only system
    /// call is the pool's counted wake of parked workers.
    ///
    /// # Panics
    /// If `frames` is 0 or exceeds the `max_block` the schedule was compiled for.
    pub fn process_parallel(&mut self, frames: usize, pool: &Pool) {
        let _flush = FlushDenormals::new();
        let ctx = self.begin(frames, true);
        // Where the split sums write: taken here, with the slots held exclusively, and
        // published to the pool's threads by its opening of the block.
        for (c, i) in self.parallel.split_nodes() {
            let ptr = self.slots[i].get_mut().in_buf.as_mut_ptr();
            self.parallel.set_buffer(c, ptr);
        }
        self.parallel.set_threads(pool.workers() + 1);
        self.parallel.start();
        pool.run(&Kahn {
            schedule: self,
            ctx,
        });
        self.end(frames);
    }

    /// Opens a block; `rank`: the parallel processor's, which times one block per 2048
    /// frames to rank its nodes.
    fn begin(&mut self, frames: usize, rank: bool) -> ProcessContext {
        assert!(
            self.keep.is_empty(),
            "this schedule keeps nodes of schedule {:?}: it must take over from it before it processes",
            self.predecessor
        );
        assert!(
            frames > 0 && frames <= self.cfg.max_block,
            "block of {frames} frames outside 1..={}",
            self.cfg.max_block
        );
        self.start_waiting(frames);
        let musical = self.transport.position();
        self.events
            .distribute(self.position, self.position + frames as u64, &self.keys);
        self.timed = self.profile.begin(rank, frames);
        ProcessContext {
            sample_rate: self.cfg.sample_rate,
            frames,
            position: self.position,
            musical,
        }
    }

    /// At the start of a block: carries out the transport commands due at its first frame
    /// (or earlier: late), then queues the node events whose beat falls in the block at
    /// their exact frames. Real-time safe.
    fn start_waiting(&mut self, frames: usize) {
        let mut i = 0;
        while i < self.waiting.len() {
            let Some(Entry { due, event }) = self.waiting.get(i) else {
                break;
            };
            let NodeEvent::Transport(command) = event.body else {
                i += 1;
                continue;
            };
            let now = match due {
                Due::Frame(f) => f <= self.position,
                Due::Beat(b) => {
                    self.transport.is_playing()
                        && self.transport.map().frame_of(b) <= self.transport.song_frame()
                }
            };
            if now {
                self.waiting.remove(i);
                if self.transport.apply(command).is_err() {
                    self.events.stats.refused += 1;
                }
                self.events.stats.applied += 1;
                // Playing or stopping changes what else is due: start over.
                i = 0;
            } else {
                i += 1;
            }
        }
        if !self.transport.is_playing() {
            return;
        }
        let (song, position) = (self.transport.song_frame(), self.position);
        let end = song + frames as u64;
        // The song's preloaded events due in this block, onto the queue at their frames.
        let (keys, events) = (&self.keys, &mut self.events);
        self.song
            .due(self.transport.map(), song, end, |e: &SongEntry, f| {
                let Some(slot) = keys.slot(NodeKey(e.node)) else {
                    events.stats.stale += 1;
                    return true;
                };
                if events.heap.len() == events.capacity {
                    events.stats.carried += 1;
                    return false;
                }
                let pending = Pending {
                    frame: position + (f - song),
                    seq: events.seq,
                    node: slot as u32,
                    body: e.body,
                };
                events.seq += 1;
                events.heap_push(pending);
                true
            });
        let mut k = 0;
        while k < self.waiting.len() {
            let Some(Entry { due, event }) = self.waiting.get(k) else {
                break;
            };
            let at = match (due, event.body) {
                (Due::Beat(b), NodeEvent::Param { .. } | NodeEvent::Note(_)) => {
                    let f = self.transport.map().frame_of(b);
                    (f >= song && f < end).then(|| position + (f - song))
                }
                _ => None,
            };
            let Some(frame) = at else {
                k += 1;
                continue;
            };
            let timed = Event {
                frame: Some(frame),
                beat: None,
                ..event
            };
            match self.push_event(timed) {
                // No room in the queue: it waits on, and goes in late at the next block.
                Err(ControlError::QueueFull { .. }) => k += 1,
                _ => {
                    self.waiting.remove(k);
                }
            }
        }
    }

    /// How many of the next `frames` frames (at least 1) may run as one block: up to the
    /// next tempo segment, signature change, loop end or transport command, if one comes
    /// sooner. A caller that processes in such pieces (the engine does) gives every node a
    /// musical position that holds for its whole block. Real-time safe.
    pub fn piece(&self, frames: usize) -> usize {
        let mut n = self.transport.piece(frames);
        let (song, playing) = (self.transport.song_frame(), self.transport.is_playing());
        for e in self.waiting.iter() {
            if !matches!(e.event.body, NodeEvent::Transport(_)) {
                continue;
            }
            let ahead = match e.due {
                Due::Frame(f) => f.checked_sub(self.position),
                Due::Beat(b) if playing => self.transport.map().frame_of(b).checked_sub(song),
                Due::Beat(_) => None,
            };
            if let Some(a) = ahead.filter(|&a| a > 0) {
                n = n.min(a.min(usize::MAX as u64) as usize);
            }
        }
        n.max(1)
    }

    /// The song's transport: its tempo map, and where it stands.
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// The transport, to play, stop, locate or loop it at once (between blocks). Timed
    /// commands go through [`push_event`](Self::push_event) with
    /// [`Event::transport`](crate::Event::transport).
    pub fn transport_mut(&mut self) -> &mut Transport {
        &mut self.transport
    }

    /// Plays the song by `map` from where the transport stands (its beat, kept). Allocates
    /// nothing, frees the map it replaces: call it off the audio thread, before the
    /// schedule runs (a project's `[tempo]` comes in this way).
    pub fn set_tempo(&mut self, map: TempoMap) {
        let mut transport = Transport::new(map);
        transport.continue_from(&mut self.transport);
        self.transport = transport;
    }

    /// Events waiting for their beat, and transport commands waiting for their frame.
    pub fn waiting_events(&self) -> usize {
        self.waiting.len()
    }

    fn end(&mut self, frames: usize) {
        self.transport.advance(frames);
        if self.timed {
            let profile = &self.profile;
            self.parallel
                .rerank(|i| profile.nanos(i), |i| profile.sum_nanos(i));
        }
        self.position += frames as u64;
        self.frames = frames;
    }

    /// Sums the inputs of node `i` and processes it: in one piece when no event is due for
    /// it and none of its parameters moves, else in sub-blocks cut at its events' frames
    /// (and, for a moving parameter the node does not follow itself, every
    /// [`CONTROL_FRAMES`]).
    ///
    /// With `summed`, the input sum was already added up (by the parts of a split sum, see
    /// [`sum_part`](Schedule::sum_part)) and is not repeated.
    ///
    /// # Safety
    /// No other thread may access slot `i`, and every predecessor of `i` must be complete
    /// for this block with its writes visible to this thread (with `summed`, every part of
    /// its sum too).
    pub(crate) unsafe fn run_slot(
        &self,
        i: usize,
        ctx: &ProcessContext,
        thread: usize,
        summed: bool,
    ) {
        let started = self.profile.starting();
        let stride = self.cfg.max_block;
        let frames = ctx.frames;
        // SAFETY: exclusive access to slot `i` is the caller's promise.
        let slot = unsafe { &mut *self.slots[i].get() };
        // SAFETY: predecessors are complete and nobody writes them during this block;
        // they are other slots than `i` (the graph is acyclic), so no aliasing with `slot`.
        let pred = |p: usize| unsafe { &*self.slots[p].get() };
        if let (InputPlan::Sum(_) | InputPlan::Routed(_), false) = (&slot.input, summed) {
            // SAFETY: `in_buf` holds `in_ch` channels of `stride` frames (`compile`), this
            // thread has the slot to itself, and the predecessors are complete.
            unsafe { self.sum_inputs(i, slot.in_ch, slot.in_buf.as_mut_ptr(), 0..frames) };
            self.profile.summed(i, started);
        }
        let Slot {
            node,
            in_ch,
            out_ch,
            input,
            in_buf,
            out_buf,
            params,
            moving,
            touched,
            outputs: _,
            refused,
            level,
        } = slot;
        let input_data: &[f32] = match input {
            InputPlan::Direct(p) => &pred(*p).out_buf,
            InputPlan::Silence | InputPlan::Sum(_) | InputPlan::Routed(_) => &in_buf[..],
        };
        let (lo, hi) = self.events.ranges[i];
        let events = &self.events.block[lo as usize..hi as usize];
        if events.is_empty() && *moving == 0 {
            let input = AudioRef::new(input_data, *in_ch, stride, frames);
            let output = AudioMut::new(out_buf, *out_ch, stride, frames);
            node.process(ctx, input, output);
        } else {
            // Asked only here: a call through the node's vtable costs a tiny node's block a
            // few percent, and most blocks have no event.
            let whole = node.takes_param_offsets();
            let mut sub = SubBlocks {
                node: node.as_mut(),
                params,
                moving,
                refused,
                smoothing: self.smoothing,
                offset: None,
            };
            let mut k = 0;
            let mut e = 0;
            while k < frames {
                let now = ctx.position + k as u64;
                sub.offset = whole.then_some(k);
                while e < events.len() && events[e].offset as usize == k {
                    sub.apply(events[e].body, now);
                    e += 1;
                }
                let next_event = events.get(e).map_or(frames, |ev| ev.offset as usize);
                let end = sub.update_moving(now, ctx.position, next_event.min(frames));
                if !whole {
                    let piece = ProcessContext {
                        frames: end - k,
                        position: now,
                        musical: ctx.musical.at(k),
                        ..*ctx
                    };
                    let input = AudioRef::window(input_data, *in_ch, stride, k, end - k);
                    let output = AudioMut::window(out_buf, *out_ch, stride, k, end - k);
                    sub.node.process(&piece, input, output);
                }
                k = end;
            }
            if whole {
                // The changes went in with their offsets; the node computes the block at once.
                let input = AudioRef::new(input_data, *in_ch, stride, frames);
                let output = AudioMut::new(out_buf, *out_ch, stride, frames);
                sub.node.process(ctx, input, output);
            }
            *touched = true;
        }
        if self.levels {
            level.add(AudioRef::new(out_buf, *out_ch, stride, frames));
        }
        self.profile.ran(i, thread, started);
    }

    /// Adds up frames `frames` of node `i`'s input sum, every channel, into its input
    /// buffer at `dst`: one part of a split sum, run by the parallel processor on any
    /// thread before node `i` runs (which then gets `summed`).
    ///
    /// # Safety
    /// `dst` must be node `i`'s input buffer for this block; every predecessor of `i` must
    /// be complete with its writes visible to this thread; no other thread may access these
    /// frames of the buffer, nor slot `i` mutably, until this returns and is ordered before.
    pub(crate) unsafe fn sum_part(
        &self,
        i: usize,
        dst: *mut f32,
        frames: std::ops::Range<usize>,
        ctx: &ProcessContext,
    ) {
        debug_assert!(frames.end <= ctx.frames);
        // SAFETY: nothing writes slot `i`'s fields until every part is done (the caller's
        // promise), so a shared look at its channel count races with nothing.
        let in_ch = unsafe { &*self.slots[i].get() }.in_ch;
        // SAFETY: forwarded from the caller.
        unsafe { self.sum_inputs(i, in_ch, dst, frames) };
    }

    /// The one loop that sums node `i`'s inputs, for the serial processor and for each
    /// part of a split sum alike: frame by frame, the inputs are added in index order, so
    /// any cut of the frames gives the same bits.
    ///
    /// # Safety
    /// `dst` points to `in_ch` channels of `max_block` frames that only this thread
    /// accesses in `frames` for the duration; every predecessor of `i` is complete with its
    /// writes visible to this thread.
    unsafe fn sum_inputs(
        &self,
        i: usize,
        in_ch: usize,
        dst: *mut f32,
        frames: std::ops::Range<usize>,
    ) {
        let stride = self.cfg.max_block;
        let routes = &self.routes[i];
        if !routes.is_empty() {
            // SAFETY: forwarded from the caller.
            unsafe { self.sum_routes(routes, in_ch, dst, frames) };
            return;
        }
        let groups = self.groups.of_node(i);
        if groups.is_empty() {
            let preds = &self.preds[i];
            // SAFETY: predecessors are complete and nobody writes them during this block;
            // `dst` is forwarded from the caller.
            unsafe {
                add_up(
                    preds.len(),
                    |k| self.output_of(preds[k]),
                    in_ch,
                    stride,
                    dst,
                    frames,
                )
            };
        } else {
            // SAFETY: every group of the node was added up before it runs, ordered before
            // this (the caller's promise covers them as inputs), and none is written again
            // in this block.
            unsafe {
                add_up(
                    groups.len(),
                    |k| self.groups.partial(groups.start + k),
                    in_ch,
                    stride,
                    dst,
                    frames,
                )
            };
        }
    }

    /// The output buffer of node `p`, an input of the node or group being summed.
    ///
    /// # Safety
    /// Node `p` must be complete for this block with its writes visible to this thread, and
    /// no thread may write its slot while the borrow lives.
    unsafe fn output_of(&self, p: usize) -> &[f32] {
        // SAFETY: nobody writes the slot meanwhile, the caller's promise.
        unsafe { &(*self.slots[p].get()).out_buf }
    }

    /// Adds up group `g` of a wide input sum into its partial sum, over the whole block.
    ///
    /// # Safety
    /// Every input of the group must be complete for this block with its writes visible to
    /// this thread; no other thread may access the group's partial sum until this returns
    /// and is ordered before.
    pub(crate) unsafe fn sum_group(&self, g: usize, ctx: &ProcessContext, thread: usize) {
        let started = self.profile.starting();
        let group = self.groups.group(g);
        let preds = &self.preds[group.node][group.inputs.clone()];
        // SAFETY: the partial is this thread's alone for now, the caller's promise.
        let dst = unsafe { self.groups.partial_mut(g) };
        // SAFETY: the node's slot is not written while its inputs are summed (it runs
        // after), so a shared look at its channel count races with nothing.
        let in_ch = unsafe { &*self.slots[group.node].get() }.in_ch;
        // SAFETY: the inputs are complete and nobody writes them during this block; the
        // partial holds `in_ch` channels of `max_block` frames (`SumGroups::new`).
        unsafe {
            add_up(
                preds.len(),
                |k| self.output_of(preds[k]),
                in_ch,
                self.cfg.max_block,
                dst.as_mut_ptr(),
                0..ctx.frames,
            )
        };
        self.profile.ran(self.slots.len() + g, thread, started);
    }

    /// [`sum_inputs`](Schedule::sum_inputs) for a node whose edges go port to port: each
    /// input channel gets, frame by frame, the routed output channels added in the routes'
    /// order (so any cut of the frames gives the same bits), or silence.
    ///
    /// # Safety
    /// As for `sum_inputs`.
    unsafe fn sum_routes(
        &self,
        routes: &[RouteFrom],
        in_ch: usize,
        dst: *mut f32,
        frames: std::ops::Range<usize>,
    ) {
        let stride = self.cfg.max_block;
        for c in 0..in_ch {
            let at = c * stride + frames.start;
            // SAFETY: within the buffer (`c < in_ch`, `frames.end <= stride`), and these
            // frames are this thread's alone (the caller's promise).
            let dst = unsafe { std::slice::from_raw_parts_mut(dst.add(at), frames.len()) };
            let mut first = true;
            for r in routes {
                let Route { from, to, channels } = r.route;
                if c < to || c >= to + channels {
                    continue;
                }
                let src_at = (from + c - to) * stride + frames.start;
                // SAFETY: predecessors are complete and nobody writes them during this block.
                let src = unsafe { self.output_of(r.pred) };
                let src = &src[src_at..src_at + frames.len()];
                if std::mem::take(&mut first) {
                    dst.copy_from_slice(src);
                } else {
                    for (d, s) in dst.iter_mut().zip(src) {
                        *d += s;
                    }
                }
            }
            if first {
                dst.fill(0.0);
            }
        }
    }

    /// Runs one block with a scheduler of the caller's own: `f` gets a [`NodeRunner`] that
    /// processes single nodes, and must run every node exactly once, each after all of its
    /// predecessors. This is how the benchmarks drive rival schedulers over the very same
    /// nodes; [`process_parallel`](Schedule::process_parallel) is the built-in one.
    ///
    /// # Panics
    /// If `frames` is 0 or exceeds the `max_block` the schedule was compiled for.
    pub fn with_runner<R>(&mut self, frames: usize, f: impl FnOnce(&NodeRunner<'_>) -> R) -> R {
        let ctx = self.begin(frames, false);
        let r = f(&NodeRunner {
            schedule: self,
            ctx,
        });
        self.end(frames);
        r
    }

    /// Starts or stops timing every block (two clock reads per node; without profiling,
    /// one block of [`process_parallel`](Schedule::process_parallel)'s per 2048 frames is
    /// timed, for its ranking).
    pub fn set_profiling(&self, on: bool) {
        self.profile.set_on(on);
    }

    /// Total time spent in the node at processing position `i` while profiling was on.
    pub fn node_time(&self, i: usize) -> Duration {
        self.profile.total(i)
    }

    /// When, how long and on which thread the node at processing position `i` ran in the
    /// last timed block (every block while profiling). From these a caller can tell how
    /// close a parallel block came to its limit; see [`NodeSample`].
    pub fn node_sample(&self, i: usize) -> NodeSample {
        self.profile.sample(i)
    }

    /// How many nodes have their input sum split across the pool's threads by
    /// [`process_parallel`](Schedule::process_parallel) in the coming blocks: those whose
    /// sum took 2 µs or more when last measured (one block per 2048 frames is), on a machine
    /// with more than one core.
    ///
    /// ```
    /// use downbeat_graph::{CompileConfig, Graph};
    /// use downbeat_nodes::{Noise, Output, NoiseSettings};
    /// use downbeat_rt::pool::{Pool, PoolConfig};
    ///
    /// let mut g = Graph::new();
    /// let out = g.add("out", Output::new(1));
    /// for k in 0..500 {
    ///     let n = g.add(format!("n{k}"), Noise::new(1, &NoiseSettings { amp: 0.001, seed: k }));
    ///     g.connect(n, out);
    /// }
    /// g.set_output(out);
    /// let mut schedule = g.compile(CompileConfig { sample_rate: 48000, max_block: 64 }).unwrap();
    /// let pool = Pool::new(PoolConfig { workers: Some(1), realtime_priority: None, ..PoolConfig::default() });
    /// assert_eq!(schedule.split_sums(), 0, "nothing measured yet");
    /// schedule.process_parallel(64, &pool);
    /// // The output's sum of 500 inputs, if it took 2 µs, is now split.
    /// assert!(schedule.split_sums() <= 1);
    /// ```
    pub fn split_sums(&self) -> usize {
        self.parallel.split_nodes().count()
    }

    pub(crate) fn parallel(&self) -> &Parallel {
        &self.parallel
    }

    pub(crate) fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The output node's output for the last processed block.
    pub fn output(&self) -> AudioRef<'_> {
        let slot = self.slot(self.output);
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
        self.slot(self.output).out_ch
    }

    fn slot(&self, i: usize) -> &Slot {
        // SAFETY: only called through `&self` outside processing, which needs `&mut self`
        // (or a `NodeRunner`/`Kahn`, which never call this), so no thread writes any slot.
        unsafe { &*self.slots[i].get() }
    }

    /// The sample rate and block size the schedule was compiled for.
    pub fn config(&self) -> CompileConfig {
        self.cfg
    }

    /// Frames by which the output lags the graph's sources: the largest sum of
    /// [`Node::latency`] along any path to the output node (compile has aligned every
    /// path). What a host reports as the graph's latency. Off the audio thread (allocates).
    ///
    /// ```
    /// use downbeat_graph::{CompileConfig, Graph};
    /// use downbeat_nodes::{Output, Sine, SineSettings};
    /// let mut g = Graph::new();
    /// let osc = g.add("osc", Sine::new(2, 48000, &SineSettings::default()));
    /// let out = g.add("out", Output::new(2));
    /// g.connect(osc, out);
    /// g.set_output(out);
    /// let schedule = g.compile(CompileConfig { sample_rate: 48000, max_block: 64 }).unwrap();
    /// assert_eq!(schedule.latency(), 0);
    /// ```
    pub fn latency(&self) -> usize {
        let mut leaves = vec![0usize; self.slots.len()];
        for i in 0..self.slots.len() {
            let arrives = self.preds[i].iter().map(|&p| leaves[p]).max().unwrap_or(0);
            leaves[i] = arrives + self.slot(i).node.latency();
        }
        leaves[self.output]
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

    /// The [`NodeMonitor`](crate::NodeMonitor)s of the nodes that have one (see
    /// [`Node::monitor`]), with the node's name, in processing order. The handles stay
    /// valid, and go on counting, after the schedule moves to the audio thread.
    pub fn monitors(&self) -> Vec<(String, SharedMonitor)> {
        self.names
            .iter()
            .zip(self.monitors.iter())
            .filter_map(|(name, m)| Some((name.clone(), m.clone()?)))
            .collect()
    }

    /// Asks every node for its state ([`Node::save_state`]) and returns those that have
    /// one, with the node's name, in processing order; a node that fails says why. Call it
    /// on the main thread once the schedule is no longer processing (a device hands the
    /// engine back when a run ends).
    ///
    /// ```
    /// use downbeat_graph::{CompileConfig, Graph};
    /// use downbeat_nodes::{Output, Sine, SineSettings};
    ///
    /// let mut g = Graph::new();
    /// let sine = g.add("sine", Sine::new(1, 48_000, &SineSettings::default()));
    /// let out = g.add("out", Output::new(1));
    /// g.connect(sine, out);
    /// g.set_output(out);
    /// let mut schedule = g.compile(CompileConfig { sample_rate: 48_000, max_block: 64 }).unwrap();
    /// assert!(schedule.save_states().is_empty()); // built-in nodes have no state to save
    /// ```
    pub fn save_states(&mut self) -> Vec<(String, Result<NodeState, StateError>)> {
        let mut states = Vec::new();
        for (name, cell) in self.names.iter().zip(self.slots.iter_mut()) {
            match cell.get_mut().node.save_state() {
                Ok(None) => {}
                Ok(Some(state)) => states.push((name.clone(), Ok(state))),
                Err(e) => states.push((name.clone(), Err(e))),
            }
        }
        states
    }

    /// For each position in processing order, the node's index in the original graph.
    pub fn order(&self) -> &[usize] {
        &self.original
    }

    /// Successors of the node at processing position `i`, as processing positions.
    pub fn successors(&self, i: usize) -> &[usize] {
        &self.succs[i]
    }

    /// Predecessors of the node at processing position `i`, as processing positions.
    pub fn predecessors(&self, i: usize) -> &[usize] {
        &self.preds[i]
    }
}

/// One node's parameters while its block is cut into sub-blocks.
struct SubBlocks<'a> {
    node: &'a mut dyn Node,
    params: &'a mut [ParamState],
    moving: &'a mut usize,
    refused: &'a mut u64,
    smoothing: u64,
    /// For a node that takes parameter offsets: the frame, in the block, of the sub-block
    /// being prepared, which its changes are stamped with (the block is not cut).
    offset: Option<usize>,
}

/// Hands `node` a parameter value: stamped with the sub-block's `offset` for a node that
/// takes offsets, else from its next sample.
fn hand(node: &mut dyn Node, offset: Option<usize>, p: usize, value: f32) -> bool {
    match offset {
        Some(frame) => node.set_param_at(frame, p, value),
        None => node.set_param(p, value),
    }
}

impl SubBlocks<'_> {
    /// Applies `body` at frame `now`: the parameter's new segment starts from the value it
    /// has reached there. A change that is over at once (a step) reaches the node now.
    fn apply(&mut self, body: NodeEvent, now: u64) {
        let (index, change) = match body {
            NodeEvent::Param { index, change } => (index, change),
            NodeEvent::Note(note) => {
                // The sub-block starts at this event's frame, so the note is for its first
                // frame; a node taking offsets computes the whole block in one call.
                if self.node.note(self.offset.unwrap_or(0), note).is_err() {
                    *self.refused += 1;
                }
                return;
            }
            // Never queued for a node (the transport takes its own).
            NodeEvent::Transport(_) => {
                *self.refused += 1;
                return;
            }
        };
        let p = usize::from(index);
        let Some(state) = self.params.get_mut(p).filter(|s| s.live) else {
            *self.refused += 1;
            return;
        };
        let reached = state.segment.value_at(now);
        let (shape, from, to, frames) = match change {
            Change::Step(v) => (Shape::Linear, v, v, 0),
            Change::Set(v) => (Shape::Linear, reached, v, self.smoothing),
            Change::Ramp(r) => (
                r.shape,
                r.from.unwrap_or(reached),
                r.to,
                u64::from(r.frames),
            ),
        };
        state.segment = Segment::ramp(shape, from, to, now, frames);
        state.changed = true;
        let moving = !state.segment.settled_at(now);
        if moving != state.moving {
            state.moving = moving;
            if moving {
                *self.moving += 1;
            } else {
                *self.moving -= 1;
            }
        }
        if !moving && !hand(&mut *self.node, self.offset, p, to) {
            *self.refused += 1;
        }
    }

    /// At frame `now`, the start of a sub-block: ends the ramps that are over (the node gets
    /// their final value), hands the node the others' values, and returns where the
    /// sub-block must end at the latest (`limit`, like the result, counts from
    /// `block_start`).
    fn update_moving(&mut self, now: u64, block_start: u64, limit: usize) -> usize {
        let mut end = limit;
        if *self.moving == 0 {
            return end;
        }
        for (p, state) in self.params.iter_mut().enumerate() {
            if !state.moving {
                continue;
            }
            state.changed = true;
            let segment = state.segment;
            if segment.settled_at(now) {
                state.moving = false;
                *self.moving -= 1;
                state.segment = Segment::constant(segment.target());
                if !hand(&mut *self.node, self.offset, p, segment.target()) {
                    *self.refused += 1;
                }
            } else if self.offset.is_some()
                || !self.node.follow_param(p, ParamCurve::new(segment, now))
            {
                // The value of the control period `now` falls in (or of the ramp's start,
                // when it began inside it): the same whichever block `now` starts.
                let period = now - now % CONTROL_FRAMES;
                if !hand(
                    &mut *self.node,
                    self.offset,
                    p,
                    segment.value_at(period.max(segment.start())),
                ) {
                    *self.refused += 1;
                }
                let next = period + CONTROL_FRAMES;
                end = end.min((next.min(segment.end()) - block_start) as usize);
            }
        }
        end
    }
}

impl Schedule {
    /// A unique id for this schedule, so that control handles made for it can tell when
    /// the engine runs another.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Tells every node whether the schedule renders offline (see
    /// [`Node::set_offline`]); the offline device says `true` before it renders. A schedule
    /// that [`take_over`](Schedule::take_over)s from another inherits the flag. Real-time
    /// safe.
    ///
    /// ```
    /// use downbeat_graph::{CompileConfig, Graph};
    /// use downbeat_nodes::{Output, Sine, SineSettings};
    /// let mut g = Graph::new();
    /// let s = g.add("s", Sine::new(1, 48_000, &SineSettings::default()));
    /// let out = g.add("out", Output::new(1));
    /// g.connect(s, out);
    /// g.set_output(out);
    /// let mut schedule = g.compile(CompileConfig { sample_rate: 48_000, max_block: 64 }).unwrap();
    /// assert!(!schedule.offline());
    /// schedule.set_offline(true);
    /// assert!(schedule.offline());
    /// ```
    pub fn set_offline(&mut self, offline: bool) {
        self.offline = offline;
        for cell in self.slots.iter_mut() {
            cell.get_mut().node.set_offline(offline);
        }
    }

    /// Whether the schedule renders offline ([`set_offline`](Schedule::set_offline)).
    pub fn offline(&self) -> bool {
        self.offline
    }

    /// Whether [`process`](Schedule::process) flushes subnormal numbers to zero on the
    /// calling thread (`downbeat_rt::denormals::FlushDenormals`); on by default, as it keeps
    /// nodes that are not built in (plugins, other crates' nodes) off the processor's slow
    /// path. The built-in nodes render the same bits either way (`tests/dsp_denormals.rs`
    /// and the CLI's `examples_denormals.rs` prove it), as a WebAssembly build, which has
    /// no such mode, must. The pool's workers flush whatever this says.
    ///
    /// ```
    /// use downbeat_graph::{CompileConfig, Graph};
    /// use downbeat_nodes::{Output, Sine, SineSettings};
    /// let render = |flush: bool| {
    ///     let mut g = Graph::new();
    ///     let s = g.add("s", Sine::new(1, 48_000, &SineSettings { freq: 440.0, amp: 1e-30, ..SineSettings::default() }));
    ///     let out = g.add("out", Output::new(1));
    ///     g.connect(s, out);
    ///     g.set_output(out);
    ///     let mut schedule = g.compile(CompileConfig { sample_rate: 48_000, max_block: 64 }).unwrap();
    ///     schedule.set_flush_denormals(flush);
    ///     schedule.process(64);
    ///     schedule.output().channel(0).iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    /// };
    /// assert_eq!(render(true), render(false));
    /// ```
    pub fn set_flush_denormals(&mut self, on: bool) {
        self.flush = on;
    }

    /// Queues an event for its frame. Real-time safe: the queue has a fixed capacity
    /// ([`DEFAULT_EVENT_CAPACITY`] unless [`set_event_capacity`](Self::set_event_capacity)
    /// changed it). An event for [`Target::Instruments`] takes one entry per node that plays
    /// notes, all or none.
    ///
    /// # Errors
    /// [`ControlError::QueueFull`] when the queue has no room (the event is not taken),
    /// [`ControlError::Stale`] when the event names a node or parameter this schedule does
    /// not have live (counted in [`EventStats::stale`]), and [`ControlError::NoInstrument`]
    /// for a note to the instruments of a schedule without any.
    pub fn push_event(&mut self, event: Event) -> Result<(), ControlError> {
        if let Some(on) = event.beat {
            return self.push_on_beat(on, event);
        }
        let ev = &self.events;
        let room = ev.capacity - ev.heap.len();
        let frame = event.frame.unwrap_or(self.position);
        match event.target {
            Target::Transport => {
                let NodeEvent::Transport(command) = event.body else {
                    self.events.stats.stale += 1;
                    return Err(ControlError::Stale);
                };
                if frame <= self.position {
                    if frame < self.position {
                        self.events.stats.late += 1;
                    }
                    self.events.stats.applied += 1;
                    return self
                        .transport
                        .apply(command)
                        .map_err(ControlError::Transport);
                }
                let capacity = self.waiting.capacity();
                self.waiting
                    .push(Entry {
                        due: Due::Frame(frame),
                        event,
                    })
                    .map_err(|_| ControlError::QueueFull { capacity })?;
            }
            Target::Node(key) => {
                let Some(slot) = self.accepts(key, &event.body) else {
                    self.events.stats.stale += 1;
                    return Err(ControlError::Stale);
                };
                if room == 0 {
                    return Err(ControlError::QueueFull {
                        capacity: ev.capacity,
                    });
                }
                self.queue(frame, slot as u32, event.body);
            }
            Target::Instruments => {
                if !matches!(event.body, NodeEvent::Note(_)) {
                    self.events.stats.stale += 1;
                    return Err(ControlError::Stale);
                }
                if self.instruments.is_empty() {
                    return Err(ControlError::NoInstrument);
                }
                if room < self.instruments.len() {
                    return Err(ControlError::QueueFull {
                        capacity: ev.capacity,
                    });
                }
                for k in 0..self.instruments.len() {
                    self.queue(frame, self.instruments[k], event.body);
                }
            }
        }
        Ok(())
    }

    /// Whether an event with `body` for `target` has somewhere to go here: a live parameter
    /// or an instrument of a node this schedule has, some instrument for a note to all, a
    /// command for the transport.
    fn check_target(&self, target: Target, body: &NodeEvent) -> Result<(), ControlError> {
        match target {
            Target::Node(key) if self.accepts(key, body).is_none() => Err(ControlError::Stale),
            Target::Instruments if self.instruments.is_empty() => Err(ControlError::NoInstrument),
            Target::Instruments if !matches!(body, NodeEvent::Note(_)) => Err(ControlError::Stale),
            Target::Transport if !matches!(body, NodeEvent::Transport(_)) => {
                Err(ControlError::Stale)
            }
            _ => Ok(()),
        }
    }

    /// An event waiting for a musical time: `NextBeat` and `NextBar` become beats where the
    /// song stands now; a beat already behind the song goes in at once, counted late.
    fn push_on_beat(&mut self, on: OnBeat, event: Event) -> Result<(), ControlError> {
        let now = self.transport.position();
        let map = self.transport.map();
        let beat = match on {
            OnBeat::Beat(b) => checked_beat(b).map_err(ControlError::Transport)?,
            OnBeat::NextBeat => map.next_beat(now.beat),
            OnBeat::NextBar => map.next_bar(now.beat),
        };
        if let Err(e) = self.check_target(event.target, &event.body) {
            if e == ControlError::Stale {
                self.events.stats.stale += 1;
            }
            return Err(e);
        }
        if map.frame_of(beat) < now.song_frame {
            self.events.stats.late += 1;
            return self.push_event(Event {
                frame: None,
                beat: None,
                ..event
            });
        }
        let capacity = self.waiting.capacity();
        self.waiting
            .push(Entry {
                due: Due::Beat(beat),
                event: Event {
                    beat: None,
                    ..event
                },
            })
            .map_err(|_| ControlError::QueueFull { capacity })
    }

    /// Room left in the event queue, in entries (a note to the instruments takes one per
    /// instrument).
    pub fn event_room(&self) -> usize {
        self.events.capacity - self.events.heap.len()
    }

    /// Nodes that play notes: the entries a note to [`Target::Instruments`] takes.
    pub fn instrument_count(&self) -> usize {
        self.instruments.len()
    }

    fn queue(&mut self, frame: u64, node: u32, body: NodeEvent) {
        let ev = &mut self.events;
        let pending = Pending {
            frame,
            seq: ev.seq,
            node,
            body,
        };
        ev.seq += 1;
        ev.heap_push(pending);
    }

    /// The position of node `key` if `body` suits it here: a live parameter of it, or a note
    /// for a node that plays notes.
    fn accepts(&self, key: NodeKey, body: &NodeEvent) -> Option<usize> {
        let i = self.keys.slot(key)?;
        let slot = self.slot(i);
        let ok = match *body {
            NodeEvent::Param { index, .. } => {
                slot.params.get(usize::from(index)).is_some_and(|p| p.live)
            }
            NodeEvent::Note(_) => slot.node.plays_notes(),
            NodeEvent::Transport(_) => false,
        };
        ok.then_some(i)
    }

    /// Takes over from `old`, the schedule this one replaces at a block boundary. A schedule
    /// an [`Editor`](crate::Editor) committed first moves in the running instances of the
    /// nodes it keeps (each node with its output buffer, parameter values and ramps,
    /// counters: one swap of a few fields per kept node); `old` is left holding the stand-ins
    /// and the nodes the edit removed, to be dropped off the audio thread; `old`'s preloaded
    /// timeline (automation, a MIDI file, a replay) moves here too and goes on where it was,
    /// its events reaching the same nodes (by [`NodeKey`]; those for a node the edit removed
    /// count as [`EventStats::stale`]). Any other schedule keeps its own preloaded timeline,
    /// whose frame 0 is `old`'s position. Then the schedule's timeline goes on from `old`'s
    /// position, the events `old` had queued for later frames move to the same nodes here
    /// (by [`NodeKey`]), and the event counters go on from `old`'s.
    /// Queued events for a node this schedule does not have live are counted in
    /// [`EventStats::stale`], and those its queue has no room for in
    /// [`EventStats::dropped`]; `old` is left without queued events.
    ///
    /// Real-time safe: bounded by the kept nodes and `old`'s event capacity, no allocation
    /// (both queues were allocated when their schedules were built). Call it on a fresh
    /// schedule, before it processes its first block, and only when
    /// [`can_take_over`](Schedule::can_take_over) says so.
    ///
    /// # Panics
    /// When [`can_take_over`](Schedule::can_take_over) is false: this schedule keeps nodes
    /// that run in another schedule than `old`.
    ///
    /// ```
    /// use downbeat_graph::{Change, CompileConfig, Event, Graph};
    /// use downbeat_nodes::{Gain, Output, Sine, SineSettings};
    ///
    /// let build = |with_osc: bool| {
    ///     let mut g = Graph::new();
    ///     let gain = g.add("gain", Gain::new(1, 1.0));
    ///     let out = g.add("out", Output::new(1));
    ///     if with_osc {
    ///         let osc = g.add("osc", Sine::new(1, 48000, &SineSettings { freq: 100.0, amp: 1.0, phase: 0.25 }));
    ///         g.connect(osc, gain);
    ///     }
    ///     g.connect(gain, out);
    ///     g.set_output(out);
    ///     g.compile(CompileConfig { sample_rate: 48000, max_block: 64 }).unwrap()
    /// };
    /// let mut old = build(false);
    /// let id = old.param_table().resolve("gain", "gain").unwrap();
    /// old.process(64);
    /// old.push_event(Event::param(Some(100), id, Change::Step(0.0))).unwrap();
    /// let mut new = build(true); // another order of nodes, the same `gain`
    /// new.take_over(&mut old);
    /// assert_eq!((new.position(), new.pending_events()), (64, 1));
    /// new.process(64);
    /// let left = new.output().channel(0);
    /// assert!(left[..36].iter().all(|&x| x != 0.0));
    /// assert!(left[36..].iter().all(|&x| x == 0.0));
    /// ```
    pub fn take_over(&mut self, old: &mut Schedule) {
        assert!(
            self.can_take_over(old),
            "schedule {} keeps nodes of schedule {:?}, not of {}",
            self.id,
            self.predecessor,
            old.id
        );
        for &(here, there) in self.keep.iter() {
            let (new, running) = (
                self.slots[here as usize].get_mut(),
                old.slots[there as usize].get_mut(),
            );
            debug_assert_eq!((new.in_ch, new.out_ch), (running.in_ch, running.out_ch));
            new.adopt(running);
        }
        // Taken: a second take-over (from another schedule) must not move stand-ins in.
        // The list goes with the old schedule, to be freed off the audio thread (`old` runs,
        // so its own list is empty and dropping it frees nothing).
        self.predecessor = None;
        old.keep = std::mem::take(&mut self.keep);
        if old.offline != self.offline {
            self.set_offline(old.offline);
        }
        self.position = old.position;
        self.transport.continue_from(&mut old.transport);
        let mut waiting = std::mem::replace(&mut old.waiting, Waiting::new(0));
        waiting.drain_into(|e| {
            if self.check_target(e.event.target, &e.event.body).is_err() {
                self.events.stats.stale += 1;
            } else if self.waiting.push(e).is_err() {
                self.events.stats.dropped += 1;
            }
        });
        old.waiting = waiting;
        if self.edited_from == Some(old.id) {
            self.song.continue_from(&mut old.song);
        } else {
            self.song.restart();
        }
        if self.edited_from == Some(old.id) {
            // An edit of `old`: its timeline goes on here where it was, entries and all (a
            // swap; the empty one goes back to be freed off the audio thread).
            std::mem::swap(&mut self.events.timeline, &mut old.events.timeline);
            self.events.cursor = old.events.cursor;
            self.events.origin = old.events.origin;
        } else {
            self.events.origin = old.position;
        }
        let mut stats = old.event_stats();
        stats.applied += self.events.stats.applied;
        stats.late += self.events.stats.late;
        stats.carried += self.events.stats.carried;
        stats.refused += self.events.stats.refused;
        stats.stale += self.events.stats.stale;
        stats.dropped += self.events.stats.dropped;
        self.events.stats = stats;
        self.events.seq = self.events.seq.max(old.events.seq);
        self.events.record = old.events.record;
        // Popped in order, so that what does not fit is the latest.
        while let Some(e) = old.events.heap_pop() {
            let key = old.keys.key(e.node as usize);
            match self.accepts(key, &e.body) {
                None => self.events.stats.stale += 1,
                Some(_) if self.event_room() == 0 => self.events.stats.dropped += 1,
                Some(slot) => {
                    let ev = &mut self.events;
                    ev.heap_push(Pending {
                        node: slot as u32,
                        ..e
                    });
                }
            }
        }
    }

    /// Whether this schedule can [`take_over`](Schedule::take_over) from `old`: always, but
    /// for a schedule an [`Editor`](crate::Editor) committed, which keeps nodes running in
    /// one particular schedule (the one the editor committed before it) and can only
    /// replace that one. Real-time safe.
    pub fn can_take_over(&self, old: &Schedule) -> bool {
        self.keep.is_empty() || self.predecessor == Some(old.id)
    }

    /// Where each node sits in this schedule, by name, for the next edit's compile.
    pub(crate) fn layout(&self) -> crate::edit::Previous {
        let slots = self
            .names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let slot = self.slot(i);
                let at = crate::edit::Placed {
                    position: i,
                    channels: (slot.in_ch, slot.out_ch),
                };
                (name.clone(), at)
            })
            .collect();
        crate::edit::Previous {
            schedule: self.id,
            slots,
        }
    }

    /// Nodes this schedule will move in from the one it replaces (0 once it has taken over,
    /// and for a schedule compiled from a [`Graph`](crate::Graph)).
    pub fn kept_nodes(&self) -> usize {
        self.keep.len()
    }

    /// Events waiting in the queue for their frame.
    pub fn pending_events(&self) -> usize {
        self.events.heap.len()
    }

    /// Replaces the preloaded timeline (automation, a replayed recording): events applied
    /// at their frames like queued ones, but held in a list of their own, so that any
    /// number fits. Events at the same frame keep their order, and come before queued
    /// events at that frame. A note to [`Target::Instruments`] goes to every node that
    /// plays notes here (an instrument a later edit adds does not get it). The timeline's
    /// frames count from the frame this schedule started at: 0, or the frame at which it
    /// [took over](Self::take_over) from another. Live edits carry it on to the schedules
    /// they commit. Allocates; call it off the audio thread.
    ///
    /// Events timed by a beat ([`Event::on_beat`] with [`OnBeat::Beat`]) go on the song's
    /// own timeline instead: each takes effect whenever the playing song reaches its beat,
    /// on that beat's frame, so a loop plays it again and nothing plays while the song is
    /// stopped.
    ///
    /// # Errors
    /// [`ControlError::Stale`] for an event on a node or parameter that is not live here,
    /// [`ControlError::NoInstrument`] for a note to the instruments when no node plays
    /// notes; an event without a frame is taken as frame 0.
    pub fn set_timeline(&mut self, events: Vec<Event>) -> Result<(), ControlError> {
        let (events, song) = self.split_song(events, 0)?;
        self.song.clear();
        self.song.add(song);
        let mut timeline = self.to_pending(events, 0)?;
        timeline.sort_by_key(Pending::key);
        self.events.timeline = timeline;
        self.events.cursor = 0;
        Ok(())
    }

    /// `events` without those timed by a beat ([`Event::beat`]), and those as entries of
    /// the song's timeline, numbered in order from `seq`.
    fn split_song(
        &self,
        events: Vec<Event>,
        seq: u64,
    ) -> Result<(Vec<Event>, Vec<SongEntry>), ControlError> {
        let (timed, framed): (Vec<Event>, Vec<Event>) =
            events.into_iter().partition(|e| e.beat.is_some());
        let mut song = Vec::with_capacity(timed.len());
        for e in timed {
            let beat = match e.beat {
                Some(OnBeat::Beat(b)) => checked_beat(b).map_err(ControlError::Transport)?,
                // "The next bar" means nothing before the song plays.
                _ => return Err(ControlError::Stale),
            };
            for p in self.to_pending(vec![Event { beat: None, ..e }], 0)? {
                song.push(SongEntry {
                    beat,
                    seq: seq + song.len() as u64,
                    node: p.node,
                    body: p.body,
                });
            }
        }
        Ok((framed, song))
    }

    /// `events` as timeline entries, numbered in order from `seq`.
    fn to_pending(&self, events: Vec<Event>, seq: u64) -> Result<Vec<Pending>, ControlError> {
        let mut out = Vec::with_capacity(events.len());
        for e in events {
            let frame = e.frame.unwrap_or(0);
            let mut add = |key: NodeKey| {
                out.push(Pending {
                    frame,
                    seq: seq + out.len() as u64,
                    node: key.0,
                    body: e.body,
                })
            };
            match e.target {
                Target::Node(key) => {
                    self.accepts(key, &e.body).ok_or(ControlError::Stale)?;
                    add(key)
                }
                Target::Transport => return Err(ControlError::Stale),
                Target::Instruments => {
                    if !matches!(e.body, NodeEvent::Note(_)) {
                        return Err(ControlError::Stale);
                    }
                    if self.instruments.is_empty() {
                        return Err(ControlError::NoInstrument);
                    }
                    for &i in self.instruments.iter() {
                        add(self.keys.key(i as usize));
                    }
                }
            }
        }
        Ok(out)
    }

    /// Adds `events` to the preloaded timeline, keeping what it holds (automation, a
    /// replay): a MIDI file's notes join a project's automation this way. At the same
    /// frame, the events already there come first, then these in their order. Allocates;
    /// call it off the audio thread.
    ///
    /// # Errors
    /// As [`set_timeline`](Self::set_timeline); nothing is added then.
    pub fn add_to_timeline(&mut self, events: Vec<Event>) -> Result<(), ControlError> {
        let (events, song) = self.split_song(events, self.song.next_seq())?;
        self.song.add(song);
        let base = self
            .events
            .timeline
            .iter()
            .map(|p| p.seq + 1)
            .max()
            .unwrap_or(0);
        let added = self.to_pending(events, base)?;
        let timeline = &mut self.events.timeline;
        timeline.extend(added);
        // Only what is still to come is sorted again; an event for a frame already played
        // takes effect at the start of the next block, counted as late.
        let done = self.events.cursor;
        timeline[done..].sort_by_key(Pending::key);
        Ok(())
    }

    /// Sets how many events the queue holds and how many can be due in one block. Allocates
    /// (off the audio thread). Queued events are kept: the capacity never shrinks below
    /// their number.
    ///
    /// # Panics
    /// If `capacity` is 0.
    pub fn set_event_capacity(&mut self, capacity: usize) {
        assert!(capacity > 0, "an event capacity of at least 1");
        let ev = &mut self.events;
        // Ascending order is a valid min-heap; the earliest events are the ones kept.
        let mut queued = Vec::with_capacity(ev.heap.len());
        while let Some(e) = ev.heap_pop() {
            queued.push(e);
        }
        let capacity = capacity.max(queued.len());
        ev.heap = queued;
        ev.reserve(capacity);
    }

    /// The capacity set by [`set_event_capacity`](Self::set_event_capacity).
    pub fn event_capacity(&self) -> usize {
        self.events.capacity
    }

    /// How long a [`Change::Set`] takes to reach its value ([`DEFAULT_SMOOTHING`] unless
    /// changed); zero makes every set a step.
    pub fn set_smoothing(&mut self, time: Duration) {
        self.smoothing = (time.as_secs_f64() * f64::from(self.cfg.sample_rate)).round() as u64;
    }

    /// Keeps the events applied in each block for [`applied`](Self::applied) (for
    /// recording), or stops keeping them.
    pub fn set_recording(&mut self, on: bool) {
        self.events.record = on;
        self.events.applied.clear();
    }

    /// The events applied in the last block, with the frames they took effect at, in the
    /// order they were applied; empty unless [`set_recording`](Self::set_recording) is on.
    pub fn applied(&self) -> &[Applied] {
        &self.events.applied
    }

    /// Counters of the event path.
    pub fn event_stats(&self) -> EventStats {
        let refused: u64 = (0..self.slots.len()).map(|i| self.slot(i).refused).sum();
        EventStats {
            refused: self.events.stats.refused + refused,
            ..self.events.stats
        }
    }

    /// The names and ranges behind this schedule's parameter ids, for control threads.
    pub fn param_table(&self) -> ParamTable {
        let nodes = (0..self.slots.len())
            .map(|i| {
                let slot = self.slot(i);
                let specs = slot.node.params();
                NodeParams {
                    name: self.names[i].clone(),
                    key: self.keys.key(i),
                    kind: slot.node.type_name(),
                    specs,
                    live: slot.params.iter().map(|p| p.live).collect(),
                    outputs: slot.node.outputs(),
                    reported: slot.outputs.to_vec(),
                    initial: slot
                        .params
                        .iter()
                        .map(|p| p.segment.value_at(self.position))
                        .collect(),
                    plays_notes: slot.node.plays_notes(),
                    release_seconds: slot.node.release_seconds(),
                }
            })
            .collect();
        let by_key = (0..self.slots.len())
            .map(|i| (self.keys.key(i), i))
            .collect();
        ParamTable {
            schedule: self.id,
            sample_rate: self.cfg.sample_rate,
            nodes,
            by_key,
        }
    }

    /// The value of parameter `id` from the next frame on, if it is live; for an output
    /// ([`ParamTable::resolve_watched`]), its value as of the latest block.
    pub fn param_value(&self, id: ParamId) -> Option<f32> {
        let slot = self.slots.get(self.keys.slot(id.node())?)?;
        // SAFETY: as in `slot`: `&self` outside processing.
        let slot = unsafe { &*slot.get() };
        match id.param().checked_sub(slot.params.len()) {
            Some(k) => (k < slot.outputs.len()).then(|| slot.node.output_value(k)),
            None => {
                let p = slot.params.get(id.param()).filter(|p| p.live)?;
                Some(p.segment.value_at(self.position))
            }
        }
    }

    /// Calls `f` with every live parameter whose value changed (an event applied, or a ramp
    /// moved it) since the last call, and its value from the next frame on; then with every
    /// output ([`Node::outputs`]) whose value differs from the one reported last, and its
    /// value as of the latest block (asked of the nodes that have outputs, and only of
    /// them). Values compare as bits, so a change of sign of zero or a NaN counts.
    /// Real-time safe: it walks the nodes, allocating nothing.
    pub fn take_param_changes(&mut self, mut f: impl FnMut(ParamId, f32)) {
        let now = self.position;
        for (n, cell) in self.slots.iter_mut().enumerate() {
            let slot = cell.get_mut();
            if !std::mem::take(&mut slot.touched) {
                continue;
            }
            for (p, state) in slot.params.iter_mut().enumerate() {
                let value = state.segment.value_at(now);
                // Bit patterns, so that a change of sign of zero or a NaN still counts.
                if std::mem::take(&mut state.changed) && value.to_bits() != state.reported.to_bits()
                {
                    state.reported = value;
                    let id = ParamId {
                        node: self.keys.key(n),
                        param: p as u16,
                    };
                    f(id, value);
                }
            }
        }
        for &n in self.with_outputs.iter() {
            let n = n as usize;
            let Slot {
                node,
                params,
                outputs,
                ..
            } = self.slots[n].get_mut();
            for (k, reported) in outputs.iter_mut().enumerate() {
                let value = node.output_value(k);
                if value.to_bits() != reported.to_bits() {
                    *reported = value;
                    let id = ParamId {
                        node: self.keys.key(n),
                        param: (params.len() + k) as u16,
                    };
                    f(id, value);
                }
            }
        }
    }

    /// Measures the level (peak, RMS) of every node's output, for per-node meters read
    /// with [`take_levels`](Self::take_levels); off by default (it reads every sample).
    pub fn set_levels(&mut self, on: bool) {
        self.levels = on;
    }

    /// Calls `f` with each node's position and its level since the last call, and starts
    /// over. Real-time safe.
    pub fn take_levels(&mut self, mut f: impl FnMut(usize, NodeLevel)) {
        for (n, cell) in self.slots.iter_mut().enumerate() {
            f(n, std::mem::take(&mut cell.get_mut().level));
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

/// Processes single nodes of one block, for schedulers outside this crate; see
/// [`Schedule::with_runner`].
pub struct NodeRunner<'a> {
    schedule: &'a Schedule,
    ctx: ProcessContext,
}

// SAFETY: a `NodeRunner` only exists inside `with_runner`, which holds `&mut Schedule`;
// concurrent use goes through the unsafe `run`, whose contract rules out data races.
unsafe impl Sync for NodeRunner<'_> {}

impl NodeRunner<'_> {
    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.schedule.len()
    }

    /// True when there are no nodes.
    pub fn is_empty(&self) -> bool {
        self.schedule.is_empty()
    }

    /// Predecessors of node `i` (processing positions).
    pub fn predecessors(&self, i: usize) -> &[usize] {
        self.schedule.predecessors(i)
    }

    /// Successors of node `i` (processing positions).
    pub fn successors(&self, i: usize) -> &[usize] {
        self.schedule.successors(i)
    }

    /// Sums node `i`'s inputs and processes it.
    ///
    /// # Safety
    /// Within one block, each node must be run exactly once, never concurrently with
    /// itself, and only after `run` of each of its predecessors has returned with a
    /// happens-before relation to this call (e.g. through an `AcqRel` counter).
    pub unsafe fn run(&self, i: usize) {
        let s = self.schedule;
        // SAFETY: forwarded to the caller: the node's inputs are done, so are its groups',
        // and the groups are this node's alone.
        unsafe {
            for g in s.groups.of_node(i) {
                s.sum_group(g, &self.ctx, NodeSample::OTHER_THREAD);
            }
            s.run_slot(i, &self.ctx, NodeSample::OTHER_THREAD, false)
        }
    }
}

/// Adds up `inputs` buffers (`src(k)` is input `k`'s, `in_ch` channels of `stride` frames)
/// into `dst`, over `frames` of every channel: frame by frame, the inputs in order, so any
/// cut of the frames gives the same bits.
///
/// # Safety
/// `dst` points to `in_ch` channels of `stride` frames that only this thread accesses in
/// `frames` for the duration, and no `src` buffer is written meanwhile.
unsafe fn add_up<'a>(
    inputs: usize,
    src: impl Fn(usize) -> &'a [f32],
    in_ch: usize,
    stride: usize,
    dst: *mut f32,
    frames: std::ops::Range<usize>,
) {
    for c in 0..in_ch {
        let mut at = c * stride + frames.start;
        let end = c * stride + frames.end;
        while at < end {
            let n = (end - at).min(SUM_CHUNK);
            let range = at..at + n;
            // SAFETY: within the buffer (`range.end <= in_ch * stride`), and these frames
            // are this thread's alone (the caller's promise).
            let dst = unsafe { std::slice::from_raw_parts_mut(dst.add(at), n) };
            if let Ok(dst) = <&mut [f32; SUM_CHUNK]>::try_from(&mut *dst) {
                // A whole chunk: the running sums stay in registers while every input is
                // added, instead of going through memory once per input; the loads of many
                // inputs are then in flight at once.
                let mut acc: [f32; SUM_CHUNK] = src(0)[range.clone()].try_into().expect("a chunk");
                for k in 1..inputs {
                    let s: &[f32; SUM_CHUNK] = src(k)[range.clone()].try_into().expect("a chunk");
                    for (a, s) in acc.iter_mut().zip(s) {
                        *a += s;
                    }
                }
                *dst = acc;
            } else {
                dst.copy_from_slice(&src(0)[range.clone()]);
                for k in 1..inputs {
                    for (d, s) in dst.iter_mut().zip(&src(k)[range.clone()]) {
                        *d += s;
                    }
                }
            }
            at += n;
        }
    }
}
