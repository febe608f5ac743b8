//! The block/snapshot handshake: one atomic phase, three owners in turn.
//!
//! This file is also compiled into the loom model (`tests/loom.rs`), with `super::sync` naming
//! loom's atomics there and std's here, so the model checks exactly this code.

use super::sync::{AtomicU8, Ordering};

const IDLE: u8 = 0;
const REQUESTED: u8 = 1;
const MARKING: u8 = 2;
const COPYING: u8 = 3;

/// Whose turn it is: the audio thread requests (IDLE -> REQUESTED); whoever claims the request
/// copies (REQUESTED -> COPYING), the snapshot thread between blocks or, if it has not started
/// by the next block, the audio thread itself, and hands over (COPYING -> MARKING); the
/// mark-and-sweep thread finishes (MARKING -> IDLE). The claim is a compare-and-swap, so
/// exactly one thread copies, and the audio thread only ever waits for a copy that is
/// running.
/// The replicating collector skips the copy: the audio thread hands over directly
/// (IDLE -> MARKING).
/// Every hand-over is a Release store read with Acquire by the next owner, so what one owner
/// wrote is visible to the next.
pub(crate) struct Handshake {
    phase: AtomicU8,
}

impl Handshake {
    pub(crate) fn new() -> Self {
        Self {
            phase: AtomicU8::new(IDLE),
        }
    }

    /// Audio thread, end of a block: starts a collection if none is in progress. Its heap
    /// writes so far happen before the snapshot thread's copy.
    pub(crate) fn try_request(&self) -> bool {
        // Acquire: the previous sweep's writes to the heap are visible before we let a new
        // copy read them (and before we reuse what it freed).
        if self.phase.load(Ordering::Acquire) != IDLE {
            return false;
        }
        self.phase.store(REQUESTED, Ordering::Release);
        true
    }

    /// Audio thread, end of a block, replicating collector: starts a collection that has
    /// nothing left to copy (the barrier kept the replica, the caller copied the roots), so
    /// the mark-and-sweep thread takes over at once. Its writes so far (barrier, roots) happen
    /// before the collector reads them.
    pub(crate) fn try_hand_over(&self) -> bool {
        // Acquire: the collector's reset of the complementary block we are about to hand it
        // back in exchange for, and its sweep, are visible before we go on writing.
        if self.phase.load(Ordering::Acquire) != IDLE {
            return false;
        }
        self.phase.store(MARKING, Ordering::Release);
        true
    }

    /// Audio thread, start of a block: whether the requested copy is not complete yet (the
    /// block may not write the heap). False means the copy is complete and visible as done.
    pub(crate) fn copying(&self) -> bool {
        matches!(self.phase.load(Ordering::Acquire), REQUESTED | COPYING)
    }

    /// Either copier: claims the requested copy (REQUESTED -> COPYING). True means the caller
    /// owns the snapshot buffers and may read the heap, which the audio thread does not write
    /// until the copy is published with [`copied`](Self::copied); false means someone else
    /// claimed it (or there was no request).
    pub(crate) fn claim(&self) -> bool {
        // Acquire: the audio thread's writes before its request happen before the copy.
        self.phase
            .compare_exchange(REQUESTED, COPYING, Ordering::Acquire, Ordering::Acquire)
            .is_ok()
    }

    /// The copier: the copy is complete; the audio thread may run and the mark-and-sweep
    /// thread may read the snapshot.
    pub(crate) fn copied(&self) {
        self.phase.store(MARKING, Ordering::Release);
    }

    /// Mark-and-sweep thread: whether a snapshot is ready for it.
    pub(crate) fn marking(&self) -> bool {
        self.phase.load(Ordering::Acquire) == MARKING
    }

    /// Mark-and-sweep thread: the sweep's writes are done; a new collection may start.
    pub(crate) fn swept(&self) {
        self.phase.store(IDLE, Ordering::Release);
    }

    /// Anyone: whether no collection is in progress.
    pub(crate) fn is_idle(&self) -> bool {
        self.phase.load(Ordering::Acquire) == IDLE
    }
}
