//! How a live parameter moves between values: [`Shape`]s of ramps, the segment a parameter is
//! on, and the [`ParamCurve`] a node reads sample by sample.
//!
//! Every value is computed in closed form from the absolute frame, never accumulated step by
//! step, so the value at a frame is the same however the timeline is cut into blocks and
//! sub-blocks: a run on a device with 64-frame callbacks and one with 1000-frame callbacks
//! see bit-identical parameter values.

use crate::math;

/// The shape of a ramp.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// A straight line from the start value to the target, as Web Audio's
    /// `linearRampToValueAtTime`.
    Linear,
    /// A constant ratio per frame (a straight line in dB or octaves), as Web Audio's
    /// `exponentialRampToValueAtTime`. Like it, a ramp whose start value is 0 or has the
    /// other sign than the target holds the start value and jumps at the end.
    Exponential,
}

impl Shape {
    /// The word used in project files, record files and OSC addresses.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Linear => "linear",
            Shape::Exponential => "exponential",
        }
    }

    /// The shape a word names.
    ///
    /// ```
    /// use downbeat_graph::Shape;
    /// assert_eq!(Shape::from_name("exponential"), Some(Shape::Exponential));
    /// assert_eq!(Shape::from_name("cubic"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "linear" => Some(Shape::Linear),
            "exponential" => Some(Shape::Exponential),
            _ => None,
        }
    }
}

/// One stretch of a parameter's value over the timeline: `from` at frame `start`, `to` from
/// frame `end` on, and in between the ramp `shape` draws. `start == end` is a constant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Segment {
    from: f32,
    to: f32,
    start: u64,
    end: u64,
    shape: Shape,
    /// `log2(to / from)` for an exponential ramp that can be drawn, else NaN.
    log_ratio: f64,
}

impl Segment {
    /// The value `value` forever.
    pub(crate) fn constant(value: f32) -> Self {
        Self {
            from: value,
            to: value,
            start: 0,
            end: 0,
            shape: Shape::Linear,
            log_ratio: f64::NAN,
        }
    }

    /// A ramp from `from` at frame `start` to `to` at frame `start + frames`.
    pub(crate) fn ramp(shape: Shape, from: f32, to: f32, start: u64, frames: u64) -> Self {
        let (a, b) = (f64::from(from), f64::from(to));
        let log_ratio = if shape == Shape::Exponential && a * b > 0.0 {
            math::log2(b / a)
        } else {
            f64::NAN
        };
        Self {
            from,
            to,
            start,
            end: start.saturating_add(frames),
            shape,
            log_ratio,
        }
    }

    /// The value at absolute frame `frame`.
    #[inline]
    pub(crate) fn value_at(&self, frame: u64) -> f32 {
        if frame >= self.end {
            return self.to;
        }
        if frame <= self.start {
            return self.from;
        }
        let t = (frame - self.start) as f64 / (self.end - self.start) as f64;
        let from = f64::from(self.from);
        match self.shape {
            Shape::Linear => (from + (f64::from(self.to) - from) * t) as f32,
            Shape::Exponential if self.log_ratio.is_nan() => self.from,
            Shape::Exponential => (from * math::exp2(self.log_ratio * t)) as f32,
        }
    }

    /// True once the value no longer changes at or after `frame`.
    #[inline]
    pub(crate) fn settled_at(&self, frame: u64) -> bool {
        frame >= self.end
    }

    /// The value it ends on.
    pub(crate) fn target(&self) -> f32 {
        self.to
    }

    /// The frame it reaches its target.
    pub(crate) fn end(&self) -> u64 {
        self.end
    }

    /// The frame it starts at.
    pub(crate) fn start(&self) -> u64 {
        self.start
    }
}

/// A parameter's value over the frames of one [`process`](crate::Node::process) call, for
/// nodes that follow a moving parameter sample by sample (see
/// [`Node::follow_param`](crate::Node::follow_param)).
///
/// `at(k)` is the value at frame `k` of the call. It is computed in closed form from the
/// absolute frame, so it does not depend on how the schedule cut the block.
///
/// ```
/// use downbeat_graph::{ParamCurve, Shape};
///
/// // A linear ramp from 0 to 1 over 4 frames, seen from its first frame.
/// let curve = ParamCurve::ramp(Shape::Linear, 0.0, 1.0, 4);
/// let values: Vec<f32> = (0..6).map(|k| curve.at(k)).collect();
/// assert_eq!(values, [0.0, 0.25, 0.5, 0.75, 1.0, 1.0]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParamCurve {
    segment: Segment,
    first: u64,
}

impl ParamCurve {
    pub(crate) fn new(segment: Segment, first: u64) -> Self {
        Self { segment, first }
    }

    /// A ramp from `from` to `to` over `frames` frames, starting at frame 0 of the call:
    /// for driving a node directly, outside a schedule.
    pub fn ramp(shape: Shape, from: f32, to: f32, frames: u64) -> Self {
        Self::new(Segment::ramp(shape, from, to, 0, frames), 0)
    }

    /// The value at frame `k` of the call.
    #[inline]
    pub fn at(&self, k: usize) -> f32 {
        self.segment.value_at(self.first + k as u64)
    }

    /// The value the curve ends on (and holds after its last frame).
    pub fn target(&self) -> f32 {
        self.segment.target()
    }

    /// The smallest and largest value the curve takes (a ramp is monotonic).
    pub fn bounds(&self) -> (f32, f32) {
        let (a, b) = (self.segment.from, self.segment.to);
        // Compared, not `f32::min`/`max`, whose choice between -0.0 and 0.0 is unspecified.
        if a <= b {
            (a, b)
        } else {
            (b, a)
        }
    }
}

#[cfg(test)]
// Reference values may use the platform's math; the engine may not.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn linear_matches_the_closed_form_and_ends_exactly() {
        let s = Segment::ramp(Shape::Linear, 0.2, 0.9, 1000, 300);
        for f in 990..1400u64 {
            let t = ((f as f64 - 1000.0) / 300.0).clamp(0.0, 1.0);
            let want = 0.2f32 as f64 + (0.9f32 as f64 - 0.2f32 as f64) * t;
            assert!((f64::from(s.value_at(f)) - want).abs() < 1e-7, "frame {f}");
        }
        assert_eq!(s.value_at(1300), 0.9);
        assert!(!s.settled_at(1299) && s.settled_at(1300));
    }

    #[test]
    fn exponential_is_geometric_and_holds_across_zero() {
        let s = Segment::ramp(Shape::Exponential, 100.0, 1600.0, 0, 400);
        // Four octaves in 400 frames: one octave per 100 frames.
        for k in 0..=4u64 {
            let v = f64::from(s.value_at(k * 100));
            assert!((v / (100.0 * 2f64.powi(k as i32)) - 1.0).abs() < 1e-6);
        }
        let from_zero = Segment::ramp(Shape::Exponential, 0.0, 1.0, 0, 10);
        assert_eq!(from_zero.value_at(5), 0.0);
        assert_eq!(from_zero.value_at(10), 1.0);
        let across = Segment::ramp(Shape::Exponential, -1.0, 1.0, 0, 10);
        assert_eq!(across.value_at(9), -1.0);
    }

    #[test]
    fn a_constant_is_settled_everywhere() {
        let c = Segment::constant(3.5);
        assert!(c.settled_at(0));
        assert_eq!(c.value_at(12345), 3.5);
    }
}
