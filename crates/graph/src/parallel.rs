//! How [`Schedule::process_parallel`](crate::Schedule::process_parallel) spreads one block
//! over a pool: Kahn's algorithm with one ready queue per thread.
//!
//! * **Critical path first.** Every node has a rank: the longest path from it to the end of
//!   the graph, weighing each node by its time in the last timed block (1 ns for a node never
//!   timed, so an untimed graph ranks by height). Sources are queued highest rank first
//!   (ranks within an eighth of the longest count as equal and keep topological order), and
//!   of the successors a node releases, the thread keeps the highest-ranked for itself. A
//!   heavy chain that everything waits for starts first instead of after the light nodes
//!   that happen to precede it in topological order.
//! * **Cache affinity.** A ready node goes to the queue of the thread that ran it last, so
//!   its state tends to stay in that core's cache; a thread whose queue is empty steals from
//!   the others, oldest first.

use std::sync::atomic::{AtomicUsize, Ordering};

use downbeat_rt::pool::WorkList;

use crate::node::ProcessContext;
use crate::profile::Profile;
use crate::schedule::Schedule;

/// Sources whose longest paths lie within `1 / RANK_BUCKETS` of each other count as equal
/// and start in topological order: the leaves of a fan-in then finish group by group, so
/// the levels below start while other leaves still run, instead of all at the end.
const RANK_BUCKETS: u64 = 8;

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
        let used = self.tail.load(Ordering::Relaxed).min(self.slots.len());
        for s in &self.slots[..used] {
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

/// A value alone on its cache line (two lines, for CPUs that fetch pairs).
#[repr(align(128))]
struct Padded<T>(T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// The parallel processor's state, allocated by `compile` and reset every block.
pub(crate) struct Parallel {
    remaining: Box<[AtomicUsize]>,
    /// On a cache line of its own: every finished node decrements it, and every idle thread
    /// polls it, so sharing its line with the fields read per node would bounce that line.
    to_do: Padded<AtomicUsize>,
    queues: Box<[ReadyQueue]>,
    /// Longest path from each node to the end of the graph, the node included.
    rank: Box<[u64]>,
    /// Nodes without predecessors, highest rank first.
    sources: Box<[usize]>,
}

impl Parallel {
    /// State for a graph with these predecessor lists; `threads` ready queues (a pool with
    /// more threads shares them).
    pub(crate) fn new(preds: &[Box<[usize]>], succs: &[Box<[usize]>], threads: usize) -> Self {
        let n = preds.len();
        let mut p = Self {
            remaining: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            to_do: Padded(AtomicUsize::new(0)),
            queues: (0..threads.max(1)).map(|_| ReadyQueue::new(n)).collect(),
            rank: vec![0; n].into_boxed_slice(),
            sources: (0..n).filter(|&i| preds[i].is_empty()).collect(),
        };
        p.rerank(succs, |_| 0);
        p
    }

    /// Ranks every node again with `nanos(i)` as its weight. Real-time safe: no allocation
    /// (the sort is in place).
    pub(crate) fn rerank(&mut self, succs: &[Box<[usize]>], nanos: impl Fn(usize) -> u64) {
        // Successors come later in topological order, so one backward pass suffices.
        for i in (0..self.rank.len()).rev() {
            let below = succs[i].iter().map(|&s| self.rank[s]).max().unwrap_or(0);
            self.rank[i] = nanos(i).max(1) + below;
        }
        let rank = &self.rank;
        let top = self.sources.iter().map(|&i| rank[i]).max().unwrap_or(0);
        let bucket = |i: usize| rank[i] * RANK_BUCKETS / (top + 1);
        self.sources
            .sort_unstable_by(|&a, &b| bucket(b).cmp(&bucket(a)).then(a.cmp(&b)));
    }

    /// Readies the next block: every node waits for all its predecessors, and the sources
    /// are queued, each on the thread that ran it last.
    pub(crate) fn start(&self, preds: &[Box<[usize]>], profile: &Profile) {
        for q in self.queues.iter() {
            q.reset();
        }
        for (i, p) in preds.iter().enumerate() {
            self.remaining[i].store(p.len(), Ordering::Relaxed);
        }
        for &i in self.sources.iter() {
            self.push(i, profile);
        }
        self.to_do.store(preds.len(), Ordering::Release);
    }

    fn push(&self, node: usize, profile: &Profile) {
        self.queues[profile.thread(node) % self.queues.len()].push(node);
    }

    /// Counts node `i` done: returns the highest-ranked successor it made ready, reserved
    /// for the calling thread, and queues the others.
    fn release(&self, succs: &[usize], profile: &Profile) -> Option<usize> {
        let mut reserved: Option<usize> = None;
        for &next in succs {
            if self.remaining[next].fetch_sub(1, Ordering::AcqRel) == 1 {
                match reserved {
                    Some(r) if self.rank[r] >= self.rank[next] => self.push(next, profile),
                    Some(r) => {
                        self.push(r, profile);
                        reserved = Some(next);
                    }
                    None => reserved = Some(next),
                }
            }
        }
        self.to_do.fetch_sub(1, Ordering::Release);
        reserved
    }

    fn pop(&self, thread: usize) -> Option<usize> {
        let n = self.queues.len();
        let own = thread % n;
        (0..n).find_map(|k| self.queues[(own + k) % n].pop())
    }

    fn ready(&self) -> usize {
        self.queues.iter().map(ReadyQueue::len).sum()
    }
}

/// One block of Kahn's algorithm over a schedule, as a [`WorkList`] for the pool.
pub(crate) struct Kahn<'a> {
    pub(crate) schedule: &'a Schedule,
    pub(crate) ctx: ProcessContext,
}

// SAFETY: `Kahn` exists only inside `process_parallel`, which holds `&mut Schedule`, so the
// pool's threads are the only ones touching the schedule. Each node index is handed out
// once per block (by a ready queue or as a reserved successor) and only after its last
// predecessor's `remaining` decrement, whose AcqRel ordering (and the queue's
// Release/Acquire) makes the predecessors' outputs visible. Nodes are `Send`, so running
// them on any thread is sound.
unsafe impl Sync for Kahn<'_> {}

impl WorkList for Kahn<'_> {
    type Item = usize;

    fn next_item(&self, thread: usize) -> Option<usize> {
        self.schedule.parallel().pop(thread)
    }

    fn do_work(&self, i: usize, thread: usize) -> Option<usize> {
        let s = self.schedule;
        // SAFETY: see the `Sync` impl: `i` is ours alone and its predecessors are done.
        unsafe { s.run_slot(i, &self.ctx, thread) };
        s.parallel().release(s.successors(i), s.profile())
    }

    fn is_done(&self) -> bool {
        self.schedule.parallel().to_do.load(Ordering::Acquire) == 0
    }

    fn ready(&self) -> usize {
        self.schedule.parallel().ready()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Predecessor or successor lists, one per node.
    type Lists = Vec<Box<[usize]>>;

    fn lists(edges: &[(usize, usize)], n: usize) -> (Lists, Lists) {
        let mut preds = vec![Vec::new(); n];
        let mut succs = vec![Vec::new(); n];
        for &(a, b) in edges {
            succs[a].push(b);
            preds[b].push(a);
        }
        let boxed = |v: Vec<Vec<usize>>| v.into_iter().map(Vec::into_boxed_slice).collect();
        (boxed(preds), boxed(succs))
    }

    #[test]
    fn a_ready_node_waits_on_the_thread_that_ran_it_last_until_another_runs_dry() {
        let (preds, succs) = lists(&[], 4);
        let p = Parallel::new(&preds, &succs, 2);
        let profile = Profile::new(4);
        for (node, thread) in [(0, 1), (1, 0), (2, 1), (3, 0)] {
            profile.ran(node, thread, None);
        }
        p.start(&preds, &profile);
        assert_eq!(p.pop(0), Some(1));
        assert_eq!(p.pop(1), Some(0));
        assert_eq!(p.pop(1), Some(2));
        // Thread 1's queue is empty: it steals thread 0's oldest.
        assert_eq!(p.pop(1), Some(3));
        assert_eq!(p.pop(0), None);
        assert_eq!(p.ready(), 0);
    }

    #[test]
    fn sources_start_longest_path_first_by_measured_time() {
        // Sources 0, 1, 2, 3; 3 heads the chain 3 -> 4 -> 5.
        let (preds, succs) = lists(&[(3, 4), (4, 5)], 6);
        let mut p = Parallel::new(&preds, &succs, 1);
        let profile = Profile::new(6);
        p.start(&preds, &profile);
        // Untimed, ranks are heights: the chain first, then index order.
        let order: Vec<_> = std::iter::from_fn(|| p.pop(0)).collect();
        assert_eq!(order, [3, 0, 1, 2]);
        // Timed: node 1 took 1000 ns, everything else 1 ns. The chain's 3 ns and the other
        // sources' 1 ns are all within an eighth of 1000: they keep topological order.
        p.rerank(&succs, |i| if i == 1 { 1000 } else { 1 });
        p.start(&preds, &profile);
        let order: Vec<_> = std::iter::from_fn(|| p.pop(0)).collect();
        assert_eq!(order, [1, 0, 2, 3]);
        // Node 1 at 20 ns: the chain's 3 ns is more than an eighth below, 0 and 2 too.
        p.rerank(&succs, |i| if i == 1 { 20 } else { 1 });
        p.start(&preds, &profile);
        let order: Vec<_> = std::iter::from_fn(|| p.pop(0)).collect();
        assert_eq!(order, [1, 3, 0, 2]);
    }

    #[test]
    fn the_thread_keeps_the_successor_with_the_longest_path_ahead() {
        // 0 -> 1, 0 -> 2 -> 3: finishing 0 makes 1 and 2 ready; 2 leads to more.
        let (preds, succs) = lists(&[(0, 1), (0, 2), (2, 3)], 4);
        let p = Parallel::new(&preds, &succs, 1);
        let profile = Profile::new(4);
        p.start(&preds, &profile);
        assert_eq!(p.pop(0), Some(0));
        assert_eq!(p.release(&succs[0], &profile), Some(2));
        assert_eq!(p.pop(0), Some(1));
        assert_eq!(p.pop(0), None);
    }
}
