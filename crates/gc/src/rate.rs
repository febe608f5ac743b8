//! p(M): how fast this machine copies memory that does not fit in its caches.

use std::hint::black_box;
use std::time::Instant;

/// The best rate, in bytes per nanosecond (GB/s), at which `bytes` bytes are copied with
/// `memcpy` over `rounds` attempts; the thesis' p(M), for M much larger than the caches (use
/// 64 MiB or more). Not real-time safe: it allocates two buffers of `bytes`.
///
/// ```
/// let rate = downbeat_gc::measure_copy_rate(1 << 20, 3);
/// assert!(rate > 0.0);
/// ```
pub fn measure_copy_rate(bytes: usize, rounds: usize) -> f64 {
    let bytes = bytes.max(4096);
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    // The first copy faults the destination in; it does not count.
    dst.copy_from_slice(&src);
    let mut best = f64::INFINITY;
    for _ in 0..rounds.max(1) {
        let t = Instant::now();
        dst.copy_from_slice(black_box(&src));
        black_box(&mut dst);
        best = best.min(t.elapsed().as_nanos().max(1) as f64);
    }
    bytes as f64 / best
}
