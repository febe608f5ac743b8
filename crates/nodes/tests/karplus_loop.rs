//! The `karplus` string's loop is the Karplus-Strong recursion whatever the blocks; its
//! output does not depend on block sizes; and a string that has decayed below the flush
//! level goes silent (computes nothing) once its loop holds only zeros, soon after it
//! stopped being audible.
#![allow(clippy::disallowed_methods)] // the reference tuning uses std's sin

mod common;

use common::SR;
use downbeat_nodes::{Karplus, KarplusSettings};

fn render(k: &mut Karplus, blocks: &[usize], frames: usize) -> Vec<f32> {
    common::run_blocks(k, &[], frames, blocks).remove(0)
}

/// Delay `N` and allpass coefficient of MIDI `note`, as the node documents its tuning.
fn tuning(note: f64) -> (usize, f64) {
    let freq = 440.0 * ((note - 69.0) / 12.0).exp2();
    let sr = f64::from(SR);
    let period = sr / freq;
    let n = (period - 0.6).floor();
    let fraction = period - 0.5 - n;
    let w = std::f64::consts::TAU * freq / sr;
    let c = ((1.0 - fraction) * w / 2.0).sin() / ((1.0 + fraction) * w / 2.0).sin();
    (n as usize, c)
}

/// The plain recursion over the loop's samples `s` (amp 1, so the output is `s` in `f32`):
/// `y[n] = c a[n] + a[n-1] - c y[n-1]`, `a[n] = (s[n-N-1] + s[n-N]) / 2`, `s = decay y`.
/// Returns the largest deviation of `s` from it, from the second period on.
fn recursion_error(s: &[f32], note: f64, decay: f64) -> f64 {
    let (n, c) = tuning(note);
    let len = s.len();
    let s = |i: usize| f64::from(s[i]);
    let a = |i: usize| 0.5 * (s(i - n - 1) + s(i - n));
    let mut worst = 0.0f64;
    for i in n + 3..len {
        let y_prev = s(i - 1) / decay;
        let expected = decay * (c * a(i) + a(i - 1) - c * y_prev);
        worst = worst.max((s(i) - expected).abs());
    }
    worst
}

fn one_note(note: f64, decay: f64, length: f64) -> KarplusSettings {
    KarplusSettings {
        notes: vec![note],
        interval: length + 1.0,
        length,
        decay,
        amp: 1.0,
        ..KarplusSettings::default()
    }
}

#[test]
fn the_loop_is_the_karplus_strong_recursion() {
    // Short and long delay lines, in odd blocks, so runs end anywhere in the ring.
    for note in [21.0, 45.0, 80.0, 100.0, 108.0] {
        let mut k = Karplus::new(1, SR, &one_note(note, 0.996, 0.5)).unwrap();
        let out = render(&mut k, &[37, 5, 128, 1, 66], 12_000);
        let peak = out.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        assert!(peak > 0.05, "note {note}: the string rings ({peak})");
        let err = recursion_error(&out, note, 0.996);
        assert!(
            err < 1e-6 * f64::from(peak),
            "note {note}: off the recursion by {err} (peak {peak})"
        );
    }
}

#[test]
fn the_output_does_not_depend_on_block_sizes() {
    let settings = KarplusSettings {
        notes: vec![60.0, 96.0, 33.0, 107.0],
        interval: 0.0503,
        length: 0.05,
        offset: 0.0011,
        ..KarplusSettings::default()
    };
    let whole = render(
        &mut Karplus::new(1, SR, &settings).unwrap(),
        &[48_000],
        48_000,
    );
    assert!(whole.iter().any(|&x| x != 0.0));
    for blocks in [&[1usize][..], &[3, 7, 2], &[64], &[129, 5, 1000, 11]] {
        let split = render(&mut Karplus::new(1, SR, &settings).unwrap(), blocks, 48_000);
        let first = whole
            .iter()
            .zip(&split)
            .position(|(a, b)| a.to_bits() != b.to_bits());
        assert_eq!(first, None, "blocks {blocks:?}: first difference at frame");
    }
}

#[test]
fn a_rung_out_string_goes_silent_soon_after_its_last_sound() {
    // A high note losing 20% a period dies within a few thousand samples, long before its
    // 5 s `length` would cut it; at the loudest `amp`.
    let (note, decay, amp) = (100.0, 0.8, 16.0f32);
    let settings = KarplusSettings {
        amp,
        ..one_note(note, decay, 5.0)
    };
    let mut k = Karplus::new(1, SR, &settings).unwrap();
    let mut out = Vec::new();
    let mut silent_at = None;
    for block in 0..200 {
        out.extend(render(&mut k, &[128], 128));
        if k.is_silent() && silent_at.is_none() {
            silent_at = Some(block * 128);
        }
    }
    let silent_at = silent_at.expect("the string rang out but still computes");
    let last = out
        .iter()
        .rposition(|&x| x != 0.0)
        .expect("the string rang");
    let s: Vec<f32> = out.iter().map(|&x| x / amp).collect();
    // It rang as the recursion says, down to nothing audible, and went silent within 32
    // periods (two checks) of its last nonzero sample.
    assert!(recursion_error(&s[..=last], note, decay) < 1e-6 * 0.05);
    let tail = out[last.saturating_sub(100)..=last]
        .iter()
        .fold(0.0f32, |m, x| m.max(x.abs()));
    assert!(tail < 1e-25, "silenced while still at {tail}");
    let (n, _) = tuning(note);
    assert!(
        silent_at <= last + 32 * (n + 1) + 128,
        "silent at frame {silent_at}, the last sound at {last}"
    );
    assert!(
        out[last + 1..].iter().all(|&x| x.to_bits() == 0),
        "+0.0 once silent"
    );
    // A pluck wakes it.
    k.note(
        0,
        downbeat_graph::NoteEvent::On {
            channel: 0,
            note: 60.0,
            velocity: 0.8,
        },
    )
    .unwrap();
    assert!(render(&mut k, &[128], 128).iter().any(|&x| x != 0.0));
    assert!(!k.is_silent());
}
