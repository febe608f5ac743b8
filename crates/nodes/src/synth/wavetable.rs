//! Band-limited single-cycle tables for the synth's oscillators.
//!
//! A sawtooth or square wave has harmonics all the way up; sampled naively, every harmonic
//! above half the sample rate folds back into the audible band as an inharmonic alias. Each
//! waveform is therefore stored as a set of tables, one per half octave of fundamental
//! frequency, each holding only the harmonics that stay below half the sample rate for every
//! fundamental the table serves. A table serves phase increments (fundamental / sample
//! rate, in cycles per sample) in `(0.5 · 2^-(j+1)/2, 0.5 · 2^-j/2]`, so the tables do not
//! depend on the sample rate and are built once per process, off the audio thread.
//!
//! Half-octave steps keep the highest harmonic above `sample_rate / 2 / √2` (17 kHz at
//! 48 kHz) at the bottom of each table's range, so a note never sounds noticeably duller
//! than its neighbour a semitone up.

use std::sync::OnceLock;

use downbeat_graph::math;

/// Samples per cycle. Linear interpolation between samples then puts the interpolation
/// images of a table's highest harmonic at least `(harmonic / SIZE)²` below it.
pub(super) const SIZE: usize = 4096;
// The tables index `sin(2πm / SIZE)` modulo SIZE with a mask.
const _: () = assert!(SIZE.is_power_of_two());

/// Tables per waveform: table `j` holds `harmonics(j)` harmonics, up to 1023 (a quarter of
/// `SIZE`, for the interpolation bound above) for fundamentals below 0.5 · 2^-10 cycles per
/// sample (23 Hz at 48 kHz); lower notes use the last table.
pub(super) const TABLES: usize = 21;

/// The waveform of an oscillator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wave {
    /// A pure sine: one harmonic.
    Sine,
    /// A rising sawtooth from -1 to 1: every harmonic `k` at amplitude `2/(πk)`.
    Saw,
    /// A square wave of ±1: odd harmonics `k` at amplitude `4/(πk)`.
    Square,
}

impl Wave {
    /// The words project files use, in the order of [`Wave::from_name`].
    pub(super) const NAMES: &'static [&'static str] = &["sine", "saw", "square"];

    /// The waveform named `name` (one of [`Wave::NAMES`]).
    pub(super) fn from_name(name: &str) -> Option<Self> {
        match name {
            "sine" => Some(Wave::Sine),
            "saw" => Some(Wave::Saw),
            "square" => Some(Wave::Square),
            _ => None,
        }
    }

    /// Amplitude of harmonic `k` (from 1) as a sine term.
    fn harmonic(self, k: usize) -> f64 {
        let k_f = k as f64;
        match self {
            Wave::Sine => f64::from(u8::from(k == 1)),
            // The Fourier series of the ramp x/π on (-π, π).
            Wave::Saw => {
                let sign = if k % 2 == 1 { 1.0 } else { -1.0 };
                sign * 2.0 / (std::f64::consts::PI * k_f)
            }
            Wave::Square if k % 2 == 1 => 4.0 / (std::f64::consts::PI * k_f),
            Wave::Square => 0.0,
        }
    }
}

/// Harmonics in table `j`: the most harmonics `k` with `k · inc < 0.5` for every `inc` the
/// table serves, i.e. `k < 2^(j/2)`, and at least the fundamental.
pub(super) fn harmonics(j: usize) -> usize {
    let top = math::exp2(j as f64 / 2.0);
    // `top` is an integer for even `j`: that harmonic would sit exactly at half the sample
    // rate, so it is left out.
    let below = if top.fract() == 0.0 {
        top as usize - 1
    } else {
        top.floor() as usize
    };
    below.max(1)
}

/// The table for phase increment `inc` (cycles per sample), or `None` when the fundamental
/// itself is at or above half the sample rate (the voice is then silent).
pub(super) fn table_for(inc: f64) -> Option<usize> {
    if !(inc > 0.0 && inc < 0.5) {
        return None;
    }
    let mut j = (math::log2(0.5 / inc) * 2.0).floor() as usize;
    j = j.min(TABLES - 1);
    // Rounding at a range boundary may pick the next table up; never let a harmonic reach
    // half the sample rate because of it.
    while j > 0 && harmonics(j) as f64 * inc >= 0.5 {
        j -= 1;
    }
    Some(j)
}

/// Every table of every waveform, `SIZE + 1` samples each (the last repeats the first, so
/// interpolation never wraps).
pub(super) struct Wavetables {
    sine: Box<[f32]>,
    saw: Box<[f32]>,
    square: Box<[f32]>,
}

impl Wavetables {
    /// Table `j` of `wave`.
    #[inline]
    pub(super) fn table(&self, wave: Wave, j: usize) -> &[f32] {
        match wave {
            // One harmonic everywhere: a single table serves every pitch.
            Wave::Sine => &self.sine[..],
            Wave::Saw => &self.saw[j * (SIZE + 1)..(j + 1) * (SIZE + 1)],
            Wave::Square => &self.square[j * (SIZE + 1)..(j + 1) * (SIZE + 1)],
        }
    }
}

/// The tables, built on first use and shared by every synth of the process. Call it off
/// the audio thread: the synth's constructor does.
///
/// Each sample is a sum of sines read from one exact table of `sin(2πm / SIZE)`
/// ([`math::sin`]: the same bits on every target), added in a fixed order of harmonics in
/// `f64`, then rounded once to `f32`: the same tables natively and in a browser, which an
/// FFT (whose algorithm and twiddle factors depend on the target) would not promise. The
/// tables of a waveform nest (each adds harmonics to the one before), so one running sum
/// builds them all: about 4 million multiply-adds per waveform.
pub(super) fn wavetables() -> &'static Wavetables {
    static TABLES_ONCE: OnceLock<Wavetables> = OnceLock::new();
    TABLES_ONCE.get_or_init(|| {
        let sine: Vec<f64> = (0..SIZE)
            .map(|m| math::sin(std::f64::consts::TAU * m as f64 / SIZE as f64))
            .collect();
        let build = |wave: Wave, count: usize| -> Box<[f32]> {
            let mut out = Vec::with_capacity(count * (SIZE + 1));
            let mut cycle = vec![0.0f64; SIZE];
            let mut summed = 0;
            for j in 0..count {
                let top = if wave == Wave::Sine { 1 } else { harmonics(j) };
                for k in summed + 1..=top {
                    let a = wave.harmonic(k);
                    if a == 0.0 {
                        continue;
                    }
                    // sin(2π k n / SIZE) is entry k·n of the table, modulo SIZE (a power
                    // of two): exact.
                    for (n, x) in cycle.iter_mut().enumerate() {
                        *x += a * sine[(k * n) & (SIZE - 1)];
                    }
                }
                summed = summed.max(top);
                out.extend(cycle.iter().map(|&x| x as f32));
                out.push(cycle[0] as f32);
            }
            out.into_boxed_slice()
        };
        Wavetables {
            sine: build(Wave::Sine, 1),
            saw: build(Wave::Saw, TABLES),
            square: build(Wave::Square, TABLES),
        }
    })
}

#[cfg(test)]
// Reference values may use the platform's math; the engine may not.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn no_table_reaches_half_the_sample_rate() {
        // Sweep increments finely, including every range boundary.
        let mut incs: Vec<f64> = (1..200_000).map(|i| i as f64 * 0.5 / 200_000.0).collect();
        incs.extend((0..TABLES as i32 + 2).map(|j| 0.5 * (-(j as f64) / 2.0).exp2()));
        for inc in incs {
            if let Some(j) = table_for(inc) {
                assert!(harmonics(j) as f64 * inc < 0.5, "inc {inc} table {j}");
            } else {
                assert!(inc >= 0.5, "inc {inc} has no table");
            }
        }
    }

    #[test]
    fn tables_hold_the_fourier_series() {
        let t = wavetables();
        // Table 5: harmonics 1..=5 (2^2.5 = 5.66).
        assert_eq!(harmonics(5), 5);
        let saw = t.table(Wave::Saw, 5);
        for n in [1usize, 100, 1000, 3000] {
            let x = n as f64 / SIZE as f64 * std::f64::consts::TAU;
            let want: f64 = (1..=5)
                .map(|k| Wave::Saw.harmonic(k) * (k as f64 * x).sin())
                .sum();
            assert!((f64::from(saw[n]) - want).abs() < 1e-6, "{n}");
        }
        assert_eq!(saw[SIZE], saw[0]);
        // The last saw table is close to the ideal ramp mid-cycle.
        let last = t.table(Wave::Saw, TABLES - 1);
        assert!((f64::from(last[SIZE / 4]) - 0.5).abs() < 0.01);
        let square = t.table(Wave::Square, TABLES - 1);
        assert!((f64::from(square[SIZE / 4]) - 1.0).abs() < 0.01);
    }
}
