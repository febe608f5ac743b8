//! `spectral_compressor`: a per-bin compressor working on a short-time Fourier transform.

use std::{f32::consts::LN_10, fmt};

use crate::{
    check_channels,
    dsp::fft::{Complex, RealFft},
    invalid, CHANNELS,
};
use downbeat_graph::{
    denormal::{flush, flush_block},
    float_param_accepts, math, AudioMut, AudioRef, Node, NodeConfig, NodeType, ParamError,
    ParamKind, ParamSpec, Params, ProcessContext, Unit,
};

/// Everything about a [`SpectralCompressor`] except its channel count and sample rate.
#[derive(Clone, Debug, PartialEq)]
pub struct CompressorSettings {
    /// FFT frame length in samples: a power of two from 256 to 8192. Also the latency.
    pub fft_size: usize,
    /// Frames overlapping each sample: 2, 4 or 8 (hop = `fft_size / overlap`).
    pub overlap: usize,
    /// Level in dBFS (sinusoid amplitude) above which a bin is compressed.
    pub threshold_db: f64,
    /// Compression ratio, at least 1 (1 = no compression).
    pub ratio: f64,
    /// Time constant in milliseconds for gain reduction to increase.
    pub attack_ms: f64,
    /// Time constant in milliseconds for gain reduction to recover.
    pub release_ms: f64,
    /// Gain in dB applied to every bin after compression.
    pub makeup_db: f64,
}

impl Default for CompressorSettings {
    /// The defaults of the `spectral_compressor` node type.
    fn default() -> Self {
        Self {
            fft_size: 2048,
            overlap: 4,
            threshold_db: -20.0,
            ratio: 4.0,
            attack_ms: 10.0,
            release_ms: 150.0,
            makeup_db: 0.0,
        }
    }
}

/// Work counters of a [`SpectralCompressor`], summed over channels since it was built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompressorStats {
    /// Channel-frames analysed: each is one forward and one inverse FFT.
    pub ffts_run: u64,
    /// Channel-frames whose input was exact silence, so no FFT was run.
    pub frames_skipped: u64,
}

/// Per-bin gain in dB above this is flushed to exactly 0 dB (no subnormals, exact unity).
const GAIN_FLUSH_DB: f32 = -1e-6;

/// An STFT compressor: each frequency bin is compressed on its own.
///
/// **Signal path.** The input of each channel is cut into frames of `fft_size` samples every
/// `hop = fft_size / overlap` samples, weighted by a periodic sqrt-Hann window and
/// transformed with a real FFT. For each bin `k` the level is the largest magnitude among
/// bins `k-1..=k+1` (so the whole main lobe of a sinusoid gets the same gain), expressed as
/// the amplitude in dBFS of the sinusoid that would produce it (magnitude × 2 / Σ window).
/// Above `threshold_db` the wanted gain reduction is `(level - threshold) (1 - 1/ratio)` dB;
/// the applied gain in dB follows it per bin with one-pole smoothing per frame (`attack_ms`
/// while reduction grows, `release_ms` while it recovers), then `makeup_db` is added. The
/// modified spectrum is inverse transformed, weighted again by sqrt-Hann (the product is a
/// Hann window, which overlap-adds to a constant) and overlap-added.
///
/// **Latency** is exactly `fft_size` samples: with ratio 1 and no makeup, output sample
/// `n + fft_size` equals input sample `n` up to FFT rounding. It works with any block size.
///
/// **Silence skip.** An analysis frame whose input is all exact zeros is not transformed
/// (its output would be exactly zero); [`stats`](Self::stats) counts both cases. Once the
/// input has been silent for two frame lengths (plus one hop) the node outputs exact zeros.
/// The gain smoothing still releases during skipped frames.
///
/// All buffers and FFT plans are made by the constructor; processing never allocates.
///
/// ```
/// use downbeat_nodes::{CompressorSettings, SpectralCompressor};
/// use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};
///
/// let settings = CompressorSettings { fft_size: 512, ..CompressorSettings::default() };
/// let mut comp = SpectralCompressor::new(1, 48000, &settings).unwrap();
/// assert_eq!(comp.latency(), 512);
/// let ctx = ProcessContext::new(48000, 100, 0);
/// let silence = [0.0f32; 100];
/// let mut out = [1.0f32; 100];
/// for _ in 0..20 {
///     comp.process(&ctx, AudioRef::new(&silence, 1, 100, 100), AudioMut::new(&mut out, 1, 100, 100));
/// }
/// assert!(out.iter().all(|&s| s == 0.0));
/// assert_eq!(comp.stats().ffts_run, 0);
/// assert!(comp.stats().frames_skipped > 0);
///
/// // The FFT size must be a power of two.
/// let bad = CompressorSettings { fft_size: 1000, ..settings };
/// assert!(SpectralCompressor::new(1, 48000, &bad).is_err());
/// ```
pub struct SpectralCompressor {
    channels: usize,
    sample_rate: f64,
    settings: CompressorSettings,
    fft_size: usize,
    hop: usize,
    bins: usize,
    /// Forward and inverse transforms: the same algorithm on every target.
    fft: RealFft,
    /// Analysis window (periodic sqrt-Hann).
    window: Vec<f32>,
    /// Synthesis window with the inverse-FFT and overlap-add normalization folded in.
    synthesis: Vec<f32>,
    /// Converts a bin magnitude to the amplitude of the sinusoid producing it.
    level_scale: f32,
    /// Per channel, the last `fft_size` input samples (oldest first); the newest `hop`
    /// are being filled.
    input: Vec<f32>,
    /// Per channel, the overlap-add accumulator aligned with `input`.
    accumulator: Vec<f32>,
    /// Per channel, the `hop` finished samples being output.
    ready: Vec<f32>,
    /// Samples of the current hop already taken in (and output).
    fill: usize,
    /// Per channel, consecutive exact zeros at the end of the input (saturates at fft_size).
    zero_run: Vec<usize>,
    /// Per channel and bin, the smoothed gain in dB (0 or negative).
    gain_db: Vec<f32>,
    /// Per channel, frames skipped since the last analysed one (release applied lazily).
    skipped: Vec<u32>,
    frame: Vec<f32>,
    spectrum: Vec<Complex<f32>>,
    magnitude: Vec<f32>,
    scratch: Vec<Complex<f32>>,
    threshold_db: f32,
    threshold_lin: f32,
    slope: f32,
    attack_coef: f32,
    release_coef: f32,
    makeup_db: f32,
    stats: CompressorStats,
}

impl fmt::Debug for SpectralCompressor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpectralCompressor")
            .field("channels", &self.channels)
            .field("sample_rate", &self.sample_rate)
            .field("settings", &self.settings)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl SpectralCompressor {
    /// A compressor on `channels` channels at `sample_rate`.
    ///
    /// # Errors
    /// [`ParamError::Invalid`] naming the offending setting: `fft_size` not a power of two
    /// in 256..=8192, `overlap` not 2, 4 or 8, `ratio` below 1, negative times, or
    /// non-finite levels.
    pub fn new(
        channels: usize,
        sample_rate: u32,
        settings: &CompressorSettings,
    ) -> Result<Self, ParamError> {
        check_channels(channels)?;
        let s = settings;
        let n = s.fft_size;
        if !(256..=8192).contains(&n) || !n.is_power_of_two() {
            return Err(invalid(
                "fft_size",
                format!("got {n}, expected a power of two from 256 to 8192"),
            ));
        }
        if !(2..=8).contains(&s.overlap) || !s.overlap.is_power_of_two() {
            return Err(invalid(
                "overlap",
                format!("got {}, expected 2, 4 or 8", s.overlap),
            ));
        }
        for (name, value) in [("threshold_db", s.threshold_db), ("makeup_db", s.makeup_db)] {
            if !value.is_finite() {
                return Err(invalid(name, "must be a finite number of dB"));
            }
        }
        if !(s.ratio.is_finite() && s.ratio >= 1.0) {
            return Err(invalid(
                "ratio",
                format!("got {}, expected at least 1", s.ratio),
            ));
        }
        for (name, value) in [("attack_ms", s.attack_ms), ("release_ms", s.release_ms)] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(invalid(name, "must be zero or a positive number of ms"));
            }
        }

        let hop = n / s.overlap;
        let bins = n / 2 + 1;
        // `n` is a power of two from 256 (checked above), so the plan cannot fail.
        let fft = RealFft::new(n).map_err(|e| invalid("fft_size", e.to_string()))?;
        let scratch_len = fft.scratch_len();

        let window: Vec<f32> = (0..n)
            .map(|i| {
                let phase = std::f64::consts::TAU * i as f64 / n as f64;
                (0.5 - 0.5 * math::cos(phase)).sqrt() as f32
            })
            .collect();
        // A periodic Hann window overlap-adds to overlap / 2; the inverse FFT scales by n.
        let norm = 2.0 / (s.overlap as f64 * n as f64);
        let synthesis = window
            .iter()
            .map(|&w| (f64::from(w) * norm) as f32)
            .collect();
        let window_sum: f64 = window.iter().map(|&w| f64::from(w)).sum();

        let mut comp = Self {
            channels,
            sample_rate: f64::from(sample_rate),
            settings: settings.clone(),
            fft_size: n,
            hop,
            bins,
            fft,
            window,
            synthesis,
            level_scale: (2.0 / window_sum) as f32,
            input: downbeat_graph::prefaulted(channels * n),
            accumulator: downbeat_graph::prefaulted(channels * n),
            ready: downbeat_graph::prefaulted(channels * hop),
            fill: 0,
            zero_run: vec![n; channels],
            gain_db: downbeat_graph::prefaulted(channels * bins),
            skipped: vec![0; channels],
            frame: downbeat_graph::prefaulted(n),
            spectrum: downbeat_graph::prefaulted(bins),
            magnitude: downbeat_graph::prefaulted(bins),
            scratch: downbeat_graph::prefaulted(scratch_len),
            threshold_db: 0.0,
            threshold_lin: 0.0,
            slope: 0.0,
            attack_coef: 0.0,
            release_coef: 0.0,
            makeup_db: 0.0,
            stats: CompressorStats::default(),
        };
        comp.update_coefficients();
        Ok(comp)
    }

    /// How many FFTs have run and how many frames were skipped as silent.
    pub fn stats(&self) -> CompressorStats {
        self.stats
    }

    /// Delay in samples between input and output: the FFT size.
    pub fn latency(&self) -> usize {
        self.fft_size
    }

    /// The current settings (live parameter changes included).
    pub fn settings(&self) -> &CompressorSettings {
        &self.settings
    }

    /// Recomputes the per-frame constants from `settings`. Arithmetic only.
    fn update_coefficients(&mut self) {
        let s = &self.settings;
        let frames_per_ms = self.sample_rate / self.hop as f64 / 1000.0;
        let coef = |ms: f64| {
            if ms <= 0.0 {
                0.0
            } else {
                math::exp(-1.0 / (ms * frames_per_ms)) as f32
            }
        };
        self.threshold_db = s.threshold_db as f32;
        self.threshold_lin = math::db_to_gain(s.threshold_db) as f32;
        self.slope = (1.0 - 1.0 / s.ratio) as f32;
        self.attack_coef = coef(s.attack_ms);
        self.release_coef = coef(s.release_ms);
        self.makeup_db = s.makeup_db as f32;
    }

    /// Analyses, compresses and overlap-adds the frame now in `input` for every channel,
    /// then advances all buffers by one hop.
    fn run_frame(&mut self) {
        let n = self.fft_size;
        let hop = self.hop;
        let bins = self.bins;
        for c in 0..self.channels {
            let input = &self.input[c * n..(c + 1) * n];
            let accumulator = &mut self.accumulator[c * n..(c + 1) * n];
            if self.zero_run[c] >= n {
                // Silent frame: the transform would give exact zeros; only the gain releases.
                self.stats.frames_skipped += 1;
                self.skipped[c] = self.skipped[c].saturating_add(1);
            } else {
                let gains = &mut self.gain_db[c * bins..(c + 1) * bins];
                if self.skipped[c] > 0 {
                    // Target gain was 0 dB in every skipped frame: pure release.
                    let factor = math::powi_f32(
                        self.release_coef,
                        self.skipped[c].min(i32::MAX as u32) as i32,
                    );
                    for g in gains.iter_mut() {
                        *g *= factor;
                        if *g > GAIN_FLUSH_DB {
                            *g = 0.0;
                        }
                    }
                    self.skipped[c] = 0;
                }
                for ((f, &x), &w) in self.frame.iter_mut().zip(input).zip(&self.window) {
                    *f = x * w;
                }
                // The transform runs on the frame scaled by a power of two to a peak in
                // 1..2 (exact: it changes no bit of the result, only where it lies), with
                // anything 2^-40 below the peak set to 0, so its butterflies stay far above
                // the subnormal range at any input level; see `Scale`.
                let scale = Scale::of_peak(peak_magnitude(&self.frame));
                for f in self.frame.iter_mut() {
                    *f = scale.to_unit(*f);
                }
                // Buffers are sized from the plan: the transforms cannot fail.
                self.fft
                    .forward(&self.frame, &mut self.spectrum, &mut self.scratch);
                for (m, x) in self.magnitude.iter_mut().zip(&self.spectrum) {
                    *m = magnitude(x);
                }
                compress_bins(
                    &mut self.spectrum,
                    &self.magnitude,
                    gains,
                    &BinLaw {
                        level_scale: self.level_scale,
                        unscale: scale.back,
                        threshold_db: self.threshold_db,
                        threshold_lin: self.threshold_lin,
                        slope: self.slope,
                        attack_coef: self.attack_coef,
                        release_coef: self.release_coef,
                        makeup_db: self.makeup_db,
                    },
                );
                self.spectrum[0].im = 0.0;
                self.spectrum[bins - 1].im = 0.0;
                self.fft
                    .inverse(&mut self.spectrum, &mut self.frame, &mut self.scratch);
                for ((a, &y), &w) in accumulator.iter_mut().zip(&self.frame).zip(&self.synthesis) {
                    // Back to the input's level, then a tail below `TINY` is 0 in any mode.
                    *a += flush(scale.back_from_unit(y) * w);
                }
                self.stats.ffts_run += 1;
            }
            // Contributions of opposite signs can cancel to below `TINY`.
            let ready = &mut self.ready[c * hop..(c + 1) * hop];
            ready.copy_from_slice(&accumulator[..hop]);
            flush_block(ready);
            accumulator.copy_within(hop.., 0);
            accumulator[n - hop..].fill(0.0);
            self.input[c * n..(c + 1) * n].copy_within(hop.., 0);
        }
    }
}

/// The largest magnitude in `frame` (0 for silence). A plain comparison rather than
/// `f32::max` (whose NaN rule keeps the compiler from using the vector maximum).
fn peak_magnitude(frame: &[f32]) -> f32 {
    frame.iter().fold(0.0f32, |peak, &x| {
        let a = x.abs();
        if a > peak {
            a
        } else {
            peak
        }
    })
}

/// `|x|` of a scaled spectrum bin: the square root of the sum of squares, which
/// vectorises and is correctly rounded on every target (`Complex::norm` calls `libm`'s
/// `hypot`, one call per bin, whose last bit may differ between libraries). The bins are
/// at most `2^14` (no overflow). A square of a part below `2^-63` can be subnormal: next
/// to a square of at least `2^-102` it vanishes in the rounding in either flush mode, and
/// otherwise the magnitude is below `2^-51`, which is set to 0 (far below any threshold).
#[inline(always)]
fn magnitude(x: &Complex<f32>) -> f32 {
    let m = (x.re * x.re + x.im * x.im).sqrt();
    if m < RELATIVE_FLOOR {
        0.0
    } else {
        m
    }
}

/// Values this far below a frame's peak are set to 0 before the transform (and after it):
/// 240 dB down, far under the transform's own rounding noise (about 140 dB down).
const RELATIVE_FLOOR: f32 = 9.094_947e-13; // 2^-40

/// A power of two that brings a frame's peak into `1..2`, and its inverse.
///
/// Why: the FFT's butterflies multiply by twiddle factors and cancel, so a quiet frame
/// (a decaying tail at -500 dBFS, say) has intermediates in the subnormal range, where
/// the processor's flush mode decides the bits. Scaled, every value the transform sees is 0
/// or between `2^-40` and `2^14` (the transform's gain), so nothing comes near the
/// subnormal range. Multiplying by a power of two is exact, so for a frame whose values
/// all stay normal, scaling, transforming and scaling back gives the bits the unscaled
/// transform gives.
#[derive(Clone, Copy)]
struct Scale {
    to: f32,
    back: f32,
}

impl Scale {
    /// The scale for a frame whose largest magnitude is `peak` (normal or 0).
    fn of_peak(peak: f32) -> Self {
        // Biased exponent of `peak`, kept where both powers of two are normal numbers.
        let e = ((peak.to_bits() >> 23) & 0xff).clamp(2, 252);
        Self {
            to: f32::from_bits((254 - e) << 23),
            back: f32::from_bits(e << 23),
        }
    }

    /// A frame value scaled, or 0 when it is [`RELATIVE_FLOOR`] below the peak. (If the
    /// product is subnormal, the flush mode decides whether it is that or 0; either way
    /// the comparison makes it 0.)
    #[inline(always)]
    fn to_unit(self, x: f32) -> f32 {
        let y = x * self.to;
        if y.abs() < RELATIVE_FLOOR {
            0.0
        } else {
            y
        }
    }

    /// A transformed value back at the input's level.
    #[inline(always)]
    fn back_from_unit(self, y: f32) -> f32 {
        let y = if y.abs() < RELATIVE_FLOOR { 0.0 } else { y };
        y * self.back
    }
}

/// The per-bin gain computer's constants for one frame.
struct BinLaw {
    level_scale: f32,
    /// [`Scale::back`] of the frame: the spectrum is scaled, the levels are not.
    unscale: f32,
    threshold_db: f32,
    threshold_lin: f32,
    slope: f32,
    attack_coef: f32,
    release_coef: f32,
    makeup_db: f32,
}

/// Updates the smoothed per-bin gains from the magnitudes and applies them to `spectrum`.
fn compress_bins(
    spectrum: &mut [Complex<f32>],
    magnitude: &[f32],
    gains: &mut [f32],
    law: &BinLaw,
) {
    let last = magnitude.len() - 1;
    for k in 0..=last {
        let lo = k.saturating_sub(1);
        let hi = (k + 1).min(last);
        let peak = magnitude[lo..=hi]
            .iter()
            .fold(0.0f32, |a, &m| if m > a { m } else { a });
        let amplitude = peak * law.level_scale * law.unscale;
        let target = if amplitude > law.threshold_lin && law.slope > 0.0 {
            -(20.0 * math::log10f(amplitude) - law.threshold_db) * law.slope
        } else {
            0.0
        };
        let g = &mut gains[k];
        let coef = if target < *g {
            law.attack_coef
        } else {
            law.release_coef
        };
        *g = target + coef * (*g - target);
        if *g > GAIN_FLUSH_DB {
            *g = 0.0;
        }
        let total_db = *g + law.makeup_db;
        if total_db != 0.0 {
            spectrum[k] *= math::expf(total_db * (LN_10 / 20.0));
        }
    }
}

const P_THRESHOLD: usize = 3;
const P_RATIO: usize = 4;
const P_ATTACK: usize = 5;
const P_RELEASE: usize = 6;
const P_MAKEUP: usize = 7;

static PARAMS: &[ParamSpec] = &[
    CHANNELS,
    ParamSpec {
        name: "fft_size",
        doc: "FFT frame length in samples, a power of two; also the latency",
        kind: ParamKind::Int {
            min: 256,
            max: 8192,
            default: 2048,
        },
        unit: Unit::Samples,
        live: false,
    },
    ParamSpec {
        name: "overlap",
        doc: "frames overlapping each sample, 2, 4 or 8 (hop = fft_size / overlap)",
        kind: ParamKind::Int {
            min: 2,
            max: 8,
            default: 4,
        },
        unit: Unit::None,
        live: false,
    },
    ParamSpec {
        name: "threshold_db",
        doc: "level in dBFS (sinusoid amplitude) above which a bin is compressed",
        kind: ParamKind::Float {
            min: -120.0,
            max: 0.0,
            default: -20.0,
        },
        unit: Unit::Decibels,
        live: true,
    },
    ParamSpec {
        name: "ratio",
        doc: "compression ratio above the threshold; 1 leaves the signal unchanged",
        kind: ParamKind::Float {
            min: 1.0,
            max: 100.0,
            default: 4.0,
        },
        unit: Unit::None,
        live: true,
    },
    ParamSpec {
        name: "attack_ms",
        doc: "time constant in ms for gain reduction to increase",
        kind: ParamKind::Float {
            min: 0.0,
            max: 2000.0,
            default: 10.0,
        },
        unit: Unit::Milliseconds,
        live: true,
    },
    ParamSpec {
        name: "release_ms",
        doc: "time constant in ms for gain reduction to recover",
        kind: ParamKind::Float {
            min: 0.0,
            max: 10_000.0,
            default: 150.0,
        },
        unit: Unit::Milliseconds,
        live: true,
    },
    ParamSpec {
        name: "makeup_db",
        doc: "gain in dB applied after compression",
        kind: ParamKind::Float {
            min: -48.0,
            max: 48.0,
            default: 0.0,
        },
        unit: Unit::Decibels,
        live: true,
    },
];

pub(crate) const TYPE: NodeType = NodeType {
    name: "spectral_compressor",
    doc: "STFT compressor acting on each frequency bin; latency fft_size samples; \
          skips the FFT for silent frames",
    params: PARAMS,
    build,
};

fn build(p: &Params, cfg: &NodeConfig) -> Result<Box<dyn Node>, ParamError> {
    let settings = CompressorSettings {
        fft_size: p.int("fft_size") as usize,
        overlap: p.int("overlap") as usize,
        threshold_db: p.float("threshold_db"),
        ratio: p.float("ratio"),
        attack_ms: p.float("attack_ms"),
        release_ms: p.float("release_ms"),
        makeup_db: p.float("makeup_db"),
    };
    Ok(Box::new(SpectralCompressor::new(
        p.int("channels") as usize,
        cfg.sample_rate,
        &settings,
    )?))
}

impl Node for SpectralCompressor {
    fn type_name(&self) -> Option<&'static str> {
        Some(TYPE.name)
    }

    fn input_channels(&self) -> usize {
        self.channels
    }

    fn latency(&self) -> usize {
        self.fft_size
    }

    fn output_channels(&self) -> usize {
        self.channels
    }

    fn process(&mut self, _ctx: &ProcessContext, input: AudioRef<'_>, mut output: AudioMut<'_>) {
        let frames = output.frames();
        let n = self.fft_size;
        let hop = self.hop;
        let mut done = 0;
        while done < frames {
            let chunk = (hop - self.fill).min(frames - done);
            let at = n - hop + self.fill;
            for c in 0..self.channels {
                let src = &input.channel(c)[done..done + chunk];
                let dst = &mut self.input[c * n + at..c * n + at + chunk];
                dst.copy_from_slice(src);
                // Another node outputs nothing below `TINY`; an input from elsewhere might
                // hold subnormal numbers, which only the flush mode would make zeros.
                flush_block(dst);
                match dst.iter().rposition(|&s| s != 0.0) {
                    Some(last) => self.zero_run[c] = chunk - 1 - last,
                    None => self.zero_run[c] = (self.zero_run[c] + chunk).min(n),
                }
                let ready = &self.ready[c * hop + self.fill..c * hop + self.fill + chunk];
                output.channel_mut(c)[done..done + chunk].copy_from_slice(ready);
            }
            self.fill += chunk;
            done += chunk;
            if self.fill == hop {
                self.run_frame();
                self.fill = 0;
            }
        }
    }

    fn set_param(&mut self, index: usize, value: f32) -> bool {
        if !float_param_accepts(PARAMS, index, value) {
            return false;
        }
        let value = f64::from(value);
        let s = &mut self.settings;
        match index {
            P_THRESHOLD => s.threshold_db = value,
            P_RATIO => s.ratio = value,
            P_ATTACK => s.attack_ms = value,
            P_RELEASE => s.release_ms = value,
            P_MAKEUP => s.makeup_db = value,
            _ => return false,
        }
        self.update_coefficients();
        true
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    // The gains change once per hop anyway: the schedule's control-rate updates suffice.
    fn get_param(&self, index: usize) -> Option<f32> {
        let s = &self.settings;
        let v = match index {
            P_THRESHOLD => s.threshold_db,
            P_RATIO => s.ratio,
            P_ATTACK => s.attack_ms,
            P_RELEASE => s.release_ms,
            P_MAKEUP => s.makeup_db,
            _ => return None,
        };
        Some(v as f32)
    }
}
