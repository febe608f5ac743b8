//! Wide input sums split across threads by frame ranges.
//!
//! A node with many inputs sums them before it runs, alone on one thread, after every input
//! is done: `sines`' output adds 1000 buffers, 8.4 µs of a 64 µs block, while the other
//! thread has nothing left to do. Such a sum splits without changing a bit: each frame is
//! added up in the same order whichever thread adds it, so the *parts* of a split sum each
//! take a range of frames (all channels, all inputs) and run as tasks of their own, one per
//! thread; the node runs once the last part is done, with its input already summed.
//!
//! Whether a node's sum is split is decided from measured times after every timed block
//! ([`Splits::decide`]): only where the sum takes [`SPLIT_NANOS`] or more, against which a
//! part's hand-over (a queue slot, a counter, the other thread's poll) is small.

use std::ops::Range;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// A sum measured at this many nanoseconds or more is split. Below it a part's hand-over
/// (a few hundred nanoseconds until the other thread notices and claims it, and the node
/// then reading half of its summed input from the other core's cache) eats what the split
/// saves.
pub(crate) const SPLIT_NANOS: u64 = 2_000;

/// Parts split at multiples of this many frames: 16 `f32`s are one 64-byte cache line, so
/// two parts never write the same line of the summed input.
const ALIGN: usize = 16;

/// "No candidate": the entry of a task whose head does not sum inputs.
const NONE: usize = usize::MAX;

/// The nodes whose input sums may be split, and for each, this block's state.
pub(crate) struct Splits {
    /// Parts per split sum: one per thread (1: nothing is ever split).
    parts: usize,
    /// Per candidate: the node whose input it sums, and that node's task.
    node: Box<[usize]>,
    task: Box<[usize]>,
    /// Per candidate: whether its sum is split in the blocks until the next decision.
    on: Box<[bool]>,
    /// Per task of the chains (`tasks.len()` entries): its candidate, or [`NONE`].
    of_task: Box<[usize]>,
    /// Per candidate: where the node's summed input starts, for this block (see
    /// [`Splits::set_buffer`]).
    buffer: Box<[AtomicPtr<f32>]>,
    /// Per part: its time in the last timed block, 0 if not timed.
    nanos: Box<[AtomicU64]>,
    /// Per candidate: parts of its sum not yet done in this block.
    left: Box<[AtomicUsize]>,
    /// How many parts the current decision runs per block.
    active: usize,
}

/// A part of a split sum: the node, and the frames of the block it adds up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Part {
    pub(crate) candidate: usize,
    pub(crate) node: usize,
    /// Which part (0..parts): its frames and its home queue.
    pub(crate) index: usize,
}

impl Splits {
    /// Every node with two or more inputs (`preds[i].len() >= 2`) is a candidate, unless
    /// there is one thread. `head_task(i)` is node `i`'s task (it heads one: a node with
    /// several inputs never continues a chain); `tasks` counts the chains' tasks.
    pub(crate) fn new(
        preds: &[Box<[usize]>],
        threads: usize,
        tasks: usize,
        head_task: impl Fn(usize) -> usize,
    ) -> Self {
        let parts = threads.max(1);
        let node: Box<[usize]> = if parts > 1 {
            (0..preds.len()).filter(|&i| preds[i].len() >= 2).collect()
        } else {
            Box::new([])
        };
        let task: Box<[usize]> = node.iter().map(|&i| head_task(i)).collect();
        let mut of_task = vec![NONE; tasks].into_boxed_slice();
        for (c, &t) in task.iter().enumerate() {
            of_task[t] = c;
        }
        Self {
            parts,
            on: vec![false; node.len()].into_boxed_slice(),
            buffer: node
                .iter()
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            nanos: (0..node.len() * parts).map(|_| AtomicU64::new(0)).collect(),
            left: node.iter().map(|_| AtomicUsize::new(0)).collect(),
            node,
            task,
            of_task,
            active: 0,
        }
    }

    /// Parts per split sum.
    pub(crate) fn parts(&self) -> usize {
        self.parts
    }

    /// Part tasks there can be (numbered after the chains' tasks).
    pub(crate) fn max_parts(&self) -> usize {
        self.node.len() * self.parts
    }

    /// Part tasks each block runs under the current decision.
    pub(crate) fn active(&self) -> usize {
        self.active
    }

    /// The split candidate heading chain task `t`, if its sum is split.
    pub(crate) fn split_task(&self, t: usize) -> Option<usize> {
        match self.of_task.get(t) {
            Some(&c) if c != NONE && self.on[c] => Some(c),
            _ => None,
        }
    }

    /// The candidates whose sums are split, with their nodes.
    pub(crate) fn split_nodes(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.node.len())
            .filter(|&c| self.on[c])
            .map(|c| (c, self.node[c]))
    }

    /// Part `index` of candidate `c`, as a number among `first` (the chains' task count)
    /// and up.
    pub(crate) fn part_task(&self, first: usize, c: usize, index: usize) -> usize {
        first + c * self.parts + index
    }

    /// Which part task number `k` (counted from the first part task) is.
    pub(crate) fn part(&self, k: usize) -> Part {
        let candidate = k / self.parts;
        Part {
            candidate,
            node: self.node[candidate],
            index: k % self.parts,
        }
    }

    /// The chain task a part of candidate `c` finishes into: the node's.
    pub(crate) fn task(&self, c: usize) -> usize {
        self.task[c]
    }

    /// Readies candidate `c`'s count of parts for this block: called by the thread that
    /// makes the parts ready, before it queues them (the queue's Release publishes it).
    pub(crate) fn arm(&self, c: usize) {
        self.left[c].store(self.parts, Ordering::Relaxed);
    }

    /// Counts one part of candidate `c`'s sum done; true for the last, whose thread then
    /// runs the node.
    pub(crate) fn part_done(&self, c: usize) -> bool {
        // AcqRel, as a task's `remaining`: the last part sees the others' writes of the
        // summed input and hands them on to the node's runner.
        self.left[c].fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// Records where candidate `c`'s node keeps its summed input this block. Called with
    /// the schedule held exclusively, before the pool runs; the pool's opening of the block
    /// (a release the threads acquire) publishes it.
    pub(crate) fn set_buffer(&self, c: usize, ptr: *mut f32) {
        self.buffer[c].store(ptr, Ordering::Relaxed);
    }

    /// Where candidate `c`'s node keeps its summed input this block.
    pub(crate) fn buffer(&self, c: usize) -> *mut f32 {
        self.buffer[c].load(Ordering::Relaxed)
    }

    /// Records part task number `k`'s time in a timed block.
    pub(crate) fn timed(&self, k: usize, nanos: u64) {
        self.nanos[k].store(nanos, Ordering::Relaxed);
    }

    /// Decides, after a timed block, which sums to split: one taking [`SPLIT_NANOS`] or
    /// more, by `sum(i)` (node `i`'s sum, measured where it was not split) or by its parts'
    /// summed times where it was; a split sum goes back to one piece only below half of
    /// that, so a sum near the line does not flip every decision.
    pub(crate) fn decide(&mut self, sum: impl Fn(usize) -> u64) {
        let parts = self.parts;
        for (c, on) in self.on.iter_mut().enumerate() {
            *on = if *on {
                let split: u64 = self.nanos[c * parts..(c + 1) * parts]
                    .iter()
                    .map(|n| n.load(Ordering::Relaxed))
                    .sum();
                split == 0 || split >= SPLIT_NANOS / 2
            } else {
                sum(self.node[c]) >= SPLIT_NANOS
            };
        }
        self.active = self.on.iter().filter(|&&on| on).count() * parts;
    }
}

/// The frames part `index` of `parts` adds up in a block of `frames`: consecutive ranges
/// cut at multiples of [`ALIGN`], covering the block once (some empty in a short block).
pub(crate) fn frames(index: usize, parts: usize, frames: usize) -> Range<usize> {
    let lines = frames.div_ceil(ALIGN);
    let at = |p: usize| (lines * p / parts * ALIGN).min(frames);
    at(index)..at(index + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_cover_the_block_once_in_whole_cache_lines() {
        assert_eq!((frames(0, 2, 64), frames(1, 2, 64)), (0..32, 32..64));
        assert_eq!((frames(0, 2, 100), frames(1, 2, 100)), (0..48, 48..100));
        assert_eq!((frames(0, 2, 1), frames(1, 2, 1)), (0..0, 0..1));
        for parts in 1..5 {
            for n in 1..300 {
                let all: Vec<usize> = (0..parts).flat_map(|p| frames(p, parts, n)).collect();
                assert_eq!(all, (0..n).collect::<Vec<_>>(), "{parts} parts of {n}");
                for p in 1..parts {
                    assert_eq!(frames(p, parts, n).start % ALIGN, 0);
                }
            }
        }
    }

    #[test]
    fn a_sum_splits_from_its_measured_time_and_joins_again_below_half() {
        // Node 2 sums 0 and 1; node 3 has one input.
        let preds: Vec<Box<[usize]>> = vec![[].into(), [].into(), [0, 1].into(), [2].into()];
        let mut s = Splits::new(&preds, 2, 3, |i| i);
        assert_eq!((s.node.len(), s.max_parts()), (1, 2));
        assert_eq!(s.split_task(2), None);
        s.decide(|_| SPLIT_NANOS - 1);
        assert_eq!((s.split_task(2), s.active()), (None, 0));
        s.decide(|_| SPLIT_NANOS);
        assert_eq!((s.split_task(2), s.active()), (Some(0), 2));
        // Split, it is judged by its parts: 700 + 400 is above half the line.
        s.timed(0, 700);
        s.timed(1, 400);
        s.decide(|_| 0);
        assert_eq!(s.split_task(2), Some(0));
        s.timed(1, 200);
        s.decide(|_| 0);
        assert_eq!((s.split_task(2), s.active()), (None, 0));
        // One thread: nothing to split.
        let one = Splits::new(&preds, 1, 3, |i| i);
        assert_eq!(one.max_parts(), 0);
    }
}
