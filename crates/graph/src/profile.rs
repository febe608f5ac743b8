//! What a [`Schedule`](crate::Schedule) measures of its nodes while it runs them: when and
//! how long each node of the last timed block ran, on which thread, and the running totals
//! that `downbeat run --report` prints.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Frames between two blocks that are timed when profiling is off: the parallel processor
/// ranks nodes by their measured times, and timing one block per this many frames (every
/// 32nd block of 64 frames, every 2nd of 1024; about 43 ms at 48 kHz) keeps the two clock
/// reads per node, whose cost does not grow with the block, a small part of the work, which
/// does. The serial processor ranks nothing and times no block unless profiling: the clock
/// reads of one block in 16 cost a chain of a thousand gains 12% of its time.
pub(crate) const TIME_EVERY_FRAMES: u64 = 2048;

/// One node in the last timed block; see [`Schedule::node_sample`](crate::Schedule::node_sample).
///
/// ```
/// use downbeat_graph::{CompileConfig, Graph};
/// use downbeat_nodes::{Output, Sine, SineSettings};
///
/// let mut g = Graph::new();
/// let osc = g.add("osc", Sine::new(1, 48000, &SineSettings::default()));
/// let out = g.add("out", Output::new(1));
/// g.connect(osc, out);
/// g.set_output(out);
/// let mut schedule = g.compile(CompileConfig { sample_rate: 48000, max_block: 64 }).unwrap();
/// schedule.set_profiling(true);
/// schedule.process(64);
/// let osc = schedule.node_sample(0);
/// let out = schedule.node_sample(1);
/// assert_eq!(osc.thread, 0);
/// assert!(out.start >= osc.start + osc.time, "the output runs after its input");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeSample {
    /// When the node started, counted from the start of the block.
    pub start: Duration,
    /// How long it ran (summing its inputs included, unless the parallel processor split
    /// the sum across threads: then the sum's parts are not counted).
    pub time: Duration,
    /// The thread that ran it: 0 for the caller of `process` or `process_parallel`, `k + 1`
    /// for the pool's worker `k`; [`NodeSample::OTHER_THREAD`] for a block run through
    /// [`Schedule::with_runner`](crate::Schedule::with_runner).
    pub thread: usize,
}

impl NodeSample {
    /// The thread number of nodes run by a scheduler outside this crate.
    pub const OTHER_THREAD: usize = usize::MAX;
}

/// The clock for node times; wasm32-unknown-unknown has none (`Instant::now` panics there),
/// so nodes run untimed in the browser.
fn now() -> Option<Instant> {
    #[cfg(not(target_arch = "wasm32"))]
    return Some(Instant::now());
    #[cfg(target_arch = "wasm32")]
    return None;
}

pub(crate) struct Profile {
    on: AtomicBool,
    /// Whether the current block is timed: profiling, or one block per
    /// [`TIME_EVERY_FRAMES`].
    timing: bool,
    began: Option<Instant>,
    /// Frames since the last timed block (the first block is timed).
    since: u64,
    start: Box<[AtomicU64]>,
    time: Box<[AtomicU64]>,
    thread: Box<[AtomicUsize]>,
    /// Per node: how long it spent summing its inputs itself in the last timed block.
    sum: Box<[AtomicU64]>,
    total: Box<[AtomicU64]>,
}

impl Profile {
    pub(crate) fn new(n: usize) -> Self {
        let zeros = || (0..n).map(|_| AtomicU64::new(0)).collect();
        Self {
            on: AtomicBool::new(false),
            timing: false,
            began: None,
            since: TIME_EVERY_FRAMES,
            start: zeros(),
            time: zeros(),
            thread: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            sum: zeros(),
            total: zeros(),
        }
    }

    pub(crate) fn set_on(&self, on: bool) {
        self.on.store(on, Ordering::Relaxed);
    }

    /// Starts a block of `frames`; returns whether it is timed: always while profiling,
    /// else, if the block is one that ranks (the parallel processor's), once
    /// [`TIME_EVERY_FRAMES`] have gone by since the last timed block.
    pub(crate) fn begin(&mut self, rank: bool, frames: usize) -> bool {
        self.timing = self.on.load(Ordering::Relaxed) || (rank && self.since >= TIME_EVERY_FRAMES);
        if self.timing {
            self.since = 0;
        }
        self.since = self.since.saturating_add(frames as u64);
        self.began = self.timing.then(now).flatten();
        self.timing
    }

    /// The clock reading to pass to [`ran`](Profile::ran), if this block is timed.
    pub(crate) fn starting(&self) -> Option<Instant> {
        self.timing.then(now).flatten()
    }

    /// Records that node `i`, which started at `started` (if the block is timed), has just
    /// summed its inputs.
    pub(crate) fn summed(&self, i: usize, started: Option<Instant>) {
        if let Some(t0) = started {
            self.sum[i].store(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
    }

    /// How long node `i` spent summing its inputs itself in the last timed block where it
    /// did, in nanoseconds (0: never; the parts of a split sum are timed apart).
    pub(crate) fn sum_nanos(&self, i: usize) -> u64 {
        self.sum[i].load(Ordering::Relaxed)
    }

    /// Records that node `i` ran on `thread`, since `started` if the block is timed.
    pub(crate) fn ran(&self, i: usize, thread: usize, started: Option<Instant>) {
        // Written only when it changes: nodes next to each other in this array run on
        // different threads, and a store of the same value would still take the cache line
        // from the other core every block.
        if self.thread[i].load(Ordering::Relaxed) != thread {
            self.thread[i].store(thread, Ordering::Relaxed);
        }
        let (Some(t0), Some(began)) = (started, self.began) else {
            return;
        };
        let nanos = |d: Duration| d.as_nanos() as u64;
        let time = nanos(t0.elapsed());
        self.start[i].store(
            nanos(t0.saturating_duration_since(began)),
            Ordering::Relaxed,
        );
        self.time[i].store(time, Ordering::Relaxed);
        if self.on.load(Ordering::Relaxed) {
            self.total[i].fetch_add(time, Ordering::Relaxed);
        }
    }

    /// The thread that ran node `i` last.
    pub(crate) fn thread(&self, i: usize) -> usize {
        self.thread[i].load(Ordering::Relaxed)
    }

    /// Node `i`'s time in the last timed block, in nanoseconds.
    pub(crate) fn nanos(&self, i: usize) -> u64 {
        self.time[i].load(Ordering::Relaxed)
    }

    pub(crate) fn sample(&self, i: usize) -> NodeSample {
        NodeSample {
            start: Duration::from_nanos(self.start[i].load(Ordering::Relaxed)),
            time: Duration::from_nanos(self.nanos(i)),
            thread: self.thread(i),
        }
    }

    pub(crate) fn total(&self, i: usize) -> Duration {
        Duration::from_nanos(self.total[i].load(Ordering::Relaxed))
    }
}
