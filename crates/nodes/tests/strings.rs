//! The `strings` bank: each of its strings is a `karplus` string, so a bank equals that many
//! `karplus` nodes plucked in turn and summed in order, bit for bit, whatever the block sizes
//! and however many strings sound at once; and it refuses what it cannot play by name.

mod common;

use common::SR as RATE;
use downbeat_graph::{Node, NoteError, NoteEvent, ParamCurve, ParamError, Shape};
use downbeat_nodes::{Karplus, KarplusSettings, Strings, StringsSettings, MAX_STRINGS};

fn on(note: f32, velocity: f32) -> NoteEvent {
    NoteEvent::On {
        channel: 0,
        note,
        velocity,
    }
}

/// Renders `frames` frames of `node` (mono) in blocks of the sizes given, in turn.
fn render(node: &mut dyn Node, frames: usize, blocks: &[usize]) -> Vec<f32> {
    common::run_blocks(node, &[], frames, blocks).remove(0)
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|s| s.to_bits()).collect()
}

/// A song for a bank of `voices`: (frame, note, velocity) in frame order, more notes than
/// strings, so the first strings are plucked again while others still ring; two notes in
/// three share a frame (on different strings: a `karplus` string plays only the last of the
/// notes at one frame, a bank plucks a string for each).
fn song(voices: usize) -> Vec<(usize, f32, f32)> {
    (0..3 * voices)
        .map(|k| {
            let apart = if voices > 1 { k % 3 / 2 } else { k % 3 };
            let frame = 37 + (k / 3) * 2400 + apart * 11;
            let note = 28.0 + ((k * 7) % 70) as f32 + 0.25 * (k % 4) as f32;
            (frame, note, 0.3 + 0.7 * ((k * 5) % 9) as f32 / 8.0)
        })
        .collect()
}

/// The same strings as `karplus` nodes: string `i` seeded `seed + i` and given the notes the
/// bank plucks it with (every `voices`th), summed in string order.
fn as_karplus(voices: usize, settings: &StringsSettings, frames: usize) -> Vec<f32> {
    let notes = song(voices);
    let mut sum = vec![0.0f32; frames];
    for i in 0..voices {
        let k = KarplusSettings {
            seed: settings.seed + i as u64,
            decay: settings.decay,
            amp: settings.amp,
            length: settings.length,
            interval: 2.0 * settings.length,
            ..KarplusSettings::default()
        };
        let mut string = Karplus::new(1, RATE, &k).unwrap();
        for &(frame, note, velocity) in notes.iter().skip(i).step_by(voices) {
            string.note(frame, on(note, velocity)).unwrap();
        }
        let out = render(&mut string, frames, &[frames]);
        for (s, x) in sum.iter_mut().zip(&out) {
            *s += *x;
        }
    }
    sum
}

fn bank(voices: usize, settings: &StringsSettings) -> Strings {
    let mut bank = Strings::new(
        1,
        RATE,
        &StringsSettings {
            voices,
            ..settings.clone()
        },
    )
    .unwrap();
    for (frame, note, velocity) in song(voices) {
        bank.note(frame, on(note, velocity)).unwrap();
    }
    bank
}

#[test]
fn a_bank_equals_karplus_strings_plucked_in_turn_and_summed() {
    let settings = StringsSettings {
        length: 0.3,
        decay: 0.95,
        amp: 0.7,
        seed: 11,
        ..StringsSettings::default()
    };
    // Counts with and without a remainder beyond the groups of four; blocks odd and even.
    for voices in [1, 3, 4, 6, 13] {
        let frames = voices * 2400 + 30_000;
        let want = as_karplus(voices, &settings, frames);
        assert!(want.iter().any(|&s| s != 0.0));
        for blocks in [&[128][..], &[1, 255, 64, 4096, 7]] {
            let got = render(&mut bank(voices, &settings), frames, blocks);
            assert_eq!(
                bits(&got),
                bits(&want),
                "{voices} strings in blocks of {blocks:?}"
            );
        }
    }
}

#[test]
fn an_amplitude_ramp_is_followed_sample_by_sample() {
    let settings = StringsSettings {
        voices: 8,
        ..StringsSettings::default()
    };
    let mut ramped = bank(8, &settings);
    let mut steady = bank(8, &settings);
    let frames = 4800;
    let _ = render(&mut ramped, frames, &[frames]);
    let _ = render(&mut steady, frames, &[frames]);
    let curve = ParamCurve::ramp(Shape::Linear, 0.5, 0.0, 256);
    assert!(ramped.follow_param(4, curve));
    let a = render(&mut ramped, 256, &[256]);
    let b = render(&mut steady, 256, &[256]);
    // Falling to 0 over the block: the first sample as before, the last far quieter.
    assert_eq!(a[0].to_bits(), b[0].to_bits());
    assert!(a[255].abs() <= 0.02 * b[255].abs(), "{} {}", a[255], b[255]);
}

#[test]
fn what_it_cannot_play_is_refused_by_name() {
    let s = StringsSettings::default();
    for (bad, name) in [
        (
            StringsSettings {
                voices: 0,
                ..s.clone()
            },
            "voices",
        ),
        (
            StringsSettings {
                voices: MAX_STRINGS + 1,
                ..s.clone()
            },
            "voices",
        ),
        (
            StringsSettings {
                length: 0.0,
                ..s.clone()
            },
            "length",
        ),
        (
            StringsSettings {
                decay: 1.5,
                ..s.clone()
            },
            "decay",
        ),
    ] {
        match Strings::new(1, RATE, &bad) {
            Err(ParamError::Invalid { name: got, .. }) => assert_eq!(got, name),
            other => panic!("{bad:?} gave {other:?}"),
        }
    }
    let mut bank = Strings::new(1, RATE, &StringsSettings { voices: 4, ..s }).unwrap();
    assert_eq!(bank.note(0, on(10.0, 1.0)), Err(NoteError::Note(10.0)));
    // Twice the strings, at least 256, wait; the next is refused, not dropped.
    for _ in 0..256 {
        bank.note(5, on(60.0, 1.0)).unwrap();
    }
    assert_eq!(
        bank.note(5, on(60.0, 1.0)),
        Err(NoteError::Full { capacity: 256 })
    );
    // A note off is taken and changes nothing.
    bank.note(
        0,
        NoteEvent::Off {
            channel: 0,
            note: 60.0,
        },
    )
    .unwrap();
}
