//! [`LoadMeter`]: per-callback load recorded on the audio thread without allocating.
//!
//! Load is the time a callback took divided by the duration of the audio it produced (the
//! same definition as Web Audio's `AudioRenderCapacity`): 1.0 uses the whole budget, above
//! 1.0 the deadline was missed.

use serde::Serialize;

/// Histogram resolution: one bin per 0.001 of load, up to this many bins.
const BINS: usize = 10_000;
const BIN_WIDTH: f64 = 0.001;

/// Records one load value per callback. [`record`](LoadMeter::record) is real-time safe:
/// every buffer is allocated by [`new`](LoadMeter::new).
///
/// The first `capacity` values are kept exactly (for plots and exact percentiles); after
/// that, values still go into a fixed-resolution histogram, the maximum and the
/// missed-deadline count, so nothing is lost from the summary.
///
/// ```
/// use downbeat::LoadMeter;
/// let mut meter = LoadMeter::new(16);
/// for load in [0.1, 0.2, 1.5] {
///     meter.record(load);
/// }
/// let s = meter.summary();
/// assert_eq!((s.blocks, s.missed), (3, 1));
/// assert_eq!(s.load_max, 1.5);
/// ```
#[derive(Clone, Debug)]
pub struct LoadMeter {
    samples: Vec<f32>,
    kept: usize,
    histogram: Box<[u64]>,
    overflow: u64,
    count: u64,
    missed: u64,
    max: f64,
    sum: f64,
    last: f64,
}

impl LoadMeter {
    /// A meter that keeps the first `capacity` values exactly.
    pub fn new(capacity: usize) -> Self {
        // Touched now, so recording never takes a page fault on the audio thread.
        Self {
            samples: downbeat_graph::prefaulted(capacity),
            kept: 0,
            histogram: downbeat_graph::prefaulted(BINS).into_boxed_slice(),
            overflow: 0,
            count: 0,
            missed: 0,
            max: 0.0,
            sum: 0.0,
            last: 0.0,
        }
    }

    /// Records the load of one callback.
    pub fn record(&mut self, load: f64) {
        if let Some(slot) = self.samples.get_mut(self.kept) {
            *slot = load as f32;
            self.kept += 1;
        }
        let bin = (load / BIN_WIDTH) as usize;
        match self.histogram.get_mut(bin) {
            Some(b) => *b += 1,
            None => self.overflow += 1,
        }
        self.count += 1;
        if load > 1.0 {
            self.missed += 1;
        }
        self.max = self.max.max(load);
        self.sum += load;
        self.last = load;
    }

    /// The values kept exactly, in order.
    pub fn samples(&self) -> &[f32] {
        &self.samples[..self.kept]
    }

    /// Callbacks recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The load of the most recent callback (0 before the first).
    pub fn last(&self) -> f64 {
        self.last
    }

    /// Forgets everything recorded so far, keeping the allocations.
    pub fn reset(&mut self) {
        self.kept = 0;
        self.histogram.fill(0);
        self.overflow = 0;
        self.count = 0;
        self.missed = 0;
        self.max = 0.0;
        self.sum = 0.0;
        self.last = 0.0;
    }

    /// The load at quantile `q` (0..=1). Exact while every value was kept, otherwise
    /// accurate to 0.001.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        if self.kept as u64 == self.count {
            let mut sorted = self.samples().to_vec();
            sorted.sort_by(f32::total_cmp);
            let i = ((q * (sorted.len() - 1) as f64).round() as usize).min(sorted.len() - 1);
            return sorted[i] as f64;
        }
        let rank = (q * (self.count - 1) as f64).round() as u64;
        let mut seen = 0;
        for (bin, &n) in self.histogram.iter().enumerate() {
            seen += n;
            if seen > rank {
                return ((bin as f64 + 0.5) * BIN_WIDTH).min(self.max);
            }
        }
        self.max
    }

    /// The statistics printed at the end of a run.
    pub fn summary(&self) -> LoadSummary {
        LoadSummary {
            blocks: self.count,
            load_p0: self.quantile(0.0),
            load_p25: self.quantile(0.25),
            load_p50: self.quantile(0.5),
            load_p75: self.quantile(0.75),
            load_p99: self.quantile(0.99),
            load_p999: self.quantile(0.999),
            load_max: self.max,
            load_mean: if self.count == 0 {
                0.0
            } else {
                self.sum / self.count as f64
            },
            missed: self.missed,
        }
    }
}

/// Load statistics over a run. `load_*` are fractions of the callback budget.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LoadSummary {
    /// Callbacks recorded.
    pub blocks: u64,
    /// Smallest load.
    pub load_p0: f64,
    /// 25th percentile.
    pub load_p25: f64,
    /// Median.
    pub load_p50: f64,
    /// 75th percentile.
    pub load_p75: f64,
    /// 99th percentile.
    pub load_p99: f64,
    /// 99.9th percentile.
    pub load_p999: f64,
    /// Largest load.
    pub load_max: f64,
    /// Mean load.
    pub load_mean: f64,
    /// Callbacks whose load exceeded 1.0: the deadline was missed.
    pub missed: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_percentiles_while_samples_fit() {
        let mut m = LoadMeter::new(1000);
        for i in 0..1000 {
            m.record(i as f64 / 1000.0);
        }
        let s = m.summary();
        assert!((s.load_p50 - 0.5).abs() < 0.002, "{s:?}");
        assert!((s.load_p99 - 0.989).abs() < 0.002, "{s:?}");
        assert_eq!(s.missed, 0);
    }

    #[test]
    fn histogram_takes_over_past_capacity() {
        let mut m = LoadMeter::new(10);
        for i in 0..10_000 {
            m.record(if i % 100 == 0 { 2.0 } else { 0.25 });
        }
        let s = m.summary();
        assert_eq!(s.blocks, 10_000);
        assert_eq!(s.missed, 100);
        assert!((s.load_p50 - 0.25).abs() < 0.001, "{s:?}");
        assert_eq!(s.load_max, 2.0);
        assert_eq!(m.samples().len(), 10);
    }
}
