//! A real-input FFT that runs the same algorithm, in the same order, on every target.
//!
//! `rustfft::FftPlanner` (and `realfft`, built on it) picks its algorithm when it is made:
//! AVX or SSE on x86-64, SIMD128 on wasm32, NEON on AArch64. Each is a different sequence of
//! roundings, so a spectrum computed natively and one computed in a browser differ in the
//! last bits. [`RealFft`] uses `rustfft`'s scalar planner only, whose code is plain Rust
//! arithmetic (the compiler may vectorise a loop, which never changes its results), and
//! turns the real transform into a complex one of half the length with twiddle factors
//! from [`math`].
//!
//! The scalar planner computes its own twiddle factors with the platform's `f64` `sin` and
//! `cos`, then rounds them to `f32`. `tests/dsp_identity.rs` checks that, for every
//! power-of-two length up to 8192, glibc's and `libm`'s values round to the same `f32`.

use std::{fmt, sync::Arc};

use rustfft::{Fft, FftPlannerScalar};

/// The complex number type of [`RealFft`]'s spectra (`num_complex`'s, re-exported).
pub use rustfft::num_complex::Complex;

use downbeat_graph::math;

/// A transform length [`RealFft`] cannot do: zero or odd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FftLengthError {
    /// The length asked for.
    pub len: usize,
}

impl fmt::Display for FftLengthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a real FFT of {} samples: the length must be even and at least 2",
            self.len
        )
    }
}

impl std::error::Error for FftLengthError {}

/// Forward and inverse real FFTs of one even length `n`, unnormalised like `realfft`'s:
/// `n` real samples give `n / 2 + 1` bins, and the inverse of a forward transform is the
/// input times `n`.
///
/// ```
/// use downbeat_nodes::dsp::fft::{Complex, RealFft};
/// let fft = RealFft::new(8).unwrap();
/// let mut scratch = vec![Complex::default(); fft.scratch_len()];
/// let mut spectrum = vec![Complex::default(); fft.bins()];
/// let signal = [1.0, 0.0, -1.0, 0.0, 1.0, 0.0, -1.0, 0.0]; // two cycles
/// fft.forward(&signal, &mut spectrum, &mut scratch);
/// assert!((spectrum[2] - Complex::new(4.0, 0.0)).norm() < 1e-6);
/// assert!(spectrum[1].norm() < 1e-6);
/// let mut back = [0.0; 8];
/// fft.inverse(&mut spectrum, &mut back, &mut scratch);
/// assert!(back.iter().zip(signal).all(|(y, x)| (y - 8.0 * x).abs() < 1e-5));
/// ```
pub struct RealFft {
    len: usize,
    forward: Arc<dyn Fft<f32>>,
    inverse: Arc<dyn Fft<f32>>,
    /// `e^(-2πik/n)` for `k` in `0..n/2`.
    twiddles: Box<[Complex<f32>]>,
    scratch_len: usize,
}

impl RealFft {
    /// Plans the transforms of length `len` (allocates; call it off the audio thread).
    ///
    /// ```
    /// use downbeat_nodes::dsp::fft::RealFft;
    /// assert_eq!(RealFft::new(2048).unwrap().bins(), 1025);
    /// assert_eq!(
    ///     RealFft::new(7).err().unwrap().to_string(),
    ///     "a real FFT of 7 samples: the length must be even and at least 2"
    /// );
    /// ```
    pub fn new(len: usize) -> Result<Self, FftLengthError> {
        if len < 2 || len % 2 != 0 {
            return Err(FftLengthError { len });
        }
        let half = len / 2;
        let mut planner = FftPlannerScalar::<f32>::new();
        let forward = planner.plan_fft_forward(half);
        let inverse = planner.plan_fft_inverse(half);
        let scratch_len = forward
            .get_inplace_scratch_len()
            .max(inverse.get_inplace_scratch_len());
        let twiddles = (0..half)
            .map(|k| {
                let (sin, cos) = math::sin_cos(-std::f64::consts::TAU * k as f64 / len as f64);
                Complex::new(cos as f32, sin as f32)
            })
            .collect();
        Ok(Self {
            len,
            forward,
            inverse,
            twiddles,
            scratch_len,
        })
    }

    /// The transform length `n`.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: a transform has at least 2 samples.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Bins of a spectrum: `n / 2 + 1`.
    pub fn bins(&self) -> usize {
        self.len / 2 + 1
    }

    /// Length of the scratch buffer [`forward`](Self::forward) and
    /// [`inverse`](Self::inverse) need (possibly 0).
    pub fn scratch_len(&self) -> usize {
        self.scratch_len
    }

    /// The spectrum of `input` (`n` samples) into `spectrum` (`n / 2 + 1` bins). No
    /// allocation.
    ///
    /// # Panics
    /// If a buffer has the wrong length: a bug in the caller, who sized them from this plan.
    pub fn forward(
        &self,
        input: &[f32],
        spectrum: &mut [Complex<f32>],
        scratch: &mut [Complex<f32>],
    ) {
        let half = self.len / 2;
        assert_eq!(input.len(), self.len, "FFT input length");
        assert_eq!(spectrum.len(), half + 1, "FFT spectrum length");
        // Even samples as real parts, odd ones as imaginary: one complex FFT of n/2 points.
        for (z, pair) in spectrum.iter_mut().zip(input.chunks_exact(2)) {
            *z = Complex::new(pair[0], pair[1]);
        }
        self.forward
            .process_with_scratch(&mut spectrum[..half], &mut scratch[..self.scratch_len]);
        // Split Z into the spectra of the even (E) and odd (O) samples and combine them:
        // E[k] = (Z[k] + conj Z[m-k]) / 2, O[k] = (Z[k] - conj Z[m-k]) / 2i,
        // X[k] = E[k] + W^k O[k], for k and m - k together (m = n/2).
        let z0 = spectrum[0];
        spectrum[0] = Complex::new(z0.re + z0.im, 0.0);
        spectrum[half] = Complex::new(z0.re - z0.im, 0.0);
        for k in 1..=half / 2 {
            let j = half - k;
            let (zk, zj) = (spectrum[k], spectrum[j]);
            spectrum[k] = combine(zk, zj, self.twiddles[k]);
            spectrum[j] = combine(zj, zk, self.twiddles[j]);
        }
    }

    /// The signal of `spectrum` (`n / 2 + 1` bins, overwritten) into `output` (`n`
    /// samples), times `n`. The imaginary parts of the first and last bin are taken as 0.
    /// No allocation.
    ///
    /// # Panics
    /// If a buffer has the wrong length: a bug in the caller, who sized them from this plan.
    pub fn inverse(
        &self,
        spectrum: &mut [Complex<f32>],
        output: &mut [f32],
        scratch: &mut [Complex<f32>],
    ) {
        let half = self.len / 2;
        assert_eq!(output.len(), self.len, "FFT output length");
        assert_eq!(spectrum.len(), half + 1, "FFT spectrum length");
        // Undo the forward combination (without its halving, so the result is n times the
        // signal): Z[k] = (X[k] + conj X[m-k]) + i W^-k (X[k] - conj X[m-k]).
        let (x0, xm) = (spectrum[0].re, spectrum[half].re);
        spectrum[0] = Complex::new(x0 + xm, x0 - xm);
        for k in 1..=half / 2 {
            let j = half - k;
            let (xk, xj) = (spectrum[k], spectrum[j]);
            spectrum[k] = separate(xk, xj, self.twiddles[k]);
            spectrum[j] = separate(xj, xk, self.twiddles[j]);
        }
        self.inverse
            .process_with_scratch(&mut spectrum[..half], &mut scratch[..self.scratch_len]);
        for (pair, z) in output.chunks_exact_mut(2).zip(spectrum.iter()) {
            pair[0] = z.re;
            pair[1] = z.im;
        }
    }
}

/// `X[k]` from `a = Z[k]`, `b = Z[m-k]` and `w = W^k`, written out so that every target
/// does the same operations in the same order.
#[inline(always)]
fn combine(a: Complex<f32>, b: Complex<f32>, w: Complex<f32>) -> Complex<f32> {
    // e = (a + conj b) / 2; o = (a - conj b) / 2i.
    let e_re = 0.5 * (a.re + b.re);
    let e_im = 0.5 * (a.im - b.im);
    let o_re = 0.5 * (a.im + b.im);
    let o_im = -0.5 * (a.re - b.re);
    Complex::new(
        e_re + (w.re * o_re - w.im * o_im),
        e_im + (w.re * o_im + w.im * o_re),
    )
}

/// `Z[k]` from `a = X[k]`, `b = X[m-k]` and `w = W^k`: the inverse of [`combine`] times 2.
#[inline(always)]
fn separate(a: Complex<f32>, b: Complex<f32>, w: Complex<f32>) -> Complex<f32> {
    // e = a + conj b; d = (a - conj b) · conj w; z = e + i d.
    let e_re = a.re + b.re;
    let e_im = a.im - b.im;
    let d_re0 = a.re - b.re;
    let d_im0 = a.im + b.im;
    let d_re = d_re0 * w.re + d_im0 * w.im;
    let d_im = d_im0 * w.re - d_re0 * w.im;
    Complex::new(e_re - d_im, e_im + d_re)
}
