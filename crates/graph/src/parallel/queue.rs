//! A thread's queue of ready tasks for one block, from which any thread claims runs of
//! consecutive tasks.

#[cfg(loom)]
use loom::sync::atomic::{AtomicUsize, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicUsize, Ordering};

/// Tasks ready in one block: first the queue's share of the graph's sources, ready from the
/// start of every block, then the tasks made ready during it, in the order they became
/// ready. Each task is in the queue at most once per block, so `n` slots never wrap;
/// `reset` starts the next block.
///
/// Each queue on cache lines of its own: the threads claim from their own queues at once,
/// and two queues' heads on one line would move it between the cores on every claim.
#[repr(align(128))]
pub(crate) struct ReadyQueue {
    slots: Box<[AtomicUsize]>,
    head: AtomicUsize,
    tail: AtomicUsize,
    /// Slots `..sources` hold the sources ([`set_sources`](ReadyQueue::set_sources)): they
    /// stay written from block to block, so that a block starts without a push per source
    /// (a thousand sources cost the audio thread a thousand shared writes every block).
    sources: usize,
}

/// Slots `from..to` of one queue, claimed by one thread: the tasks in them are its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Claim {
    pub(crate) from: usize,
    pub(crate) to: usize,
}

impl ReadyQueue {
    pub(crate) fn new(n: usize) -> Self {
        Self {
            slots: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            sources: 0,
        }
    }

    /// Makes `tasks` the sources every block starts with, in this order. Between blocks
    /// only (`&mut`): nothing claims meanwhile, and the pool's opening of the next block
    /// publishes the slots.
    pub(crate) fn set_sources(&mut self, tasks: impl Iterator<Item = usize>) {
        let mut k = 0;
        for t in tasks {
            self.slots[k].store(t + 1, Ordering::Relaxed);
            k += 1;
        }
        let used = self.tail.load(Ordering::Relaxed).min(self.slots.len());
        for s in &self.slots[k..used.max(self.sources).max(k)] {
            s.store(0, Ordering::Relaxed);
        }
        self.sources = k;
        self.reset();
    }

    /// Empties the queue but for its sources, which are ready again.
    pub(crate) fn reset(&self) {
        let used = self.tail.load(Ordering::Relaxed).min(self.slots.len());
        for s in &self.slots[self.sources.min(used)..used] {
            s.store(0, Ordering::Relaxed);
        }
        self.head.store(0, Ordering::Relaxed);
        self.tail.store(self.sources, Ordering::Relaxed);
    }

    pub(crate) fn push(&self, task: usize) {
        let t = self.tail.fetch_add(1, Ordering::Relaxed);
        // Stored as task + 1 so that 0 means "claimed but not yet written".
        self.slots[t].store(task + 1, Ordering::Release);
    }

    /// Claims the oldest ready tasks: the first, and after it as many as fit with it in
    /// `budget` nanoseconds by `cost` (each task's measured time), or more tasks that each
    /// cost less than `budget` while they are no more than half of the ready ones and fit in
    /// `cap`. A run of tiny tasks is then one hand-over instead of one each, and a long queue
    /// of them goes in runs that halve as it empties (guided self-scheduling): few
    /// hand-overs while there is much to do, small ones at the end, where the threads even
    /// out. A task costing `budget` or more goes alone.
    pub(crate) fn claim(&self, cost: &[u64], budget: u64, cap: u64) -> Option<Claim> {
        loop {
            let h = self.head.load(Ordering::Acquire);
            let t = self.tail.load(Ordering::Acquire);
            let half = (t.saturating_sub(h)).div_ceil(2);
            let mut end = h;
            let mut spent = 0u64;
            let mut tiny = true;
            while end < t {
                let v = self.slots[end].load(Ordering::Acquire);
                if v == 0 {
                    // A pusher has claimed the slot and is about to write it: stop here,
                    // the tasks before it are whole.
                    break;
                }
                let c = cost[v - 1];
                let with = spent.saturating_add(c);
                tiny &= c < budget;
                let guided = tiny && end - h < half && with <= cap;
                if end > h && with > budget && !guided {
                    break;
                }
                spent = with;
                end += 1;
            }
            if end == h {
                return None;
            }
            if self
                .head
                .compare_exchange_weak(h, end, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return Some(Claim { from: h, to: end });
            }
        }
    }

    /// The task in slot `k` of a claim: written before the claim (the claim read it), and
    /// never rewritten before `reset`.
    pub(crate) fn task(&self, k: usize) -> usize {
        // Acquire pairs with the push's Release: what the task's predecessors wrote before
        // it was pushed is visible to the claimer.
        self.slots[k].load(Ordering::Acquire) - 1
    }

    pub(crate) fn len(&self) -> usize {
        self.tail
            .load(Ordering::Relaxed)
            .saturating_sub(self.head.load(Ordering::Relaxed))
    }
}

/// A value alone on its cache line (two lines, for CPUs that fetch pairs).
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_takes_tiny_tasks_up_to_the_budget_and_a_big_one_alone() {
        let q = ReadyQueue::new(6);
        let cost = [10, 10, 10, 100, 10, 10];
        for t in 0..6 {
            q.push(t);
        }
        // 10 + 10 + 10 fit in 35; the fourth would not.
        assert_eq!(q.claim(&cost, 35, 35), Some(Claim { from: 0, to: 3 }));
        // 100 is over budget but first: alone.
        assert_eq!(q.claim(&cost, 35, 35), Some(Claim { from: 3, to: 4 }));
        assert_eq!(q.claim(&cost, 35, 35), Some(Claim { from: 4, to: 6 }));
        assert_eq!((q.task(4), q.task(5)), (4, 5));
        assert_eq!(q.claim(&cost, 35, 35), None);
    }

    #[test]
    fn a_long_queue_of_tiny_tasks_goes_in_runs_that_halve() {
        let q = ReadyQueue::new(16);
        for t in 0..16 {
            q.push(t);
        }
        // Each costs 10 of a budget of 25: two fit, but half the queue goes while within
        // the cap of 1000; then half of what is left, and so on.
        let runs: Vec<usize> = std::iter::from_fn(|| q.claim(&[10; 16], 25, 1000))
            .map(|c| c.to - c.from)
            .collect();
        assert_eq!(runs, [8, 4, 2, 2]);
        // The cap holds a run to 30 (three tasks) however long the queue.
        q.reset();
        for t in 0..16 {
            q.push(t);
        }
        assert_eq!(q.claim(&[10; 16], 25, 30), Some(Claim { from: 0, to: 3 }));
        // A task of the budget or more is never taken into a longer run, nor one into its.
        q.reset();
        for t in 0..8 {
            q.push(t);
        }
        let cost = [10, 10, 30, 10, 30, 10, 10, 10];
        assert_eq!(q.claim(&cost, 25, 1000), Some(Claim { from: 0, to: 2 }));
        assert_eq!(q.claim(&cost, 25, 1000), Some(Claim { from: 2, to: 3 }));
    }

    #[test]
    fn a_claim_stops_before_a_slot_not_yet_written() {
        let q = ReadyQueue::new(4);
        q.push(0);
        // A pusher that took slot 1 but has not written it yet.
        q.tail.fetch_add(1, Ordering::Relaxed);
        assert_eq!(q.claim(&[1; 4], 1000, 1000), Some(Claim { from: 0, to: 1 }));
        assert_eq!(q.claim(&[1; 4], 1000, 1000), None);
    }
}

/// Loom models of the queue (`RUSTFLAGS="--cfg loom" cargo test -p downbeat-graph --lib
/// --release loom`, run by `crates/graph/ci.sh`): every interleaving of pushers and claimers.
/// Each task carries data its pusher writes before the push, in a loom cell, so a claim that
/// does not synchronise with the push (a weaker ordering) is a causality violation.
#[cfg(all(test, loom))]
mod loom_model {
    use super::{Claim, ReadyQueue};
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;
    use loom::thread;

    /// The queue with one data cell per task.
    struct Tasks {
        queue: ReadyQueue,
        data: Vec<UnsafeCell<usize>>,
    }

    // SAFETY (for the model): a task's cell is written only by the thread that pushes the
    // task, before the push, and read only by the thread that claimed it; loom checks that
    // the two are ordered.
    unsafe impl Sync for Tasks {}

    impl Tasks {
        fn new(n: usize) -> Arc<Self> {
            Arc::new(Self {
                queue: ReadyQueue::new(n),
                data: (0..n).map(|_| UnsafeCell::new(0)).collect(),
            })
        }

        fn push(&self, task: usize) {
            // SAFETY: see `Sync`: this thread is the task's only writer, before the push.
            self.data[task].with_mut(|d| unsafe { *d = 100 + task });
            self.queue.push(task);
        }

        /// Claims runs until none is ready, and returns each task with the data it read.
        fn drain(&self, budget: u64, into: &mut Vec<(usize, usize)>) {
            let cost = vec![1u64; self.data.len()];
            while let Some(Claim { from, to }) = self.queue.claim(&cost, budget, budget) {
                for k in from..to {
                    let task = self.queue.task(k);
                    // SAFETY: see `Sync`: the claim makes this thread the task's reader.
                    let d = self.data[task].with(|d| unsafe { *d });
                    into.push((task, d));
                }
            }
        }
    }

    fn check(mut got: Vec<(usize, usize)>, n: usize) {
        got.sort_unstable();
        let want: Vec<_> = (0..n).map(|t| (t, 100 + t)).collect();
        assert_eq!(
            got, want,
            "every task claimed exactly once, with its pusher's data"
        );
    }

    /// Two pushers and a claimer running at once, in runs of any length: every task is
    /// claimed once, never a slot a pusher has reserved but not written.
    #[test]
    fn pushed_tasks_are_claimed_once_with_their_data() {
        loom::model(|| {
            let tasks = Tasks::new(3);
            let pusher = {
                let tasks = tasks.clone();
                thread::spawn(move || {
                    tasks.push(0);
                    tasks.push(1);
                })
            };
            let claimer = {
                let tasks = tasks.clone();
                thread::spawn(move || {
                    let mut got = Vec::new();
                    tasks.drain(10, &mut got);
                    got
                })
            };
            tasks.push(2);
            let mut got = claimer.join().unwrap();
            pusher.join().unwrap();
            tasks.drain(10, &mut got);
            check(got, 3);
        });
    }

    /// Two claimers racing for runs of the same ready tasks: the compare-and-swap on the head
    /// gives each task to one of them.
    #[test]
    fn racing_claimers_split_the_tasks() {
        loom::model(|| {
            let tasks = Tasks::new(3);
            for t in 0..3 {
                tasks.push(t);
            }
            let other = {
                let tasks = tasks.clone();
                thread::spawn(move || {
                    let mut got = Vec::new();
                    tasks.drain(1, &mut got);
                    got
                })
            };
            let mut got = Vec::new();
            tasks.drain(2, &mut got);
            got.extend(other.join().unwrap());
            check(got, 3);
        });
    }
}
