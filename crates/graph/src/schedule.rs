//! [`Schedule`]: a compiled graph the audio thread runs block by block, serially or on a
//! [`Pool`].

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use downbeat_rt::pool::{Pool, WorkList};

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
    /// Several incoming edges: sum the predecessors' outputs, in index order, into the
    /// input buffer. The fixed order makes serial and parallel output bit-identical.
    Sum(Vec<usize>),
}

pub(crate) struct Slot {
    pub(crate) node: Box<dyn Node>,
    pub(crate) in_ch: usize,
    pub(crate) out_ch: usize,
    pub(crate) input: InputPlan,
    pub(crate) in_buf: Vec<f32>,
    pub(crate) out_buf: Vec<f32>,
}

/// Nodes made ready during one block, in the order they became ready. Each node is pushed
/// at most once per block, so `n` slots never wrap; `reset` starts the next block.
struct ReadyQueue {
    slots: Box<[AtomicUsize]>,
    head: AtomicUsize,
    tail: AtomicUsize,
}

impl ReadyQueue {
    fn new(n: usize) -> Self {
        Self {
            slots: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
        }
    }

    fn reset(&self) {
        for s in self.slots.iter() {
            s.store(0, Ordering::Relaxed);
        }
        self.head.store(0, Ordering::Relaxed);
        self.tail.store(0, Ordering::Relaxed);
    }

    fn push(&self, node: usize) {
        let t = self.tail.fetch_add(1, Ordering::Relaxed);
        // Stored as node + 1 so that 0 means "claimed but not yet written".
        self.slots[t].store(node + 1, Ordering::Release);
    }

    fn pop(&self) -> Option<usize> {
        loop {
            let h = self.head.load(Ordering::Acquire);
            if h >= self.tail.load(Ordering::Acquire) {
                return None;
            }
            let v = self.slots[h].load(Ordering::Acquire);
            if v == 0 {
                // A pusher has claimed the slot and is about to write it: try again later.
                return None;
            }
            if self
                .head
                .compare_exchange_weak(h, h + 1, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return Some(v - 1);
            }
        }
    }

    fn len(&self) -> usize {
        self.tail
            .load(Ordering::Relaxed)
            .saturating_sub(self.head.load(Ordering::Relaxed))
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
    // Each slot is touched mutably by exactly one thread at a time: the serial processor
    // holds `&mut self`; the parallel one hands a node to one thread once all its
    // predecessors are done (see `Kahn`).
    slots: Box<[UnsafeCell<Slot>]>,
    // Topology, outside the cells so any thread may read it while nodes run.
    preds: Box<[Box<[usize]>]>,
    succs: Box<[Box<[usize]>]>,
    remaining: Box<[AtomicUsize]>,
    ready: ReadyQueue,
    to_do: AtomicUsize,
    profiling: AtomicBool,
    node_nanos: Box<[AtomicU64]>,
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
        succs: Vec<Vec<usize>>,
        names: Vec<String>,
        original: Vec<usize>,
        output: usize,
        cfg: CompileConfig,
    ) -> Self {
        let n = slots.len();
        let preds: Box<[Box<[usize]>]> = slots
            .iter()
            .map(|s| match &s.input {
                InputPlan::Silence => Box::from([]),
                InputPlan::Direct(p) => Box::from([*p]),
                InputPlan::Sum(p) => p.clone().into_boxed_slice(),
            })
            .collect();
        Self {
            slots: slots.into_iter().map(UnsafeCell::new).collect(),
            preds,
            succs: succs.into_iter().map(Vec::into_boxed_slice).collect(),
            remaining: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            ready: ReadyQueue::new(n),
            to_do: AtomicUsize::new(0),
            profiling: AtomicBool::new(false),
            node_nanos: (0..n).map(|_| AtomicU64::new(0)).collect(),
            names,
            original,
            output,
            cfg,
            position: 0,
            frames: 0,
        }
    }

    /// Runs every node once for a block of `frames` frames, in topological order, on the
    /// calling thread.
    ///
    /// # Panics
    /// If `frames` is 0 or exceeds the `max_block` the schedule was compiled for.
    pub fn process(&mut self, frames: usize) {
        let ctx = self.begin(frames);
        for i in 0..self.slots.len() {
            // SAFETY: `&mut self` excludes every other access, and slots run in
            // topological order, so predecessors are complete.
            unsafe { self.run_slot(i, &ctx) };
        }
        self.end(frames);
    }

    /// Runs every node once for a block of `frames` frames on `pool` and the calling
    /// thread, with Kahn's algorithm: a node runs as soon as its last predecessor is done,
    /// and the thread that finishes that predecessor runs the first such successor itself.
    /// The output is bit-identical to [`process`](Schedule::process).
    ///
    /// Real-time safe: every structure it uses was allocated by `compile`; the only system
    /// call is the pool's counted wake of parked workers.
    ///
    /// # Panics
    /// If `frames` is 0 or exceeds the `max_block` the schedule was compiled for.
    pub fn process_parallel(&mut self, frames: usize, pool: &Pool) {
        let ctx = self.begin(frames);
        self.ready.reset();
        for (i, p) in self.preds.iter().enumerate() {
            let d = p.len();
            self.remaining[i].store(d, Ordering::Relaxed);
            if d == 0 {
                self.ready.push(i);
            }
        }
        self.to_do.store(self.slots.len(), Ordering::Release);
        pool.run(&Kahn {
            schedule: self,
            ctx,
        });
        self.end(frames);
    }

    fn begin(&self, frames: usize) -> ProcessContext {
        assert!(
            frames > 0 && frames <= self.cfg.max_block,
            "block of {frames} frames outside 1..={}",
            self.cfg.max_block
        );
        ProcessContext {
            sample_rate: self.cfg.sample_rate,
            frames,
            position: self.position,
        }
    }

    fn end(&mut self, frames: usize) {
        self.position += frames as u64;
        self.frames = frames;
    }

    /// Sums the inputs of node `i` and processes it.
    ///
    /// # Safety
    /// No other thread may access slot `i`, and every predecessor of `i` must be complete
    /// for this block with its writes visible to this thread.
    unsafe fn run_slot(&self, i: usize, ctx: &ProcessContext) {
        let started = self.profiling.load(Ordering::Relaxed).then(Instant::now);
        let stride = self.cfg.max_block;
        let frames = ctx.frames;
        // SAFETY: exclusive access to slot `i` is the caller's promise.
        let slot = unsafe { &mut *self.slots[i].get() };
        // SAFETY: predecessors are complete and nobody writes them during this block;
        // they are other slots than `i` (the graph is acyclic), so no aliasing with `slot`.
        let pred = |p: usize| unsafe { &*self.slots[p].get() };
        let input = match &slot.input {
            InputPlan::Silence => AudioRef::new(&slot.in_buf, slot.in_ch, stride, frames),
            InputPlan::Direct(p) => AudioRef::new(&pred(*p).out_buf, slot.in_ch, stride, frames),
            InputPlan::Sum(preds) => {
                for c in 0..slot.in_ch {
                    let range = c * stride..c * stride + frames;
                    let dst = &mut slot.in_buf[range.clone()];
                    dst.copy_from_slice(&pred(preds[0]).out_buf[range.clone()]);
                    for &p in &preds[1..] {
                        for (d, s) in dst.iter_mut().zip(&pred(p).out_buf[range.clone()]) {
                            *d += s;
                        }
                    }
                }
                AudioRef::new(&slot.in_buf, slot.in_ch, stride, frames)
            }
        };
        let output = AudioMut::new(&mut slot.out_buf, slot.out_ch, stride, frames);
        slot.node.process(ctx, input, output);
        if let Some(t) = started {
            self.node_nanos[i].fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
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
        let ctx = self.begin(frames);
        let r = f(&NodeRunner {
            schedule: self,
            ctx,
        });
        self.end(frames);
        r
    }

    /// Starts or stops measuring the time each node takes (two clock reads per node).
    pub fn set_profiling(&self, on: bool) {
        self.profiling.store(on, Ordering::Relaxed);
    }

    /// Total time spent in the node at processing position `i` while profiling was on.
    pub fn node_time(&self, i: usize) -> std::time::Duration {
        std::time::Duration::from_nanos(self.node_nanos[i].load(Ordering::Relaxed))
    }

    /// Ready-queue length right now (diagnostics).
    fn ready_len(&self) -> usize {
        self.ready.len()
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
        &self.succs[i]
    }

    /// Predecessors of the node at processing position `i`, as processing positions.
    pub fn predecessors(&self, i: usize) -> &[usize] {
        &self.preds[i]
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

/// One block of Kahn's algorithm over a schedule, as a [`WorkList`] for the pool.
struct Kahn<'a> {
    schedule: &'a Schedule,
    ctx: ProcessContext,
}

// SAFETY: `Kahn` exists only inside `process_parallel`, which holds `&mut Schedule`, so the
// pool's threads are the only ones touching the schedule. Each node index is handed out
// once per block (by the ready queue or as a reserved successor) and only after its last
// predecessor's `remaining` decrement, whose AcqRel ordering (and the queue's
// Release/Acquire) makes the predecessors' outputs visible. Nodes are `Send`, so running
// them on any thread is sound.
unsafe impl Sync for Kahn<'_> {}

impl WorkList for Kahn<'_> {
    type Item = usize;

    fn next_item(&self) -> Option<usize> {
        self.schedule.ready.pop()
    }

    fn do_work(&self, i: usize) -> Option<usize> {
        let s = self.schedule;
        // SAFETY: see the `Sync` impl: `i` is ours alone and its predecessors are done.
        unsafe { s.run_slot(i, &self.ctx) };
        let mut reserved = None;
        for &next in s.successors(i).iter() {
            if s.remaining[next].fetch_sub(1, Ordering::AcqRel) == 1 {
                if reserved.is_none() {
                    reserved = Some(next);
                } else {
                    s.ready.push(next);
                }
            }
        }
        s.to_do.fetch_sub(1, Ordering::Release);
        reserved
    }

    fn is_done(&self) -> bool {
        self.schedule.to_do.load(Ordering::Acquire) == 0
    }

    fn ready(&self) -> usize {
        self.schedule.ready_len()
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
        // SAFETY: forwarded to the caller.
        unsafe { self.schedule.run_slot(i, &self.ctx) }
    }
}
