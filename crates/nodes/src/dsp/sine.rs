//! A sine from a 32-bit phase and a polynomial: no `sin()` call, no table, vectorisable.
//!
//! The phase is a `u32` holding a fraction of a cycle (`2^32` = one turn), advanced by a
//! `u32` increment with wrapping addition: it never drifts, and a frequency is exact to
//! `sample_rate / 2^32` (11 µHz at 48 kHz). The sine is folded into a quarter turn in
//! integer arithmetic (exact), then one odd polynomial of degree 9, fitted for the least
//! largest error on the quarter turn (3.4e-9, about -170 dB), is evaluated in `f32`.
//! What remains is `f32` rounding, below 1.2e-7 of full scale: every spur lies more than
//! 120 dB under the tone (`tests/dsp_quality.rs` measures it).

/// Coefficients of `sin(π/2 · t) ≈ t (C0 + C1 t² + C2 t⁴ + C3 t⁶ + C4 t⁸)` on `-1..=1`,
/// fitted by iteratively reweighted least squares towards the minimax polynomial. `C0` is
/// the fit's 1.570_796_29 rounded up one `f32` step (to `π/2` in `f32`), so that the peak
/// evaluates to exactly 1.0 in `f32` (rounded down, it is one step short of 1).
const C0: f32 = std::f32::consts::FRAC_PI_2;
const C1: f32 = -0.645_963_4;
const C2: f32 = 0.079_688_48;
const C3: f32 = -0.004_672_227;
const C4: f32 = 0.000_150_820_1;

use downbeat_graph::denormal::flush;

/// `2^32`: one turn of a `u32` phase.
const TURN: f64 = 4_294_967_296.0;

/// `sin(2π · phase / 2^32)` in `f32`.
///
/// ```
/// use downbeat_nodes::dsp::sin_turn;
/// assert_eq!(sin_turn(0), 0.0);
/// assert_eq!(sin_turn(1 << 30), 1.0); // a quarter turn
/// assert_eq!(sin_turn(3 << 30), -1.0);
/// assert!((sin_turn(1 << 29) - std::f32::consts::FRAC_1_SQRT_2).abs() < 2e-7);
/// ```
#[inline(always)]
pub fn sin_turn(phase: u32) -> f32 {
    // Fold onto the quarter turn around 0: sin(2πx) = sin(2π (1/4 - |x - 1/4|)), with
    // x - 1/4 taken in -1/2..1/2. All integer, so exact; the result lies in -2^30..=2^30.
    let centred = phase.wrapping_sub(1 << 30) as i32;
    let folded = (1u32 << 30).wrapping_sub(centred.unsigned_abs()) as i32;
    let t = folded as f32 * (1.0 / (1u32 << 30) as f32);
    let t2 = t * t;
    let y = t * (C0 + t2 * (C1 + t2 * (C2 + t2 * (C3 + t2 * C4))));
    // Near the peaks the rounded-up `C0` reaches 1 + 2^-23: a sine never leaves -1..=1.
    y.clamp(-1.0, 1.0)
}

/// The phase increment per sample of `hz` at `sample_rate`, wrapped into one turn
/// (a frequency at or above the sample rate folds like the sampled wave does).
///
/// ```
/// use downbeat_nodes::dsp::hz_to_phase_inc;
/// assert_eq!(hz_to_phase_inc(12_000.0, 48_000.0), 1 << 30);
/// ```
pub fn hz_to_phase_inc(hz: f64, sample_rate: f64) -> u32 {
    turns_to_phase(hz / sample_rate)
}

/// A phase of `turns` cycles (any real number; the whole turns drop out), rounded to the
/// nearest step of `2^-32` turn.
///
/// ```
/// use downbeat_nodes::dsp::turns_to_phase;
/// assert_eq!(turns_to_phase(1.25), 1 << 30);
/// assert_eq!(turns_to_phase(-0.25), 3 << 30);
/// ```
pub fn turns_to_phase(turns: f64) -> u32 {
    // `as u64` saturates instead of wrapping, so wrap in floating point first: the
    // rounding may still land on exactly 2^32, which the truncation to u32 folds to 0.
    (turns.rem_euclid(1.0) * TURN).round() as u64 as u32
}

/// A phase as a fraction of a turn, in `0..1`.
///
/// ```
/// use downbeat_nodes::dsp::phase_to_turns;
/// assert_eq!(phase_to_turns(1 << 31), 0.5);
/// ```
pub fn phase_to_turns(phase: u32) -> f64 {
    f64::from(phase) / TURN
}

/// Fills blocks with `amp · sin` of a steadily advancing phase.
///
/// ```
/// use downbeat_nodes::dsp::{hz_to_phase_inc, SineFill};
/// let mut osc = SineFill { phase: 0, inc: hz_to_phase_inc(12_000.0, 48_000.0) };
/// let mut out = [0.0f32; 4];
/// osc.fill(&mut out, 0.5);
/// assert_eq!(out, [0.0, 0.5, 0.0, -0.5]);
/// assert_eq!(osc.phase, 0); // four quarter turns later
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SineFill {
    /// Phase of the next sample.
    pub phase: u32,
    /// Phase increment per sample.
    pub inc: u32,
}

impl SineFill {
    /// Writes `amp · sin` of the next `out.len()` phases into `out` and advances.
    #[inline]
    pub fn fill(&mut self, out: &mut [f32], amp: f32) {
        let inc = self.inc;
        let mut phase = self.phase;
        // A linear induction over a pure function: the loop vectorises. A tiny `amp` can
        // put the product below f32's normal range: 0 there whatever the flush mode.
        for o in out.iter_mut() {
            *o = flush(amp * sin_turn(phase));
            phase = phase.wrapping_add(inc);
        }
        self.phase = phase;
    }
}
