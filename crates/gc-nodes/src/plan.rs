//! How big the collected heaps of one `echoes` node are, and the argument that its worst case
//! fits in them.
//!
//! Each tap is one small object in the pointer heap ([`TAP_BYTES`]) and one delay line in the
//! atomic heap (`delay` seconds of every channel). At most `max_taps` taps are alive at once;
//! the node refuses onsets beyond that. What else the heaps must hold is garbage the
//! collector has not handed back yet: taps that ended recently. A tap lives at least one
//! delay (it spends its first pass capturing), so every tap that ended in a window of `delay`
//! seconds was alive at the window's start: at most `max_taps` of them per window. The plan
//! gives the collector [`SLACK_SECONDS`] of audio to return garbage (it starts a collection
//! at most every second block, after one that allocated, and a full one every quarter second
//! in any case, so a collector that keeps up returns it within a few blocks), which is at most
//! `max_taps * ceil(slack / delay)` ended taps; the heaps hold that many plus the live ones.
//! A collector further behind than that makes an allocation fail: the onset is then dropped
//! and counted ([`TapCounts::dropped_heap`](crate::TapCounts::dropped_heap)), never a panic.

use downbeat_gc::Config;
use downbeat_graph::ParamError;

use crate::echoes::TAP_WORDS;

/// Bytes of one tap object in the pointer heap (header, two references, five data words).
pub const TAP_BYTES: usize = TAP_WORDS * 8;

/// Seconds of ended taps the heaps hold besides the live ones: how far the collector may
/// fall behind before an onset is dropped for want of memory.
pub const SLACK_SECONDS: f64 = 0.5;

/// Largest atomic heap one node may ask for (256 MiB): a longer `delay`, more `channels` or
/// more `max_taps` than fit are refused when the node is built, naming the parameters.
pub const MAX_ATOMIC_BYTES: usize = 256 << 20;

/// Bookkeeping the atomic heap's TLSF allocator may add around one block (its header and
/// alignment), counted generously.
const BLOCK_OVERHEAD: usize = 64;

/// The sizes of one node's heaps.
///
/// ```
/// use downbeat_gc_nodes::HeapPlan;
/// // The defaults: 2 channels, 0.25 s at 48 kHz, 16 taps.
/// let plan = HeapPlan::new(2, 12_000, 16, 48_000).unwrap();
/// // 16 live taps and the garbage of two delays (0.5 s of slack / 0.25 s): 48 taps.
/// assert_eq!(plan.taps, 48);
/// assert!(plan.line_bytes >= 2 * 12_000 * 4);
/// assert!(plan.atomic_bytes >= plan.taps * plan.line_bytes);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapPlan {
    /// Samples per channel of one tap's delay line: the delay in samples.
    pub line_samples: usize,
    /// Bytes requested for one delay line (every channel), rounded up to a size class of the
    /// atomic heap's allocator so that a freed line always fits the next request.
    pub line_bytes: usize,
    /// Taps the heaps hold at once: `max_taps` live ones and the ended ones of
    /// [`SLACK_SECONDS`].
    pub taps: usize,
    /// Size of the pointer heap ([`Config::heap_bytes`](downbeat_gc::Config::heap_bytes)).
    pub pointer_bytes: usize,
    /// Size of the atomic heap ([`Config::atomic_bytes`](downbeat_gc::Config::atomic_bytes)).
    pub atomic_bytes: usize,
}

impl HeapPlan {
    /// The collector configuration with this plan's sizes: the two heaps, one atomic slot per
    /// tap, one root (the list of taps) and tap-sized objects at most. Everything else is
    /// [`Config::default`]'s, for the caller to set.
    ///
    /// ```
    /// use downbeat_gc_nodes::HeapPlan;
    /// let plan = HeapPlan::new(2, 12_000, 16, 48_000).unwrap();
    /// let config = plan.config();
    /// assert_eq!((config.heap_bytes, config.atomic_slots), (plan.pointer_bytes, plan.taps));
    /// ```
    pub fn config(&self) -> Config {
        Config {
            heap_bytes: self.pointer_bytes,
            atomic_bytes: self.atomic_bytes,
            atomic_slots: self.taps,
            roots: 1,
            max_object_words: TAP_WORDS,
            ..Config::default()
        }
    }

    /// The plan for `max_taps` taps whose lines hold `line_samples` samples of each of
    /// `channels` channels at `sample_rate` Hz.
    ///
    /// # Errors
    /// [`ParamError::Invalid`] naming `max_taps` when the atomic heap would exceed
    /// [`MAX_ATOMIC_BYTES`], with the size it would need and what to lower.
    pub fn new(
        channels: usize,
        line_samples: usize,
        max_taps: usize,
        sample_rate: u32,
    ) -> Result<Self, ParamError> {
        let line_samples = line_samples.max(1);
        let slack = (SLACK_SECONDS * f64::from(sample_rate)).ceil() as usize;
        let too_big = |bytes: u128| ParamError::Invalid {
            name: "max_taps".into(),
            message: format!(
                "{max_taps} taps of {line_samples} samples on {channels} channels need {} MiB \
                 of collected heap (live taps and {SLACK_SECONDS} s of ended ones), more than \
                 the {} MiB a node may take: lower max_taps, delay or channels",
                bytes.div_ceil(1 << 20),
                MAX_ATOMIC_BYTES >> 20
            ),
        };
        // In u128, so that no combination of parameters overflows before it is refused.
        let raw_line = line_samples as u128 * channels as u128 * 4;
        let line_bytes = class_round(raw_line);
        let taps = max_taps as u128 * (1 + (slack as u128).div_ceil(line_samples as u128));
        let atomic = taps * (line_bytes + BLOCK_OVERHEAD as u128);
        let atomic = atomic + atomic / 16 + 4096;
        if atomic > MAX_ATOMIC_BYTES as u128 {
            return Err(too_big(atomic));
        }
        // Within bounds now: taps <= 256 MiB / 64 B, line_bytes <= 256 MiB.
        let taps = taps as usize;
        let pointer = (taps * TAP_BYTES + taps * TAP_BYTES / 8 + 1024).max(4096);
        Ok(Self {
            line_samples,
            line_bytes: line_bytes as usize,
            taps,
            pointer_bytes: pointer,
            atomic_bytes: atomic as usize,
        })
    }
}

/// Rounds `bytes` up to a multiple of 16 and of 1/32 of its power of two. A two-level
/// segregated-fit allocator (the atomic heap's TLSF, 32 classes per power of two) files a
/// free block under the class at or below its size and serves a request from the class at or
/// above it, so a freed block of an unrounded size could never serve a request of that same
/// size on its own; at a class boundary it always can. Costs at most 1/32 more memory.
fn class_round(bytes: u128) -> u128 {
    let bytes = bytes.max(16).next_multiple_of(16);
    let log = 127 - bytes.leading_zeros();
    let step = if log > 5 { 1u128 << (log - 5) } else { 1 };
    bytes.next_multiple_of(step.max(16))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_round_lands_on_a_boundary_and_costs_little() {
        for bytes in [1u128, 16, 100, 512, 513, 4000, 96_000, 768_000, 3_000_001] {
            let r = class_round(bytes);
            assert!(r >= bytes && r % 16 == 0, "{bytes} -> {r}");
            assert!(r <= bytes.max(16) + bytes / 32 + 16, "{bytes} -> {r}");
            let log = 127 - r.leading_zeros();
            if log > 9 {
                assert_eq!(r % (1 << (log - 5)), 0, "{bytes} -> {r}");
            }
        }
    }

    #[test]
    fn short_delays_hold_more_ended_taps() {
        let long = HeapPlan::new(1, 48_000, 8, 48_000).unwrap();
        let short = HeapPlan::new(1, 48, 8, 48_000).unwrap();
        assert_eq!(long.taps, 8 * 2);
        assert_eq!(short.taps, 8 * (1 + 500));
    }

    #[test]
    fn a_plan_too_large_names_what_to_lower() {
        let err = HeapPlan::new(32, 96_000, 64, 48_000).unwrap_err();
        let ParamError::Invalid { name, message } = err else {
            panic!("not Invalid")
        };
        assert_eq!(name, "max_taps");
        assert!(
            message.contains("lower max_taps, delay or channels"),
            "{message}"
        );
        assert!(message.contains("MiB"), "{message}");
    }
}
