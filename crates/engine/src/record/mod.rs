//! Recording to disk while the engine plays: the audio thread hands each block to a
//! wait-free ring ([`RecordTap`]), a writer thread ([`Recorder`]) writes it to a 32-bit float
//! WAV file, so memory stays the same for a run of any length.
//!
//! * **A slow disk never blocks the audio thread** ([`WhenFull::CountLost`], the real-time
//!   devices): frames that do not fit in the ring are counted as lost, written as silence
//!   in their place (the file stays aligned with what was played, and `--record-input`
//!   with `--out`), said on stderr by the writer thread when it happens and reported in
//!   [`Recorded::lost_frames`] at the end. The offline device waits for the writer
//!   instead ([`WhenFull::Wait`]) and loses nothing.
//! * **The file is valid at every moment**: the writer writes samples, syncs them to disk,
//!   then rewrites the header's sizes in one write, at least once per
//!   [`RecordOptions::sync_every`] (0.5 s by default). A process killed mid-run leaves a file
//!   that opens and holds everything but the last fraction of a second.
//! * **Past 4 GB the file becomes RF64** (EBU Tech 3306): the header has room for the
//!   `ds64` chunk from the start (as a `JUNK` chunk), so the switch rewrites the header
//!   only.

mod tap;
mod wav;
mod writer;

use std::path::PathBuf;
use std::time::Duration;

pub use tap::{RecordTap, WhenFull};
pub use writer::Recorder;

/// How a recording is buffered and synced.
///
/// ```
/// use downbeat::record::RecordOptions;
///
/// let options = RecordOptions { ring_seconds: 2.0, ..RecordOptions::default() };
/// assert_eq!(options.sync_every, std::time::Duration::from_millis(500));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct RecordOptions {
    /// Seconds of audio the ring between the audio thread and the writer holds: how long
    /// the disk may stall before frames are lost. 4 s by default (1.5 MB for stereo at
    /// 48 kHz).
    pub ring_seconds: f64,
    /// Longest time between two updates of the file's header (each after a sync of the
    /// data): what a crash can lose. 0.5 s by default.
    pub sync_every: Duration,
    /// Test hook: the writer sleeps this long before each write, a disk made slow on
    /// purpose.
    #[doc(hidden)]
    pub write_pause: Duration,
    /// Test hook: data bytes past which the header is RF64 (4 GB less the header by
    /// default, which is where a plain WAV header runs out).
    #[doc(hidden)]
    pub rf64_after: u64,
}

impl Default for RecordOptions {
    fn default() -> Self {
        Self {
            ring_seconds: 4.0,
            sync_every: Duration::from_millis(500),
            write_pause: Duration::ZERO,
            rf64_after: wav::WAV_MAX_DATA,
        }
    }
}

/// A finished recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// The file.
    pub path: PathBuf,
    /// Frames in the file, the lost ones (silence) included.
    pub frames: u64,
    /// Frames the audio thread could not hand to the writer in time (the ring was full):
    /// silence in the file.
    pub lost_frames: u64,
}
