//! [`FileInfo`]: what a file's header says.

use std::path::PathBuf;

/// Information from a file's header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileInfo {
    /// The file, as it was given to [`Decoder::open`](crate::Decoder::open).
    pub path: PathBuf,
    /// Frames per second.
    pub sample_rate: u32,
    /// Interleaved channels per frame.
    pub channels: usize,
    /// Length in frames at `sample_rate` (encoder delay and padding already removed for MP3 and
    /// Vorbis), when the header says.
    pub frames: Option<u64>,
    /// The codec's short name: `"pcm_s16le"`, `"pcm_f32le"`, `"flac"`, `"vorbis"`, `"mp3"`...
    pub codec: &'static str,
    /// Bits per sample of the stored data, when the codec has such a thing (PCM and FLAC).
    pub bits_per_sample: Option<u32>,
}

impl FileInfo {
    /// The length in seconds, when the header says.
    pub fn seconds(&self) -> Option<f64> {
        self.frames.map(|n| n as f64 / f64::from(self.sample_rate))
    }
}
