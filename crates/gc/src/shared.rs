//! State shared by the audio thread, the snapshot thread and the mark-and-sweep thread, and the
//! handshake between them.
//!
//! The handshake's phase (see `handshake`) is the whole protocol:
//!
//! * `IDLE`: no collection in progress. Only the audio thread moves it on, in `end_block`,
//!   after writing the request (`top`, `full`, number of atomic allocations), with Release, so
//!   that its heap writes happen before the copy.
//! * `REQUESTED`: the snapshot thread owns the snapshot buffers and reads the heap and roots;
//!   the audio thread must not start a block (its `begin_block` waits, Acquire).
//! * `MARKING`: the copy is done (stored with Release); the audio thread runs again while the
//!   mark-and-sweep thread owns the snapshot buffers, and writes only to garbage blocks of the
//!   live heap, which nothing reachable can name. It stores `IDLE` with Release when its sweep
//!   is published.
//!
//! The replicating collector ([`Mode::Replicating`](crate::Mode::Replicating)) has no copy and
//! no snapshot thread: at the end of a block the audio thread, seeing `IDLE`, copies the roots,
//! writes the request (top, which complementary block, its stack's length) and stores
//! `MARKING` with Release; from then on that complementary block and the roots' copy are the
//! mark-and-sweep thread's, until it has emptied the block into the snapshot and stores `IDLE`.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::thread::Thread;
use std::time::Duration;

use crate::handshake::Handshake;
use crate::replica::Replica;
use crate::stats::TimeStat;

pub(crate) struct Snapshot {
    pub(crate) heap: Box<[u64]>,
    pub(crate) roots: Box<[u64]>,
    pub(crate) top: usize,
    pub(crate) atomic_allocs: u64,
}

pub(crate) struct Shared {
    pub(crate) heap: Box<[AtomicU64]>,
    pub(crate) roots: Box<[AtomicU64]>,
    pub(crate) handshake: Handshake,
    pub(crate) req_top: AtomicUsize,
    pub(crate) req_full: AtomicBool,
    pub(crate) req_atomic_allocs: AtomicU64,
    pub(crate) stop: AtomicBool,
    pub(crate) snapshot: UnsafeCell<Snapshot>,
    pub(crate) snapshot_thread: OnceLock<Thread>,
    pub(crate) collector_thread: OnceLock<Thread>,
    /// The second collector's complementary blocks and stacks ([`Mode::Replicating`] only).
    ///
    /// [`Mode::Replicating`]: crate::Mode::Replicating
    pub(crate) replica: Option<Replica>,
    /// Snapshots are copied on the audio thread: the snapshot thread could not get a
    /// real-time priority (set once by `start`, before the mutator runs).
    pub(crate) inline_copy: AtomicBool,
    /// What [`Stats::memory_bytes`](crate::Stats::memory_bytes) reports, fixed at start-up.
    pub(crate) memory_bytes: usize,
    /// Bytes per nanosecond, the thesis' p(M).
    pub(crate) copy_rate: f64,
    pub(crate) stats: SharedStats,
}

// SAFETY: `snapshot` is only touched by the thread that `phase` names as its owner (snapshot
// thread in REQUESTED, mark-and-sweep thread in MARKING), with Release/Acquire hand-overs;
// everything else is atomics or immutable after start-up.
unsafe impl Sync for Shared {}

#[derive(Default)]
pub(crate) struct SharedStats {
    pub(crate) partial: TimeStat,
    pub(crate) full: TimeStat,
    pub(crate) roots: TimeStat,
    pub(crate) mark: TimeStat,
    pub(crate) sweep: TimeStat,
    pub(crate) snapshot_bytes: AtomicU64,
    pub(crate) objects_freed: AtomicU64,
    pub(crate) bytes_freed: AtomicU64,
    pub(crate) atomic_freed: AtomicU64,
    pub(crate) cycles: AtomicU64,
    pub(crate) safety_warnings: AtomicU64,
    pub(crate) late_full_snapshots: AtomicU64,
    pub(crate) stack_overflows: AtomicU64,
    pub(crate) replicated_words: AtomicU64,
    pub(crate) priority_note: OnceLock<String>,
    pub(crate) pin_note: OnceLock<String>,
}

/// What one mark-and-sweep cycle did, recorded once whichever path ran it.
pub(crate) struct Cycle {
    pub(crate) mark: Duration,
    pub(crate) sweep: Duration,
    pub(crate) objects_freed: u64,
    pub(crate) bytes_freed: u64,
    pub(crate) atomic_freed: u64,
}

impl SharedStats {
    /// Adds a finished cycle (concurrent or stop-the-world) to the totals.
    pub(crate) fn record_cycle(&self, c: Cycle) {
        self.mark.record(c.mark.as_nanos() as u64);
        self.sweep.record(c.sweep.as_nanos() as u64);
        self.objects_freed
            .fetch_add(c.objects_freed, Ordering::Relaxed);
        self.bytes_freed.fetch_add(c.bytes_freed, Ordering::Relaxed);
        self.atomic_freed
            .fetch_add(c.atomic_freed, Ordering::Relaxed);
        self.cycles.fetch_add(1, Ordering::Relaxed);
    }
}
