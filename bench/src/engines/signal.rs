//! Reading an engine's output and the checks that it carries the case's signal.

use std::fmt;
use std::path::Path;

use realfft::RealFftPlanner;

/// An output that could not be read.
#[derive(Debug)]
pub struct ReadError {
    pub path: String,
    pub reason: String,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.reason)
    }
}

impl std::error::Error for ReadError {}

/// The first channel of a 32-bit float WAV file.
pub fn read_wav(path: &Path) -> Result<Vec<f32>, ReadError> {
    let err = |reason: String| ReadError {
        path: path.display().to_string(),
        reason,
    };
    let mut r = hound::WavReader::open(path).map_err(|e| err(e.to_string()))?;
    let spec = r.spec();
    if spec.sample_format != hound::SampleFormat::Float || spec.bits_per_sample != 32 {
        return Err(err(format!("expected 32-bit float samples, got {spec:?}")));
    }
    let channels = usize::from(spec.channels);
    let all: Result<Vec<f32>, _> = r.samples::<f32>().collect();
    let all = all.map_err(|e| err(e.to_string()))?;
    Ok(all.into_iter().step_by(channels).collect())
}

/// Raw little-endian 32-bit floats (node-web-audio-api's output).
pub fn read_f32(path: &Path) -> Result<Vec<f32>, ReadError> {
    let bytes = std::fs::read(path).map_err(|e| ReadError {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

/// What the checks compare between engines.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Signature {
    /// RMS over the whole render.
    pub rms: f64,
    /// Frequency of the largest spectral peak of the last second, in Hz (1 Hz bins).
    pub peak_hz: f64,
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RMS {:.5}, peak {:.0} Hz", self.rms, self.peak_hz)
    }
}

/// The signature of the first `frames` samples of `x` at `sample_rate` (fewer samples
/// than that is an error the caller reports).
pub fn signature(x: &[f32], frames: usize, sample_rate: usize) -> Signature {
    let x = &x[..frames.min(x.len())];
    let rms = (x.iter().map(|&s| f64::from(s).powi(2)).sum::<f64>() / x.len().max(1) as f64).sqrt();
    let n = sample_rate.min(x.len());
    let tail = &x[x.len() - n..];
    let mut planner = RealFftPlanner::<f64>::new();
    let fft = planner.plan_fft_forward(n);
    // A Hann window keeps a strong tone's leakage from outranking a neighbour.
    let mut input: Vec<f64> = tail
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let w = 0.5 - 0.5 * (std::f64::consts::TAU * i as f64 / n as f64).cos();
            f64::from(s) * w
        })
        .collect();
    let mut spectrum = fft.make_output_vec();
    fft.process(&mut input, &mut spectrum)
        .expect("buffers come from the plan");
    let (bin, _) = spectrum
        .iter()
        .enumerate()
        .skip(1)
        .fold((0, 0.0), |(bb, bm), (k, c)| {
            let m = c.norm_sqr();
            if m > bm {
                (k, m)
            } else {
                (bb, bm)
            }
        });
    Signature {
        rms,
        peak_hz: bin as f64 * sample_rate as f64 / n as f64,
    }
}

/// Why `got` does not carry the same signal as `want`: RMS more than 1% apart, or (when
/// `pitched`) spectral peaks more than one bin apart.
pub fn mismatch(want: &Signature, got: &Signature, pitched: bool) -> Option<String> {
    let rel = (got.rms - want.rms).abs() / want.rms.max(1e-12);
    // A NaN (silence against silence, or a broken output) fails too.
    if rel.is_nan() || rel > 0.01 {
        return Some(format!(
            "RMS {:.5} differs from {:.5} by {:.2}% (more than 1%)",
            got.rms,
            want.rms,
            rel * 100.0
        ));
    }
    if pitched && (got.peak_hz - want.peak_hz).abs() > 1.5 {
        return Some(format!(
            "spectral peak at {:.0} Hz, expected {:.0} Hz",
            got.peak_hz, want.peak_hz
        ));
    }
    None
}

/// How far a tone's level may stray from its amplitude in [`missing_tones`]: a fifth, far
/// more than any engine's oscillator errs by, far less than a missing tone.
const TONE_TOLERANCE: f64 = 0.2;

/// Why the last second of `x`'s first `frames` samples does not hold every one of
/// `tones` (frequency in whole Hz, amplitude) at its level: the first tone whose bin's
/// magnitude strays from its amplitude by more than [`TONE_TOLERANCE`], and how many
/// do. On one second a whole-Hz tone fills its own 1 Hz bin exactly (no window needed), so
/// each tone is measured apart from the others: an engine that skipped any one of a
/// thousand sines, however quiet, fails, where the RMS of the whole cannot tell.
pub fn missing_tones(
    x: &[f32],
    frames: usize,
    sample_rate: usize,
    tones: &[(f64, f64)],
) -> Option<String> {
    let x = &x[..frames.min(x.len())];
    if x.len() < sample_rate {
        return Some(format!("{} frames, fewer than one second", x.len()));
    }
    let mut input: Vec<f64> = x[x.len() - sample_rate..]
        .iter()
        .map(|&s| f64::from(s))
        .collect();
    let fft = RealFftPlanner::<f64>::new().plan_fft_forward(sample_rate);
    let mut spectrum = fft.make_output_vec();
    fft.process(&mut input, &mut spectrum)
        .expect("buffers come from the plan");
    let level = |hz: f64| 2.0 * spectrum[hz.round() as usize].norm() / sample_rate as f64;
    let wrong: Vec<(f64, f64, f64)> = tones
        .iter()
        .map(|&(hz, amp)| (hz, amp, level(hz)))
        // A NaN level (a broken output) fails too.
        .filter(|&(_, amp, got)| got.is_nan() || (got - amp).abs() > TONE_TOLERANCE * amp)
        .collect();
    let &(hz, amp, got) = wrong.first()?;
    Some(format!(
        "{} of its {} tones are not at their level: the first, {hz} Hz, at {got:.6} instead of {amp}",
        wrong.len(),
        tones.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tone_is_measured_apart() {
        let sr = 48000;
        let tones: Vec<(f64, f64)> = (0..300)
            .map(|i| (50.0 + 17.0 * i as f64, if i == 0 { 0.1 } else { 0.001 }))
            .collect();
        let render = |skip: Option<usize>| -> Vec<f32> {
            (0..2 * sr)
                .map(|t| {
                    tones
                        .iter()
                        .enumerate()
                        .filter(|&(i, _)| Some(i) != skip)
                        .map(|(_, &(hz, amp))| {
                            amp * (std::f64::consts::TAU * hz * t as f64 / sr as f64).sin()
                        })
                        .sum::<f64>() as f32
                })
                .collect()
        };
        let all = render(None);
        assert_eq!(missing_tones(&all, all.len(), sr, &tones), None);
        // One quiet tone of 300 left out: 0.0003% of the power, and still found.
        let skipped = render(Some(123));
        let why = missing_tones(&skipped, skipped.len(), sr, &tones).expect("a tone is missing");
        assert!(
            why.starts_with("1 of its 300 tones") && why.contains(&format!("{} Hz", tones[123].0)),
            "{why}"
        );
        let whole = signature(&all, all.len(), sr);
        assert!(
            mismatch(&whole, &signature(&skipped, skipped.len(), sr), true).is_none(),
            "the old check passes it"
        );
    }

    #[test]
    fn finds_rms_and_pitch() {
        let sr = 48000;
        let x: Vec<f32> = (0..2 * sr)
            .map(|i| (std::f64::consts::TAU * 440.0 * i as f64 / sr as f64).sin() as f32)
            .collect();
        let s = signature(&x, x.len(), sr);
        assert!((s.rms - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-4);
        assert_eq!(s.peak_hz, 440.0);
        let quieter = Signature {
            rms: s.rms * 0.98,
            ..s
        };
        assert!(mismatch(&s, &quieter, true).is_some());
        let moved = Signature {
            peak_hz: 443.0,
            ..s
        };
        assert!(mismatch(&s, &moved, true).is_some());
        assert!(mismatch(&s, &moved, false).is_none());
    }
}
