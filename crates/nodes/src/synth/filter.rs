//! The voice filter: a two-pole (12 dB per octave) resonant low-pass.
//!
//! It is a state-variable filter discretised with the trapezoidal rule and a prewarped
//! cutoff (the "topology-preserving transform"), whose two integrator states stay
//! meaningful when the coefficients change. That matters here: key tracking, velocity and
//! pitch bend move the cutoff of a sounding voice, and a direct-form biquad jumping to new
//! coefficients can click or blow up where this one glides.

use std::f64::consts::PI;

use super::voice::LANES;
use downbeat_graph::math;

/// The highest cutoff used, as a fraction of the sample rate: `tan` grows without bound
/// towards half the sample rate.
const MAX_CUTOFF: f64 = 0.45;

/// Coefficients for one cutoff and resonance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct LowpassCoefs {
    a1: f32,
    a2: f32,
    a3: f32,
}

impl LowpassCoefs {
    /// Placeholder coefficients (the filter outputs silence) until a voice's note sets
    /// its own.
    pub(super) const UNSET: LowpassCoefs = LowpassCoefs {
        a1: 0.0,
        a2: 0.0,
        a3: 0.0,
    };

    /// A low-pass at `cutoff` Hz (clamped below half the sample rate) with quality `q`
    /// (0.707 is maximally flat; higher values resonate).
    pub(super) fn new(cutoff: f64, q: f64, sample_rate: f64) -> Self {
        let fc = cutoff.clamp(1.0, MAX_CUTOFF * sample_rate);
        let g = math::tan(PI * fc / sample_rate);
        let k = 1.0 / q;
        let a1 = 1.0 / (1.0 + g * (g + k));
        let a2 = g * a1;
        let a3 = g * a2;
        Self {
            a1: a1 as f32,
            a2: a2 as f32,
            a3: a3 as f32,
        }
    }
}

/// The two integrator states. No flushing of tiny values is needed: the filter only runs
/// while its voice sounds, fed by the oscillator at full level, so its states never decay
/// towards subnormal numbers.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Lowpass {
    ic1: f32,
    ic2: f32,
}

impl Lowpass {
    /// Silence: both integrators empty.
    pub(super) const ZERO: Lowpass = Lowpass { ic1: 0.0, ic2: 0.0 };

    /// Filters one sample.
    #[inline]
    pub(super) fn tick(&mut self, x: f32, c: &LowpassCoefs) -> f32 {
        let v3 = x - self.ic2;
        let v1 = c.a1 * self.ic1 + c.a2 * v3;
        let v2 = self.ic2 + c.a2 * self.ic1 + c.a3 * v3;
        self.ic1 = 2.0 * v1 - self.ic1;
        self.ic2 = 2.0 * v2 - self.ic2;
        v2
    }
}

/// The coefficients of [`LANES`] voices, one per lane.
pub(super) struct LaneCoefs {
    a1: [f32; LANES],
    a2: [f32; LANES],
    a3: [f32; LANES],
}

impl LowpassCoefs {
    /// Each lane's coefficients.
    pub(super) fn lanes(c: [LowpassCoefs; LANES]) -> LaneCoefs {
        LaneCoefs {
            a1: c.map(|c| c.a1),
            a2: c.map(|c| c.a2),
            a3: c.map(|c| c.a3),
        }
    }
}

/// The filters of [`LANES`] voices, stepped together: each lane does exactly what
/// [`Lowpass::tick`] does, in the same order, so its bits are the same.
pub(super) struct LaneLowpass {
    ic1: [f32; LANES],
    ic2: [f32; LANES],
}

impl Lowpass {
    /// The filters `f`, one per lane.
    pub(super) fn lanes(f: [Lowpass; LANES]) -> LaneLowpass {
        LaneLowpass {
            ic1: f.map(|f| f.ic1),
            ic2: f.map(|f| f.ic2),
        }
    }
}

impl LaneLowpass {
    /// Filters one sample of each lane.
    #[inline(always)]
    pub(super) fn tick(&mut self, x: &[f32; LANES], c: &LaneCoefs) -> [f32; LANES] {
        let mut y = [0.0f32; LANES];
        for l in 0..LANES {
            let v3 = x[l] - self.ic2[l];
            let v1 = c.a1[l] * self.ic1[l] + c.a2[l] * v3;
            let v2 = self.ic2[l] + c.a2[l] * self.ic1[l] + c.a3[l] * v3;
            self.ic1[l] = 2.0 * v1 - self.ic1[l];
            self.ic2[l] = 2.0 * v2 - self.ic2[l];
            y[l] = v2;
        }
        y
    }

    /// Each lane's filter state.
    pub(super) fn split(&self) -> [Lowpass; LANES] {
        std::array::from_fn(|l| Lowpass {
            ic1: self.ic1[l],
            ic2: self.ic2[l],
        })
    }
}

#[cfg(test)]
// Reference values may use the platform's math; the engine may not.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    /// Steady-state gain at `freq` of the filter at `cutoff`, measured.
    fn gain(cutoff: f64, q: f64, freq: f64) -> f64 {
        let sr = 48000.0;
        let c = LowpassCoefs::new(cutoff, q, sr);
        let mut f = Lowpass::default();
        let mut peak = 0.0f64;
        for n in 0..48000 {
            let x = (2.0 * PI * freq * n as f64 / sr).sin() as f32;
            let y = f.tick(x, &c);
            if n > 24000 {
                peak = peak.max(f64::from(y.abs()));
            }
        }
        peak
    }

    #[test]
    fn passes_below_cutoff_and_cuts_above() {
        assert!((gain(2000.0, 0.707, 100.0) - 1.0).abs() < 0.01);
        // -3 dB at the cutoff for Q = 0.707.
        assert!((gain(2000.0, 0.707, 2000.0) - 0.707).abs() < 0.01);
        // Two poles: about -24 dB two octaves above the cutoff, less near Nyquist warping.
        assert!(gain(1000.0, 0.707, 4000.0) < 0.07);
        // Resonance lifts the cutoff region to about Q.
        assert!((gain(2000.0, 4.0, 2000.0) - 4.0).abs() < 0.1);
    }
}
