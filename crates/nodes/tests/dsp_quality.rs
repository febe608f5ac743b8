//! Quality of the fast DSP, measured: the sine's spurs and the filters' responses against
//! their analogue prototypes. (The saw's aliasing is `tests/synth.rs`,
//! `a_4_khz_saw_has_no_alias_within_60_db`.)
// Reference signals and measurements may use the platform's math; the engine may not.
#![allow(clippy::disallowed_methods)]

use std::f64::consts::{PI, TAU};

use downbeat_nodes::dsp::{hz_to_phase_inc, sin_turn};
use downbeat_nodes::{Biquad, BiquadSettings, FilterMode, Sine, SineSettings};
use realfft::RealFftPlanner;

mod common;
use common::{render, run_frames, SR};

/// Every spur of the sine must be at least this far below the tone.
const SPUR_DB: f64 = 110.0;

/// Magnitude spectrum of `x` (rectangular window), one value per bin.
fn spectrum(x: &[f32]) -> Vec<f64> {
    let mut planner = RealFftPlanner::<f64>::new();
    let fft = planner.plan_fft_forward(x.len());
    let mut input: Vec<f64> = x.iter().map(|&s| f64::from(s)).collect();
    let mut out = fft.make_output_vec();
    fft.process(&mut input, &mut out).unwrap();
    out.iter().map(|c| c.norm()).collect()
}

/// Tones that fit a whole number of cycles into the FFT, so that nothing leaks and every
/// component of the error lands on a bin of its own: the error of the phase-to-sine map
/// repeats exactly, which is where its spurs are tallest. The frequencies are chosen near
/// musical ones and at the ends of the range.
#[test]
fn sine_spurs_are_110_db_below_the_tone() {
    let n = 1 << 16;
    for bin in [1usize, 37, 601, 1201, 4099, 11_111, 21_845, 32_767] {
        let freq = bin as f64 * f64::from(SR) / n as f64;
        for amp in [1.0f32, 0.001] {
            let mut sine = Sine::new(
                1,
                SR,
                &SineSettings {
                    freq,
                    amp,
                    ..SineSettings::default()
                },
            );
            let out = render(&mut sine, n, 64);
            let mags = spectrum(&out[0]);
            let tone = mags[bin];
            let (worst_bin, worst) = mags
                .iter()
                .enumerate()
                .filter(|&(k, _)| k != bin)
                .fold((0, 0.0f64), |a, (k, &m)| if m > a.1 { (k, m) } else { a });
            let db = 20.0 * (worst / tone).log10();
            assert!(
                db < -SPUR_DB,
                "{freq} Hz at amp {amp}: spur at bin {worst_bin} only {:.1} dB below the tone",
                -db
            );
        }
    }
}

/// For any frequency: the largest error against the exact sine of the same phase bounds
/// every spur (a spur of amplitude `a` needs a mean square error of at least `a²/2`).
#[test]
fn sine_error_bounds_every_spur_at_any_frequency() {
    let limit = 10f64.powf(-SPUR_DB / 20.0) / 2f64.sqrt();
    for freq in [27.5, 440.0, 1234.567, 9876.5, 23_999.0] {
        let inc = hz_to_phase_inc(freq, f64::from(SR));
        let mut sine = Sine::new(
            1,
            SR,
            &SineSettings {
                freq,
                amp: 1.0,
                ..SineSettings::default()
            },
        );
        let out = render(&mut sine, 96_000, 64);
        let mut phase = 0u32;
        let mut worst = 0.0f64;
        for &y in &out[0] {
            let exact = (TAU * f64::from(phase) / 4_294_967_296.0).sin();
            worst = worst.max((f64::from(y) - exact).abs());
            phase = phase.wrapping_add(inc);
        }
        assert!(worst < limit, "{freq} Hz: error {worst:e} above {limit:e}");
    }
    // And the whole circle, not only the phases a few tones visit.
    let mut worst = 0.0f64;
    for i in 0..(1u32 << 20) {
        let phase = i << 12 | (i.wrapping_mul(2_654_435_761) >> 20);
        let exact = (TAU * f64::from(phase) / 4_294_967_296.0).sin();
        worst = worst.max((f64::from(sin_turn(phase)) - exact).abs());
    }
    assert!(worst < limit, "error {worst:e} somewhere on the circle");
}

/// Amplitude of `x` at `freq`, by correlation with a sine and a cosine over whole cycles.
fn amplitude_at(x: &[f32], freq: f64) -> f64 {
    let sr = f64::from(SR);
    let cycles = (x.len() as f64 * freq / sr).floor().max(1.0);
    let len = ((cycles * sr / freq).round() as usize).min(x.len());
    let (mut s, mut c) = (0.0, 0.0);
    for (k, &v) in x[..len].iter().enumerate() {
        let w = TAU * freq * k as f64 / sr;
        s += f64::from(v) * w.sin();
        c += f64::from(v) * w.cos();
    }
    2.0 * (s * s + c * c).sqrt() / len as f64
}

/// Gain in dB of the analogue second-order prototype `1 / (s² + s/Q + 1)` (low-pass) or
/// `s² / (s² + s/Q + 1)` (high-pass) at `w` times its cutoff.
fn prototype_db(mode: FilterMode, q: f64, w: f64) -> f64 {
    let re = 1.0 - w * w;
    let im = w / q;
    let den = (re * re + im * im).sqrt();
    let num = match mode {
        FilterMode::Lowpass => 1.0,
        FilterMode::Highpass => w * w,
        FilterMode::Bandpass => w / q,
    };
    20.0 * (num / den).log10()
}

/// The biquad is the analogue prototype through the bilinear transform with its cutoff
/// prewarped: at frequency `f` it must answer what the prototype answers at
/// `tan(π f / sr) / tan(π fc / sr)` times its cutoff, within 0.1 dB, for every `f` below
/// a quarter of the sample rate where the response is above -60 dB (below that, the
/// measurement itself is not good to 0.1 dB in `f32`).
#[test]
fn biquad_matches_its_analogue_prototype_within_a_tenth_of_a_db() {
    let sr = f64::from(SR);
    let frames = 48_000;
    for mode in [FilterMode::Lowpass, FilterMode::Highpass] {
        for (fc, q) in [(200.0, 0.707), (1000.0, 2.0), (5000.0, 0.5), (8000.0, 8.0)] {
            let mut probes = vec![];
            let mut f = 50.0;
            while f < sr / 4.0 {
                probes.push(f);
                f *= 1.19;
            }
            probes.push(fc);
            for f in probes {
                let x: Vec<f32> = (0..frames)
                    .map(|k| (TAU * f * k as f64 / sr).sin() as f32)
                    .collect();
                let mut bq = Biquad::new(1, SR, &BiquadSettings { mode, freq: fc, q }).unwrap();
                let y = run_frames(&mut bq, &[x], frames, 64);
                let settled = &y[0][frames / 2..];
                let w = (PI * f / sr).tan() / (PI * fc / sr).tan();
                let want = prototype_db(mode, q, w);
                if want < -60.0 {
                    continue;
                }
                let got = 20.0 * amplitude_at(settled, f).log10();
                assert!(
                    (got - want).abs() < 0.1,
                    "{mode:?} fc {fc} Q {q} at {f:.0} Hz: {got:.3} dB, prototype {want:.3} dB"
                );
            }
        }
    }
}

/// Channels stepped in pairs give each channel the bits of a filter of its own, for odd and
/// even channel counts.
#[test]
fn biquad_channels_in_pairs_match_one_channel_filters_bit_for_bit() {
    let frames = 5000;
    for channels in [1usize, 2, 3, 5] {
        let input: Vec<Vec<f32>> = (0..channels)
            .map(|c| {
                let f = 300.0 + 1700.0 * c as f64;
                (0..frames)
                    .map(|k| (TAU * f * k as f64 / f64::from(SR)).sin() as f32 * 0.5)
                    .collect()
            })
            .collect();
        let mut joint = Biquad::new(
            channels,
            SR,
            &BiquadSettings {
                mode: FilterMode::Lowpass,
                freq: 900.0,
                q: 3.0,
            },
        )
        .unwrap();
        let together = run_frames(&mut joint, &input, frames, 64);
        for (c, x) in input.iter().enumerate() {
            let mut alone = Biquad::new(
                1,
                SR,
                &BiquadSettings {
                    mode: FilterMode::Lowpass,
                    freq: 900.0,
                    q: 3.0,
                },
            )
            .unwrap();
            let y = run_frames(&mut alone, std::slice::from_ref(x), frames, 100);
            let bits = |v: &[f32]| v.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&together[c]),
                bits(&y[0]),
                "{channels} channels, channel {c}"
            );
        }
    }
}
