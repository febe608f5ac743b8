//! Devices: what calls [`Engine::process`](crate::Engine::process) and where the audio goes.
//!
//! A device owns the timing. [`Offline`] renders as fast as it can; [`Virtual`] calls the
//! engine once per block period in real time, like a sound card would.

#[cfg(feature = "jack")]
mod jack;
mod offline;
mod render;
mod virtual_device;
mod wav;

#[cfg(feature = "jack")]
pub use self::jack::Jack;
pub use offline::Offline;
pub use render::{PlanarBuffers, Recording, Renderer, MAX_CALLBACK_FRAMES};
pub use virtual_device::Virtual;
pub use wav::write_wav;

use std::fmt;

use crate::Engine;

/// How long to run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunLength {
    /// Frames to produce.
    pub frames: u64,
}

impl RunLength {
    /// The frames in `seconds` of audio at `sample_rate`, rounded up to whole frames.
    pub fn seconds(seconds: f64, sample_rate: u32) -> Self {
        Self {
            frames: (seconds * sample_rate as f64).ceil() as u64,
        }
    }
}

/// What a device reports about a finished run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceReport {
    /// Frames produced.
    pub frames: u64,
    /// Wall-clock seconds the run took.
    pub wall_seconds: f64,
    /// Callbacks that started after their period had already begun (real-time devices).
    pub late_wakeups: u64,
}

/// Why a device stopped.
#[derive(Debug)]
pub enum DeviceError {
    /// The run cannot be done as asked; the message says why and what to do instead.
    Config(String),
    /// The audio server cannot be reached or stopped during the run.
    Unavailable(String),
    /// Writing the output failed.
    Io {
        /// What was being written.
        what: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl fmt::Display for DeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceError::Config(m) | DeviceError::Unavailable(m) => f.write_str(m),
            DeviceError::Io { what, source } => write!(f, "{what}: {source}"),
        }
    }
}

impl std::error::Error for DeviceError {}

/// Something that drives an [`Engine`]: the seam between the engine and real audio APIs.
pub trait Device {
    /// Short name, as used by `--device`.
    fn name(&self) -> &'static str;

    /// Runs `engine` for `length`, then returns.
    fn run(&mut self, engine: &mut Engine, length: RunLength) -> Result<DeviceReport, DeviceError>;

    /// Over- and underruns the audio server reported during the last run (0 for devices
    /// without a server).
    fn xruns(&self) -> u64 {
        0
    }
}
