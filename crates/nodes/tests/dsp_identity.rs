//! The same arithmetic on every target: what the built-in nodes compute must not depend on
//! whether they run natively (glibc, SSE/AVX) or in WebAssembly (Rust's `libm` port,
//! SIMD128). Calls to the platform's math are refused by `clippy.toml`; the flush mode is
//! `dsp_denormals.rs`; this file covers the FFT.
//!
//! `dsp::fft::RealFft` runs `rustfft`'s scalar algorithms, whose code is the same on every
//! target, but `rustfft` computes their twiddle factors itself, with the platform's `f64`
//! `sin` and `cos`, and rounds them to `f32`. Natively that is glibc, in WebAssembly it is
//! `libm`. Here we check that for every twiddle factor a power-of-two transform of up to
//! 8192 points can use, both libraries round to the same `f32`, so both targets transform
//! with the same factors.
#![allow(clippy::disallowed_methods)] // The platform's sin and cos are what is checked.

use downbeat_graph::math;
use downbeat_nodes::dsp::fft::{Complex, RealFft};

/// `rustfft::twiddles::compute_twiddle(index, len, _)`'s angle, computed the same way.
fn angle(index: usize, len: usize) -> f64 {
    let constant = -2f64 * std::f64::consts::PI / len as f64;
    constant * index as f64
}

#[test]
fn platform_and_libm_twiddles_round_to_the_same_f32() {
    let mut checked = 0;
    let mut differ_in_f64 = 0;
    let mut differ_in_f32 = Vec::new();
    for bits in 1..=13 {
        let len = 1usize << bits;
        for index in 0..len {
            let a = angle(index, len);
            for (platform, portable) in [(a.cos(), math::cos(a)), (a.sin(), math::sin(a))] {
                checked += 1;
                differ_in_f64 += usize::from(platform.to_bits() != portable.to_bits());
                if (platform as f32).to_bits() != (portable as f32).to_bits() {
                    differ_in_f32.push((index, len, platform, portable));
                }
            }
        }
    }
    assert_eq!(checked, 2 * ((1 << 14) - 2));
    assert!(
        differ_in_f32.is_empty(),
        "{} of {checked} twiddle factors (of which {differ_in_f64} differ in f64) round to \
         different f32 values natively and in wasm, e.g. (index, len, glibc, libm) = {:?}",
        differ_in_f32.len(),
        &differ_in_f32[..differ_in_f32.len().min(4)]
    );
}

/// A reproducible signal with every bin occupied.
fn signal(len: usize, seed: u32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(2_654_435_761).max(1);
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state as f32 / u32::MAX as f32 - 0.5
        })
        .collect()
}

/// The spectrum of `x` by the definition, in `f64`.
fn dft(x: &[f32]) -> Vec<(f64, f64)> {
    let n = x.len();
    (0..=n / 2)
        .map(|k| {
            x.iter().enumerate().fold((0.0, 0.0), |(re, im), (t, &v)| {
                let a = -std::f64::consts::TAU * ((k * t) % n) as f64 / n as f64;
                (re + f64::from(v) * a.cos(), im + f64::from(v) * a.sin())
            })
        })
        .collect()
}

#[test]
fn the_real_fft_computes_the_spectrum_and_its_inverse() {
    for (len, seed) in [(2, 1), (6, 2), (16, 3), (256, 4), (1024, 5), (2048, 6)] {
        let fft = RealFft::new(len).unwrap();
        let x = signal(len, seed);
        let mut spectrum = vec![Complex::default(); fft.bins()];
        let mut scratch = vec![Complex::default(); fft.scratch_len()];
        fft.forward(&x, &mut spectrum, &mut scratch);
        let want = dft(&x);
        // f32 rounding over log2(len) stages of sums of up to `len` values of at most 0.5.
        let tolerance = 1e-6 * len as f64;
        for (k, (got, &(re, im))) in spectrum.iter().zip(&want).enumerate() {
            let error = (f64::from(got.re) - re).hypot(f64::from(got.im) - im);
            assert!(
                error < tolerance,
                "bin {k} of {len}: {got} against {re} + {im}i"
            );
        }
        let mut back = vec![0.0; len];
        fft.inverse(&mut spectrum, &mut back, &mut scratch);
        for (t, (&y, &v)) in back.iter().zip(&x).enumerate() {
            assert!(
                (f64::from(y) - len as f64 * f64::from(v)).abs() < tolerance,
                "sample {t} of {len}: {y} against {} times {v}",
                len
            );
        }
    }
}

#[test]
fn a_real_fft_of_an_odd_length_is_refused_with_its_length() {
    for len in [0, 1, 255] {
        let error = RealFft::new(len)
            .err()
            .expect("an odd length must be refused");
        assert_eq!(error.len, len);
        assert!(error.to_string().contains(&format!("{len} samples")));
    }
}
