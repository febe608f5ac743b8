//! Value parsers for options, with typed errors clap shows as `error: invalid value ...`.

use std::fmt;

/// Why a number of seconds was refused.
#[derive(Debug)]
pub(crate) enum SecondsError {
    /// Not a number.
    NotANumber(String),
    /// Zero, negative, not finite, or more than a day.
    OutOfRange(String),
}

impl fmt::Display for SecondsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecondsError::NotANumber(s) => write!(f, "`{s}` is not a number of seconds"),
            SecondsError::OutOfRange(s) => write!(
                f,
                "`{s}` is out of range: give seconds above 0 and at most 86400"
            ),
        }
    }
}

impl std::error::Error for SecondsError {}

/// Seconds above 0 and at most a day (`--seconds`).
pub(crate) fn parse_seconds(s: &str) -> Result<f64, SecondsError> {
    let v: f64 = s
        .parse()
        .map_err(|_| SecondsError::NotANumber(s.to_string()))?;
    if v.is_finite() && v > 0.0 && v <= 86_400.0 {
        Ok(v)
    } else {
        Err(SecondsError::OutOfRange(s.to_string()))
    }
}
