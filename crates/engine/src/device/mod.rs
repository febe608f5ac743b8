//! Devices: what calls [`Engine::process`](crate::Engine::process) and where the audio goes.
//!
//! A device owns the timing, and for the length of a run it owns the [`Engine`] too:
//! [`Device::run`] takes it by value and hands it back in the [`Run`] (driver callbacks want
//! `Send + 'static` state, and this is how the engine gets there and back without a raw
//! pointer).
//!
//! | device | what drives the engine | cargo feature |
//! |--------|------------------------|---------------|
//! | [`Offline`] | a loop, as fast as the machine allows | |
//! | [`Virtual`] | a real-time thread paced by the clock, like a sound card without one | |
//! | `Jack` | a JACK server's process callback (JACK, or PipeWire's JACK interface) | `jack` |
//! | `System` | the operating system's sound output and input through `cpal`: ALSA, PulseAudio or PipeWire (through their ALSA plugins) on Linux, CoreAudio, WASAPI | `system` |
//!
//! Every device hands each block's values, levels and load to the watchers made with
//! [`Engine::watch`](crate::Engine::watch), and the `input` nodes hear what the
//! device captures (a sound card's input, JACK input ports, or an [`InputFile`] on the
//! offline and virtual devices), sample-aligned with the output.
//!
//! [`open`] makes any of them from a [`DeviceSpec`], and says with
//! [`OpenError::NotBuilt`] when this build left the device out.
//!
//! On the JACK device the song can play by JACK's transport instead of its own, and give
//! JACK's clients its bar, beat and tempo as the timebase master: see [`TransportSync`].

#[cfg(any(feature = "jack", feature = "system"))]
mod handoff;
mod input_file;
#[cfg(feature = "jack")]
mod jack;
mod offline;
mod open;
mod pacing;
mod render;
mod sample;
#[cfg(feature = "system")]
mod system;
mod takes;
mod transport;
mod virtual_device;
mod wav;

#[cfg(feature = "jack")]
pub use self::jack::Jack;
pub use input_file::InputFile;
pub use offline::Offline;
pub use open::{devices, jack_rate, open, DeviceInfo, DeviceKind, DeviceSpec, OpenError};
pub use render::{CaptureSender, PlanarBuffers, PlanarInputs, Renderer, Take, MAX_CALLBACK_FRAMES};
pub use sample::DeviceSample;
#[cfg(feature = "system")]
pub use system::System;
pub use transport::{
    follow, timebase_bbt, ExternalPosition, FollowCommands, RequestError, Requested, TimebaseBbt,
    TransportRequests, TransportSync,
};
pub use virtual_device::Virtual;
pub use wav::write_wav;

use std::fmt;
use std::path::PathBuf;

use crate::record::{RecordOptions, Recorded};
use crate::Engine;

/// How long to run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunLength {
    /// Frames to produce.
    pub frames: u64,
}

impl RunLength {
    /// A run that goes on until its engine's [`Stopper`](crate::Stopper) stops it (or the
    /// device is lost): what [`start`](crate::start) runs.
    pub const UNTIL_STOPPED: RunLength = RunLength { frames: u64::MAX };

    /// The frames in `seconds` of audio at `sample_rate`, rounded up to whole frames.
    pub fn seconds(seconds: f64, sample_rate: u32) -> Self {
        Self {
            frames: (seconds * sample_rate as f64).ceil() as u64,
        }
    }

    /// How long a run lasts when `seconds` is asked for or not, and a MIDI file that plays
    /// for `midi_frames` is given or not: `seconds` when asked; else as long as the file
    /// plays (at least one frame); else [`DEFAULT_SECONDS`](RunLength::DEFAULT_SECONDS).
    ///
    /// ```
    /// use downbeat::device::RunLength;
    ///
    /// assert_eq!(RunLength::of_run(Some(1.0), Some(5), 48_000).frames, 48_000);
    /// assert_eq!(RunLength::of_run(None, Some(5), 48_000).frames, 5);
    /// assert_eq!(RunLength::of_run(None, None, 100).frames, 1_000);
    /// ```
    pub fn of_run(seconds: Option<f64>, midi_frames: Option<u64>, sample_rate: u32) -> Self {
        match (seconds, midi_frames) {
            (None, Some(frames)) => Self {
                frames: frames.max(1),
            },
            (seconds, _) => Self::seconds(seconds.unwrap_or(Self::DEFAULT_SECONDS), sample_rate),
        }
    }

    /// Seconds a run lasts when nothing says how long: long enough to hear a project, short
    /// enough that a forgotten length ends.
    pub const DEFAULT_SECONDS: f64 = 10.0;
}

/// What a device reports about a finished run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceReport {
    /// Frames produced.
    pub frames: u64,
    /// Wall-clock seconds the run took.
    pub wall_seconds: f64,
    /// Callbacks that started after their period had already begun (the virtual device).
    pub late_wakeups: u64,
    /// Over- and underruns and stream errors the audio API reported, and blocks whose
    /// input arrived late (real-time devices with a server or a sound card).
    pub xruns: u64,
    /// When the device was lost and the run went on on the virtual device: where and why.
    pub fallback: Option<Fallback>,
    /// The latency the audio API claims, in frames, when it says.
    pub claimed_latency: Option<ClaimedLatency>,
    /// The files written (`--out`, then `--record-input`), with the frames each holds and
    /// how many of them were lost because the disk fell behind.
    pub recorded: Vec<Recorded>,
}

/// A switch to the virtual device after the device was lost.
#[derive(Clone, Debug, PartialEq)]
pub struct Fallback {
    /// The first frame the virtual device produced: every frame before it was played by
    /// the lost device, none was dropped or repeated.
    pub at_frame: u64,
    /// Why the device was lost.
    pub reason: String,
}

/// What an audio API says its latency is, in frames.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClaimedLatency {
    /// From the callback writing a frame to the frame leaving the device.
    pub output: u64,
    /// From a frame entering the device to the callback reading it.
    pub input: u64,
}

/// A finished run: the engine back, and what the device reports.
pub struct Run {
    /// The engine that ran, with its load history and schedule.
    pub engine: Engine,
    /// What the device reports.
    pub report: DeviceReport,
}

impl fmt::Debug for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Run")
            .field("blocks", &self.engine.summary().blocks)
            .field("report", &self.report)
            .finish()
    }
}

/// Why a device stopped.
#[derive(Debug)]
pub enum DeviceError {
    /// The run cannot be done as asked; the message says why and what to do instead.
    Config(String),
    /// The audio server or device cannot be reached.
    Unavailable(String),
    /// The device or its server went away during the run. Everything played until then
    /// has been written to the recording, when one was asked for.
    Lost(String),
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
            DeviceError::Config(m) | DeviceError::Unavailable(m) | DeviceError::Lost(m) => {
                f.write_str(m)
            }
            DeviceError::Io { what, source } => write!(f, "{what}: {source}"),
        }
    }
}

impl std::error::Error for DeviceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DeviceError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Something that drives an [`Engine`]: the seam between the engine and real audio APIs.
pub trait Device {
    /// Short name, as used by `--device`.
    fn name(&self) -> &'static str;

    /// Runs `engine` for `length` and hands it back. On an error the engine is dropped
    /// (after the recording, if any, is written).
    fn run(&mut self, engine: Engine, length: RunLength) -> Result<Run, DeviceError>;
}

/// Where a run's audio is written, besides the device itself: files written as the run
/// goes by a writer thread (see [`record`](crate::record)), so a run of any length fits.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordTo {
    /// Everything played, as a 32-bit float WAV file.
    pub out: Option<PathBuf>,
    /// Everything the `input` nodes received, aligned with `out` frame for frame: replaying
    /// it with [`InputFile`] on the offline device reproduces the run.
    pub input: Option<PathBuf>,
    /// How the recordings are buffered and synced.
    pub options: RecordOptions,
}

/// Whether to go on on the virtual device when a real-time device is lost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnLoss {
    /// End the run with [`DeviceError::Lost`].
    #[default]
    Stop,
    /// Continue on the [`Virtual`] device at the next block boundary, with the same engine
    /// and recording, and say so in [`DeviceReport::fallback`].
    FallBackToVirtual,
}
