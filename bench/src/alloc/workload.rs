//! The `alloc` workloads (today's `pair_*` and the `large_*` delay lines), shared by the suite
//! and by the `alloc-count` instruction-count driver so both measure the same pairs.

use crate::rng::Rng;

/// Blocks kept alive at once.
pub const LIVE: usize = 1024;

/// Object-sized blocks, delay lines of plucked strings (50-400 Hz at 48 kHz as f32), and some
/// long lines up to 64 KiB, as in the thesis' benchmark program (K. S. Matheussen, "Realtime
/// Audio with Garbage Collection", 2010).
pub fn size(rng: &mut Rng) -> usize {
    let u = rng.unit();
    let s = if u < 0.4 {
        16.0 + rng.unit() * 240.0
    } else if u < 0.9 {
        4.0 * (48_000.0 / (50.0 + rng.unit() * 350.0))
    } else {
        // Log-uniform 4 KiB - 64 KiB.
        4096.0 * 16f64.powf(rng.unit())
    };
    (s as usize).clamp(16, 64 * 1024)
}

/// Live blocks of the `large_*` workload: 64 lines of at most 375 KiB fill at most 24 MiB.
pub const LARGE_LIVE: usize = 64;

/// One second of stereo f32 at 48 kHz (375 KiB) or a little less, never below 128 KiB:
/// the delay lines of a reverb or a looper, allocated when a plug-in is inserted.
pub fn large_size(rng: &mut Rng) -> usize {
    let full = 48_000 * 2 * 4;
    (128 * 1024 + (rng.unit() * (full - 128 * 1024) as f64) as usize).min(full)
}
