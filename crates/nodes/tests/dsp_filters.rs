//! Processing nodes driven directly through `Node::process`: `biquad`, `mix`, `gain`.
// Reference signals and measurements may use the platform's math; the engine may not.
#![allow(clippy::disallowed_methods)]

use std::f64::consts::{FRAC_1_SQRT_2, SQRT_2, TAU};

use downbeat_graph::{Node, ParamCurve, Shape};
use downbeat_nodes::{Biquad, BiquadSettings, FilterMode, Gain, Mix, MixSettings};

mod common;
use common::{run, SR};

fn sine(freq: f64, amp: f64, frames: usize) -> Vec<f32> {
    (0..frames)
        .map(|i| (amp * (TAU * freq * i as f64 / f64::from(SR)).sin()) as f32)
        .collect()
}

fn rms(x: &[f32]) -> f64 {
    (x.iter().map(|&s| f64::from(s).powi(2)).sum::<f64>() / x.len() as f64).sqrt()
}

/// Steady-state gain in dB of `filter` at `freq`: RMS ratio over the second half of one
/// second of sine.
fn gain_db_at(filter: &mut Biquad, freq: f64) -> f64 {
    filter.reset();
    let n = SR as usize;
    let input = sine(freq, 0.5, n);
    let out = run(filter, std::slice::from_ref(&input), 100);
    20.0 * (rms(&out[0][n / 2..]) / rms(&input[n / 2..])).log10()
}

#[test]
fn lowpass_and_highpass_are_3db_down_at_cutoff() {
    for mode in [FilterMode::Lowpass, FilterMode::Highpass] {
        for cutoff in [200.0, 1000.0, 5000.0] {
            let mut f = Biquad::new(
                1,
                SR,
                &BiquadSettings {
                    mode,
                    freq: cutoff,
                    q: 1.0 / SQRT_2,
                },
            )
            .unwrap();
            let at = gain_db_at(&mut f, cutoff);
            assert!((at + 3.0).abs() < 0.5, "{mode:?} {cutoff} Hz: {at:.3} dB");
            // And the right side passes while the other is rejected.
            let (pass, stop) = match mode {
                FilterMode::Lowpass => (cutoff / 8.0, (cutoff * 8.0).min(20_000.0)),
                _ => (cutoff * 4.0, cutoff / 8.0),
            };
            let pass_db = gain_db_at(&mut f, pass);
            let stop_db = gain_db_at(&mut f, stop);
            assert!(
                pass_db.abs() < 0.5,
                "{mode:?} {cutoff} Hz passband {pass_db:.2} dB"
            );
            assert!(
                stop_db < -20.0,
                "{mode:?} {cutoff} Hz stopband {stop_db:.2} dB"
            );
        }
    }
}

#[test]
fn bandpass_has_unity_peak_and_rejects_two_octaves_away() {
    for center in [500.0, 2000.0] {
        let mut f = Biquad::new(
            1,
            SR,
            &BiquadSettings {
                mode: FilterMode::Bandpass,
                freq: center,
                q: 2.0,
            },
        )
        .unwrap();
        let at = gain_db_at(&mut f, center);
        assert!(at.abs() < 0.3, "{center} Hz center: {at:.3} dB");
        for away in [center * 4.0, center / 4.0] {
            let db = gain_db_at(&mut f, away);
            assert!(db < -15.0, "{center} Hz bandpass at {away} Hz: {db:.2} dB");
        }
    }
}

#[test]
fn biquad_channels_are_independent_and_block_size_does_not_matter() {
    let n = 10_000;
    let input = vec![sine(300.0, 0.5, n), sine(7000.0, 0.5, n)];
    let mut a = Biquad::new(
        2,
        SR,
        &BiquadSettings {
            mode: FilterMode::Lowpass,
            freq: 1000.0,
            q: FRAC_1_SQRT_2,
        },
    )
    .unwrap();
    let mut b = Biquad::new(
        2,
        SR,
        &BiquadSettings {
            mode: FilterMode::Lowpass,
            freq: 1000.0,
            q: FRAC_1_SQRT_2,
        },
    )
    .unwrap();
    let out_a = run(&mut a, &input, 64);
    let out_b = run(&mut b, &input, 100);
    assert_eq!(out_a, out_b);
    // Channel 0 (300 Hz) passes, channel 1 (7 kHz) is attenuated: no cross-talk of state.
    assert!(rms(&out_a[0][n / 2..]) > 0.3);
    assert!(rms(&out_a[1][n / 2..]) < 0.02);
}

#[test]
fn biquad_retunes_live_and_decays_to_exact_silence() {
    let mut f = Biquad::new(
        1,
        SR,
        &BiquadSettings {
            mode: FilterMode::Lowpass,
            freq: 500.0,
            q: FRAC_1_SQRT_2,
        },
    )
    .unwrap();
    assert!(f.set_param(2, 4000.0));
    assert!(!f.set_param(2, 24_000.0), "Nyquist is refused live too");
    assert!(!f.set_param(3, 0.0), "q below its range is refused");
    assert_eq!(f.freq(), 4000.0);
    let at = gain_db_at(&mut f, 4000.0);
    assert!((at + 3.0).abs() < 0.5, "retuned cutoff: {at:.3} dB");
    assert!(f.set_param(3, 4.0));
    let resonant = gain_db_at(&mut f, 4000.0);
    assert!(
        (resonant - 20.0 * 4f64.log10()).abs() < 0.5,
        "gain at f0 = q: {resonant}"
    );

    // After the input stops, the state is flushed to exact zeros instead of subnormals.
    let n = 48_000;
    let mut input = sine(4000.0, 0.5, n);
    input[n / 4..].fill(0.0);
    let out = run(&mut f, &[input], 100);
    assert!(out[0][n / 2..].iter().all(|&s| s == 0.0));
}

#[test]
fn biquad_refuses_frequency_at_or_above_nyquist() {
    for freq in [24_000.0, 30_000.0] {
        match Biquad::new(
            1,
            SR,
            &BiquadSettings {
                mode: FilterMode::Highpass,
                freq,
                q: 0.7,
            },
        ) {
            Err(downbeat_graph::ParamError::Invalid { name, .. }) => assert_eq!(name, "freq"),
            other => panic!("expected an invalid `freq`, got {other:?}"),
        }
    }
}

fn ramp_input(channels: usize, frames: usize) -> Vec<Vec<f32>> {
    (0..channels)
        .map(|c| {
            (0..frames)
                .map(|i| ((i * 7 + c * 13) % 101) as f32 / 50.0 - 1.0)
                .collect()
        })
        .collect()
}

#[test]
fn mix_gain_and_center_pan_are_exact() {
    let input = ramp_input(2, 1000);
    let out = run(
        &mut Mix::new(
            2,
            &MixSettings {
                gain_db: 0.0,
                ..MixSettings::default()
            },
        ),
        &input,
        100,
    );
    assert_eq!(out, input, "0 dB centered is the identity");

    let g = 10f64.powf(6.0 / 20.0) as f32;
    let out = run(
        &mut Mix::new(
            2,
            &MixSettings {
                gain_db: 6.0,
                ..MixSettings::default()
            },
        ),
        &input,
        64,
    );
    for c in 0..2 {
        for (o, i) in out[c].iter().zip(&input[c]) {
            assert_eq!(*o, g * i);
        }
    }
}

#[test]
fn mix_pan_is_equal_power_and_exact_at_the_ends() {
    let input = ramp_input(2, 500);
    let out = run(
        &mut Mix::new(
            2,
            &MixSettings {
                gain_db: 0.0,
                pan: -1.0,
            },
        ),
        &input,
        100,
    );
    assert!(out[1].iter().all(|&s| s == 0.0), "hard left silences right");
    for (o, i) in out[0].iter().zip(&input[0]) {
        assert_eq!(*o, SQRT_2 as f32 * i);
    }
    for pan in [-0.75, -0.3, 0.0, 0.5, 0.9] {
        let m = Mix::new(2, &MixSettings { gain_db: 0.0, pan });
        let [l, r] = [m.factors()[0], m.factors()[1]].map(f64::from);
        assert!((l * l + r * r - 2.0).abs() < 1e-6, "pan {pan}: {l} {r}");
        if pan < 0.0 {
            assert!(l > r);
        }
    }
}

#[test]
fn mix_ignores_pan_unless_stereo_and_follows_live_changes() {
    let input = ramp_input(3, 300);
    let out = run(
        &mut Mix::new(
            3,
            &MixSettings {
                gain_db: 0.0,
                pan: 1.0,
            },
        ),
        &input,
        100,
    );
    assert_eq!(out, input, "pan ignored for 3 channels");

    let mut m = Mix::new(
        1,
        &MixSettings {
            gain_db: 0.0,
            ..MixSettings::default()
        },
    );
    let ones = vec![vec![1.0f32; 300]];
    run(&mut m, &ones, 100);
    assert!(m.set_param(1, -6.0));
    assert!(!m.set_param(1, 100.0));
    let target = 10f64.powf(-6.0 / 20.0) as f32;
    // `set_param` is a step: the schedule, not the node, smooths.
    let out = run(&mut m, &ones, 100);
    assert!(out[0].iter().all(|&s| s == target));
    // A curve is followed sample by sample: from -6 dB back to 0 dB over 100 frames.
    assert!(m.follow_param(1, ParamCurve::ramp(Shape::Linear, -6.0, 0.0, 100)));
    let out = run(&mut m, &ones, 300);
    for (k, &s) in out[0].iter().enumerate() {
        let db = -6.0 + 6.0 * (k.min(100) as f64 / 100.0);
        assert!(
            (f64::from(s) - 10f64.powf(db / 20.0)).abs() < 1e-6,
            "frame {k}"
        );
    }
    assert!(
        !m.follow_param(1, ParamCurve::ramp(Shape::Linear, 0.0, 100.0, 10)),
        "a curve leaving the range is refused"
    );
}

#[test]
fn gain_multiplies_exactly() {
    let input = ramp_input(2, 333);
    let mut g = Gain::new(2, 0.25);
    let out = run(&mut g, &input, 100);
    for c in 0..2 {
        for (o, i) in out[c].iter().zip(&input[c]) {
            assert_eq!(*o, 0.25 * i);
        }
    }
    assert!(g.set_param(1, 2.0));
    assert!(!g.set_param(1, 17.0));
    let out = run(&mut g, &input, 64);
    assert_eq!(out[1][5], 2.0 * input[1][5]);
}

/// A moving gain and pan on two channels: every frame carries the bits a mix set still to
/// that frame's values gives, each side on its own channel.
#[test]
fn mix_moving_gain_and_pan_match_still_mixes_bit_for_bit() {
    let frames = 200;
    let input = ramp_input(2, frames);
    let gain = ParamCurve::ramp(Shape::Linear, -12.0, 3.0, 150);
    let pan = ParamCurve::ramp(Shape::Linear, -0.9, 0.7, 180);
    let mut m = Mix::new(
        2,
        &MixSettings {
            gain_db: 0.0,
            ..MixSettings::default()
        },
    );
    assert!(m.follow_param(1, gain) && m.follow_param(2, pan));
    let out = run(&mut m, &input, frames);
    for k in 0..frames {
        let mut still = Mix::new(
            2,
            &MixSettings {
                gain_db: f64::from(gain.at(k)),
                pan: f64::from(pan.at(k)),
            },
        );
        let one: Vec<Vec<f32>> = input.iter().map(|ch| vec![ch[k]]).collect();
        let want = run(&mut still, &one, 1);
        for c in 0..2 {
            assert_eq!(
                out[c][k].to_bits(),
                want[c][0].to_bits(),
                "frame {k} channel {c}"
            );
        }
    }
}
