//! The resampler's filter: a Kaiser-windowed sinc, tabulated at fractional phases.
//!
//! The design follows the classic windowed-sinc band-limited interpolation (J. O. Smith,
//! "Digital Audio Resampling Home Page"; Kaiser's window formulas as in Oppenheim & Schafer):
//! the cut-off sits at half the lower of the two rates, with a transition band of
//! [`TRANSITION`] of that rate centred on it, and the Kaiser window's length and shape are
//! chosen for [`ATTENUATION_DB`] of stop-band attenuation (which also bounds the pass-band
//! ripple at the same level).

use downbeat_graph::math;

/// Stop-band attenuation (and pass-band ripple bound) the filter is designed for, in dB.
pub const ATTENUATION_DB: f64 = 130.0;

/// Width of the transition band, as a fraction of the lower rate. The pass band ends at
/// `(0.5 - TRANSITION / 2)` of the lower rate (20.07 kHz at 44.1 kHz) and the stop band starts at
/// `(0.5 + TRANSITION / 2)` (24.03 kHz at 44.1 kHz), so a 20 kHz tone's image or alias
/// (at 24.1 kHz) is fully attenuated.
pub const TRANSITION: f64 = 0.09;

/// The filter for one rate ratio: `rows` phases of `taps` coefficients each, plus one more row
/// for phase 1 so that interpolating between rows `r` and `r + 1` never wraps.
pub(crate) struct Kernel {
    pub taps: usize,
    pub half: usize,
    pub rows: usize,
    pub table: Vec<f32>,
}

/// Modified Bessel function of the first kind, order 0 (its power series converges fast for
/// the arguments a Kaiser window needs).
fn bessel_i0(x: f64) -> f64 {
    let mut sum = 1.0;
    let mut term = 1.0;
    let q = x * x / 4.0;
    let mut k = 1.0;
    while term > sum * 1e-17 {
        term *= q / (k * k);
        sum += term;
        k += 1.0;
    }
    sum
}

impl Kernel {
    /// `scale` = lower rate / input rate (1 when upsampling); `rows` phases per input sample.
    pub fn new(scale: f64, rows: usize) -> Kernel {
        let fc = 0.5 * scale;
        let width = TRANSITION * scale;
        // Kaiser's estimates of the length and shape for the wanted attenuation.
        let beta = 0.1102 * (ATTENUATION_DB - 8.7);
        let length = (ATTENUATION_DB - 7.95) / (2.285 * 2.0 * std::f64::consts::PI * width);
        // A multiple of 4, so that taps come in groups of 8 for the vectorised dot products.
        let half = ((length / 2.0).ceil() as usize).div_ceil(4) * 4;
        let taps = 2 * half;
        let i0_beta = bessel_i0(beta);
        let mut table = vec![0.0f32; (rows + 1) * taps];
        let mut row = vec![0.0f64; taps];
        for r in 0..=rows {
            let phase = r as f64 / rows as f64;
            for (j, h) in row.iter_mut().enumerate() {
                // Tap j weighs the input sample (base + 1 - half + j); the output's time is
                // base + phase, so the distance from the sample to the output is t.
                let t = phase + half as f64 - 1.0 - j as f64;
                let u = t / half as f64;
                let window = if u.abs() >= 1.0 {
                    0.0
                } else {
                    bessel_i0(beta * (1.0 - u * u).sqrt()) / i0_beta
                };
                let x = 2.0 * fc * t;
                let sinc = if x == 0.0 {
                    1.0
                } else {
                    math::sin(std::f64::consts::PI * x) / (std::f64::consts::PI * x)
                };
                *h = 2.0 * fc * sinc * window;
            }
            // Unity gain at DC for every phase: a constant input gives a constant output.
            let sum: f64 = row.iter().sum();
            for (dst, h) in table[r * taps..(r + 1) * taps].iter_mut().zip(&row) {
                *dst = (h / sum) as f32;
            }
        }
        Kernel {
            taps,
            half,
            rows,
            table,
        }
    }

    pub fn row(&self, r: usize) -> &[f32] {
        &self.table[r * self.taps..(r + 1) * self.taps]
    }
}
