//! The snapshot collector's critical section, one value per collection, recovered from the
//! running totals in its [`Stats`](downbeat_gc::Stats).
//!
//! The collector keeps only counts, totals and extremes of its roots copies and of its partial
//! and full heap copies; the thesis' blocking time per block is the roots copy plus the heap
//! copy of one snapshot. A thread that reads the totals more often than snapshots happen (at
//! most one every two 5.8 ms blocks) sees them grow by one snapshot at a time, and the growth
//! is that snapshot's critical section.

use std::time::Duration;

use downbeat_gc::Timing;

/// One snapshot's critical section: copying the roots and the heap.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Section {
    /// Roots copy plus heap copy (a full copy padded to the prediction).
    pub time: Duration,
    /// Whether this was a forced full snapshot.
    pub full: bool,
}

/// The sections seen so far.
#[derive(Debug, Default)]
pub struct Sections {
    count: u64,
    total: Duration,
    fulls: u64,
    /// One entry per snapshot seen on its own.
    pub taken: Vec<Section>,
    /// Snapshots that completed between two reads together, so their split is unknown.
    pub unsampled: u64,
}

impl Sections {
    /// Room for `n` sections, so that observing does not reallocate on the way.
    pub fn with_capacity(n: usize) -> Self {
        Self {
            taken: Vec::with_capacity(n),
            ..Self::default()
        }
    }

    /// Takes one reading of the collector's roots, partial and full snapshot timings.
    pub fn observe(&mut self, roots: Timing, partial: Timing, full: Timing) {
        // The snapshot thread records the roots copy before the heap copy: counts that
        // disagree mean a snapshot is being recorded right now; the next reading will see it.
        if roots.count != partial.count + full.count || roots.count <= self.count {
            return;
        }
        let total = roots.total + partial.total + full.total;
        if roots.count == self.count + 1 {
            self.taken.push(Section {
                time: total.saturating_sub(self.total),
                full: full.count > self.fulls,
            });
        } else {
            self.unsampled += roots.count - self.count;
        }
        (self.count, self.total, self.fulls) = (roots.count, total, full.count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(count: u64, us: u64) -> Timing {
        Timing {
            count,
            total: Duration::from_micros(us),
            ..Timing::default()
        }
    }

    #[test]
    fn one_section_per_snapshot_and_torn_readings_skipped() {
        let mut s = Sections::default();
        s.observe(t(0, 0), t(0, 0), t(0, 0));
        assert!(s.taken.is_empty());
        // A partial snapshot: 3 µs of roots, 10 µs of heap.
        s.observe(t(1, 3), t(1, 10), t(0, 0));
        // Read again before the next one: nothing new.
        s.observe(t(1, 3), t(1, 10), t(0, 0));
        // Roots of the next snapshot recorded, its heap copy not yet: skipped.
        s.observe(t(2, 5), t(1, 10), t(0, 0));
        // A full snapshot: 2 µs of roots, 700 µs of padded copy.
        s.observe(t(2, 5), t(1, 10), t(1, 700));
        // Two partial snapshots between readings: counted, not split.
        s.observe(t(4, 9), t(3, 30), t(1, 700));
        // One more, seen on its own again.
        s.observe(t(5, 10), t(4, 34), t(1, 700));
        let us = |x: u64| Duration::from_micros(x);
        assert_eq!(
            s.taken,
            [
                Section {
                    time: us(13),
                    full: false
                },
                Section {
                    time: us(702),
                    full: true
                },
                Section {
                    time: us(5),
                    full: false
                },
            ]
        );
        assert_eq!(s.unsampled, 2);
    }
}
