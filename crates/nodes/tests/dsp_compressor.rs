//! `spectral_compressor` driven directly through `Node::process`.
// Reference signals and measurements may use the platform's math; the engine may not.
#![allow(clippy::disallowed_methods)]

use std::f64::consts::TAU;

use downbeat_graph::Node;
use downbeat_nodes::{CompressorSettings, CompressorStats, SpectralCompressor};

mod common;
use common::{run, SR};
const FFT: usize = 2048;

fn db_to_amp(db: f64) -> f64 {
    10f64.powf(db / 20.0)
}

/// A sine of `level_db` dBFS (peak amplitude) centred on FFT bin `bin`.
fn bin_sine(bin: f64, level_db: f64, frames: usize) -> Vec<f32> {
    let freq = bin * f64::from(SR) / FFT as f64;
    let amp = db_to_amp(level_db);
    (0..frames)
        .map(|i| (amp * (TAU * freq * i as f64 / f64::from(SR)).sin()) as f32)
        .collect()
}

/// Sinusoid level in dBFS estimated from the RMS (peak = RMS × √2).
fn level_db(x: &[f32]) -> f64 {
    let rms = (x.iter().map(|&s| f64::from(s).powi(2)).sum::<f64>() / x.len() as f64).sqrt();
    20.0 * (rms * 2f64.sqrt()).log10()
}

fn settings(threshold_db: f64, ratio: f64, makeup_db: f64) -> CompressorSettings {
    CompressorSettings {
        fft_size: FFT,
        overlap: 4,
        threshold_db,
        ratio,
        attack_ms: 5.0,
        release_ms: 50.0,
        makeup_db,
    }
}

/// Steady output level in dBFS for a bin-centred sine at `input_db`: two seconds of sine,
/// measured over the last half second.
fn steady_output_db(s: &CompressorSettings, bin: f64, input_db: f64, block: usize) -> f64 {
    let mut comp = SpectralCompressor::new(1, SR, s).unwrap();
    let n = 2 * SR as usize;
    let out = run(&mut comp, &[bin_sine(bin, input_db, n)], block);
    level_db(&out[0][n - SR as usize / 2..])
}

#[test]
fn levels_above_threshold_follow_the_ratio() {
    let (threshold, ratio) = (-30.0, 4.0);
    for (input_db, makeup) in [(-20.0, 0.0), (-10.0, 0.0), (-3.0, 0.0), (-12.0, 6.0)] {
        let s = settings(threshold, ratio, makeup);
        let expected = threshold + (input_db - threshold) / ratio + makeup;
        let got = steady_output_db(&s, 43.0, input_db, 100);
        assert!(
            (got - expected).abs() < 1.0,
            "in {input_db} dBFS (makeup {makeup}): out {got:.2}, expected {expected:.2}"
        );
    }
}

#[test]
fn other_ratios_and_bins_follow_the_law() {
    for (bin, ratio, input_db) in [(100.0, 2.0, -6.0), (7.0, 10.0, -5.0), (300.0, 8.0, -15.0)] {
        let s = settings(-25.0, ratio, 0.0);
        let expected = -25.0 + (input_db + 25.0) / ratio;
        let got = steady_output_db(&s, bin, input_db, 64);
        assert!(
            (got - expected).abs() < 1.0,
            "bin {bin} ratio {ratio}: out {got:.2}, expected {expected:.2}"
        );
    }
}

#[test]
fn levels_below_threshold_are_unchanged() {
    let s = settings(-20.0, 8.0, 0.0);
    for input_db in [-40.0, -26.0] {
        let got = steady_output_db(&s, 43.0, input_db, 100);
        assert!((got - input_db).abs() < 0.5, "in {input_db}: out {got:.3}");
    }
}

#[test]
fn unity_settings_reproduce_the_input_after_the_latency() {
    for overlap in [2, 4, 8] {
        let s = CompressorSettings {
            overlap,
            ..settings(-40.0, 1.0, 0.0)
        };
        let mut comp = SpectralCompressor::new(2, SR, &s).unwrap();
        assert_eq!(comp.latency(), FFT);
        let n = 20_000;
        // A loud chord on the left, a decaying click train on the right: far above the
        // threshold, but ratio 1 must leave them alone.
        let left: Vec<f32> = (0..n)
            .map(|i| {
                let t = i as f64 / f64::from(SR);
                (0.4 * (TAU * 220.0 * t).sin() + 0.3 * (TAU * 1234.5 * t).sin()) as f32
            })
            .collect();
        let right: Vec<f32> = (0..n)
            .map(|i| if i % 700 == 0 { 0.9 } else { 0.0 })
            .collect();
        let out = run(&mut comp, &[left.clone(), right.clone()], 100);
        for (input, output) in [(&left, &out[0]), (&right, &out[1])] {
            assert!(output[..FFT].iter().all(|s| s.abs() < 1e-6), "latency part");
            let err = input[..n - FFT]
                .iter()
                .zip(&output[FFT..])
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(err < 1e-5, "overlap {overlap}: max error {err}");
        }
    }
}

#[test]
fn output_is_bit_identical_across_runs_and_block_sizes() {
    let s = settings(-30.0, 4.0, 3.0);
    let input = vec![bin_sine(43.5, -6.0, 30_000)];
    let a = run(&mut SpectralCompressor::new(1, SR, &s).unwrap(), &input, 64);
    let b = run(
        &mut SpectralCompressor::new(1, SR, &s).unwrap(),
        &input,
        100,
    );
    let c = run(&mut SpectralCompressor::new(1, SR, &s).unwrap(), &input, 1);
    assert_eq!(a, b);
    assert_eq!(a, c);
}

#[test]
fn silent_input_runs_no_fft() {
    let mut comp = SpectralCompressor::new(2, SR, &settings(-30.0, 4.0, 12.0)).unwrap();
    let n = 24_000;
    let out = run(&mut comp, &[vec![0.0; n], vec![0.0; n]], 100);
    assert!(out.iter().flatten().all(|&s| s == 0.0));
    let hops = n / (FFT / 4);
    assert_eq!(
        comp.stats(),
        CompressorStats {
            ffts_run: 0,
            frames_skipped: 2 * hops as u64,
        }
    );
}

#[test]
fn signal_then_silence_drains_to_exact_zeros_and_stops_the_ffts() {
    let mut comp = SpectralCompressor::new(1, SR, &settings(-30.0, 4.0, 0.0)).unwrap();
    let sig = 10_000;
    let input = bin_sine(43.0, -10.0, sig);
    let out = run(&mut comp, &[input], 100);
    assert!(out[0][FFT..].iter().any(|&s| s != 0.0));
    let during = comp.stats();
    assert!(during.ffts_run > 0);

    // Two frame lengths plus one hop of silence drain everything.
    let drain = 2 * FFT + FFT / 4;
    let tail = run(&mut comp, &[vec![0.0; drain + 100]], 100);
    assert!(
        tail[0][..FFT].iter().any(|&s| s != 0.0),
        "the latency still holds signal"
    );
    assert!(
        tail[0][drain..].iter().all(|&s| s == 0.0),
        "drained to exact zeros"
    );
    let drained = comp.stats();

    let more = run(&mut comp, &[vec![0.0; 10_000]], 100);
    assert!(more[0].iter().all(|&s| s == 0.0));
    let after = comp.stats();
    assert_eq!(after.ffts_run, drained.ffts_run, "no FFT once drained");
    assert!(after.frames_skipped > drained.frames_skipped);

    // A new signal wakes it up again, with the gain fully released.
    let again = run(&mut comp, &[bin_sine(43.0, -40.0, 20_000)], 100);
    assert!(comp.stats().ffts_run > after.ffts_run);
    assert!((level_db(&again[0][10_000..]) + 40.0).abs() < 0.5);
}

#[test]
fn live_parameter_changes_take_effect() {
    let mut comp = SpectralCompressor::new(1, SR, &settings(-30.0, 1.0, 0.0)).unwrap();
    let n = 2 * SR as usize;
    let input = bin_sine(43.0, -10.0, n);
    let before = run(&mut comp, std::slice::from_ref(&input), 100);
    assert!((level_db(&before[0][n / 2..]) + 10.0).abs() < 0.1);
    assert!(comp.set_param(4, 4.0)); // ratio
    assert!(!comp.set_param(4, 0.5));
    assert!(!comp.set_param(1, 1024.0), "fft_size cannot change live");
    let after = run(&mut comp, &[input], 100);
    let expected = -30.0 + 20.0 / 4.0;
    let got = level_db(&after[0][n / 2..]);
    assert!(
        (got - expected).abs() < 1.0,
        "out {got:.2}, expected {expected}"
    );
    assert_eq!(comp.settings().ratio, 4.0);
}

#[test]
fn bad_settings_are_refused_by_name() {
    let cases: [(&str, CompressorSettings); 5] = [
        (
            "fft_size",
            CompressorSettings {
                fft_size: 1000,
                ..Default::default()
            },
        ),
        (
            "fft_size",
            CompressorSettings {
                fft_size: 16384,
                ..Default::default()
            },
        ),
        (
            "overlap",
            CompressorSettings {
                overlap: 3,
                ..Default::default()
            },
        ),
        (
            "ratio",
            CompressorSettings {
                ratio: 0.5,
                ..Default::default()
            },
        ),
        (
            "attack_ms",
            CompressorSettings {
                attack_ms: -1.0,
                ..Default::default()
            },
        ),
    ];
    for (want, s) in cases {
        match SpectralCompressor::new(1, SR, &s) {
            Err(downbeat_graph::ParamError::Invalid { name, .. }) => assert_eq!(name, want),
            other => panic!("expected an invalid `{want}`, got {other:?}"),
        }
    }
}
