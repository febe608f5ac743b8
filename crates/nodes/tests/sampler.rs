//! The sampler node: bit-exact playback at the root, clean pitched playback, velocity,
//! one-shot and gated modes, voice stealing, and every audio-thread path under the guard.
// Reference signals and measurements may use the platform's math; the engine may not.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{render, SR};
use downbeat_graph::{AudioMut, AudioRef, Node, NoteEvent, ProcessContext, MEMORY_BYTES};
use downbeat_nodes::{PlayMode, Sample, SampleSet, Sampler, SamplerSettings};
use downbeat_rt::guard;

downbeat_rt::install_guard_allocator!();

/// A deterministic noise-like buffer of `frames` frames and `channels` channels.
fn noise(frames: usize, channels: usize, seed: u32) -> Vec<f32> {
    let mut x = seed.wrapping_mul(2_654_435_761).max(1);
    (0..frames * channels)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x as f32 / u32::MAX as f32) * 2.0 - 1.0
        })
        .collect()
}

fn sine(freq: f64, frames: usize) -> Vec<f32> {
    (0..frames)
        .map(|i| (0.5 * (std::f64::consts::TAU * freq * i as f64 / f64::from(SR)).sin()) as f32)
        .collect()
}

fn settings(mode: PlayMode, voices: usize) -> SamplerSettings {
    SamplerSettings {
        voices,
        mode,
        ..SamplerSettings::default()
    }
}

/// Channel `c` of interleaved `data`.
fn channel(data: &[f32], channels: usize, c: usize) -> Vec<f32> {
    data.iter().skip(c).step_by(channels).copied().collect()
}

#[test]
fn a_note_at_its_root_plays_the_sample_bit_for_bit() {
    let frames = 1000;
    let data = noise(frames, 2, 1);
    let kit = SampleSet::kit([(38, Sample::from_interleaved(&data, 2, SR).unwrap())]).unwrap();
    let mut s = Sampler::new(
        2,
        SR,
        kit,
        &SamplerSettings {
            gain: 2.0,
            ..SamplerSettings::default()
        },
    )
    .unwrap();
    // Velocity 0.5: gain 0.25 (velocity squared), times the node's gain of 2.
    s.note_on(37, 38.0, 0.5).unwrap();
    let out = render(&mut s, 1200, 64);
    for (c, got) in out.iter().enumerate() {
        let want = channel(&data, 2, c);
        assert!(got[..37].iter().all(|&x| x == 0.0), "before the note");
        for (i, w) in want.iter().enumerate() {
            assert_eq!(got[37 + i], w * 0.25 * 2.0, "channel {c}, frame {i}");
        }
        assert!(
            got[37 + frames..].iter().all(|&x| x == 0.0),
            "after the end"
        );
    }
}

#[test]
fn a_mono_sample_at_the_keyboard_root_plays_on_every_channel() {
    let data = noise(500, 1, 2);
    let set = SampleSet::keyboard(Sample::from_interleaved(&data, 1, SR).unwrap(), 60.0).unwrap();
    let mut s = Sampler::new(2, SR, set, &SamplerSettings::default()).unwrap();
    s.note_on(5, 60.0, 1.0).unwrap();
    let out = render(&mut s, 600, 128);
    for got in &out {
        assert_eq!(&got[5..505], &data[..]);
    }
}

/// The power of what is left of `x` after the best fit of a sine at `freq` (and a
/// constant), relative to the power of `x`, in dB.
#[allow(clippy::needless_range_loop)] // the elimination reads best with indices
fn residual_db(x: &[f32], freq: f64) -> f64 {
    let w = std::f64::consts::TAU * freq / f64::from(SR);
    // Least squares on [sin, cos, 1] by the normal equations.
    let basis = |i: usize| {
        let t = w * i as f64;
        [t.sin(), t.cos(), 1.0]
    };
    let mut a = [[0.0f64; 3]; 3];
    let mut b = [0.0f64; 3];
    for (i, &v) in x.iter().enumerate() {
        let f = basis(i);
        for r in 0..3 {
            b[r] += f[r] * f64::from(v);
            for c in 0..3 {
                a[r][c] += f[r] * f[c];
            }
        }
    }
    // Gaussian elimination, 3x3.
    for k in 0..3 {
        for r in k + 1..3 {
            let m = a[r][k] / a[k][k];
            for c in k..3 {
                a[r][c] -= m * a[k][c];
            }
            b[r] -= m * b[k];
        }
    }
    let mut coef = [0.0f64; 3];
    for k in (0..3).rev() {
        let s: f64 = (k + 1..3).map(|c| a[k][c] * coef[c]).sum();
        coef[k] = (b[k] - s) / a[k][k];
    }
    let (mut sig, mut res) = (0.0, 0.0);
    for (i, &v) in x.iter().enumerate() {
        let f = basis(i);
        let fit: f64 = (0..3).map(|k| coef[k] * f[k]).sum();
        sig += f64::from(v).powi(2);
        res += (f64::from(v) - fit).powi(2);
    }
    10.0 * (res / sig).log10()
}

/// A sine sample at its root played `semitones` up (or down): the residual, in dB, once
/// the sine at the expected new pitch is taken out, over the steady middle of the note.
fn pitched_residual(freq: f64, semitones: f32) -> f64 {
    let set = SampleSet::keyboard(
        Sample::from_interleaved(&sine(freq, 48_000), 1, SR).unwrap(),
        60.0,
    )
    .unwrap();
    let mut s = Sampler::new(1, SR, set, &SamplerSettings::default()).unwrap();
    s.note_on(0, 60.0 + semitones, 1.0).unwrap();
    let out = render(&mut s, 20_000, 256);
    let expected = freq * 2f64.powf(f64::from(semitones) / 12.0);
    residual_db(&out[0][2000..18_000], expected)
}

#[test]
fn a_pitched_sine_has_the_right_frequency_and_a_clean_spectrum() {
    // Bounds: the measured residuals (-142 dB for 1 kHz, the f32 floor; -78.9 dB for 5 kHz,
    // both directions, six-point Lagrange) with a margin. Linear interpolation fails them.
    for (freq, semitones, bound) in [
        (1000.0, 7.0, -120.0),
        (1000.0, -5.0, -120.0),
        (5000.0, 7.0, -75.0),
        (5000.0, -5.0, -75.0),
    ] {
        let db = pitched_residual(freq, semitones);
        eprintln!("{freq} Hz, {semitones:+} semitones: residual {db:.1} dB");
        assert!(
            db < bound,
            "{freq} Hz {semitones:+}: residual {db:.1} dB, bound {bound}"
        );
    }
    // The wrong pitch leaves nearly everything: the check measures the frequency too.
    let set = SampleSet::keyboard(
        Sample::from_interleaved(&sine(1000.0, 48_000), 1, SR).unwrap(),
        60.0,
    )
    .unwrap();
    let mut s = Sampler::new(1, SR, set, &SamplerSettings::default()).unwrap();
    s.note_on(0, 67.0, 1.0).unwrap();
    let out = render(&mut s, 20_000, 256);
    assert!(residual_db(&out[0][2000..18_000], 1000.0 * 1.5) > -20.0);
}

#[test]
fn a_sample_at_another_rate_plays_at_its_recorded_pitch() {
    // 24 kHz sample in a 48 kHz sampler: read at half a frame per output frame.
    let set = SampleSet::keyboard(
        Sample::from_interleaved(&sine(500.0, 24_000), 1, SR / 2).unwrap(),
        60.0,
    )
    .unwrap();
    let mut s = Sampler::new(1, SR, set, &SamplerSettings::default()).unwrap();
    s.note_on(0, 60.0, 1.0).unwrap();
    let out = render(&mut s, 20_000, 256);
    // `sine` writes 500 Hz at SR; read at half speed it is 250 Hz.
    let db = residual_db(&out[0][2000..18_000], 250.0);
    assert!(db < -100.0, "residual {db:.1} dB");
}

#[test]
fn a_rate_of_zero_is_refused_by_the_sample_and_the_sampler() {
    let err = Sample::from_interleaved(&[0.5], 1, 0).unwrap_err();
    assert_eq!(err.to_string(), "sample rate 0 Hz must be above 0");
    let set = SampleSet::keyboard(Sample::from_interleaved(&[0.5], 1, SR).unwrap(), 60.0).unwrap();
    let err = Sampler::new(1, 0, set, &SamplerSettings::default()).unwrap_err();
    assert_eq!(err.to_string(), "sample rate 0 Hz must be above 0");
}

#[test]
fn velocity_sets_the_gain_by_its_square() {
    let data = vec![0.5f32; 100];
    for velocity in [1.0f32, 100.0 / 127.0, 0.5, 16.0 / 127.0] {
        let kit = SampleSet::kit([(36, Sample::from_interleaved(&data, 1, SR).unwrap())]).unwrap();
        let mut s = Sampler::new(1, SR, kit, &SamplerSettings::default()).unwrap();
        s.note_on(0, 36.0, velocity).unwrap();
        let out = render(&mut s, 100, 64);
        assert_eq!(
            out[0][50],
            0.5 * (velocity * velocity),
            "velocity {velocity}"
        );
    }
}

#[test]
fn one_shot_ignores_the_note_off_and_gated_releases_linearly() {
    let data = vec![1.0f32; 4000];
    let make = |mode| {
        let kit = SampleSet::kit([(36, Sample::from_interleaved(&data, 1, SR).unwrap())]).unwrap();
        let st = SamplerSettings {
            mode,
            release: 0.01, // 480 frames
            ..SamplerSettings::default()
        };
        let mut s = Sampler::new(1, SR, kit, &st).unwrap();
        s.note_on(0, 36.0, 1.0).unwrap();
        s.note_off(1000, 36.0).unwrap();
        s.note(1500, NoteEvent::AllNotesOff { channel: None })
            .unwrap();
        render(&mut s, 5000, 100)
    };
    let oneshot = make(PlayMode::OneShot);
    assert!(
        oneshot[0][..4000].iter().all(|&x| x == 1.0),
        "plays to its end"
    );
    assert!(oneshot[0][4000..].iter().all(|&x| x == 0.0));

    let gated = make(PlayMode::Gated);
    assert!(gated[0][..1000].iter().all(|&x| x == 1.0));
    for k in 0..480 {
        let want = (480 - k) as f32 / 480.0;
        assert!(
            (gated[0][1000 + k] - want).abs() < 1e-6,
            "release frame {k}"
        );
    }
    assert!(
        gated[0][1480..].iter().all(|&x| x == 0.0),
        "silent after the release"
    );
}

/// A kit of three notes playing constant levels 1, 10 and 100.
fn levels_kit(mode: PlayMode, voices: usize) -> Sampler {
    let hit = |level: f32| Sample::from_interleaved(&vec![level; 20_000], 1, SR).unwrap();
    let kit = SampleSet::kit([(36, hit(1.0)), (38, hit(10.0)), (40, hit(100.0))]).unwrap();
    let st = SamplerSettings {
        release: 1.0,
        ..settings(mode, voices)
    };
    Sampler::new(1, SR, kit, &st).unwrap()
}

#[test]
fn a_full_sampler_steals_the_oldest_note_with_a_fade() {
    let mut s = levels_kit(PlayMode::OneShot, 2);
    s.note_on(0, 36.0, 1.0).unwrap();
    s.note_on(100, 38.0, 1.0).unwrap();
    s.note_on(200, 40.0, 1.0).unwrap();
    let out = &render(&mut s, 1000, 64)[0];
    assert_eq!(s.steals(), 1);
    assert_eq!(out[150], 11.0);
    // The oldest (level 1) fades out over 3 ms (144 frames) while the new note starts.
    assert!((out[200] - 111.0).abs() < 0.01, "{}", out[200]);
    assert!(out[250] > 110.0 && out[250] < 111.0);
    assert_eq!(out[200 + 144], 110.0);
    assert_eq!(s.active_voices(), 2);
}

#[test]
fn a_full_sampler_steals_a_released_note_before_the_oldest() {
    let mut s = levels_kit(PlayMode::Gated, 2);
    s.note_on(0, 36.0, 1.0).unwrap();
    s.note_on(100, 38.0, 1.0).unwrap();
    s.note_off(150, 38.0).unwrap(); // a 1 s release: still sounding at 200
    s.note_on(200, 40.0, 1.0).unwrap();
    let out = &render(&mut s, 1000, 64)[0];
    assert_eq!(s.steals(), 1);
    assert_eq!(
        out[200 + 144],
        101.0,
        "the released level-10 note was taken"
    );
}

#[test]
fn unmapped_notes_are_counted_and_memory_is_reported() {
    let mut s = levels_kit(PlayMode::OneShot, 4);
    s.note_on(0, 37.0, 1.0).unwrap();
    let out = &render(&mut s, 100, 64)[0];
    assert!(out.iter().all(|&x| x == 0.0));
    assert_eq!(s.unmapped_notes(), 1);
    let monitor = s.monitor().unwrap();
    let counts = monitor.counts();
    let memory = counts.iter().find(|c| c.name == MEMORY_BYTES).unwrap();
    // Three samples of 20 000 frames (plus five frames of padding each), in f32.
    assert!(memory.value >= 3 * 20_005 * 4, "{}", memory.value);
    assert_eq!(memory.value, s.memory_bytes());
}

#[test]
fn gain_is_live() {
    let mut s = levels_kit(PlayMode::OneShot, 4);
    let gain = s
        .params()
        .iter()
        .position(|p| p.name == "gain" && p.live)
        .unwrap();
    assert_eq!(s.get_param(gain), Some(1.0));
    s.note_on(0, 38.0, 1.0).unwrap();
    assert_eq!(render(&mut s, 64, 64)[0][63], 10.0);
    assert!(s.set_param(gain, 0.5));
    assert!(!s.set_param(gain, 9.0), "outside 0 to 4");
    let out = render(&mut s, 128, 64);
    assert!(out[0][0] < 10.0 && out[0][0] > 5.0, "glides: {}", out[0][0]);
    assert_eq!(out[0][127], 5.0);
}

#[test]
fn notes_steals_and_process_are_real_time_safe() {
    let mut s = levels_kit(PlayMode::Gated, 4);
    let mut out = vec![0.0f32; 512];
    let gain = s.params().iter().position(|p| p.name == "gain").unwrap();
    let run = |s: &mut Sampler, out: &mut [f32]| {
        let mut position = 0u64;
        for round in 0..200usize {
            let frames = [512, 64, 200, 1][round % 4];
            for k in 0..6 {
                // More notes than voices: steals every round, pitched and unpitched.
                let note = [36.0, 38.0, 40.0, 38.5][k % 4];
                s.note_on(k * frames / 6, note, 0.3 + 0.1 * k as f32)
                    .unwrap();
            }
            s.note_off(frames / 2, 38.0).unwrap();
            s.note(frames - 1, NoteEvent::AllNotesOff { channel: None })
                .unwrap();
            assert!(s.set_param(gain, if round % 2 == 0 { 0.5 } else { 1.5 }));
            let ctx = ProcessContext::new(SR, frames, position);
            s.process(
                &ctx,
                AudioRef::new(&[], 0, 512, frames),
                AudioMut::new(out, 1, 512, frames),
            );
            position += frames as u64;
        }
        s.steals()
    };
    run(&mut s, &mut out);
    let before = s.steals();
    let (steals, report) = guard::check_with(&guard::Options::new(), || run(&mut s, &mut out));
    report.assert_clean();
    assert!(
        steals - before >= 200,
        "{} steals under the guard",
        steals - before
    );
    assert!(out.iter().any(|&x| x != 0.0));
}
