//! What the collector measured.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Count, total, minimum and maximum of one kind of duration; one writer, any readers.
#[derive(Default)]
pub(crate) struct TimeStat {
    count: AtomicU64,
    total: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
}

impl TimeStat {
    pub(crate) fn record(&self, ns: u64) {
        let n = self.count.load(Ordering::Relaxed);
        if n == 0 || ns < self.min.load(Ordering::Relaxed) {
            self.min.store(ns, Ordering::Relaxed);
        }
        if ns > self.max.load(Ordering::Relaxed) {
            self.max.store(ns, Ordering::Relaxed);
        }
        self.total.fetch_add(ns, Ordering::Relaxed);
        self.count.store(n + 1, Ordering::Relaxed);
    }

    pub(crate) fn total_ns(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    pub(crate) fn read(&self) -> Timing {
        Timing {
            count: self.count.load(Ordering::Relaxed),
            total: Duration::from_nanos(self.total.load(Ordering::Relaxed)),
            min: Duration::from_nanos(self.min.load(Ordering::Relaxed)),
            max: Duration::from_nanos(self.max.load(Ordering::Relaxed)),
        }
    }
}

/// Count, total, minimum and maximum of one kind of duration.
///
/// ```
/// let t = downbeat_gc::Timing::default();
/// assert_eq!(t.average(), std::time::Duration::ZERO);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timing {
    /// How many.
    pub count: u64,
    /// Their sum.
    pub total: Duration,
    /// The shortest.
    pub min: Duration,
    /// The longest.
    pub max: Duration,
}

impl Timing {
    /// `total / count` (zero when empty).
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = downbeat_gc::Timing { count: 2, total: Duration::from_micros(6), ..Default::default() };
    /// assert_eq!(t.average(), Duration::from_micros(3));
    /// ```
    pub fn average(&self) -> Duration {
        if self.count == 0 {
            Duration::ZERO
        } else {
            self.total / self.count as u32
        }
    }
}

/// The collector threads' measurements (see [`Collector::stats`](crate::Collector::stats)).
///
/// ```
/// let (_mutator, collector) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
/// let s = collector.stats();
/// assert_eq!(s.cycles, 0);
/// ```
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Stats {
    /// Partial snapshots: copying the used part of the heap (the roots excluded).
    pub partial_snapshot: Timing,
    /// Forced full snapshots: the whole heap, padded to the prediction.
    pub full_snapshot: Timing,
    /// Copying the root slots (for the replicating collector: the swap of the complementary
    /// blocks and the roots' copy, the audio thread's whole pause).
    pub roots_snapshot: Timing,
    /// Marking (on the snapshot, or on the live heap in stop-the-world mode).
    pub mark: Timing,
    /// Sweeping.
    pub sweep: Timing,
    /// Completed collections.
    pub cycles: u64,
    /// Bytes copied by snapshots, roots included.
    pub snapshot_bytes: u64,
    /// Pointer-heap objects found unreachable and freed.
    pub objects_freed: u64,
    /// Their bytes, headers included.
    pub bytes_freed: u64,
    /// Atomic blocks found unreachable.
    pub atomic_freed: u64,
    /// Blocks that ended with the pointer heap inside the safety buffer.
    pub safety_warnings: u64,
    /// Times a full snapshot was due but could not start within its one-second window.
    pub late_full_snapshots: u64,
    /// The predicted duration of a full snapshot: heap size / p(M).
    pub predicted_full_snapshot: Duration,
    /// p(M), the copy rate measured at start-up (or configured), in bytes per nanosecond
    /// (= GB/s; the thesis' 5.45 MB/ms is 5.45 here).
    pub copy_rate: f64,
    /// Why the snapshot thread does not run at real-time priority, if it does not (the
    /// audio thread then copies snapshots itself).
    pub priority_note: Option<String>,
    /// Why the collector threads are not pinned to [`Config::collector_cpu`](crate::Config::collector_cpu),
    /// if they are not.
    pub pin_note: Option<String>,
    /// Memory the collector keeps for the pointer heap: the heap itself, its snapshot, the
    /// replicating collector's complementary blocks and stacks and root copy, and the mark
    /// state (the atomic heap, the same for every collector, is left out).
    pub memory_bytes: usize,
    /// Replicating collector, [`Barrier::Stacks`](crate::Barrier::Stacks): collections whose
    /// complementary stack had overflowed, so the whole block was scanned.
    pub stack_overflows: u64,
    /// Replicating collector: heap words moved from a complementary block into the snapshot.
    pub replicated_words: u64,
}
