//! The nodes the suite adds to Downbeat's graphs, and the DSP kernels its Firewheel graphs
//! share with them.
//!
//! The comparison with Firewheel runs the same kernels in both engines ([`Osc`], [`dc`],
//! [`copy`]): each engine's own oscillator would make the block cost a contest of sine
//! approximations (Firewheel's test tone calls `sin` per sample, Downbeat's `sine` is a
//! vectorised polynomial), and the figures are about the engines around the nodes.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};

/// What the added node plays: a DC far above anything the graph's oscillators can sum to
/// (their amplitudes add up to [`PEAK`]), so one sample tells whether it is in the output.
pub const LEVEL: f32 = 2.0;
/// The largest absolute sample the graph plays without the added node.
pub const PEAK: f32 = 0.5;
/// A sample above this carries the added node.
pub const THRESHOLD: f32 = 1.0;
// The threshold tells the two apart whatever the oscillators do.
const _: () = assert!(LEVEL - PEAK > THRESHOLD && THRESHOLD > PEAK);

/// A phase-accumulator oscillator with a parabolic sine: cheap, the same arithmetic in both
/// engines, and bounded by its amplitude.
#[derive(Clone, Copy, Debug)]
pub struct Osc {
    phase: f32,
    inc: f32,
    amp: f32,
}

impl Osc {
    /// The `i`th of `n` oscillators of a graph: frequencies and phases spread so that the
    /// sum is neither silent nor a single tone, amplitudes adding up to [`PEAK`].
    pub fn nth(i: usize, n: usize, rate: u32) -> Self {
        let freq = 110.0 + (i % 997) as f32 * 4.3;
        Self {
            phase: phase_nth(i) as f32,
            inc: freq / rate as f32,
            amp: PEAK / n.max(1) as f32,
        }
    }

    pub fn fill(&mut self, out: &mut [f32]) {
        for s in out {
            let v = 2.0 * self.phase - 1.0;
            *s = -4.0 * self.amp * v * (1.0 - v.abs());
            self.phase += self.inc;
            if self.phase >= 1.0 {
                self.phase -= 1.0;
            }
        }
    }
}

pub fn dc(out: &mut [f32], level: f32) {
    out.fill(level);
}

pub fn copy(out: &mut [f32], input: &[f32]) {
    out.copy_from_slice(&input[..out.len()]);
}

/// The starting phase of the `i`th oscillator, in cycles: scattered (splitmix64), since
/// evenly spread phases of nearly equal frequencies cancel for a long time.
fn phase_nth(i: usize) -> f64 {
    let mut z = (i as u64)
        .wrapping_add(1)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// The `i`th of `n` sines of the built-in graphs: the same spread as [`Osc::nth`].
pub fn sine_nth(i: usize, n: usize, rate: u32) -> downbeat::nodes::Sine {
    let freq = 110.0 + (i % 997) as f64 * 4.3;
    let phase = phase_nth(i);
    downbeat::nodes::Sine::new(
        1,
        rate,
        &downbeat::nodes::SineSettings {
            freq,
            amp: PEAK / n.max(1) as f32,
            phase,
        },
    )
}

/// Downbeat's side of the twin oscillator.
pub struct TwinOsc(pub Osc);

impl Node for TwinOsc {
    fn input_channels(&self) -> usize {
        0
    }

    fn output_channels(&self) -> usize {
        1
    }

    fn process(&mut self, _: &ProcessContext, _: AudioRef<'_>, mut output: AudioMut<'_>) {
        self.0.fill(output.channel_mut(0));
    }
}

/// Downbeat's side of the twin mix: the engine sums the edges into its input, it passes the
/// sum on (Firewheel's twin does the same).
pub struct TwinSum;

impl Node for TwinSum {
    fn input_channels(&self) -> usize {
        1
    }

    fn output_channels(&self) -> usize {
        1
    }

    fn process(&mut self, _: &ProcessContext, input: AudioRef<'_>, mut output: AudioMut<'_>) {
        copy(output.channel_mut(0), input.channel(0));
    }
}

/// The node an edit adds: [`LEVEL`] on every sample.
pub struct Dc;

impl Node for Dc {
    fn input_channels(&self) -> usize {
        0
    }

    fn output_channels(&self) -> usize {
        1
    }

    fn process(&mut self, _: &ProcessContext, _: AudioRef<'_>, mut output: AudioMut<'_>) {
        dc(output.channel_mut(0), LEVEL);
    }
}

/// What a [`Watch`] tells the control thread.
#[derive(Debug, Default)]
pub struct Seen {
    /// Nanoseconds from the watch's base instant to the end of the block in which the added
    /// node was first heard; 0 until then (the control thread clears it before each edit).
    pub at: AtomicU64,
    /// Whether the latest block carried the added node.
    pub present: AtomicBool,
}

/// Passes the mix on to the output and notes the instant the added node is first heard:
/// the last node before the output, so the block it stamps is the block that plays the
/// edit. One clock read (a vDSO call, no system call with the TSC clock source) and two
/// atomic stores, only in the block where the signal appears; nothing allocates.
pub struct Watch {
    seen: Arc<Seen>,
    base: Instant,
    was_present: bool,
}

impl Watch {
    pub fn new(seen: Arc<Seen>, base: Instant) -> Self {
        Self {
            seen,
            base,
            was_present: false,
        }
    }
}

impl Node for Watch {
    fn input_channels(&self) -> usize {
        1
    }

    fn output_channels(&self) -> usize {
        1
    }

    fn process(&mut self, _: &ProcessContext, input: AudioRef<'_>, mut output: AudioMut<'_>) {
        let input = input.channel(0);
        copy(output.channel_mut(0), input);
        let present = input.iter().any(|&x| x > THRESHOLD);
        if present && !self.was_present {
            let ns = u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX);
            // 0 means "not yet" to the reader.
            self.seen.at.store(ns.max(1), Ordering::Release);
        }
        if present != self.was_present {
            self.seen.present.store(present, Ordering::Release);
            self.was_present = present;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oscillators_sum_below_the_peak_and_are_not_silent() {
        let n = 998;
        let mut sum = vec![0.0f32; 64 * 8];
        let mut block = vec![0.0f32; 64];
        for i in 0..n {
            let mut osc = Osc::nth(i, n, 48_000);
            for chunk in sum.chunks_mut(64) {
                osc.fill(&mut block);
                for (s, b) in chunk.iter_mut().zip(&block) {
                    *s += b;
                }
            }
        }
        assert!(sum.iter().all(|x| x.abs() <= PEAK + 1e-3));
        let rms = (sum.iter().map(|x| x * x).sum::<f32>() / sum.len() as f32).sqrt();
        assert!(rms > 1e-3, "{rms}");
    }
}
