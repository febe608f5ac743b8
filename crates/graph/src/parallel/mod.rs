//! How [`Schedule::process_parallel`](crate::Schedule::process_parallel) spreads one block
//! over a pool: Kahn's algorithm over *tasks*, with one ready queue per thread.
//!
//! * **Tasks, not nodes.** Chains of nodes that could only run one after another are fused
//!   into one task when the schedule is compiled ([`chains`]), and a thread claims ready
//!   tasks in *runs*: the oldest ready task, and after it as many more as fit with it in
//!   [`RUN_NANOS`] of measured time. Tiny nodes (a sine of 64 frames takes tens of
//!   nanoseconds) then cost one hand-over per run instead of one per node; the tasks of a
//!   run decrement a shared successor's counter once for the run, and the count of tasks
//!   left once. A task that takes `RUN_NANOS` or more goes alone, so graphs of heavy nodes
//!   are scheduled exactly as before.
//! * **Critical path first.** Every node has a rank: the longest path from it to the end of
//!   the graph, weighing each node by its time in the last timed block (1 ns for a node never
//!   timed, so an untimed graph ranks by height); a task's rank is its first node's. Sources
//!   are queued highest rank first (ranks within an eighth of the longest count as equal and
//!   keep topological order), and of the tasks a run releases, the thread keeps the
//!   highest-ranked for itself. A heavy chain that everything waits for starts first instead
//!   of after the light nodes that happen to precede it in topological order.
//! * **Sources shared out in order.** The sources, in that order, are cut into one
//!   contiguous share per thread of equal measured time, each the start of its thread's
//!   queue in every block. A thread then runs the same sources block after block, and
//!   neighbours in the order together: the sources of one input sum finish on one core,
//!   where the sum finds their outputs.
//! * **Cache affinity.** Any other ready task goes to the queue of the thread that ran it
//!   last, so its state tends to stay in that core's cache; a thread whose queue is empty
//!   steals from the others, oldest first.
//! * **Wide sums split** ([`split`]). A node whose input sum takes [`split::SPLIT_NANOS`] or
//!   more (measured) has it added up by one *part* task per thread, each over a range of
//!   frames, before the node itself runs: the bits stay the serial ones, since every frame
//!   is summed in the same order.

mod chains;
mod queue;
mod split;

use std::sync::atomic::{AtomicUsize, Ordering};

use downbeat_rt::pool::WorkList;

use crate::node::ProcessContext;
use crate::profile::Profile;
use crate::schedule::Schedule;
use chains::Tasks;
use queue::{Claim, Padded, ReadyQueue};
use split::Splits;

/// Sources whose longest paths lie within `1 / RANK_BUCKETS` of each other count as equal
/// and start in topological order: the leaves of a fan-in then finish group by group, so
/// the levels below start while other leaves still run, instead of all at the end.
const RANK_BUCKETS: u64 = 8;

/// Measured time a thread claims at once, in nanoseconds: ready tasks are taken in runs of
/// at most this much (and at least one task). Long enough that a run's hand-over (a few
/// shared atomics, about 100 ns when their cache lines move between cores) is a small part
/// of it; short enough that the last run of a block leaves the other threads idle for
/// little (a block of 64 frames of `fanin` takes about 60 µs).
pub(crate) const RUN_NANOS: u64 = 2_000;

/// The most measured time a thread claims at once in tasks of less than [`RUN_NANOS`]
/// each, while they are no more than half of a queue's ready tasks (see
/// [`ReadyQueue::claim`]): 1.2% of a 64-frame block's 1333 µs, the most the last run of a
/// block can leave another thread waiting.
pub(crate) const RUN_CAP_NANOS: u64 = 16_000;

/// The most shares the sources are cut into: threads beyond take no share (they steal).
const MAX_SHARES: usize = 64;

/// The cost of a task with a node not timed yet: more than any run holds, so that until
/// the first timed block every task goes alone, as nodes did before runs.
const UNTIMED: u64 = u64::MAX / 4;

/// The parallel processor's state, allocated by `compile` and reset every block.
pub(crate) struct Parallel {
    tasks: Tasks,
    /// The sums that may be split; their parts are tasks numbered after the chains'.
    splits: Splits,
    /// Per chain task: finished tasks it still waits for in this block (for a node whose
    /// sum is split: its inputs, then its sum's parts).
    remaining: Box<[AtomicUsize]>,
    /// The tasks that wait for others: the only counters a block resets.
    joins: Box<[usize]>,
    /// Tasks not yet finished in this block. On a cache line of its own: every run
    /// decrements it, and every idle thread polls it, so sharing its line with the fields
    /// read per task would bounce that line.
    to_do: Padded<AtomicUsize>,
    queues: Box<[ReadyQueue]>,
    /// Longest path from each node to the end of the graph, the node included.
    rank: Box<[u64]>,
    /// The successor lists the ranks follow, and an order in which every node comes
    /// after its predecessors (the nodes' own numbering is one, but not with the groups of
    /// wide sums numbered after them).
    succs: Box<[Box<[usize]>]>,
    order: Box<[usize]>,
    /// Each task's nodes' summed times in the last timed block ([`UNTIMED`] before one; a
    /// part of a split sum is always `UNTIMED`, so that it goes alone).
    cost: Box<[u64]>,
    /// Tasks without predecessors, highest rank first.
    sources: Box<[usize]>,
    /// The same in task order, and each one's rank bucket (scratch for `rerank`).
    by_task: Box<[usize]>,
    bucket: Box<[u8]>,
    /// The threads the sources are shared among (at most the queues).
    threads: usize,
    /// Nodes numbered from here on (the groups of wide sums) have no state of their own:
    /// made ready, they are queued on the thread that made them ready.
    stateless_from: usize,
}

/// One claim of work: a run of queued tasks, or a task reserved for the thread that made
/// it ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Run {
    /// Slots of queue `queue`.
    Queued {
        queue: usize,
        claim: Claim,
    },
    Reserved(usize),
}

/// The successors a run has made ready so far, and the decrement it holds back.
#[derive(Default)]
struct Released {
    /// The highest-ranked task made ready, kept for the calling thread.
    reserved: Option<usize>,
    /// A task and how many finished predecessors of it are not yet counted: consecutive
    /// tasks of a run often feed the same task (a mix of many sources), which then sees
    /// one decrement for all of them.
    pending: Option<(usize, usize)>,
}

impl Parallel {
    /// State for a graph with these predecessor and successor lists (per node, in
    /// topological order); `threads` ready queues (a pool with more threads shares them).
    pub(crate) fn new(preds: &[Box<[usize]>], succs: &[Box<[usize]>], threads: usize) -> Self {
        let tasks = Tasks::new(preds, succs);
        let t = tasks.len();
        let mut head_task = vec![usize::MAX; preds.len()];
        for k in 0..t {
            head_task[tasks.head(k)] = k;
        }
        let splits = Splits::new(preds, threads, t, |i| head_task[i]);
        let sources: Box<[usize]> = (0..t).filter(|&k| tasks.waits(k) == 0).collect();
        // Every task, part tasks included, is queued at most once per block.
        let all = t + splits.max_parts();
        let mut p = Self {
            remaining: (0..t).map(|_| AtomicUsize::new(0)).collect(),
            to_do: Padded(AtomicUsize::new(0)),
            queues: (0..threads.max(1)).map(|_| ReadyQueue::new(all)).collect(),
            rank: vec![0; preds.len()].into_boxed_slice(),
            succs: succs.into(),
            order: topological(preds, succs),
            cost: vec![UNTIMED; all].into_boxed_slice(),
            by_task: sources.clone(),
            bucket: vec![0; sources.len()].into_boxed_slice(),
            sources,
            joins: (0..t).filter(|&k| tasks.waits(k) > 0).collect(),
            threads: threads.clamp(1, MAX_SHARES),
            stateless_from: preds.len(),
            tasks,
            splits,
        };
        p.rerank(|_| 0, |_| 0);
        p
    }

    /// Ranks every node again and costs every task with `nanos(i)` as node `i`'s time (0:
    /// not timed), and decides which sums to split with `sum(i)` as the time node `i` spent
    /// summing its inputs itself (0: not timed, or split). Real-time safe: no allocation
    /// (the sources are reordered in place, through scratch allocated by `new`).
    pub(crate) fn rerank(&mut self, nanos: impl Fn(usize) -> u64, sum: impl Fn(usize) -> u64) {
        self.splits.decide(sum);
        // Successors come later in topological order, so one backward pass suffices.
        for &i in self.order.iter().rev() {
            let below = self.succs[i]
                .iter()
                .map(|&s| self.rank[s])
                .max()
                .unwrap_or(0);
            self.rank[i] = nanos(i).max(1) + below;
        }
        for (t, cost) in self.cost[..self.tasks.len()].iter_mut().enumerate() {
            let nodes = self.tasks.nodes(t);
            *cost = if nodes.iter().any(|&i| nanos(i) == 0) {
                UNTIMED
            } else {
                nodes.iter().map(|&i| nanos(i)).sum()
            };
        }
        let (rank, tasks) = (&self.rank, &self.tasks);
        let task_rank = |t: usize| rank[tasks.head(t)];
        let top = self
            .by_task
            .iter()
            .map(|&t| task_rank(t))
            .max()
            .unwrap_or(0);
        // Bucket `b` holds the ranks from `b (top + 1) / RANK_BUCKETS` up: compared against
        // the bounds rather than divided, and placed bucket by bucket rather than sorted,
        // since a thousand sources are ranked in the audio thread's block.
        let bound =
            |b: u64| (u128::from(b) * u128::from(top + 1)).div_ceil(u128::from(RANK_BUCKETS));
        let bounds: [u128; RANK_BUCKETS as usize] = std::array::from_fn(|b| bound(b as u64));
        for (k, &t) in self.by_task.iter().enumerate() {
            let r = u128::from(task_rank(t));
            self.bucket[k] = bounds[1..].iter().filter(|&&low| r >= low).count() as u8;
        }
        let mut next = 0;
        for b in (0..RANK_BUCKETS as u8).rev() {
            for (k, &t) in self.by_task.iter().enumerate() {
                if self.bucket[k] == b {
                    self.sources[next] = t;
                    next += 1;
                }
            }
        }
        self.share_sources();
    }

    /// Marks the nodes numbered `from` on as having no state of their own (see
    /// `stateless_from`).
    pub(crate) fn set_stateless_from(&mut self, from: usize) {
        self.stateless_from = from;
    }

    /// Shares the sources among `threads` threads (at most one per queue) from the next
    /// block on: a pool with fewer threads than the machine has cores would otherwise leave
    /// shares that only stealing reaches.
    pub(crate) fn set_threads(&mut self, threads: usize) {
        let threads = threads.clamp(1, self.queues.len().min(MAX_SHARES));
        if threads != self.threads {
            self.threads = threads;
            self.share_sources();
        }
    }

    /// Cuts the sources, in their order, into one share per thread of equal measured time
    /// (equal counts while any is untimed): source `s` goes to the share its cost's middle
    /// falls in. Real-time safe: the queues' slots were allocated by `new`.
    fn share_sources(&mut self) {
        let cost = &self.cost;
        let timed = self.sources.iter().all(|&t| cost[t] != UNTIMED);
        let weight = |t: usize| if timed { cost[t].max(1) } else { 1 };
        let total: u64 = self.sources.iter().map(|&t| weight(t)).sum();
        let shares = self.threads as f64;
        // Share `q` starts at the first source whose middle lies past `q / shares` of the
        // total (a heuristic: floating point is exact enough, and never divides per source).
        let len = self.sources.len();
        let mut starts = [len; MAX_SHARES + 1];
        let mut before = 0u64;
        let mut q = 0;
        for (k, &t) in self.sources.iter().enumerate() {
            let middle = (before as f64 + weight(t) as f64 / 2.0) / total.max(1) as f64;
            while q < self.threads && middle * shares >= q as f64 {
                starts[q] = k;
                q += 1;
            }
            before += weight(t);
        }
        starts[self.threads] = len;
        for (q, queue) in self.queues.iter_mut().enumerate() {
            let (from, to) = if q < self.threads {
                (starts[q], starts[q + 1])
            } else {
                (len, len)
            };
            queue.set_sources(self.sources[from..to].iter().copied());
        }
    }

    /// Readies the next block: every task waits for all its predecessors, and each queue
    /// holds its share of the sources.
    pub(crate) fn start(&self) {
        for q in self.queues.iter() {
            q.reset();
        }
        // A source's counter is never counted down: it keeps its 0.
        for &t in self.joins.iter() {
            self.remaining[t].store(self.tasks.waits(t), Ordering::Relaxed);
        }
        self.to_do
            .store(self.tasks.len() + self.splits.active(), Ordering::Release);
    }

    /// The split sums of this block and the nodes they sum for, to record where each
    /// node's summed input is ([`set_buffer`](Parallel::set_buffer)) before the block.
    pub(crate) fn split_nodes(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.splits.split_nodes()
    }

    /// Records where split candidate `c`'s node keeps its summed input this block.
    pub(crate) fn set_buffer(&self, c: usize, ptr: *mut f32) {
        self.splits.set_buffer(c, ptr);
    }

    /// The part of a split sum that task `task` is, if it is one.
    fn part(&self, task: usize) -> Option<split::Part> {
        let k = task.checked_sub(self.tasks.len())?;
        Some(self.splits.part(k))
    }

    fn push(&self, task: usize, thread: usize, profile: &Profile) {
        // A part goes to its own thread's queue: each thread sums the same frames every
        // block, and the parts start on all threads at once. A group of a wide sum has no
        // state of its own, and its inputs were just written by the thread that made it
        // ready: it stays there.
        let thread = match self.part(task) {
            Some(part) => part.index,
            None if self.tasks.head(task) >= self.stateless_from => thread,
            None => profile.thread(self.tasks.head(task)),
        };
        self.queues[thread % self.queues.len()].push(task);
    }

    fn task_rank(&self, task: usize) -> u64 {
        match self.part(task) {
            Some(part) => self.rank[part.node],
            None => self.rank[self.tasks.head(task)],
        }
    }

    /// Counts one finished predecessor of each of `task`'s successors (held back while
    /// the same successor follows); for a part of a split sum, one finished part of the
    /// sum, the last of which makes the node ready.
    fn finished(&self, task: usize, out: &mut Released, thread: usize, profile: &Profile) {
        if let Some(part) = self.part(task) {
            if self.splits.part_done(part.candidate) {
                self.offer(self.splits.task(part.candidate), out, thread, profile);
            }
            return;
        }
        for &next in self.tasks.succs(task) {
            match &mut out.pending {
                Some((t, count)) if *t == next => *count += 1,
                _ => {
                    self.flush(out, thread, profile);
                    out.pending = Some((next, 1));
                }
            }
        }
    }

    /// Applies the held-back decrement. A task it makes ready is reserved for the calling
    /// thread if it ranks highest so far, else queued; a node whose sum is split gets its
    /// sum's parts made ready instead, one per thread.
    fn flush(&self, out: &mut Released, thread: usize, profile: &Profile) {
        let Some((next, count)) = out.pending.take() else {
            return;
        };
        // AcqRel: the last decrement sees every predecessor's writes (each made its own
        // decrement with Release after running), and hands them on to the task's runner.
        if self.remaining[next].fetch_sub(count, Ordering::AcqRel) != count {
            return;
        }
        let Some(c) = self.splits.split_task(next) else {
            return self.offer(next, out, thread, profile);
        };
        self.splits.arm(c);
        let (first, parts) = (self.tasks.len(), self.splits.parts());
        for index in 0..parts {
            let part = self.splits.part_task(first, c, index);
            if index == thread % self.queues.len() {
                self.offer(part, out, thread, profile);
            } else {
                self.push(part, thread, profile);
            }
        }
    }

    /// Reserves a ready `next` for the calling thread if it ranks above the one reserved so
    /// far (which is then queued), else queues it.
    fn offer(&self, next: usize, out: &mut Released, thread: usize, profile: &Profile) {
        match out.reserved {
            Some(r) if self.task_rank(r) >= self.task_rank(next) => {
                self.push(next, thread, profile)
            }
            Some(r) => {
                self.push(r, thread, profile);
                out.reserved = Some(next);
            }
            None => out.reserved = Some(next),
        }
    }

    /// Claims a run for `thread`: from its own queue, else from another's, oldest first.
    fn claim(&self, thread: usize) -> Option<Run> {
        let n = self.queues.len();
        let own = thread % n;
        (0..n).find_map(|k| {
            let queue = (own + k) % n;
            self.queues[queue]
                .claim(&self.cost, RUN_NANOS, RUN_CAP_NANOS)
                .map(|claim| Run::Queued { queue, claim })
        })
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
// pool's threads are the only ones touching the schedule. Each task is handed out once per
// block (in one claim of a ready queue, whose compare-and-swap of the head gives a slot to
// one thread only, or as a reserved successor) and only after its predecessors' decrements
// of its `remaining` reached zero, whose AcqRel ordering (and the queue's Release/Acquire)
// makes the predecessors' outputs visible. A task's nodes are a chain, run in order by that
// one thread. The parts of a split sum run only after the node's inputs are done (the same
// count), write disjoint frames of the node's input through the pointer `process_parallel`
// recorded, and the node runs only after the last part's AcqRel count. Nodes are `Send`, so
// running them on any thread is sound.
unsafe impl Sync for Kahn<'_> {}

impl Kahn<'_> {
    fn run_task(&self, task: usize, thread: usize, out: &mut Released) {
        let s = self.schedule;
        let p = s.parallel();
        if let Some(part) = p.part(task) {
            let started = s.profile().starting();
            let frames = split::frames(part.index, p.splits.parts(), self.ctx.frames);
            // SAFETY: see the `Sync` impl: the node's inputs are done, and no other part
            // writes these frames nor does the node run until every part is done.
            unsafe {
                s.sum_part(
                    part.node,
                    p.splits.buffer(part.candidate),
                    frames,
                    &self.ctx,
                )
            };
            if let Some(t0) = started {
                p.splits
                    .timed(task - p.tasks.len(), t0.elapsed().as_nanos() as u64);
            }
        } else {
            let summed = p.splits.split_task(task).is_some();
            let nodes = s.len();
            for (k, &i) in p.tasks.nodes(task).iter().enumerate() {
                // SAFETY: see the `Sync` impl: the task is ours alone, its predecessors
                // (and the parts of its first node's sum, if split) are done, and the
                // chain's earlier nodes ran just before on this thread. A number past the
                // nodes is a group of a wide sum, whose inputs are its predecessors.
                unsafe {
                    if i < nodes {
                        s.run_slot(i, &self.ctx, thread, summed && k == 0);
                    } else {
                        s.sum_group(i - nodes, &self.ctx, thread);
                    }
                }
            }
        }
        p.finished(task, out, thread, s.profile());
    }
}

impl WorkList for Kahn<'_> {
    type Item = Run;

    fn next_item(&self, thread: usize) -> Option<Run> {
        self.schedule.parallel().claim(thread)
    }

    fn do_work(&self, run: Run, thread: usize) -> Option<Run> {
        let p = self.schedule.parallel();
        let mut out = Released::default();
        let done = match run {
            Run::Queued { queue, claim } => {
                for k in claim.from..claim.to {
                    self.run_task(p.queues[queue].task(k), thread, &mut out);
                }
                claim.to - claim.from
            }
            Run::Reserved(task) => {
                self.run_task(task, thread, &mut out);
                1
            }
        };
        p.flush(&mut out, thread, self.schedule.profile());
        // After the pushes: a thread that sees no task left sees nothing queued either.
        p.to_do.fetch_sub(done, Ordering::Release);
        out.reserved.map(Run::Reserved)
    }

    fn is_done(&self) -> bool {
        self.schedule.parallel().to_do.load(Ordering::Acquire) == 0
    }

    fn ready(&self) -> usize {
        self.schedule.parallel().ready()
    }
}

/// The nodes in an order where each comes after all its predecessors (Kahn's, smallest
/// number first among the ready ones, so a list already in that order is kept).
fn topological(preds: &[Box<[usize]>], succs: &[Box<[usize]>]) -> Box<[usize]> {
    let mut waits: Vec<usize> = preds.iter().map(|p| p.len()).collect();
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> = (0..preds.len())
        .filter(|&i| waits[i] == 0)
        .map(std::cmp::Reverse)
        .collect();
    let mut order = Vec::with_capacity(preds.len());
    while let Some(std::cmp::Reverse(i)) = ready.pop() {
        order.push(i);
        for &s in succs[i].iter() {
            waits[s] -= 1;
            if waits[s] == 0 {
                ready.push(std::cmp::Reverse(s));
            }
        }
    }
    assert_eq!(order.len(), preds.len(), "the graph has a cycle");
    order.into_boxed_slice()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Predecessor or successor lists, one per node.
    pub(super) type Lists = Vec<Box<[usize]>>;

    /// The predecessor and successor lists of a graph of `n` nodes with these edges (the
    /// scheduler's tests and `chains`' share it).
    pub(super) fn lists(edges: &[(usize, usize)], n: usize) -> (Lists, Lists) {
        let mut preds = vec![Vec::new(); n];
        let mut succs = vec![Vec::new(); n];
        for &(a, b) in edges {
            succs[a].push(b);
            preds[b].push(a);
        }
        let boxed = |v: Vec<Vec<usize>>| v.into_iter().map(Vec::into_boxed_slice).collect();
        (boxed(preds), boxed(succs))
    }

    /// The tasks of the next claim for `thread`, in order.
    fn claim(p: &Parallel, thread: usize) -> Option<Vec<usize>> {
        Some(match p.claim(thread)? {
            Run::Queued { queue, claim } => (claim.from..claim.to)
                .map(|k| p.queues[queue].task(k))
                .collect(),
            Run::Reserved(t) => vec![t],
        })
    }

    /// Every task claimable by `thread` now, claim by claim.
    fn drain(p: &Parallel, thread: usize) -> Vec<Vec<usize>> {
        std::iter::from_fn(|| claim(p, thread)).collect()
    }

    #[test]
    fn sources_are_shared_out_in_order_by_measured_time_and_stolen_when_one_runs_dry() {
        let (preds, succs) = lists(&[], 4);
        let mut p = Parallel::new(&preds, &succs, 2);
        // Untimed: equal counts, in order, every block.
        for _ in 0..2 {
            p.start();
            assert_eq!(claim(&p, 0), Some(vec![0]));
            assert_eq!(claim(&p, 0), Some(vec![1]));
            assert_eq!(claim(&p, 1), Some(vec![2]));
            assert_eq!(claim(&p, 1), Some(vec![3]));
            assert_eq!(p.ready(), 0);
        }
        // Source 0 measured as long as the other three: a share of its own.
        p.rerank(|i| if i == 0 { 300 } else { 100 }, |_| 0);
        p.start();
        assert_eq!(claim(&p, 1), Some(vec![1, 2, 3]));
        assert_eq!(drain(&p, 0), [[0]]);
        // A thread whose queue is empty steals another's oldest.
        p.start();
        assert_eq!(claim(&p, 0), Some(vec![0]));
        assert_eq!(claim(&p, 0), Some(vec![1, 2, 3]));
        assert_eq!(claim(&p, 1), None);
        // A pool of one thread: the whole order in its queue.
        p.set_threads(1);
        p.start();
        assert_eq!(claim(&p, 0), Some(vec![0, 1, 2, 3]));
        assert_eq!(p.ready(), 0);
    }

    #[test]
    fn a_ready_node_waits_on_the_thread_that_ran_it_last_until_another_runs_dry() {
        // Source 0 feeds 1 and 2, which last ran on thread 1.
        let (preds, succs) = lists(&[(0, 1), (0, 2)], 3);
        let p = Parallel::new(&preds, &succs, 2);
        let profile = Profile::new(3);
        profile.ran(1, 1, None);
        profile.ran(2, 1, None);
        p.start();
        assert_eq!(claim(&p, 0), Some(vec![0]));
        let mut out = Released::default();
        p.finished(0, &mut out, 0, &profile);
        p.flush(&mut out, 0, &profile);
        // One is kept by the thread that made it ready (0), the other queued where it ran.
        let kept = out.reserved.expect("a successor kept");
        let queued = 3 - kept;
        let home = profile.thread(queued);
        assert_eq!(home, 1);
        assert_eq!((p.queues[0].len(), p.queues[1].len()), (0, 1));
        assert_eq!(claim(&p, home), Some(vec![queued]));
        assert_eq!(p.ready(), 0);
        // Had the other thread run dry first, it would have stolen it.
        p.start();
        claim(&p, 0);
        let mut out = Released::default();
        p.finished(0, &mut out, 0, &profile);
        p.flush(&mut out, 0, &profile);
        assert_eq!(claim(&p, 1 - home), Some(vec![queued]));
    }

    #[test]
    fn sources_start_longest_path_first_by_measured_time() {
        // Sources 0, 1, 2, 3; 3 heads the chain 3 -> 4 -> 5, one task (task 3).
        let (preds, succs) = lists(&[(3, 4), (4, 5)], 6);
        let mut p = Parallel::new(&preds, &succs, 1);
        p.start();
        // Untimed, ranks are heights: the chain first, then index order; one at a time.
        assert_eq!(drain(&p, 0), [[3], [0], [1], [2]]);
        // Timed: node 1 took 10000 ns, everything else 1 ns. The chain's 3 ns and the other
        // sources' 1 ns are all within an eighth of 10000: they keep topological order, and
        // the tiny ones go in one run.
        p.rerank(|i| if i == 1 { 10_000 } else { 1 }, |_| 0);
        p.start();
        assert_eq!(drain(&p, 0), [vec![1], vec![0, 2, 3]]);
        // Node 1 at 20 ns: the chain's 3 ns is more than an eighth below, 0 and 2 too;
        // all fit in one run, in rank order.
        p.rerank(|i| if i == 1 { 20 } else { 1 }, |_| 0);
        p.start();
        assert_eq!(drain(&p, 0), [[1, 3, 0, 2]]);
    }

    #[test]
    fn the_thread_keeps_the_successor_with_the_longest_path_ahead() {
        // 0 -> 1, 0 -> 2 -> 3: finishing 0 makes 1 and the chain 2 -> 3 ready.
        let (preds, succs) = lists(&[(0, 1), (0, 2), (2, 3)], 4);
        let p = Parallel::new(&preds, &succs, 1);
        let profile = Profile::new(4);
        p.start();
        assert_eq!(claim(&p, 0), Some(vec![0]));
        let mut out = Released::default();
        p.finished(0, &mut out, 0, &profile);
        p.flush(&mut out, 0, &profile);
        assert_eq!(out.reserved, Some(2));
        assert_eq!(p.tasks.nodes(2), [2, 3]);
        assert_eq!(drain(&p, 0), [[1]]);
    }

    #[test]
    fn a_run_of_sources_into_one_mix_counts_down_once() {
        // Sources 0..8 into 8.
        let edges: Vec<_> = (0..8).map(|i| (i, 8)).collect();
        let (preds, succs) = lists(&edges, 9);
        let mut p = Parallel::new(&preds, &succs, 1);
        let profile = Profile::new(9);
        p.rerank(|_| RUN_NANOS / 4, |_| 0);
        p.start();
        // Four sources fill a run.
        let first = claim(&p, 0).unwrap();
        assert_eq!(first, [0, 1, 2, 3]);
        let mut out = Released::default();
        for &t in &first {
            p.finished(t, &mut out, 0, &profile);
        }
        // Held back, not yet counted.
        assert_eq!(p.remaining[8].load(Ordering::Relaxed), 8);
        p.flush(&mut out, 0, &profile);
        assert_eq!(p.remaining[8].load(Ordering::Relaxed), 4);
        assert_eq!(out.reserved, None);
        for t in claim(&p, 0).unwrap() {
            p.finished(t, &mut out, 0, &profile);
        }
        p.flush(&mut out, 0, &profile);
        assert_eq!(out.reserved, Some(8), "the mix is ready after the last run");
    }

    #[test]
    fn a_split_sum_readies_one_part_per_thread_and_the_node_after_the_last() {
        // Sources 0, 1, 2 into 3, whose sum is measured long; 3 feeds 4 (same task).
        let (preds, succs) = lists(&[(0, 3), (1, 3), (2, 3), (3, 4)], 5);
        let mut p = Parallel::new(&preds, &succs, 2);
        let profile = Profile::new(5);
        p.rerank(|_| 1, |i| if i == 3 { split::SPLIT_NANOS } else { 0 });
        p.start();
        let mix = 3;
        assert_eq!(p.tasks.nodes(mix), [3, 4]);
        // Three sources and two parts to do.
        assert_eq!(p.to_do.load(Ordering::Relaxed), 4 + 2);
        // Thread 1 runs its share, then steals thread 0's.
        let mut sources = claim(&p, 1).unwrap();
        sources.extend(claim(&p, 1).unwrap());
        assert_eq!(sources, [1, 2, 0]);
        // Thread 1 finishes the inputs: it keeps part 1 and queues part 0 on thread 0.
        let mut out = Released::default();
        for &t in &sources {
            p.finished(t, &mut out, 1, &profile);
        }
        p.flush(&mut out, 1, &profile);
        let part = |index| p.splits.part_task(p.tasks.len(), 0, index);
        assert_eq!(out.reserved, Some(part(1)));
        assert_eq!(p.queues[0].len(), 1);
        assert_eq!(claim(&p, 0), Some(vec![part(0)]));
        // The node waits for both parts, whichever finishes last.
        let mut first = Released::default();
        p.finished(part(1), &mut first, 1, &profile);
        p.flush(&mut first, 1, &profile);
        assert_eq!(first.reserved, None);
        let mut last = Released::default();
        p.finished(part(0), &mut last, 0, &profile);
        p.flush(&mut last, 0, &profile);
        assert_eq!(last.reserved, Some(mix));
        // Measured short again (parts' times recorded): the sum is not split next block.
        p.splits.timed(0, 100);
        p.splits.timed(1, 100);
        p.rerank(|_| 1, |_| 0);
        p.start();
        assert_eq!(p.to_do.load(Ordering::Relaxed), 4);
        let mut out = Released::default();
        for t in drain(&p, 0).concat() {
            p.finished(t, &mut out, 0, &profile);
        }
        p.flush(&mut out, 0, &profile);
        assert_eq!(out.reserved, Some(mix));
    }
}
