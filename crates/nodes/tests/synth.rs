//! The `synth` node: pitch, band-limiting, voice stealing without glitches, envelope timing,
//! sample-accurate note events, and a real-time-safe note path.
// Reference signals and measurements may use the platform's math; the engine may not.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{render, SR};
use downbeat_graph::{
    note_to_hz, AudioMut, AudioRef, Node, NodeConfig, NoteError, NoteEvent, ParamValue,
    ProcessContext,
};
use downbeat_nodes::node_type;
use downbeat_nodes::{Synth, SynthSettings, Wave, PENDING_EVENTS, STEAL_FADE};
use downbeat_rt::guard;
use realfft::RealFftPlanner;

downbeat_rt::install_guard_allocator!();

fn synth(settings: SynthSettings) -> Synth {
    Synth::new(1, SR, &settings).unwrap()
}

fn sine_settings() -> SynthSettings {
    SynthSettings {
        wave: Wave::Sine,
        ..SynthSettings::default()
    }
}

/// The note number of `hz`.
fn hz_to_note(hz: f64) -> f32 {
    (69.0 + 12.0 * (hz / 440.0).log2()) as f32
}

/// Mean frequency of `x` from its upward zero crossings, located by linear interpolation.
fn zero_crossing_freq(x: &[f32]) -> f64 {
    let mut crossings = Vec::new();
    for n in 1..x.len() {
        let (a, b) = (f64::from(x[n - 1]), f64::from(x[n]));
        if a < 0.0 && b >= 0.0 {
            crossings.push((n - 1) as f64 + a / (a - b));
        }
    }
    assert!(
        crossings.len() > 10,
        "too few crossings: {}",
        crossings.len()
    );
    let periods = (crossings.len() - 1) as f64;
    f64::from(SR) * periods / (crossings[crossings.len() - 1] - crossings[0])
}

/// Magnitude spectrum of `x` under a 4-term Blackman-Harris window (side lobes below
/// -92 dB, so a -60 dB component is not hidden by a neighbour's leakage).
fn spectrum(x: &[f32]) -> Vec<f64> {
    let n = x.len();
    let mut planner = RealFftPlanner::<f64>::new();
    let fft = planner.plan_fft_forward(n);
    let mut input: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let t = std::f64::consts::TAU * i as f64 / n as f64;
            let w =
                0.35875 - 0.48829 * t.cos() + 0.14128 * (2.0 * t).cos() - 0.01168 * (3.0 * t).cos();
            f64::from(s) * w
        })
        .collect();
    let mut out = fft.make_output_vec();
    fft.process(&mut input, &mut out).unwrap();
    out.iter().map(|c| c.norm()).collect()
}

/// The frequency of the largest peak of `mags` within `lo..hi` Hz, refined by a parabola
/// through the log magnitudes of the peak bin and its neighbours.
fn peak_freq(mags: &[f64], fft_len: usize, lo: f64, hi: f64) -> f64 {
    let bin_hz = f64::from(SR) / fft_len as f64;
    let (a, b) = ((lo / bin_hz) as usize, (hi / bin_hz) as usize + 1);
    let k = (a..b).max_by(|&i, &j| mags[i].total_cmp(&mags[j])).unwrap();
    let (l, c, r) = (mags[k - 1].ln(), mags[k].ln(), mags[k + 1].ln());
    let offset = 0.5 * (l - r) / (l - 2.0 * c + r);
    (k as f64 + offset) * bin_hz
}

/// Plays `notes` (note, velocity) from frame 0, holds them, renders `frames`.
fn play(settings: SynthSettings, notes: &[(f32, f32)], frames: usize) -> Vec<f32> {
    let mut s = synth(settings);
    for &(note, velocity) in notes {
        s.note_on(0, note, velocity).unwrap();
    }
    render(&mut s, frames, 256).remove(0)
}

#[test]
fn pitch_of_single_notes_is_within_half_a_percent() {
    // Every waveform, from low to high, including microtones.
    let notes = [
        24.0f32, 33.5, 45.0, 57.25, 60.0, 69.0, 76.9, 88.0, 96.0, 100.0, 105.0,
    ];
    for wave in [Wave::Sine, Wave::Saw, Wave::Square] {
        for &note in &notes {
            let settings = SynthSettings {
                wave,
                cutoff: 20000.0,
                ..SynthSettings::default()
            };
            let x = play(settings, &[(note, 1.0)], 48000 + 65536);
            let want = note_to_hz(f64::from(note));
            let got = if wave == Wave::Sine {
                zero_crossing_freq(&x[24000..])
            } else {
                let mags = spectrum(&x[48000..]);
                peak_freq(&mags, 65536, want * 0.97, want * 1.03)
            };
            let error = (got / want - 1.0).abs();
            assert!(
                error < 0.005,
                "{wave:?} note {note}: {got:.3} Hz, want {want:.3} Hz ({:.3}%)",
                error * 100.0
            );
        }
    }
}

#[test]
fn every_voice_of_a_chord_has_its_pitch() {
    // Sixteen voices at once, a minor third apart: each one's peak is where its note is.
    let notes: Vec<(f32, f32)> = (0..16).map(|i| (36.0 + 3.0 * i as f32, 0.8)).collect();
    let x = play(sine_settings(), &notes, 24000 + 65536);
    assert!(x.iter().all(|s| s.abs() <= 1.0));
    let mags = spectrum(&x[24000..]);
    for &(note, _) in &notes {
        let want = note_to_hz(f64::from(note));
        let got = peak_freq(&mags, 65536, want * 0.92, want * 1.08);
        assert!(
            (got / want - 1.0).abs() < 0.005,
            "note {note}: {got:.3} Hz, want {want:.3} Hz"
        );
    }
}

/// A band-limited saw near 4 kHz at 48 kHz: every component that is not one of its own
/// harmonics is at least 60 dB below the fundamental. (At exactly 4 kHz every alias would
/// land on a harmonic, 48 000 being a multiple of 4 000, and could not be told apart; so
/// the fundamentals are taken around it.)
#[test]
fn a_4_khz_saw_has_no_alias_within_60_db() {
    for hz in [3950.0, 4010.0, 4100.0, 4321.0] {
        let settings = SynthSettings {
            cutoff: 20000.0,
            key_track: 0.0,
            vel_track: 0.0,
            ..SynthSettings::default()
        };
        let n = 32768;
        let x = play(settings, &[(hz_to_note(hz), 1.0)], 24000 + n);
        let mags = spectrum(&x[24000..]);
        let bin_hz = f64::from(SR) / n as f64;
        let fundamental = mags[(hz / bin_hz).round() as usize - 3..(hz / bin_hz) as usize + 4]
            .iter()
            .copied()
            .fold(0.0, f64::max);
        // The window's main lobe is 4 bins wide on each side; harmonics get 6.
        let near_harmonic = |bin: usize| {
            let f = bin as f64 * bin_hz;
            (1..=5).any(|k| (f - k as f64 * hz).abs() <= 6.0 * bin_hz)
        };
        let mut worst = (f64::NEG_INFINITY, 0.0);
        for (bin, &m) in mags.iter().enumerate().skip(7) {
            if near_harmonic(bin) {
                continue;
            }
            let db = 20.0 * (m / fundamental).log10();
            if db > worst.0 {
                worst = (db, bin as f64 * bin_hz);
            }
        }
        assert!(
            worst.0 < -60.0,
            "saw at {hz} Hz: component at {:.0} Hz is only {:.1} dB below the fundamental",
            worst.1,
            -worst.0
        );
    }
}

/// Largest absolute sample-to-sample step of `x[range]`.
fn max_step(x: &[f32], range: std::ops::Range<usize>) -> f32 {
    x[range]
        .windows(2)
        .map(|w| (w[1] - w[0]).abs())
        .fold(0.0, f32::max)
}

/// `voices + 4` notes held, entering 50 ms apart: exactly four voices are stolen, each
/// faded (never cut), so no step at a steal is larger than the chord's own steps without
/// stealing, and nothing exceeds full scale.
#[test]
fn a_chord_of_voices_plus_four_steals_four_voices_without_glitches() {
    let voices = 16;
    let spacing = 2400;
    let frames = spacing * (voices + 4) + 24000;
    let notes: Vec<f32> = (0..voices + 4).map(|i| 36.0 + i as f32).collect();
    let run = |voices: usize| {
        let mut s = synth(SynthSettings {
            voices,
            ..sine_settings()
        });
        for (i, &note) in notes.iter().enumerate() {
            s.note_on(i * spacing, note, 1.0).unwrap();
        }
        let out = render(&mut s, frames, 256).remove(0);
        (out, s.steals(), s.cut_fades())
    };
    let (stolen, steals, cuts) = run(voices);
    let (reference, no_steals, _) = run(voices + 4);
    assert_eq!(steals, 4);
    assert_eq!(cuts, 0);
    assert_eq!(no_steals, 0);
    let own = max_step(&reference, 0..frames);
    let fade = (STEAL_FADE * f64::from(SR)) as usize;
    for k in voices..voices + 4 {
        let at = k * spacing;
        let step = max_step(&stolen, at - 16..at + fade + 16);
        assert!(
            step <= own,
            "steal at frame {at}: step {step} exceeds the chord's own largest step {own}"
        );
    }
    let peak = stolen.iter().fold(0.0f32, |m, s| m.max(s.abs()));
    let reference_peak = reference.iter().fold(0.0f32, |m, s| m.max(s.abs()));
    assert!(peak <= 1.0, "peak {peak}");
    assert!(peak <= reference_peak, "{peak} > {reference_peak}");
}

/// A stolen voice goes on exactly as it would have, times a linear fade over
/// `STEAL_FADE`, and is exactly silent afterwards, while the new note starts on time.
#[test]
fn a_stolen_voice_fades_out_linearly_over_a_few_milliseconds() {
    let steal_at = 24000;
    let frames = 30000;
    let render_with = |voices: usize, notes: &[(usize, f32)]| {
        let mut s = synth(SynthSettings {
            voices,
            ..sine_settings()
        });
        for &(frame, note) in notes {
            s.note_on(frame, note, 1.0).unwrap();
        }
        render(&mut s, frames, 100).remove(0)
    };
    let stolen = render_with(1, &[(0, 57.0), (steal_at, 64.0)]);
    let both = render_with(2, &[(0, 57.0), (steal_at, 64.0)]);
    let new_only = render_with(1, &[(steal_at, 64.0)]);
    let fade = (STEAL_FADE * f64::from(SR)).round() as usize;
    assert!((96..=240).contains(&fade), "a few milliseconds: {fade}");
    for n in 0..frames {
        let old = both[n] - new_only[n];
        let faded = stolen[n] - new_only[n];
        if n < steal_at {
            assert_eq!(stolen[n], both[n]);
        } else if n < steal_at + fade {
            let gain = 1.0 - (n - steal_at + 1) as f32 / fade as f32;
            assert!(
                (faded - gain * old).abs() < 1e-5,
                "frame {n}: {faded} is not {gain} x {old}"
            );
        } else {
            assert_eq!(faded, 0.0, "frame {n}: the stolen voice still sounds");
        }
    }
    // The old voice was sounding at the steal: there was something to fade.
    assert!(both[steal_at - 50..steal_at].iter().any(|s| s.abs() > 0.01));
}

#[test]
fn a_note_starts_at_its_exact_frame_whatever_the_block_size() {
    let mut outputs = Vec::new();
    for block in [1usize, 64, 256, 1000, 4096] {
        let mut s = synth(SynthSettings::default());
        s.note_on(1234, 60.0, 0.9).unwrap();
        s.note_on(1234, 67.0, 0.9).unwrap();
        s.note_off(5000, 60.0).unwrap();
        s.note(
            7001,
            NoteEvent::PitchBend {
                channel: 0,
                value: 0.5,
            },
        )
        .unwrap();
        s.note_off(9000, 67.0).unwrap();
        let x = render(&mut s, 20000, block).remove(0);
        assert!(x[..1234].iter().all(|&v| v == 0.0), "block {block}");
        assert_ne!(x[1234], 0.0, "block {block}: the note starts at its frame");
        outputs.push(x);
    }
    for x in &outputs[1..] {
        assert_eq!(x, &outputs[0], "output depends on the block size");
    }
}

#[test]
fn default_envelope_is_crisp() {
    let d = SynthSettings::default();
    assert!(d.attack <= 0.005 && d.release <= 0.1, "{d:?}");
    // The node type's defaults are the same settings.
    let cfg = NodeConfig {
        sample_rate: SR,
        max_block: 256,
    };
    let mut from_type = node_type("synth")
        .unwrap()
        .instantiate(vec![("channels".into(), ParamValue::Int(1))], &cfg)
        .unwrap();
    from_type
        .note(
            0,
            NoteEvent::On {
                channel: 0,
                note: 69.0,
                velocity: 1.0,
            },
        )
        .unwrap();
    from_type
        .note(
            24000,
            NoteEvent::Off {
                channel: 0,
                note: 69.0,
            },
        )
        .unwrap();
    let x = render(from_type.as_mut(), 30000, 256).remove(0);
    let mut direct = synth(d);
    direct.note_on(0, 69.0, 1.0).unwrap();
    direct.note_off(24000, 69.0).unwrap();
    assert_eq!(x, render(&mut direct, 30000, 256).remove(0));
    // Attack: within 5 ms and one period of the note, the level is at its maximum.
    let period = (f64::from(SR) / 440.0) as usize + 1;
    let overall = x.iter().fold(0.0f32, |m, s| m.max(s.abs()));
    let early = x[..240 + period].iter().fold(0.0f32, |m, s| m.max(s.abs()));
    assert!(early >= 0.97 * overall, "{early} vs {overall}");
    assert!(
        x[0] != 0.0 && x[0].abs() < 0.01 * overall,
        "starts from silence"
    );
    // Release: silent from 100 ms after the note off, not silent just before the end of
    // the 80 ms release.
    assert!(x[24000 + 4800..].iter().all(|&s| s == 0.0));
    assert!(x[24000 + 3700..24000 + 3800].iter().any(|&s| s != 0.0));
}

#[test]
fn velocity_zero_sustain_all_notes_off_and_channels() {
    let on = |channel, note| NoteEvent::On {
        channel,
        note,
        velocity: 1.0,
    };
    // A velocity-0 note on releases like a note off.
    let mut a = synth(SynthSettings::default());
    let mut b = synth(SynthSettings::default());
    for s in [&mut a, &mut b] {
        s.note(0, on(3, 60.0)).unwrap();
    }
    a.note(
        1000,
        NoteEvent::On {
            channel: 3,
            note: 60.0,
            velocity: 0.0,
        },
    )
    .unwrap();
    b.note(
        1000,
        NoteEvent::Off {
            channel: 3,
            note: 60.0,
        },
    )
    .unwrap();
    assert_eq!(render(&mut a, 9000, 256), render(&mut b, 9000, 256));
    assert_eq!(a.active_voices(), 0);

    // The pedal holds released notes until it is lifted; a note off on another channel
    // releases nothing.
    let mut s = synth(SynthSettings::default());
    s.note(0, on(0, 60.0)).unwrap();
    s.note(
        0,
        NoteEvent::Sustain {
            channel: 0,
            on: true,
        },
    )
    .unwrap();
    s.note(
        100,
        NoteEvent::Off {
            channel: 0,
            note: 60.0,
        },
    )
    .unwrap();
    s.note(
        100,
        NoteEvent::Off {
            channel: 1,
            note: 60.0,
        },
    )
    .unwrap();
    render(&mut s, 10000, 256);
    assert_eq!(s.active_voices(), 1, "held by the pedal");
    s.note(
        0,
        NoteEvent::Sustain {
            channel: 0,
            on: false,
        },
    )
    .unwrap();
    render(&mut s, 10000, 256);
    assert_eq!(s.active_voices(), 0, "released with the pedal");

    // All notes off on one channel, then on every channel.
    for c in 0..4 {
        s.note(0, on(c, 60.0 + f32::from(c))).unwrap();
    }
    s.note(10, NoteEvent::AllNotesOff { channel: Some(2) })
        .unwrap();
    render(&mut s, 10000, 256);
    assert_eq!(s.active_voices(), 3);
    s.note(0, NoteEvent::AllNotesOff { channel: None }).unwrap();
    render(&mut s, 10000, 256);
    assert_eq!(s.active_voices(), 0);

    // A synth listening to MIDI channel 2 (wire channel 1) ignores the others.
    let mut only = synth(SynthSettings {
        midi_channel: Some(1),
        ..SynthSettings::default()
    });
    only.note(0, on(0, 60.0)).unwrap();
    only.note(0, on(1, 64.0)).unwrap();
    render(&mut only, 256, 256);
    let freqs: Vec<f64> = only.voice_freqs().collect();
    assert_eq!(freqs.len(), 1);
    assert!((freqs[0] - note_to_hz(64.0)).abs() < 1e-6);
}

#[test]
fn pitch_bend_moves_the_pitch_by_the_bend_range() {
    let mut s = synth(SynthSettings {
        bend_range: 2.0,
        ..sine_settings()
    });
    s.note_on(0, 69.0, 1.0).unwrap();
    s.note(
        0,
        NoteEvent::PitchBend {
            channel: 0,
            value: -0.5,
        },
    )
    .unwrap();
    let x = render(&mut s, 48000, 256).remove(0);
    let want = note_to_hz(68.0);
    let got = zero_crossing_freq(&x[4800..]);
    assert!((got / want - 1.0).abs() < 0.001, "{got} vs {want}");
}

/// Harmonic `k`'s level relative to the fundamental, in dB, of a held saw note.
fn harmonic_db(settings: SynthSettings, note: f32, velocity: f32, k: usize) -> f64 {
    let n = 32768;
    let x = play(settings, &[(note, velocity)], 24000 + n);
    let mags = spectrum(&x[24000..]);
    let hz = note_to_hz(f64::from(note));
    let level = |f: f64| {
        let bin = f / (f64::from(SR) / n as f64);
        mags[bin as usize - 3..bin as usize + 4]
            .iter()
            .copied()
            .fold(0.0, f64::max)
    };
    20.0 * (level(k as f64 * hz) / level(hz)).log10()
}

#[test]
fn filter_tracks_key_and_velocity() {
    let base = SynthSettings {
        cutoff: 300.0,
        ..SynthSettings::default()
    };
    // Full key tracking: two octaves up, the filter moves with the note and the 4th
    // harmonic keeps its level relative to the fundamental; without tracking it falls.
    let tracked = SynthSettings {
        key_track: 1.0,
        vel_track: 0.0,
        ..base.clone()
    };
    let fixed = SynthSettings {
        key_track: 0.0,
        vel_track: 0.0,
        ..base.clone()
    };
    let t36 = harmonic_db(tracked.clone(), 36.0, 1.0, 4);
    let t60 = harmonic_db(tracked, 60.0, 1.0, 4);
    assert!((t36 - t60).abs() < 1.0, "tracked: {t36:.1} vs {t60:.1} dB");
    let f36 = harmonic_db(fixed.clone(), 36.0, 1.0, 4);
    let f60 = harmonic_db(fixed, 60.0, 1.0, 4);
    assert!(f60 < f36 - 12.0, "fixed cutoff: {f36:.1} vs {f60:.1} dB");
    // Velocity tracking: a soft note is darker than a hard one.
    let vel = SynthSettings {
        cutoff: 2000.0,
        key_track: 0.0,
        vel_track: 3.0,
        ..base
    };
    let hard = harmonic_db(vel.clone(), 60.0, 1.0, 4);
    let soft = harmonic_db(vel, 60.0, 0.25, 4);
    assert!(soft < hard - 6.0, "hard {hard:.1} dB, soft {soft:.1} dB");
}

#[test]
fn live_parameters_change_sounding_notes() {
    let cfg = NodeConfig {
        sample_rate: SR,
        max_block: 256,
    };
    let ty = node_type("synth").unwrap();
    let index = |name: &str| ty.params.iter().position(|p| p.name == name).unwrap();
    for (name, value) in [
        ("cutoff", 500.0f32),
        ("resonance", 8.0),
        ("sustain", 0.2),
        ("amp", 0.5),
        ("key_track", 1.0),
        ("vel_track", 4.0),
        ("bend_range", 12.0),
    ] {
        let mut a = ty.instantiate(Vec::new(), &cfg).unwrap();
        let mut b = ty.instantiate(Vec::new(), &cfg).unwrap();
        for n in [&mut a, &mut b] {
            n.note(
                0,
                NoteEvent::On {
                    channel: 0,
                    note: 57.0,
                    velocity: 0.5,
                },
            )
            .unwrap();
            n.note(
                0,
                NoteEvent::PitchBend {
                    channel: 0,
                    value: 0.5,
                },
            )
            .unwrap();
        }
        let x0 = render(a.as_mut(), 24000, 256);
        assert_eq!(x0, render(b.as_mut(), 24000, 256));
        assert!(a.set_param(index(name), value), "{name}");
        assert_ne!(
            render(a.as_mut(), 4800, 256),
            render(b.as_mut(), 4800, 256),
            "{name}"
        );
    }
    // Times change the next notes' envelopes.
    for (name, value, off) in [
        ("attack", 0.05f32, false),
        ("decay", 0.01, false),
        ("release", 1.0, true),
    ] {
        let mut a = ty.instantiate(Vec::new(), &cfg).unwrap();
        let mut b = ty.instantiate(Vec::new(), &cfg).unwrap();
        assert!(a.set_param(index(name), value), "{name}");
        for n in [&mut a, &mut b] {
            n.note(
                0,
                NoteEvent::On {
                    channel: 0,
                    note: 57.0,
                    velocity: 0.5,
                },
            )
            .unwrap();
            if off {
                n.note(
                    100,
                    NoteEvent::Off {
                        channel: 0,
                        note: 57.0,
                    },
                )
                .unwrap();
            }
        }
        assert_ne!(
            render(a.as_mut(), 24000, 256),
            render(b.as_mut(), 24000, 256),
            "{name}"
        );
    }
    // Out of range and non-live parameters are refused.
    let mut a = ty.instantiate(Vec::new(), &cfg).unwrap();
    assert!(!a.set_param(index("cutoff"), 30000.0));
    assert!(!a.set_param(index("voices"), 4.0));
    assert!(!a.set_param(index("attack"), f32::NAN));
}

#[test]
fn bad_note_events_are_refused_with_the_reason() {
    let mut s = synth(SynthSettings::default());
    let cases = [
        (
            NoteEvent::On {
                channel: 16,
                note: 60.0,
                velocity: 1.0,
            },
            NoteError::Channel(16),
        ),
        (
            NoteEvent::On {
                channel: 0,
                note: 128.0,
                velocity: 1.0,
            },
            NoteError::Note(128.0),
        ),
        (
            NoteEvent::On {
                channel: 0,
                note: 60.0,
                velocity: 1.5,
            },
            NoteError::Velocity(1.5),
        ),
        (
            NoteEvent::PitchBend {
                channel: 0,
                value: -2.0,
            },
            NoteError::Bend(-2.0),
        ),
    ];
    for (event, error) in cases {
        assert_eq!(s.note(0, event), Err(error));
    }
    assert!(s
        .note(
            0,
            NoteEvent::Off {
                channel: 0,
                note: f32::NAN
            }
        )
        .is_err());
    assert_eq!(
        NoteError::Channel(16).to_string(),
        "MIDI channel 17 does not exist (channels are 1 to 16)"
    );
    // The list of pending events is bounded, and says so when full.
    for i in 0..PENDING_EVENTS {
        s.note_on(i, 60.0, 0.5).unwrap();
    }
    assert_eq!(
        s.note_on(0, 61.0, 0.5),
        Err(NoteError::Full {
            capacity: PENDING_EVENTS
        })
    );
    assert_eq!(s.pending_events(), PENDING_EVENTS);
    // Settings out of range are refused when the synth is built.
    let bad = SynthSettings {
        voices: 0,
        ..SynthSettings::default()
    };
    assert!(Synth::new(1, SR, &bad)
        .unwrap_err()
        .to_string()
        .contains("voices"));
    let cfg = NodeConfig {
        sample_rate: SR,
        max_block: 256,
    };
    let Err(err) = node_type("synth").unwrap().instantiate(
        vec![("wave".into(), ParamValue::Text("triangle".into()))],
        &cfg,
    ) else {
        panic!("a triangle wave was accepted");
    };
    assert!(err.to_string().contains("`sine`"), "{err}");
}

/// Everything the note path does on the audio thread: taking events, a 128-note burst that
/// steals (with fades), note offs, pedal, bend, all notes off, live parameters and
/// rendering, under the guard.
#[test]
fn the_note_path_is_real_time_safe() {
    let mut s = synth(SynthSettings::default());
    let mut out = vec![0.0f32; 2 * 512];
    let run = |s: &mut Synth, out: &mut [f32]| {
        let mut position = 0u64;
        let mut steals = 0;
        for round in 0..200usize {
            let frames = [512usize, 1, 100, 37, 256][round % 5];
            if round % 20 == 0 {
                // A burst of 128 notes in one block: 112 of them steal.
                for k in 0..128usize {
                    let note = (k % 88) as f32 + 21.0 + 0.5 * (round % 2) as f32;
                    s.note_on(k % frames, note, 0.8).unwrap();
                }
            }
            if round % 20 == 5 {
                s.note(
                    0,
                    NoteEvent::Sustain {
                        channel: 0,
                        on: true,
                    },
                )
                .unwrap();
                for k in 0..128usize {
                    s.note_off(k % frames, (k % 88) as f32 + 21.0).unwrap();
                }
                s.note(
                    frames - 1,
                    NoteEvent::PitchBend {
                        channel: 0,
                        value: 0.3,
                    },
                )
                .unwrap();
            }
            if round % 20 == 10 {
                s.note(
                    0,
                    NoteEvent::Sustain {
                        channel: 0,
                        on: false,
                    },
                )
                .unwrap();
                assert!(s.set_param(7, 2000.0 + round as f32));
                assert!(s.set_param(11, 0.05));
            }
            if round % 20 == 15 {
                s.note(frames / 2, NoteEvent::AllNotesOff { channel: None })
                    .unwrap();
            }
            let ctx = ProcessContext::new(SR, frames, position);
            s.process(
                &ctx,
                AudioRef::new(&[], 0, 512, frames),
                AudioMut::new(out, 1, 512, frames),
            );
            position += frames as u64;
            steals = s.steals();
        }
        steals
    };
    // Warm-up outside the guard, then the same again under it.
    run(&mut s, &mut out);
    let (steals, report) = guard::check_with(&guard::Options::new(), || run(&mut s, &mut out));
    report.assert_clean();
    assert!(steals >= 2 * 10 * 112, "{steals} steals");
}
