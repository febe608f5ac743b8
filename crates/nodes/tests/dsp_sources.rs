//! Source nodes driven directly through `Node::process`: `sine`, `noise`, `karplus`.
// Reference signals and measurements may use the platform's math; the engine may not.
#![allow(clippy::disallowed_methods)]

use downbeat_graph::Node;
use downbeat_nodes::{Karplus, KarplusSettings, Noise, NoiseSettings, Sine, SineSettings};
use realfft::RealFftPlanner;

mod common;
use common::{render, SR};

/// Magnitude spectrum of `x` (rectangular window), one value per bin.
fn spectrum(x: &[f32]) -> Vec<f64> {
    let mut planner = RealFftPlanner::<f64>::new();
    let fft = planner.plan_fft_forward(x.len());
    let mut input: Vec<f64> = x.iter().map(|&s| f64::from(s)).collect();
    let mut out = fft.make_output_vec();
    fft.process(&mut input, &mut out).unwrap();
    out.iter().map(|c| c.norm()).collect()
}

fn peak_bin(mags: &[f64]) -> usize {
    mags.iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .unwrap()
        .0
}

#[test]
fn sine_peak_is_at_its_frequency_with_right_amplitude() {
    for (freq, amp, block) in [(440.0, 0.5, 100), (1000.0, 0.25, 64), (5123.0, 0.8, 100)] {
        let mut sine = Sine::new(
            1,
            SR,
            &SineSettings {
                freq,
                amp,
                ..SineSettings::default()
            },
        );
        let out = render(&mut sine, SR as usize, block);
        let mags = spectrum(&out[0]);
        // One second: bin k is k Hz.
        let peak = peak_bin(&mags);
        assert!(
            (peak as f64 - freq).abs() <= 1.0,
            "{freq} Hz sine peaks at bin {peak}"
        );
        let measured = 2.0 * mags[peak] / out[0].len() as f64;
        assert!(
            (measured - f64::from(amp)).abs() < 0.01 * f64::from(amp),
            "amplitude {measured}, expected {amp}"
        );
        let peak_sample = out[0].iter().fold(0.0f32, |a, &s| a.max(s.abs()));
        assert!(peak_sample <= amp && peak_sample > 0.999 * amp);
    }
}

#[test]
fn sine_off_bin_frequency_peaks_within_one_bin() {
    let freq = 1234.5;
    let mut sine = Sine::new(
        1,
        SR,
        &SineSettings {
            freq,
            amp: 0.5,
            ..SineSettings::default()
        },
    );
    let out = render(&mut sine, SR as usize, 100);
    let n = out[0].len();
    let windowed: Vec<f32> = out[0]
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let w = 0.5 - 0.5 * (std::f64::consts::TAU * i as f64 / n as f64).cos();
            (f64::from(s) * w) as f32
        })
        .collect();
    let mags = spectrum(&windowed);
    let peak = peak_bin(&mags);
    assert!((peak as f64 - freq).abs() <= 1.0, "peak at {peak}");
    // Hann: coherent gain 0.5, scalloping at most 1.5 dB.
    let measured = 2.0 * mags[peak] / (0.5 * n as f64);
    let err_db = 20.0 * (measured / 0.5).log10();
    assert!(err_db.abs() < 1.5, "amplitude off by {err_db} dB");
}

#[test]
fn sine_is_identical_on_every_channel_and_independent_of_block_size() {
    let mut a = Sine::new(
        3,
        SR,
        &SineSettings {
            freq: 997.0,
            amp: 0.7,
            phase: 0.3,
        },
    );
    let mut b = Sine::new(
        3,
        SR,
        &SineSettings {
            freq: 997.0,
            amp: 0.7,
            phase: 0.3,
        },
    );
    let out_a = render(&mut a, 20_000, 64);
    let out_b = render(&mut b, 20_000, 100);
    assert_eq!(out_a, out_b);
    assert_eq!(out_a[0], out_a[1]);
    assert_eq!(out_a[0], out_a[2]);
}

#[test]
fn sine_phase_sets_the_starting_point() {
    let mut s = Sine::new(
        1,
        SR,
        &SineSettings {
            freq: 100.0,
            amp: 1.0,
            phase: 0.25,
        },
    );
    let out = render(&mut s, 4, 4);
    assert_eq!(out[0][0], 1.0);
    let mut s = Sine::new(
        1,
        SR,
        &SineSettings {
            freq: 100.0,
            amp: 1.0,
            ..SineSettings::default()
        },
    );
    assert_eq!(render(&mut s, 1, 1)[0][0], 0.0);
}

#[test]
fn sine_frequency_and_amplitude_change_live() {
    let mut sine = Sine::new(
        1,
        SR,
        &SineSettings {
            freq: 440.0,
            amp: 0.5,
            ..SineSettings::default()
        },
    );
    render(&mut sine, 1000, 100);
    assert!(sine.set_param(1, 880.0));
    assert!(
        !sine.set_param(1, 30_000.0),
        "above Nyquist must be refused"
    );
    assert!(sine.set_param(2, 0.25));
    let out = render(&mut sine, SR as usize, 100);
    let peak = peak_bin(&spectrum(&out[0]));
    assert!((peak as f64 - 880.0).abs() <= 1.0, "peak at {peak}");
    // `set_param` is a step (the schedule smooths): the amplitude is 0.25 from the first
    // sample on.
    let peak = out[0].iter().fold(0.0f32, |a, &s| a.max(s.abs()));
    assert!(peak <= 0.25 && peak > 0.2499);
    assert!(!sine.set_param(0, 1.0), "channels cannot change live");
}

#[test]
fn noise_is_deterministic_per_seed_and_independent_of_block_size() {
    let a = render(
        &mut Noise::new(2, &NoiseSettings { amp: 0.5, seed: 42 }),
        10_000,
        64,
    );
    let b = render(
        &mut Noise::new(2, &NoiseSettings { amp: 0.5, seed: 42 }),
        10_000,
        100,
    );
    let c = render(
        &mut Noise::new(2, &NoiseSettings { amp: 0.5, seed: 43 }),
        10_000,
        64,
    );
    assert_eq!(a, b);
    assert_ne!(a[0], c[0]);
    assert_ne!(a[1], c[1]);
    // Channels are different streams.
    assert_ne!(a[0], a[1]);
}

#[test]
fn noise_statistics_match_uniform_distribution() {
    let amp = 0.5f64;
    let out = render(
        &mut Noise::new(
            2,
            &NoiseSettings {
                amp: amp as f32,
                seed: 9,
            },
        ),
        SR as usize,
        100,
    );
    for ch in &out {
        let n = ch.len() as f64;
        let mean = ch.iter().map(|&s| f64::from(s)).sum::<f64>() / n;
        let rms = (ch.iter().map(|&s| f64::from(s).powi(2)).sum::<f64>() / n).sqrt();
        assert!(mean.abs() < 0.005, "mean {mean}");
        let expected = amp / 3f64.sqrt();
        assert!((rms - expected).abs() < 0.01 * expected, "rms {rms}");
        assert!(ch.iter().all(|&s| f64::from(s).abs() <= amp));
    }
    // The two channels are uncorrelated.
    let n = out[0].len() as f64;
    let cross: f64 = out[0]
        .iter()
        .zip(&out[1])
        .map(|(&a, &b)| f64::from(a) * f64::from(b))
        .sum::<f64>()
        / n;
    let corr = cross / (amp * amp / 3.0);
    assert!(corr.abs() < 0.02, "correlation {corr}");
}

/// Fundamental of `x`: a coarse estimate by autocorrelation (the first lag whose correlation
/// is within 10% of the highest peak, so an octave below is not chosen), refined on a
/// zero-padded Hann-windowed spectrum: the highest bin within ±3% of the coarse estimate,
/// interpolated with a parabola through the log magnitudes.
fn detect_pitch(x: &[f32], sample_rate: f64) -> f64 {
    let coarse = autocorrelation_pitch(x, sample_rate);
    let size = 1 << 19;
    let mut padded = vec![0.0f32; size];
    let n = x.len();
    for (i, (p, &s)) in padded.iter_mut().zip(x).enumerate() {
        let w = 0.5 - 0.5 * (std::f64::consts::TAU * i as f64 / n as f64).cos();
        *p = (f64::from(s) * w) as f32;
    }
    let mags = spectrum(&padded);
    let bin_hz = sample_rate / size as f64;
    let lo = (coarse * 0.97 / bin_hz) as usize;
    let hi = (coarse * 1.03 / bin_hz) as usize;
    let k = (lo..=hi)
        .max_by(|&a, &b| mags[a].total_cmp(&mags[b]))
        .unwrap();
    let (a, b, c) = (mags[k - 1].ln(), mags[k].ln(), mags[k + 1].ln());
    let shift = 0.5 * (a - c) / (a - 2.0 * b + c);
    (k as f64 + shift) * bin_hz
}

fn autocorrelation_pitch(x: &[f32], sample_rate: f64) -> f64 {
    let min_lag = (sample_rate / 5000.0) as usize;
    let max_lag = (sample_rate / 40.0) as usize;
    let r: Vec<f64> = (0..=max_lag + 1)
        .map(|lag| {
            x.iter()
                .zip(&x[lag..])
                .map(|(&a, &b)| f64::from(a) * f64::from(b))
                .sum()
        })
        .collect();
    let best = (min_lag..=max_lag)
        .map(|l| r[l])
        .fold(f64::NEG_INFINITY, f64::max);
    let lag = (min_lag..=max_lag)
        .find(|&l| r[l] >= 0.9 * best && r[l] >= r[l - 1] && r[l] >= r[l + 1])
        .unwrap();
    let (a, b, c) = (r[lag - 1], r[lag], r[lag + 1]);
    let shift = 0.5 * (a - c) / (a - 2.0 * b + c);
    sample_rate / (lag as f64 + shift)
}

fn midi_to_hz(note: f64) -> f64 {
    440.0 * 2f64.powf((note - 69.0) / 12.0)
}

#[test]
fn karplus_pitch_is_accurate_and_silence_between_notes_is_exact() {
    let settings = KarplusSettings {
        notes: vec![45.0, 57.0, 69.0, 84.5, 96.0],
        interval: 0.5,
        length: 0.3,
        offset: 0.05,
        decay: 0.999,
        amp: 0.5,
        seed: 3,
    };
    let mut string = Karplus::new(2, SR, &settings).unwrap();
    let total = (0.05 + 5.0 * 0.5) * SR as f64;
    let out = render(&mut string, total as usize, 100);
    assert_eq!(out[0], out[1], "same signal on every channel");
    let x = &out[0];
    let sr = f64::from(SR);
    let offset = (0.05 * sr) as usize;
    let length = (0.3 * sr) as usize;
    let interval = (0.5 * sr) as usize;
    assert!(
        x[..offset].iter().all(|&s| s == 0.0),
        "silent before offset"
    );
    for (k, &note) in settings.notes.iter().enumerate() {
        let onset = offset + k * interval;
        let ring = &x[onset..onset + length];
        assert!(
            ring[0] != 0.0 || ring[1] != 0.0,
            "note {k} starts at its onset"
        );
        let gap = &x[onset + length..(onset + interval).min(x.len())];
        assert!(
            gap.iter().all(|&s| s == 0.0),
            "note {k} is cut to exact zeros"
        );
        let expected = midi_to_hz(note);
        let detected = detect_pitch(ring, sr);
        let err = (detected / expected - 1.0).abs();
        assert!(
            err < 0.01,
            "note {note}: detected {detected:.3} Hz, expected {expected:.3} Hz"
        );
        // Far better than the 1% required: an integer-only delay line would be up to 2% off
        // for note 96 (22.9-sample period); the fractional allpass makes it exact.
        assert!(err < 0.001, "note {note}: error {:.4}%", err * 100.0);
    }
}

#[test]
fn karplus_is_deterministic_per_seed_and_block_size_independent() {
    let settings = KarplusSettings {
        notes: vec![60.0, 67.0],
        interval: 0.1,
        length: 0.08,
        offset: 0.013,
        ..KarplusSettings::default()
    };
    let a = render(&mut Karplus::new(1, SR, &settings).unwrap(), 20_000, 64);
    let b = render(&mut Karplus::new(1, SR, &settings).unwrap(), 20_000, 100);
    assert_eq!(a, b);
    let other = KarplusSettings {
        seed: settings.seed + 1,
        ..settings.clone()
    };
    let c = render(&mut Karplus::new(1, SR, &other).unwrap(), 20_000, 64);
    assert_ne!(a, c);
    // Same onsets and cut points whatever the seed.
    let nonzero = |v: &[f32]| v.iter().map(|&s| s != 0.0).collect::<Vec<_>>();
    let (za, zc) = (nonzero(&a[0]), nonzero(&c[0]));
    let first = |z: &[bool]| z.iter().position(|&b| b).unwrap();
    assert_eq!(first(&za), first(&zc));
    assert_eq!(first(&za), (0.013 * f64::from(SR)).round() as usize);
}

#[test]
fn karplus_refuses_length_not_below_interval() {
    let settings = KarplusSettings {
        interval: 0.25,
        length: 0.25,
        ..KarplusSettings::default()
    };
    match Karplus::new(1, SR, &settings) {
        Err(downbeat_graph::ParamError::Invalid { name, .. }) => assert_eq!(name, "length"),
        other => panic!("expected an invalid `length`, got {other:?}"),
    }
}

#[test]
fn karplus_amplitude_and_decay_change_live() {
    let settings = KarplusSettings {
        notes: vec![69.0],
        interval: 1.0,
        length: 0.9,
        ..KarplusSettings::default()
    };
    let loud = render(&mut Karplus::new(1, SR, &settings).unwrap(), 4800, 100);
    let mut quiet = Karplus::new(1, SR, &settings).unwrap();
    assert!(quiet.set_param(6, 0.25)); // amp: half of the default 0.5
    assert!(!quiet.set_param(6, -1.0));
    assert!(quiet.set_param(5, 0.9)); // decay
    let quiet = render(&mut quiet, 4800, 100);
    // The first period is the raw excitation (scaled by amp), then decay acts.
    let rms =
        |v: &[f32]| (v.iter().map(|&s| f64::from(s).powi(2)).sum::<f64>() / v.len() as f64).sqrt();
    assert!(rms(&quiet[0][2400..]) < 0.1 * rms(&loud[0][2400..]));
}
