//! [`StringControls`]: the two live parameters the string nodes (`karplus`, `strings`) share,
//! the loop's loss and the output amplitude, taken, reported and followed alike.

use crate::invalid;
use downbeat_graph::{curve_accepts, float_param_accepts, ParamCurve, ParamError, ParamSpec};

/// A string node's `decay` (loop gain per period) and `amp` (linear output amplitude), and
/// the amplitude's curve over the next block while it moves.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StringControls {
    /// Where `decay` and `amp` stand in the node's parameters.
    decay_index: usize,
    amp_index: usize,
    pub(crate) decay: f64,
    pub(crate) amp: f32,
    pub(crate) amp_curve: Option<ParamCurve>,
}

impl StringControls {
    /// The controls of a node whose parameters hold `decay` at `decay_index` and `amp` at
    /// `amp_index`, starting at `decay` and `amp`.
    ///
    /// # Errors
    /// [`ParamError::Invalid`] naming `decay` when it is outside `0.8..=1`.
    pub(crate) fn new(
        decay_index: usize,
        amp_index: usize,
        decay: f64,
        amp: f32,
    ) -> Result<Self, ParamError> {
        if !(0.8..=1.0).contains(&decay) {
            return Err(invalid("decay", format!("got {decay}, expected 0.8 to 1")));
        }
        Ok(Self {
            decay_index,
            amp_index,
            decay,
            amp,
            amp_curve: None,
        })
    }

    /// [`Node::set_param`](downbeat_graph::Node::set_param) for these two: `false` for
    /// another parameter or a value `params` refuses. A set amplitude ends its curve.
    pub(crate) fn set(&mut self, params: &[ParamSpec], index: usize, value: f32) -> bool {
        if !float_param_accepts(params, index, value) {
            return false;
        }
        if index == self.decay_index {
            self.decay = f64::from(value);
        } else if index == self.amp_index {
            self.amp = value;
            self.amp_curve = None;
        } else {
            return false;
        }
        true
    }

    /// [`Node::get_param`](downbeat_graph::Node::get_param) for these two.
    pub(crate) fn get(&self, index: usize) -> Option<f32> {
        if index == self.decay_index {
            Some(self.decay as f32)
        } else if index == self.amp_index {
            Some(self.amp)
        } else {
            None
        }
    }

    /// [`Node::follow_param`](downbeat_graph::Node::follow_param): the amplitude follows
    /// `curve` sample by sample. The decay changes the loop filter, which is cheap enough per
    /// sample but audibly the same at control rate, so it is not followed.
    pub(crate) fn follow(&mut self, params: &[ParamSpec], index: usize, curve: ParamCurve) -> bool {
        if index != self.amp_index || !curve_accepts(params, index, &curve) {
            return false;
        }
        self.amp_curve = Some(curve);
        true
    }
}
