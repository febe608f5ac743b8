//! [`Signature`]: how many of which note make a bar.

use std::fmt;
use std::str::FromStr;

use super::TempoError;

/// A time signature `numerator/denominator`: a bar holds `numerator` notes of length
/// `1/denominator`.
///
/// The tempo map counts in quarter notes whatever the signature, so that a tempo in bpm
/// means the same thing in 6/8 as in 4/4; the signature only decides where the bar lines
/// and the counted beats fall. Valid signatures have a numerator from 1 to 64 and a
/// denominator that is a power of two from 1 to 64 (the notes a score can write without
/// tuplets); [`Signature::new`] and [`str::parse`] check this, and the fields are public only
/// so that a signature can be matched on and written as a constant.
///
/// ```
/// use downbeat_graph::time::Signature;
///
/// let six_eight: Signature = "6/8".parse().unwrap();
/// assert_eq!(six_eight, Signature::new(6, 8).unwrap());
/// assert_eq!(six_eight.bar_beats(), 3.0); // three quarter notes a bar
/// assert_eq!(six_eight.beat_length(), 0.5); // counted in eighths
/// assert_eq!(six_eight.to_string(), "6/8");
/// assert_eq!(Signature::default().to_string(), "4/4");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Signature {
    /// Notes per bar, `1..=64`.
    pub numerator: u8,
    /// The note counted, as a fraction of a whole note: 4 is a quarter, 8 an eighth. A power
    /// of two, `1..=64`.
    pub denominator: u8,
}

impl Signature {
    /// Checks the two numbers and makes the signature.
    ///
    /// ```
    /// use downbeat_graph::time::Signature;
    ///
    /// assert_eq!(Signature::new(7, 8).unwrap().bar_beats(), 3.5);
    /// assert_eq!(
    ///     Signature::new(0, 4).unwrap_err().to_string(),
    ///     "0/4: the numerator must be 1 to 64"
    /// );
    /// ```
    ///
    /// # Errors
    /// [`TempoError::Numerator`] for a numerator outside `1..=64`, then
    /// [`TempoError::Denominator`] for a denominator that is not a power of two in `1..=64`.
    pub fn new(numerator: u8, denominator: u8) -> Result<Signature, TempoError> {
        check(u32::from(numerator), u32::from(denominator))
    }

    /// Quarter-note beats in one bar (`numerator * 4 / denominator`): the length of a bar in
    /// the tempo map's unit. Exact, as the denominator is a power of two.
    ///
    /// ```
    /// use downbeat_graph::time::Signature;
    ///
    /// assert_eq!(Signature::new(3, 4).unwrap().bar_beats(), 3.0);
    /// assert_eq!(Signature::new(7, 8).unwrap().bar_beats(), 3.5);
    /// assert_eq!(Signature::new(2, 2).unwrap().bar_beats(), 4.0);
    /// ```
    pub fn bar_beats(self) -> f64 {
        f64::from(self.numerator) * 4.0 / f64::from(self.denominator)
    }

    /// Quarter-note beats in one counted beat (`4 / denominator`): the step of
    /// bar/beat/tick's beat and of [`TempoMap::next_beat`](super::TempoMap::next_beat).
    ///
    /// ```
    /// use downbeat_graph::time::Signature;
    ///
    /// assert_eq!(Signature::new(6, 8).unwrap().beat_length(), 0.5);
    /// assert_eq!(Signature::new(2, 2).unwrap().beat_length(), 2.0);
    /// ```
    pub fn beat_length(self) -> f64 {
        4.0 / f64::from(self.denominator)
    }
}

/// Checks a numerator and a denominator wider than `u8`, so that text like `300/4` is
/// refused for its numerator rather than as unreadable.
fn check(numerator: u32, denominator: u32) -> Result<Signature, TempoError> {
    if !(1..=64).contains(&numerator) {
        return Err(TempoError::Numerator {
            numerator,
            denominator,
        });
    }
    if !(1..=64).contains(&denominator) || !denominator.is_power_of_two() {
        return Err(TempoError::Denominator {
            numerator,
            denominator,
        });
    }
    // Both are at most 64 here.
    Ok(Signature {
        numerator: numerator as u8,
        denominator: denominator as u8,
    })
}

/// 4/4, the signature a map has when nothing says otherwise.
impl Default for Signature {
    fn default() -> Self {
        Signature {
            numerator: 4,
            denominator: 4,
        }
    }
}

/// `3/4`: the form [`FromStr`] reads back.
impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.numerator, self.denominator)
    }
}

/// Reads `"3/4"`, with optional whitespace around either number (`" 6 / 8 "`). Only decimal
/// digits make a number (no sign).
///
/// # Errors
/// [`TempoError::SignatureText`] naming the text if it is not two numbers around one `/`;
/// otherwise what [`Signature::new`] refuses.
impl FromStr for Signature {
    type Err = TempoError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let unreadable = || TempoError::SignatureText(text.to_string());
        let (numerator, denominator) = text.split_once('/').ok_or_else(unreadable)?;
        let number = |part: &str| {
            let part = part.trim();
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            part.parse::<u32>().ok()
        };
        match (number(numerator), number(denominator)) {
            (Some(numerator), Some(denominator)) => check(numerator, denominator),
            _ => Err(unreadable()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_it_displays() {
        for denominator in [1u8, 2, 4, 8, 16, 32, 64] {
            for numerator in 1..=64u8 {
                let signature = Signature::new(numerator, denominator).unwrap();
                assert_eq!(signature.to_string(), format!("{numerator}/{denominator}"));
                assert_eq!(signature.to_string().parse::<Signature>(), Ok(signature));
                assert_eq!(
                    signature.bar_beats(),
                    f64::from(numerator) * signature.beat_length()
                );
            }
        }
        assert_eq!(" 3 / 4 ".parse(), Signature::new(3, 4));
        assert_eq!("\t12/8\n".parse(), Signature::new(12, 8));
        assert_eq!(Signature::default(), Signature::new(4, 4).unwrap());
    }

    #[test]
    fn lengths_are_in_quarter_notes() {
        let sig = |n, d| Signature::new(n, d).unwrap();
        assert_eq!(sig(4, 4).bar_beats(), 4.0);
        assert_eq!(sig(3, 4).bar_beats(), 3.0);
        assert_eq!(sig(6, 8).bar_beats(), 3.0);
        assert_eq!(sig(7, 8).bar_beats(), 3.5);
        assert_eq!(sig(2, 2).bar_beats(), 4.0);
        assert_eq!(sig(5, 16).bar_beats(), 1.25);
        assert_eq!(sig(1, 1).bar_beats(), 4.0);
        assert_eq!(sig(4, 4).beat_length(), 1.0);
        assert_eq!(sig(6, 8).beat_length(), 0.5);
        assert_eq!(sig(3, 2).beat_length(), 2.0);
        assert_eq!(sig(9, 64).beat_length(), 0.0625);
    }

    #[test]
    fn refuses_what_is_not_a_signature() {
        let err = Signature::new(0, 4).unwrap_err();
        assert_eq!(
            err,
            TempoError::Numerator {
                numerator: 0,
                denominator: 4
            }
        );
        assert_eq!(err.to_string(), "0/4: the numerator must be 1 to 64");

        let err = Signature::new(7, 5).unwrap_err();
        assert_eq!(
            err,
            TempoError::Denominator {
                numerator: 7,
                denominator: 5
            }
        );
        assert_eq!(
            err.to_string(),
            "7/5: the denominator must be a power of two from 1 to 64"
        );

        assert!(matches!(
            Signature::new(65, 4),
            Err(TempoError::Numerator { numerator: 65, .. })
        ));
        for denominator in [0u8, 3, 6, 12, 128] {
            assert!(matches!(
                Signature::new(4, denominator),
                Err(TempoError::Denominator { .. })
            ));
        }
        // Numbers too wide for the fields are refused for their value, not as unreadable.
        let err = "300/4".parse::<Signature>().unwrap_err();
        assert!(matches!(err, TempoError::Numerator { numerator: 300, .. }));
        assert!(err.to_string().starts_with("300/4: "), "{err}");
        assert!(matches!(
            "4/256".parse::<Signature>(),
            Err(TempoError::Denominator {
                denominator: 256,
                ..
            })
        ));

        for text in [
            "",
            "3",
            "3-4",
            "3/",
            "/4",
            "3/4/4",
            "+3/4",
            "-3/4",
            "3/4.0",
            "3 4",
            "a/4",
            "99999999999/4",
        ] {
            let err = text.parse::<Signature>().unwrap_err();
            assert_eq!(err, TempoError::SignatureText(text.to_string()), "{text:?}");
            assert!(
                err.to_string().contains(&format!("{text:?}")),
                "{text:?}: {err}"
            );
        }
    }
}
