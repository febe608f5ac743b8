//! [`Source`]: what the reader thread decodes a stream from.

use std::fmt;

/// Interleaved audio a reader thread can read and seek: a decoder, or anything standing in
/// for one (a test's synthetic signal, a deliberately slow wrapper).
///
/// Runs on the reader thread (or on the thread that builds a stream, for its first
/// read-ahead and its cue caches), never on the audio thread: it may block, allocate and
/// take its time.
pub trait Source: Send + 'static {
    /// Channels per frame.
    fn channels(&self) -> usize;

    /// Fills `out` (a whole number of frames, interleaved) from the current position and
    /// returns the frames written; 0 only at the end of the source.
    ///
    /// # Errors
    /// [`SourceError::Damaged`] when the data cannot be decoded from here on.
    fn read(&mut self, out: &mut [f32]) -> Result<usize, SourceError>;

    /// Moves the position to `frame` (0 is the first frame). A frame at or past the end
    /// makes the next [`read`](Source::read) return 0.
    ///
    /// # Errors
    /// [`SourceError::Damaged`] when the source cannot get there.
    fn seek(&mut self, frame: u64) -> Result<(), SourceError>;
}

/// Why a [`Source`] could not go on.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SourceError {
    /// The data is damaged (or unreadable) at `frame`.
    Damaged {
        /// The frame where reading or seeking failed.
        frame: u64,
        /// What the decoder said.
        reason: String,
    },
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceError::Damaged { frame, reason } => {
                write!(f, "damaged at frame {frame}: {reason}")
            }
        }
    }
}

impl std::error::Error for SourceError {}
