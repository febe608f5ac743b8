//! The `karplus` string plays incoming notes: a note on plucks it at the note's pitch at its
//! frame, and the first note silences the built-in pattern.

use downbeat_graph::{note_to_hz, AudioMut, AudioRef, Node, NoteError, NoteEvent, ProcessContext};
use downbeat_nodes::{Karplus, KarplusSettings};

const SR: u32 = 48000;

fn string() -> Karplus {
    // The pattern's first note would start at 1 s: later than anything rendered here.
    let settings = KarplusSettings {
        offset: 1.0,
        length: 0.5,
        interval: 1.0,
        ..KarplusSettings::default()
    };
    Karplus::new(1, SR, &settings).unwrap()
}

fn render(k: &mut Karplus, frames: usize) -> Vec<f32> {
    let mut buf = vec![0.0f32; frames];
    let ctx = ProcessContext::new(SR, frames, 0);
    k.process(
        &ctx,
        AudioRef::new(&[], 0, frames, frames),
        AudioMut::new(&mut buf, 1, frames, frames),
    );
    buf
}

/// The fundamental near `hint` Hz: the autocorrelation's peak between 0.8 and 1.25 periods,
/// refined by a parabola through its neighbours (a plucked string is rich in harmonics, so
/// zero crossings would not do).
fn freq(x: &[f32], hint: f64) -> f64 {
    let sr = f64::from(SR);
    let ac = |lag: usize| -> f64 {
        x[..x.len() - lag]
            .iter()
            .zip(&x[lag..])
            .map(|(a, b)| f64::from(*a) * f64::from(*b))
            .sum()
    };
    let (lo, hi) = ((0.8 * sr / hint) as usize, (1.25 * sr / hint) as usize);
    let best = (lo..=hi).max_by(|&a, &b| ac(a).total_cmp(&ac(b))).unwrap();
    let (y0, y1, y2) = (ac(best - 1), ac(best), ac(best + 1));
    let shift = 0.5 * (y0 - y2) / (y0 - 2.0 * y1 + y2);
    sr / (best as f64 + shift)
}

#[test]
fn a_note_plucks_the_string_at_its_frame_and_pitch() {
    for (frame, note) in [(0usize, 45.0f32), (137, 57.0), (1000, 69.0), (2000, 76.5)] {
        let mut k = string();
        assert!(k.plays_notes());
        k.note(
            frame,
            NoteEvent::On {
                channel: 3,
                note,
                velocity: 0.8,
            },
        )
        .unwrap();
        let x = render(&mut k, 24000);
        assert!(
            x[..frame].iter().all(|&s| s == 0.0),
            "silent before {frame}"
        );
        assert!(x[frame] != 0.0, "sounds at {frame}");
        // Skip the noisy attack; the loop's pitch is what settles.
        let want = note_to_hz(f64::from(note));
        let f = freq(&x[frame + 2400..frame + 19200], want);
        assert!(
            (f / want - 1.0).abs() < 0.005,
            "note {note}: {f} Hz, want {want}"
        );
    }
}

#[test]
fn notes_carry_across_blocks_and_silence_the_pattern() {
    let settings = KarplusSettings {
        offset: 0.0,
        length: 0.05,
        ..KarplusSettings::default()
    };
    let mut k = Karplus::new(1, SR, &settings).unwrap();
    // The pattern plays from frame 0 until a note arrives.
    assert!(render(&mut k, 256).iter().any(|&s| s != 0.0));
    let mut k = Karplus::new(1, SR, &settings).unwrap();
    k.note(
        700,
        NoteEvent::On {
            channel: 0,
            note: 60.0,
            velocity: 1.0,
        },
    )
    .unwrap();
    let mut x = Vec::new();
    for _ in 0..8 {
        x.extend(render(&mut k, 256));
    }
    assert!(
        x[..700].iter().all(|&s| s == 0.0),
        "the pattern is silenced"
    );
    assert!(x[700] != 0.0, "the note sounds at its frame across blocks");
    assert_eq!(
        k.note(
            0,
            NoteEvent::On {
                channel: 0,
                note: 120.0,
                velocity: 1.0
            }
        ),
        Err(NoteError::Note(120.0))
    );
}
