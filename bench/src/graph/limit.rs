//! The limit a callback could reach on N cores, from the per-node timings the schedule takes
//! (`Schedule::node_sample`), and where the measured time goes beyond it.
//!
//! Per callback: the *work* is the sum of the node times; the *critical path* the longest
//! path through the graph weighing each node by its time; the *ideal* the larger of work / N
//! and the critical path. A scheduler that kept N cores busy from the first instant to the
//! last, in the best order, would take the ideal. Beyond it the measured time holds waking
//! the workers, waiting for the last inputs, scheduling itself, and node times inflated by
//! cache misses (which show as more work than the same nodes take serially).

use downbeat_graph::{NodeSample, Schedule};

/// Per-callback figures of one run, in units of the block period (load).
pub struct Limit {
    cores: f64,
    period_ns: f64,
    /// Scratch: when each node would finish on unbounded cores.
    finish: Vec<f64>,
    /// The thread each node ran on in the previous callback.
    last_thread: Vec<usize>,
    /// Per node: summed time and count of callbacks in which it stayed on its thread, and in
    /// which it moved.
    stayed: Vec<(f64, u32)>,
    moved: Vec<(f64, u32)>,
    pub ideal: Vec<f64>,
    pub work: Vec<f64>,
    /// Microseconds from the start of the block to the first node on a pool worker
    /// (Downbeat only).
    pub wake: Vec<f64>,
    /// Thread time (N x measured) not spent in nodes.
    pub idle: Vec<f64>,
    /// The end of the block: from the moment one thread ran its last node to the end of
    /// the last node on any thread, when the other waited for the final inputs (Downbeat
    /// only: it needs to know which thread ran what).
    pub tail: Vec<f64>,
    /// The callback's time outside every node: before the first started, after the last
    /// ended (events, queues, opening and closing the pool).
    pub outside: Vec<f64>,
}

impl Limit {
    pub fn new(s: &Schedule, cores: usize, callbacks: usize) -> Self {
        let cfg = s.config();
        let n = s.len();
        Self {
            cores: cores.max(1) as f64,
            period_ns: cfg.max_block as f64 / f64::from(cfg.sample_rate) * 1e9,
            finish: vec![0.0; n],
            last_thread: vec![NodeSample::OTHER_THREAD; n],
            stayed: vec![(0.0, 0); n],
            moved: vec![(0.0, 0); n],
            ideal: Vec::with_capacity(callbacks),
            work: Vec::with_capacity(callbacks),
            wake: Vec::with_capacity(callbacks),
            idle: Vec::with_capacity(callbacks),
            tail: Vec::with_capacity(callbacks),
            outside: Vec::with_capacity(callbacks),
        }
    }

    /// Reads the last block's samples; `load` is the measured load of that callback.
    pub fn observe(&mut self, s: &Schedule, load: f64) {
        let mut work = 0.0;
        let mut path: f64 = 0.0;
        let mut wake = f64::INFINITY;
        let (mut first, mut end) = (f64::INFINITY, 0.0f64);
        // When the caller (thread 0) and the workers (any other) ran their last node.
        let (mut caller_end, mut workers_end) = (0.0f64, 0.0f64);
        for i in 0..s.len() {
            let sample = s.node_sample(i);
            let t = sample.time.as_nanos() as f64;
            let start = sample.start.as_nanos() as f64;
            first = first.min(start);
            end = end.max(start + t);
            match sample.thread {
                0 => caller_end = caller_end.max(start + t),
                NodeSample::OTHER_THREAD => {}
                _ => workers_end = workers_end.max(start + t),
            }
            work += t;
            let ready = s
                .predecessors(i)
                .iter()
                .map(|&p| self.finish[p])
                .fold(0.0, f64::max);
            self.finish[i] = ready + t;
            path = path.max(self.finish[i]);
            if sample.thread != 0 && sample.thread != NodeSample::OTHER_THREAD {
                wake = wake.min(sample.start.as_nanos() as f64);
            }
            let last = std::mem::replace(&mut self.last_thread[i], sample.thread);
            if sample.thread != NodeSample::OTHER_THREAD && last != NodeSample::OTHER_THREAD {
                let bucket = if sample.thread == last {
                    &mut self.stayed[i]
                } else {
                    &mut self.moved[i]
                };
                bucket.0 += t;
                bucket.1 += 1;
            }
        }
        self.ideal
            .push((work / self.cores).max(path) / self.period_ns);
        self.work.push(work / self.period_ns);
        self.idle.push(load * self.cores - work / self.period_ns);
        if wake.is_finite() {
            self.wake.push(wake / 1e3);
            self.tail
                .push((end - caller_end.min(workers_end)) / self.period_ns);
        }
        if first.is_finite() && s.node_sample(0).thread != NodeSample::OTHER_THREAD {
            self.outside.push(load - (end - first) / self.period_ns);
        }
    }

    /// Over the nodes that both stayed on their thread and moved in some callbacks: the
    /// median of (mean time when moved / mean time when stayed), and how many nodes and
    /// moves it rests on. `None` when no node did both.
    pub fn moved_vs_stayed(&self) -> Option<(f64, usize, u32)> {
        let mut ratios: Vec<f64> = self
            .stayed
            .iter()
            .zip(&self.moved)
            .filter(|(s, m)| s.1 > 0 && m.1 > 0 && s.0 > 0.0)
            .map(|(s, m)| (m.0 / f64::from(m.1)) / (s.0 / f64::from(s.1)))
            .collect();
        if ratios.is_empty() {
            return None;
        }
        let moves = self.moved.iter().map(|m| m.1).sum();
        ratios.sort_by(f64::total_cmp);
        Some((ratios[ratios.len() / 2], ratios.len(), moves))
    }
}
