//! The engine's clock reads, per target: natively the monotonic clock; wasm32-unknown-unknown
//! has no clock (`Instant::now` panics there), so the engine meters no load and maps no
//! instants there (a browser addresses events by frame).

/// Nanoseconds on the monotonic clock; 0 on wasm32.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn now_ns() -> u64 {
    downbeat_rt::clock::now_ns()
}

/// Nanoseconds on the monotonic clock; 0 on wasm32.
#[cfg(target_arch = "wasm32")]
pub(crate) fn now_ns() -> u64 {
    0
}

/// A started measurement of how long a block takes.
pub(crate) struct Stopwatch {
    #[cfg(not(target_arch = "wasm32"))]
    start: std::time::Instant,
}

impl Stopwatch {
    pub(crate) fn start() -> Self {
        Self {
            #[cfg(not(target_arch = "wasm32"))]
            start: std::time::Instant::now(),
        }
    }

    /// Seconds since [`start`](Stopwatch::start); `None` where there is no clock.
    pub(crate) fn seconds(&self) -> Option<f64> {
        #[cfg(not(target_arch = "wasm32"))]
        return Some(self.start.elapsed().as_secs_f64());
        #[cfg(target_arch = "wasm32")]
        return None;
    }
}
