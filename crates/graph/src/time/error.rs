//! [`TempoError`]: why a time signature or a tempo map was refused.

use std::fmt;

use super::Signature;

/// Why a [`Signature`] or a [`TempoMap`](super::TempoMap) was refused.
///
/// Every variant carries the values at fault, and the message says what is wrong and where,
/// so that a project file's loader can pass it on as it is. Indices (`index`, `other`) are
/// positions in the slice given to [`TempoMap::new`](super::TempoMap::new), counted from 0
/// in the caller's order, not in the sorted order.
///
/// ```
/// use downbeat_graph::time::{Signature, TempoError};
///
/// let err = Signature::new(7, 5).unwrap_err();
/// assert_eq!(err, TempoError::Denominator { numerator: 7, denominator: 5 });
/// assert_eq!(err.to_string(), "7/5: the denominator must be a power of two from 1 to 64");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum TempoError {
    /// A signature's numerator outside `1..=64`.
    Numerator {
        /// The numerator given.
        numerator: u32,
        /// The denominator given with it.
        denominator: u32,
    },
    /// A signature's denominator that is not a power of two in `1..=64`.
    Denominator {
        /// The numerator given with it.
        numerator: u32,
        /// The denominator given.
        denominator: u32,
    },
    /// Text that is not two whole numbers separated by `/`.
    SignatureText(String),
    /// The map's initial tempo is not finite or not in `(0, 999]`.
    InitialBpm(f64),
    /// The sample rate is 0.
    SampleRate(u32),
    /// A tempo change's beat is negative or not finite.
    PointBeat {
        /// Position of the tempo change in the caller's slice.
        index: usize,
        /// The beat given.
        beat: f64,
    },
    /// A tempo change's tempo is not finite or not in `(0, 999]`.
    PointBpm {
        /// Position of the tempo change in the caller's slice.
        index: usize,
        /// Its beat.
        beat: f64,
        /// The tempo given.
        bpm: f64,
    },
    /// A tempo change's ramp is negative or not finite (or ends beyond the largest `f64`).
    Ramp {
        /// Position of the tempo change in the caller's slice.
        index: usize,
        /// Its beat.
        beat: f64,
        /// The ramp length given, in beats.
        ramp: f64,
    },
    /// Two tempo changes at the same beat: which one holds would depend on their order.
    DuplicatePoint {
        /// Position of the first of the two in the caller's slice.
        index: usize,
        /// Position of the second.
        other: usize,
        /// The beat they share.
        beat: f64,
    },
    /// A tempo change that falls inside the ramp of the change before it.
    Overlap {
        /// Position of the tempo change in the caller's slice.
        index: usize,
        /// Its beat.
        beat: f64,
        /// Position of the ramping change in the caller's slice.
        previous: usize,
        /// The beat the ramp starts on.
        ramp_start: f64,
        /// The beat the ramp ends on.
        ramp_end: f64,
    },
    /// A signature change's beat is negative or not finite.
    SignatureBeat {
        /// Position of the signature change in the caller's slice.
        index: usize,
        /// The beat given.
        beat: f64,
    },
    /// A signature change that is not on a bar line of the signature in force before it.
    OffBar {
        /// Position of the signature change in the caller's slice.
        index: usize,
        /// Its beat.
        beat: f64,
        /// The signature in force before it.
        signature: Signature,
        /// The bar line before the beat.
        before: f64,
        /// The bar line after it.
        after: f64,
    },
    /// Two signature changes at the same beat.
    DuplicateSignature {
        /// Position of the first of the two in the caller's slice.
        index: usize,
        /// Position of the second.
        other: usize,
        /// The beat they share.
        beat: f64,
    },
    /// A live tempo change found no room left of what
    /// [`TempoMap::reserve_live`](super::TempoMap::reserve_live) reserved.
    NoRoom,
}

impl fmt::Display for TempoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TempoError::Numerator {
                numerator,
                denominator,
            } => write!(
                f,
                "{numerator}/{denominator}: the numerator must be 1 to 64"
            ),
            TempoError::Denominator {
                numerator,
                denominator,
            } => write!(
                f,
                "{numerator}/{denominator}: the denominator must be a power of two from 1 to 64"
            ),
            TempoError::SignatureText(text) => write!(
                f,
                "{text:?} is not a time signature (write it as two numbers, like 3/4)"
            ),
            TempoError::InitialBpm(bpm) => write!(
                f,
                "initial tempo: bpm {bpm} must be above 0 and at most 999"
            ),
            TempoError::SampleRate(rate) => {
                write!(f, "sample rate {rate} Hz must be above 0")
            }
            TempoError::PointBeat { index, beat } => write!(
                f,
                "tempo change {index}: beat {beat} must be finite and at least 0"
            ),
            TempoError::PointBpm { index, beat, bpm } => write!(
                f,
                "tempo change {index} (beat {beat}): bpm {bpm} must be above 0 and at most 999"
            ),
            TempoError::Ramp { index, beat, ramp } => {
                write!(f, "tempo change {index} (beat {beat}): ramp {ramp} ")?;
                if *ramp < 0.0 {
                    f.write_str("is a ramp that ends before it starts")?;
                } else if ramp.is_nan() {
                    f.write_str("is not a number of beats")?;
                } else {
                    f.write_str("is a ramp that never ends")?;
                }
                f.write_str(" (a ramp lasts a finite number of beats, 0 for a step)")
            }
            TempoError::DuplicatePoint { index, other, beat } => write!(
                f,
                "tempo changes {index} and {other} are both at beat {beat}"
            ),
            TempoError::Overlap {
                index,
                beat,
                previous,
                ramp_start,
                ramp_end,
            } => write!(
                f,
                "tempo change {index} (beat {beat}) falls inside the ramp of tempo change \
                 {previous}, which runs from beat {ramp_start} to beat {ramp_end} (overlapping \
                 ramps)"
            ),
            TempoError::SignatureBeat { index, beat } => write!(
                f,
                "signature change {index}: beat {beat} must be finite and at least 0"
            ),
            TempoError::OffBar {
                index,
                beat,
                signature,
                before,
                after,
            } => write!(
                f,
                "signature change {index} (beat {beat}) is not on a bar line of {signature}: \
                 the nearest bar lines are beats {before} and {after}"
            ),
            TempoError::DuplicateSignature { index, other, beat } => write!(
                f,
                "signature changes {index} and {other} are both at beat {beat}"
            ),
            TempoError::NoRoom => write!(
                f,
                "no room left for another live tempo change (the map reserves room for {} \
                 when it starts to play)",
                super::transport::LIVE_TEMPO_CHANGES
            ),
        }
    }
}

impl std::error::Error for TempoError {}
