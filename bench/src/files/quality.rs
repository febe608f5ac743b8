//! Resampler quality, measured for rubato as `crates/file/tests/quality.rs` measures ours
//! (issue 43: compare speed at equal quality): a logarithmic sweep from 20 Hz to 20 kHz at
//! 44.1 kHz, resampled to 48 kHz, against the same sweep computed at the output times. A
//! resampler may delay its output by any constant, which costs nothing in quality: the
//! residual is taken at the delay that makes it smallest, found to 1e-8 of a frame (a delay
//! wrong by 1e-5 of a frame would leave about -90 dB at 20 kHz).
// The reference signal may use the platform's math; it is no engine code.
#![allow(clippy::disallowed_methods)]

use std::f64::consts::PI;

use downbeat_file::Resampler;
use rubato::{Resampler as _, SincFixedIn, SincInterpolationParameters};

const F0: f64 = 20.0;
const F1: f64 = 20_000.0;
const SECONDS: f64 = 2.0;
/// Raised-cosine fades at both ends: a step is not band-limited.
const FADE: f64 = 0.05;
const FROM: u32 = 44_100;
const TO: u32 = 48_000;

/// The sweep at time `t` seconds.
fn sweep(t: f64) -> f64 {
    if !(0.0..=SECONDS).contains(&t) {
        return 0.0;
    }
    let k = (F1 / F0).ln() / SECONDS;
    let phase = 2.0 * PI * F0 * ((k * t).exp() - 1.0) / k;
    let edge = (t.min(SECONDS - t) / FADE).min(1.0);
    0.5 * (0.5 - 0.5 * (PI * edge).cos()) * phase.sin()
}

/// The sweep at the input rate, followed by a second of silence for a resampler's delay.
fn input() -> Vec<f32> {
    let n = ((SECONDS + 1.0) * f64::from(FROM)) as usize;
    (0..n)
        .map(|i| sweep(i as f64 / f64::from(FROM)) as f32)
        .collect()
}

/// What is left of `out` once the sweep delayed by `delay` output frames is taken away, in
/// dB against the sweep, over the sweep's whole length (every `stride`-th frame of it).
fn residual_db(out: &[f32], delay: f64, stride: usize) -> f64 {
    let (mut err, mut sig) = (0.0f64, 0.0f64);
    let frames = (SECONDS * f64::from(TO)) as usize;
    for n in (0..frames).step_by(stride) {
        // Output frame n + ⌊delay⌋ holds the sweep at (n − frac(delay)) / TO.
        let got = out.get(n + delay.floor() as usize).copied().unwrap_or(0.0);
        let want = sweep((n as f64 - delay.fract()) / f64::from(TO));
        err += (f64::from(got) - want).powi(2);
        sig += want * want;
    }
    10.0 * (err / sig).log10()
}

/// The smallest residual over delays up to `most` frames, and its delay: whole frames on
/// every 16th frame of the sweep first, then finer steps around the best on all of it.
fn best(out: &[f32], most: usize) -> (f64, f64) {
    let (_, mut at) = (0..=most)
        .map(|d| (residual_db(out, d as f64, 16), d as f64))
        .fold((f64::INFINITY, 0.0), |b, c| if c.0 < b.0 { c } else { b });
    let mut db = residual_db(out, at, 1);
    let mut span = 1.0;
    for step in [0.05, 5e-3, 5e-4, 5e-5, 5e-6, 5e-7, 5e-8, 5e-9] {
        let steps = (span / step) as i32;
        for k in -steps..=steps {
            let d = at + f64::from(k) * step;
            if d < 0.0 {
                continue;
            }
            let r = residual_db(out, d, 1);
            if r < db {
                (db, at) = (r, d);
            }
        }
        span = step;
    }
    (db, at)
}

/// Ours: the residual in dB (our resampler takes its delay out itself: about 0).
pub fn ours_db() -> f64 {
    let input = input();
    let mut r = Resampler::new(1, FROM, TO).expect("44.1 to 48 kHz is supported");
    let mut out = vec![0.0f32; input.len() * 2];
    let (mut used, mut written) = (0, 0);
    while used < input.len() && written < out.len() {
        let end = (written + 1024).min(out.len());
        let (u, w) = r.process(&input[used..], &mut out[written..end]);
        if u == 0 && w == 0 {
            break;
        }
        used += u;
        written += w;
    }
    best(&out[..written], 8).0
}

/// The sample types rubato resamples in: `f32`, as ours, or `f64`.
pub trait Precision: rubato::Sample {
    fn of(x: f32) -> Self;
    fn to_f32(self) -> f32;
}

impl Precision for f32 {
    fn of(x: f32) -> Self {
        x
    }
    fn to_f32(self) -> f32 {
        self
    }
}

impl Precision for f64 {
    fn of(x: f32) -> Self {
        f64::from(x)
    }
    fn to_f32(self) -> f32 {
        self as f32
    }
}

/// rubato's `SincFixedIn` with `params`, computing in `T`: the residual in dB, at its best
/// delay.
pub fn rubato_db<T: Precision>(params: SincInterpolationParameters) -> f64 {
    let sinc_len = params.sinc_len;
    let mut r = SincFixedIn::<T>::new(f64::from(TO) / f64::from(FROM), 1.0, params, 1024, 1)
        .expect("valid parameters");
    let input: Vec<T> = input().into_iter().map(T::of).collect();
    let mut out = Vec::new();
    let mut buf = r.output_buffer_allocate(true);
    for chunk in input.chunks_exact(1024) {
        let (_, w) = r
            .process_into_buffer(&[chunk], &mut buf, None)
            .expect("a whole chunk");
        out.extend(buf[0][..w].iter().map(|&x| x.to_f32()));
    }
    // Up to the whole filter's length, in output frames, and a chunk.
    best(&out, sinc_len * 2 + 1024).0
}
