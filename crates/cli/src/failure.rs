//! [`Failure`]: why a command failed, and the exit code that says so.

use std::fmt;
use std::process::ExitCode;

use downbeat::device::{DeviceError, OpenError};

/// A failure and the exit code it maps to: 2 for bad input, 3 for real-time violations
/// found by `downbeat audit`, 1 for anything else. The message says what and where.
#[derive(Debug)]
pub enum Failure {
    /// The command line, a file it names or a plugin cannot be used as given (exit 2).
    Input(String),
    /// Something went wrong while running (exit 1).
    Runtime(String),
    /// `downbeat audit` found real-time violations (exit 3).
    Violations(String),
    /// A child process said what went wrong itself and exited with this code, which is
    /// passed on as it is.
    Relayed(u8),
}

impl Failure {
    /// The process exit code for this failure.
    pub fn code(&self) -> u8 {
        match self {
            Failure::Input(_) => 2,
            Failure::Runtime(_) => 1,
            Failure::Violations(_) => 3,
            Failure::Relayed(code) => *code,
        }
    }

    /// Prints `error: MESSAGE` to stderr (unless a child said it already) and gives the
    /// exit code.
    pub fn report(&self) -> ExitCode {
        if !matches!(self, Failure::Relayed(_)) {
            eprintln!("error: {self}");
        }
        ExitCode::from(self.code())
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Input(m) | Failure::Runtime(m) | Failure::Violations(m) => f.write_str(m),
            Failure::Relayed(code) => write!(f, "exited with code {code}"),
        }
    }
}

impl std::error::Error for Failure {}

/// What the user can fix in the command (a bad option, a device this build has not) is
/// bad input; the rest (a server that cannot be reached, a device lost mid-run, a file
/// that cannot be written) is a runtime failure.
impl From<DeviceError> for Failure {
    fn from(e: DeviceError) -> Self {
        match e {
            DeviceError::Config(m) => Failure::Input(m),
            other => Failure::Runtime(other.to_string()),
        }
    }
}

impl From<OpenError> for Failure {
    fn from(e: OpenError) -> Self {
        match e {
            OpenError::NotBuilt(_) => Failure::Input(e.to_string()),
            OpenError::Device(e) => e.into(),
        }
    }
}
