//! The `karplus` string's loop, computed in chunks with its allpass feedback unrolled four
//! samples at a time, still is the Karplus-Strong recursion; its output does not depend on
//! block sizes; and a string that has decayed below the flush level goes silent (computes
//! nothing) without changing any output bit.
#![allow(clippy::disallowed_methods)] // the reference tuning uses std's sin

use downbeat_graph::nodes::{Karplus, KarplusSettings};
use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};

const SR: f32 = 48000.0;

fn render(k: &mut Karplus, blocks: &[usize], frames: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; frames];
    let mut at = 0;
    for &b in blocks.iter().cycle() {
        if at == frames {
            break;
        }
        let n = b.min(frames - at);
        let ctx = ProcessContext {
            sample_rate: SR,
            frames: n,
            position: at as u64,
        };
        k.process(
            &ctx,
            AudioRef::new(&[], 0, n, n),
            AudioMut::new(&mut out[at..at + n], 1, n, n),
        );
        at += n;
    }
    out
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
fn the_unrolled_loop_is_the_karplus_strong_recursion() {
    // Short and long delay lines (chunks cut by the ring's length, and by CHUNK), in odd
    // blocks, so groups of four straddle chunk and block boundaries.
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
fn a_rung_out_string_goes_silent_with_the_output_the_full_computation_gives() {
    // A high note losing 20% a period dies within a few thousand samples, long before its
    // 5 s `length` would cut it; at the loudest `amp`, so the silence is hardest to earn.
    let (note, decay, amp) = (100.0, 0.8, 16.0f32);
    let settings = KarplusSettings {
        amp,
        ..one_note(note, decay, 5.0)
    };
    let mut k = Karplus::new(1, SR, &settings).unwrap();
    let frames = 24_000;
    let out = render(&mut k, &[128], frames);
    assert!(k.is_silent(), "the string rang out but still computes");
    let s: Vec<f32> = out.iter().map(|&x| x / amp).collect();
    let last = s.iter().rposition(|&x| x != 0.0).expect("the string rang");
    // Until then it rang as the recursion says.
    assert!(recursion_error(&s[..=last], note, decay) < 1e-6 * 0.05);
    // Carried on from there, the full computation would have output nothing but what the
    // flush turns into 0 (below 2^-100), as the silent string does.
    let (n, c) = tuning(note);
    let mut s: Vec<f64> = s[..=last].iter().map(|&x| f64::from(x)).collect();
    for i in last + 1..frames {
        let a = |s: &[f64], i: usize| 0.5 * (s[i - n - 1] + s[i - n]);
        let y = c * a(&s, i) + a(&s, i - 1) - c * s[i - 1] / decay;
        s.push(decay * y);
    }
    let rest = s[last + 1..].iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let tiny = f64::from(downbeat_graph::dsp::denormal::TINY);
    assert!(
        f64::from(amp) * rest < tiny,
        "computed on, the string would still have output {}",
        f64::from(amp) * rest
    );
    assert!(
        out[last + 1..].iter().all(|&x| x.to_bits() == 0),
        "+0.0 once silent"
    );
    // A pluck wakes it.
    let mut k = Karplus::new(1, SR, &settings).unwrap();
    render(&mut k, &[128], frames);
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
