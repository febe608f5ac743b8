//! Audio files for Downbeat: decoding and resampling.
//!
//! * [`Decoder`] streams a WAV (8/16/24/32-bit integer, 32/64-bit float), FLAC, Ogg Vorbis or
//!   MP3 file (any rate, any channel count) as interleaved `f32` at the file's rate, with
//!   sample-exact [`seek`](Decoder::seek), through `symphonia`. It reads and allocates: it runs
//!   off the audio thread.
//! * [`decode_all`] decodes a whole file into memory at a given rate ([`Audio`]); [`check`]
//!   reads a file's header and first second, so that damage there is found at load.
//! * [`Resampler`] converts rates with a band-limited windowed-sinc filter and varispeed,
//!   allocation-free after construction (it runs on the audio thread inside the player), and
//!   keeps the time origin: output frame *n* is the input at time *n* / output rate, with no
//!   filter delay left in. Its measured quality: a 20 Hz–20 kHz sweep at 44.1 kHz resampled
//!   to 48 kHz keeps everything that is not the sweep more than 100 dB down (see
//!   [`Resampler`] for the method).
//! * [`map_channels`] is the one rule for playing a file's channels on a node's channels (mono
//!   into stereo: both sides; stereo into mono: the average).
//!
//! Errors are [`FileError`]s whose `Display` names the file and the problem.
//!
//! This crate sits above `downbeat-nodes` in the layers and uses it for the node types that
//! play files ([`node_types`]): [`player`] (one file streamed from disk by a reader thread
//! through a ring per stream, [`stream`]) and [`sampler`] (decodes a kit at load and builds
//! `downbeat-nodes`' `Sampler`).
//!
//! ```no_run
//! use downbeat_file::{decode_all, map_channels};
//! use std::path::Path;
//!
//! // A mono sample at any rate, ready for a stereo node at 48 kHz.
//! let audio = decode_all(Path::new("snare.flac"), 48_000)?;
//! let mut stereo = vec![0.0; audio.frames() * 2];
//! map_channels(&audio.samples, audio.channels, &mut stereo, 2);
//! # Ok::<(), downbeat_file::FileError>(())
//! ```

mod audio;
mod channels;
mod decoder;
mod error;
mod info;
mod kernel;
pub mod memory;
pub mod player;
mod preflight;
mod resampler;
pub mod sampler;
pub mod stream;

pub use audio::{check, decode_all, Audio};
pub use channels::map_channels;
pub use decoder::Decoder;
pub use error::FileError;
pub use info::FileInfo;
pub use kernel::{ATTENUATION_DB, TRANSITION};
pub use player::{Player, PlayerMonitor, PlayerSettings};
pub use resampler::{Resampler, MAX_CHANNELS, MAX_RATIO, MAX_SPEED, MIN_SPEED};

/// The node types that play files, `player` and `sampler`, for project files. The
/// `downbeat` crate lists them among its built-in types, so a project can name them with no
/// registration call.
///
/// ```
/// let names: Vec<&str> = downbeat_file::node_types().iter().map(|t| t.name()).collect();
/// assert_eq!(names, ["player", "sampler"]);
/// ```
pub fn node_types() -> &'static [&'static dyn downbeat_graph::NodeFactory] {
    static TYPES: [&dyn downbeat_graph::NodeFactory; 2] = [&player::PLAYER, &sampler::SamplerType];
    &TYPES
}
