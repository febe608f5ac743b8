//! The second collector's replica of the pointer heap: K. S. Matheussen, "Realtime Audio with
//! Garbage Collection" (2010), chapter 12.
//!
//! The snapshot collector copies the used heap at the end of a block, so the heap it can serve
//! is capped by the time left in a block. This collector never copies the heap: its snapshot
//! is kept, cycle after cycle, by the collector alone, and the audio thread's **write
//! barrier** tells it what changed. Every reference the audio thread writes into the heap
//! (`set_ref`, `set_atomic`, the typed layer's setters, and the header and cleared reference
//! fields of a new object) is also stored at the same index of a **complementary block**, a
//! heap-sized array that holds [`UNUSED`] wherever the heap and the snapshot agree. There are
//! two complementary blocks: the audio thread writes one while the collector empties the
//! other into the snapshot. Starting a collection swaps them and copies the roots, and that is
//! the audio thread's whole pause, independent of the heap's size.
//!
//! The **complementary stacks** variant also records each index the barrier writes (once per
//! index per cycle) on a fixed stack, so the collector visits exactly the changed words
//! instead of scanning the whole block. A stack that fills up is not an error: the barrier
//! stops pushing, and the collector falls back to scanning the block for that cycle and
//! counts it ([`Stats::stack_overflows`](crate::Stats::stack_overflows)). The thesis grows a
//! full stack on the collector's side; a fixed size is simpler and keeps the audio thread's
//! memory constant, and the count says when [`Config::comp_stack`](crate::Config::comp_stack)
//! should be larger. The thesis pushes every write; pushing only when the word was unchanged
//! so far this cycle costs one load of the line the barrier writes anyway and keeps the stack
//! from filling with repeats of a hot field.
//!
//! Ownership, handed over by the handshake's Release/Acquire phase changes: the audio thread
//! owns block and stack `wb` (and the root copy while the collector is idle); the
//! mark-and-sweep thread owns the other pair, and the root copy, from the hand-over (`IDLE`
//! to `MARKING`) until it stores `IDLE`. Everything here is atomics, so sharing is sound
//! whoever is wrong about the turn; the turns make it correct.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// "The heap and the snapshot agree here." No heap word is ever all ones: as a header it
/// would announce 65535 reference fields in a 65535-word object (at most 65534 fit), and as
/// a reference it would name atomic slot 2^32 - 1 (there are fewer slots than that).
pub(crate) const UNUSED: u64 = u64::MAX;

/// `Replica::req_stack_len` when the stack overflowed: scan the whole block.
pub(crate) const OVERFLOWED: usize = usize::MAX;

/// Which write barrier, chosen by [`Mode::Replicating`](crate::Mode::Replicating).
///
/// ```
/// use downbeat_gc::{Barrier, Config, Mode};
/// let config = Config { mode: Mode::Replicating(Barrier::Stacks), ..Config::small() };
/// # let _ = config;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Barrier {
    /// The complementary block alone (the thesis' Program 10): two stores per reference
    /// write; the collector scans the used part of the block every cycle.
    Block,
    /// Complementary stacks with the block as fallback (the thesis' Program 12): the barrier
    /// also records the index the first time a word is written in a cycle, so the collector
    /// visits only the words that changed.
    Stacks,
}

pub(crate) struct Replica {
    pub(crate) barrier: Barrier,
    blocks: [Box<[AtomicU64]>; 2],
    stacks: [Box<[AtomicU32]>; 2],
    /// The roots as the audio thread copied them when it started the collection.
    pub(crate) roots: Box<[AtomicU64]>,
    /// Which block and stack the collector empties this cycle.
    pub(crate) req_index: AtomicUsize,
    /// How many indices that stack holds, or [`OVERFLOWED`].
    pub(crate) req_stack_len: AtomicUsize,
}

impl Replica {
    pub(crate) fn new(barrier: Barrier, heap_words: usize, roots: usize, stack: usize) -> Self {
        let unused = || {
            (0..heap_words)
                .map(|_| AtomicU64::new(UNUSED))
                .collect::<Box<[_]>>()
        };
        let stack_len = if barrier == Barrier::Stacks { stack } else { 0 };
        // Written element by element, so every page is backed before the audio thread's first
        // barrier touches it.
        let stack = || {
            (0..stack_len)
                .map(|_| AtomicU32::new(0))
                .collect::<Box<[_]>>()
        };
        Self {
            barrier,
            blocks: [unused(), unused()],
            stacks: [stack(), stack()],
            roots: (0..roots).map(|_| AtomicU64::new(0)).collect(),
            req_index: AtomicUsize::new(0),
            req_stack_len: AtomicUsize::new(0),
        }
    }

    /// Bytes this replica adds to the pointer heap's own.
    pub(crate) fn bytes(&self) -> usize {
        (self.blocks[0].len() * 2 + self.roots.len()) * 8 + self.stacks[0].len() * 2 * 4
    }

    pub(crate) fn stack_capacity(&self) -> usize {
        self.stacks[0].len()
    }

    /// The write barrier, audio thread: heap word `i` now holds `v`; record it in block `wb`
    /// (and, the first time this cycle, its index on stack `wb`). `stack_len` is the audio
    /// thread's count of that stack's entries, left at the capacity plus one once the stack
    /// overflowed. O(1): a load and two stores at most.
    #[inline]
    pub(crate) fn record(&self, wb: usize, i: usize, v: u64, stack_len: &mut usize) {
        let slot = &self.blocks[wb][i];
        if self.barrier == Barrier::Stacks && slot.load(Ordering::Relaxed) == UNUSED {
            match self.stacks[wb].get(*stack_len) {
                Some(s) => s.store(i as u32, Ordering::Relaxed),
                None => {
                    *stack_len = self.stack_capacity() + 1;
                    slot.store(v, Ordering::Relaxed);
                    return;
                }
            }
            *stack_len += 1;
        }
        slot.store(v, Ordering::Relaxed);
    }

    /// Collector: moves block `gc`'s recorded words into `snapshot` and resets them to
    /// [`UNUSED`], so the block is clean when the audio thread gets it back. Visits the
    /// stack's `len` indices, or all of `snapshot[..top]` if the stack overflowed or there is
    /// none. Returns the number of words moved.
    pub(crate) fn unload(&self, gc: usize, len: usize, top: usize, snapshot: &mut [u64]) -> u64 {
        let block = &self.blocks[gc];
        let mut moved = 0;
        let mut take = |i: usize| {
            let v = block[i].load(Ordering::Relaxed);
            if v != UNUSED {
                snapshot[i] = v;
                block[i].store(UNUSED, Ordering::Relaxed);
                moved += 1;
            }
        };
        if self.barrier == Barrier::Stacks && len != OVERFLOWED {
            for s in &self.stacks[gc][..len] {
                take(s.load(Ordering::Relaxed) as usize);
            }
        } else {
            (0..top.min(block.len())).for_each(take);
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stack_records_each_index_once_and_unload_resets_the_block() {
        let r = Replica::new(Barrier::Stacks, 16, 1, 4);
        let mut len = 0;
        r.record(0, 3, 7, &mut len);
        r.record(0, 3, 8, &mut len);
        r.record(0, 5, 9, &mut len);
        assert_eq!(len, 2);
        let mut snap = [0u64; 16];
        assert_eq!(r.unload(0, len, 16, &mut snap), 2);
        assert_eq!((snap[3], snap[5]), (8, 9));
        assert!(r.blocks[0]
            .iter()
            .all(|w| w.load(Ordering::Relaxed) == UNUSED));
    }

    #[test]
    fn an_overflowed_stack_falls_back_to_scanning_the_block() {
        let r = Replica::new(Barrier::Stacks, 16, 1, 2);
        let mut len = 0;
        for i in 0..5 {
            r.record(1, i, i as u64 + 10, &mut len);
        }
        assert_eq!(len, 3, "capacity plus one marks the overflow");
        let mut snap = [0u64; 16];
        assert_eq!(r.unload(1, OVERFLOWED, 16, &mut snap), 5);
        assert_eq!(&snap[..5], &[10, 11, 12, 13, 14]);
    }
}
