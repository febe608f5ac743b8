//! [`Error`]: why an export failed, as the code it returns and the message it leaves.

use std::fmt;

/// What went wrong, as the negative code an export returns (the ABI's table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// `-1`: no project is loaded.
    NoProject = -1,
    /// `-2`: bad input (a project, a MIDI file, a sample, a frame count).
    BadInput = -2,
    /// `-3`: no parameter or instrument has this id.
    UnknownId = -3,
    /// `-4`: a value out of its range.
    OutOfRange = -4,
    /// `-5`: the engine's event list is full; the event is counted as dropped.
    Full = -5,
    /// `-6`: the project (or a node an edit adds) needs something the browser does not have.
    Unsupported = -6,
    /// `-7`: an edit was refused (an unknown node, type, parameter or port, a name taken, a
    /// cycle, channel counts that differ, ...); the running graph is unchanged.
    Refused = -7,
    /// `-8`: the engine has not yet taken the edits committed before (it has not rendered
    /// since); the edit was not made: make it again once the engine renders.
    Busy = -8,
}

/// A failure: its [`Code`] and the message saying what and where (for a project file, the
/// text `downbeat run` prints after `error: `).
///
/// ```
/// use downbeat_engine_wasm::{Code, Error};
/// let e = Error::new(Code::UnknownId, "no parameter has id 7");
/// assert_eq!(e.code as i32, -3);
/// assert_eq!(e.to_string(), "no parameter has id 7");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// The code the export returns.
    pub code: Code,
    /// What and where.
    pub message: String,
}

impl Error {
    /// An error of `code` saying `message`.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
