//! [`StringLoop`]: one Karplus-Strong string (its delay line, tuning allpass and loss), shared
//! by the `karplus` node (one string) and the `strings` node (a bank of them played as voices),
//! so that a string of either renders the same samples.

use std::f64::consts::TAU;

use crate::Pcg32;
use downbeat_graph::{denormal::flush, math, note_to_hz};

/// Lowest MIDI note accepted (A0, 27.5 Hz): the delay line is sized for it.
pub(crate) const LOWEST_NOTE: f64 = 21.0;
/// Highest MIDI note accepted (C8, about 4186 Hz).
pub(crate) const HIGHEST_NOTE: f64 = 108.0;
/// Smallest fractional delay given to the allpass: keeps its coefficient away from -1.
const MIN_FRACTION: f64 = 0.1;
/// Shortest accepted period in samples: notes above a third of the sample rate are refused.
const MIN_PERIOD: f64 = 3.0;
/// Loop samples smaller than this are flushed to exactly zero (no subnormals).
const FLUSH: f64 = 1e-30;
/// Every this many periods, a ringing string checks whether its loop holds only zeros: a
/// pass over its ring, rarely enough to cost little per sample.
const SILENCE_CHECK: u64 = 16;

/// Tuning of one note: integer delay and fractional allpass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Tuning {
    /// Length of the ring buffer: the integer part of the loop delay plus one.
    pub(crate) ring_len: usize,
    /// Coefficient of the first-order allpass `(c + z⁻¹) / (1 + c z⁻¹)`.
    pub(crate) allpass: f64,
}

impl Tuning {
    /// The loop for `freq` Hz: `N` samples of delay line, 0.5 sample of the two-point
    /// averager and a fractional allpass whose phase delay at `freq` is exactly what is
    /// left, so the fundamental lands on `freq`.
    pub(crate) fn for_freq(freq: f64, sample_rate: f64) -> Option<Self> {
        let period = sample_rate / freq;
        if period.is_nan() || period < MIN_PERIOD {
            return None;
        }
        let n = (period - 0.5 - MIN_FRACTION).floor();
        let fraction = period - 0.5 - n;
        let w = TAU * freq / sample_rate;
        // Exact phase delay `fraction` at `w` for a first-order allpass.
        let allpass = math::sin((1.0 - fraction) * w / 2.0) / math::sin((1.0 + fraction) * w / 2.0);
        Some(Self {
            ring_len: n as usize + 1,
            allpass,
        })
    }

    /// The tuning of MIDI note `note` (fractions allowed) at `sample_rate`, or `None` when it
    /// is outside [`LOWEST_NOTE`]..=[`HIGHEST_NOTE`] or too high to tune at that rate.
    pub(crate) fn for_note(note: f64, sample_rate: f64) -> Option<Self> {
        (LOWEST_NOTE..=HIGHEST_NOTE)
            .contains(&note)
            .then(|| Self::for_freq(note_to_hz(note), sample_rate))
            .flatten()
    }
}

/// Ring length that holds one period of the lowest accepted note at `sample_rate`.
pub(crate) fn lowest_ring_len(sample_rate: f64) -> usize {
    Tuning::for_freq(note_to_hz(LOWEST_NOTE), sample_rate).map_or(2, |t| t.ring_len)
}

/// One string: a delay line of `N` samples, a two-point averager (0.5 sample, the string's
/// damping), a first-order allpass tuned so the loop delay is exactly the period at the
/// fundamental, and a loss per period. A pluck fills the delay line with one period of
/// zero-mean noise.
#[derive(Debug)]
pub(crate) struct StringLoop {
    /// Delay line, long enough for the lowest note; the current note uses `tuning.ring_len`.
    ring: Vec<f64>,
    /// Index of the oldest sample of the ring, where the next output is written.
    write: usize,
    tuning: Tuning,
    /// Allpass memory: previous input and output.
    x1: f64,
    y1: f64,
    /// Periods completed since the pluck: every `SILENCE_CHECK`th, the ring is checked.
    periods: u64,
    /// Its loop held only zeros at a check since the last pluck: it can only output zeros.
    silent: bool,
}

impl StringLoop {
    /// A string whose delay line holds `capacity` samples (prefaulted: plucks and
    /// processing never fault a page in), tuned to `tuning` and silent until plucked.
    pub(crate) fn new(capacity: usize, tuning: Tuning) -> Self {
        Self {
            ring: downbeat_graph::prefaulted(capacity.max(tuning.ring_len)),
            write: 0,
            tuning,
            x1: 0.0,
            y1: 0.0,
            periods: 0,
            silent: false,
        }
    }

    /// Samples the delay line can hold.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.ring.len()
    }

    /// Whether the loop was found to hold only zeros since its last pluck.
    pub(crate) fn is_silent(&self) -> bool {
        self.silent
    }

    /// Retunes the loop to `tuning` and fills one period of it with zero-mean noise from
    /// `rng`, scaled by `velocity`. Bounded work: at most the length of the delay line.
    pub(crate) fn pluck(&mut self, tuning: Tuning, velocity: f64, rng: &mut Pcg32) {
        self.tuning = tuning;
        let ring = &mut self.ring[..tuning.ring_len];
        let mut sum = 0.0;
        for slot in ring.iter_mut() {
            *slot = rng.bipolar();
            sum += *slot;
        }
        let mean = sum / ring.len() as f64;
        for slot in ring.iter_mut() {
            *slot = (*slot - mean) * velocity;
        }
        self.write = 0;
        self.x1 = 0.0;
        self.y1 = 0.0;
        self.periods = 0;
        self.silent = false;
    }

    /// Marks the string silent when its loop holds only zeros: computing on would only give
    /// zeros. Called when `periods` has just reached a multiple of `SILENCE_CHECK`.
    fn check_silence(&mut self) {
        if self.x1 == 0.0
            && self.y1 == 0.0
            && self.ring[..self.tuning.ring_len].iter().all(|&v| v == 0.0)
        {
            self.silent = true;
        }
    }

    /// Writes (`ADD` false) or adds (`ADD` true) the next `out.len()` samples of the string,
    /// each times `amp(j)`, with loss `decay` per period.
    ///
    /// One sample at a time: the allpass feedback is a serial chain (a multiply, a
    /// subtraction and the flush per sample). Unrolling it four samples a group measured no
    /// faster in WebAssembly and slower natively (issue 30's report), so it stays plain; the
    /// `strings` node overlaps four strings' chains instead ([`ring_out_four`]). Every
    /// `SILENCE_CHECK` periods a string whose loop is all exact zeros (its samples flushed
    /// below `FLUSH`) is marked silent, and then costs nothing until its next pluck.
    #[inline]
    pub(crate) fn ring_out<const ADD: bool>(
        &mut self,
        out: &mut [f32],
        decay: f64,
        amp: impl Fn(usize) -> f64,
    ) {
        let len = self.tuning.ring_len;
        let c = self.tuning.allpass;
        let mut done = 0;
        while done < out.len() {
            if self.silent {
                if !ADD {
                    out[done..].fill(0.0);
                }
                break;
            }
            // Up to the end of the ring, where a silence check may come due.
            let n = (out.len() - done).min(len - self.write);
            let ring = &mut self.ring[..len];
            let (mut x1, mut y1, mut write) = (self.x1, self.y1, self.write);
            for (j, o) in out[done..done + n].iter_mut().enumerate() {
                let s = tick(ring, &mut write, &mut x1, &mut y1, c, decay);
                // Below `TINY` (a quiet string times a tiny amp), 0 whatever the flush mode.
                let v = flush((amp(done + j) * s) as f32);
                if ADD {
                    *o += v;
                } else {
                    *o = v;
                }
            }
            (self.x1, self.y1, self.write) = (x1, y1, write);
            if write == 0 {
                self.periods += 1;
                if self.periods % SILENCE_CHECK == 0 {
                    self.check_silence();
                }
            }
            done += n;
        }
    }
}

/// One sample of a string: reads the two oldest samples of `ring` at `write`, averages them,
/// runs the allpass (memory `x1`, `y1`, coefficient `c`), applies the loss `decay`, writes the
/// result back and moves `write` on. Returns the new sample.
#[inline(always)]
fn tick(
    ring: &mut [f64],
    write: &mut usize,
    x1: &mut f64,
    y1: &mut f64,
    c: f64,
    decay: f64,
) -> f64 {
    let w = *write;
    let next = if w + 1 == ring.len() { 0 } else { w + 1 };
    // ring[w] holds y[n-N-1], ring[next] holds y[n-N].
    let averaged = 0.5 * (ring[w] + ring[next]);
    let mut y = c * averaged + *x1 - c * *y1;
    if y.abs() < FLUSH {
        y = 0.0;
    }
    *x1 = averaged;
    *y1 = y;
    let s = decay * y;
    ring[w] = s;
    *write = next;
    s
}

/// Adds the next `out.len()` samples of four strings to `out`, in the order given, each times
/// `amp(j)`: the same samples and the same sums, in the same order, as four calls of
/// [`StringLoop::ring_out`] with `ADD`. None of them may be silent.
///
/// One string's sample waits on its previous one (the allpass feedback), so a string alone
/// leaves most of the processor idle; four independent chains side by side fill it.
#[inline]
pub(crate) fn ring_out_four(
    strings: [&mut StringLoop; 4],
    out: &mut [f32],
    decay: f64,
    amp: impl Fn(usize) -> f64,
) {
    let [a, b, c, d] = strings;
    let (la, lb, lc, ld) = (
        a.tuning.ring_len,
        b.tuning.ring_len,
        c.tuning.ring_len,
        d.tuning.ring_len,
    );
    let (ca, cb, cc, cd) = (
        a.tuning.allpass,
        b.tuning.allpass,
        c.tuning.allpass,
        d.tuning.allpass,
    );
    let (ra, rb, rc, rd) = (
        &mut a.ring[..la],
        &mut b.ring[..lb],
        &mut c.ring[..lc],
        &mut d.ring[..ld],
    );
    let (mut wa, mut wb, mut wc, mut wd) = (a.write, b.write, c.write, d.write);
    let (mut xa, mut xb, mut xc, mut xd) = (a.x1, b.x1, c.x1, d.x1);
    let (mut ya, mut yb, mut yc, mut yd) = (a.y1, b.y1, c.y1, d.y1);
    // Each write index moves on one slot a sample and wraps at its ring's end: the wraps of
    // this run follow from where it starts.
    let n = out.len();
    let wraps = [(wa + n) / la, (wb + n) / lb, (wc + n) / lc, (wd + n) / ld].map(|w| w as u64);
    for (j, o) in out.iter_mut().enumerate() {
        let g = amp(j);
        let sa = tick(ra, &mut wa, &mut xa, &mut ya, ca, decay);
        let sb = tick(rb, &mut wb, &mut xb, &mut yb, cb, decay);
        let sc = tick(rc, &mut wc, &mut xc, &mut yc, cc, decay);
        let sd = tick(rd, &mut wd, &mut xd, &mut yd, cd, decay);
        *o = *o
            + flush((g * sa) as f32)
            + flush((g * sb) as f32)
            + flush((g * sc) as f32)
            + flush((g * sd) as f32);
    }
    for (s, (write, x1, y1, wrapped)) in [a, b, c, d].into_iter().zip([
        (wa, xa, ya, wraps[0]),
        (wb, xb, yb, wraps[1]),
        (wc, xc, yc, wraps[2]),
        (wd, xd, yd, wraps[3]),
    ]) {
        (s.write, s.x1, s.y1) = (write, x1, y1);
        // A check came due in this run: looking now rather than at that wrap is as good,
        // since a loop of zeros stays zeros.
        let before = s.periods;
        s.periods += wrapped;
        if s.periods / SILENCE_CHECK != before / SILENCE_CHECK {
            s.check_silence();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuning_loop_delay_matches_period() {
        for freq in [27.5, 110.0, 440.0, 1000.0, 4186.0] {
            let t = Tuning::for_freq(freq, 48000.0).unwrap();
            let period = 48000.0 / freq;
            let n = (t.ring_len - 1) as f64;
            // Low-frequency phase delay of the allpass.
            let fraction = (1.0 - t.allpass) / (1.0 + t.allpass);
            assert!((n + 0.5 + fraction - period).abs() < 0.05, "{freq}");
            assert!(t.allpass.abs() < 1.0);
        }
        assert!(Tuning::for_freq(20000.0, 48000.0).is_none());
    }

    #[test]
    fn delay_line_is_sized_for_lowest_note() {
        // One period of A0 (27.5 Hz) fits: ring_len = floor(period - 0.6) + 1.
        assert!(lowest_ring_len(96000.0) as f64 > 96000.0 / 27.5 - 1.0);
    }

    /// Four strings side by side give the samples four strings one at a time give, bit for
    /// bit, silence checks included.
    #[test]
    fn four_side_by_side_equal_four_in_turn() {
        let rate = 48000.0;
        let notes = [40.0, 57.0, 69.5, 100.0];
        let make = || {
            let mut rng = Pcg32::new(7, 0);
            notes.map(|n| {
                let t = Tuning::for_note(n, rate).unwrap();
                let mut s = StringLoop::new(lowest_ring_len(rate), t);
                s.pluck(t, 0.8, &mut rng);
                s
            })
        };
        let (mut apart, mut together) = (make(), make());
        let amp = |j: usize| 0.5 + j as f64 * 1e-4;
        // Long enough for the high string to ring out (decay 0.8 per period).
        for block in [128usize, 1, 77, 4096, 4096, 4096, 4096] {
            let mut want = vec![0.25f32; block];
            for s in &mut apart {
                s.ring_out::<true>(&mut want, 0.8, amp);
            }
            let mut got = vec![0.25f32; block];
            let [a, b, c, d] = &mut together;
            ring_out_four([a, b, c, d], &mut got, 0.8, amp);
            assert_eq!(
                got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                want.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
            );
        }
        assert!(apart[3].is_silent() && together[3].is_silent());
    }
}
