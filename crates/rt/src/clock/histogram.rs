use std::time::Duration;

/// Lateness in 1 µs bins, as cyclictest keeps it: recording is O(1) and never allocates, so
/// it can sit inside the loop being measured.
///
/// Values past the last bin are counted as overflow and still feed [`max`](Self::max) and
/// [`mean`](Self::mean); a quantile that falls among them is reported as the maximum.
///
/// ```
/// use std::time::Duration;
/// use downbeat_rt::clock::Histogram;
///
/// let mut h = Histogram::new(Duration::from_millis(10));
/// for us in [3, 5, 5, 8, 120] {
///     h.record(Duration::from_micros(us));
/// }
/// assert_eq!(h.count(), 5);
/// assert_eq!(h.quantile(0.5), Duration::from_micros(6)); // the upper edge of the 5 µs bin
/// assert_eq!(h.max(), Duration::from_micros(120));
/// ```
#[derive(Clone, Debug)]
pub struct Histogram {
    bins: Vec<u64>,
    overflow: u64,
    count: u64,
    sum_ns: u128,
    max_ns: u64,
}

impl Histogram {
    /// A histogram with 1 µs bins up to `range`; later values go to the overflow count.
    pub fn new(range: Duration) -> Self {
        let bins = (range.as_micros() as usize).max(1);
        Self {
            bins: vec![0; bins],
            overflow: 0,
            count: 0,
            sum_ns: 0,
            max_ns: 0,
        }
    }

    /// Counts one value.
    pub fn record(&mut self, value: Duration) {
        let ns = value.as_nanos().min(u64::MAX as u128) as u64;
        match self.bins.get_mut((ns / 1_000) as usize) {
            Some(bin) => *bin += 1,
            None => self.overflow += 1,
        }
        self.count += 1;
        self.sum_ns += ns as u128;
        self.max_ns = self.max_ns.max(ns);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Values beyond the histogram's range.
    pub fn overflow(&self) -> u64 {
        self.overflow
    }

    /// The largest value recorded (exact, not binned).
    pub fn max(&self) -> Duration {
        Duration::from_nanos(self.max_ns)
    }

    /// The mean of the values recorded (exact, not binned).
    pub fn mean(&self) -> Duration {
        if self.count == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos((self.sum_ns / self.count as u128) as u64)
    }

    /// The `q` quantile (0..=1): the upper edge of the bin holding that rank, so the true value
    /// is at most 1 µs lower; never above [`max`](Self::max).
    pub fn quantile(&self, q: f64) -> Duration {
        if self.count == 0 {
            return Duration::ZERO;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &n) in self.bins.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Duration::from_micros(i as u64 + 1).min(self.max());
            }
        }
        self.max()
    }

    /// Non-empty bins as (lower edge in µs, count), in order; the overflow is not included.
    pub fn bins(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.bins
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, &n)| (i as u64, n))
    }

    /// Forgets everything recorded, keeping the bins' memory.
    pub fn clear(&mut self) {
        self.bins.iter_mut().for_each(|b| *b = 0);
        self.overflow = 0;
        self.count = 0;
        self.sum_ns = 0;
        self.max_ns = 0;
    }
}
