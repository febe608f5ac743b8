//! [`InputFile`]: a WAV file as the device's input, for the offline and virtual devices.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{DeviceError, Renderer};

/// A WAV file read into memory, which the offline and virtual devices hand to the `input`
/// nodes block by block, as a sound card would hand its capture: frame `k` of the file is
/// what the input hears while frame `k` is played. After its end the input hears silence.
///
/// Recording a live run's input (`--record-input`) and replaying it with `--input` on the
/// offline device reproduces the run.
///
/// ```no_run
/// use downbeat::device::InputFile;
/// let voice = InputFile::open("voice.wav".as_ref()).unwrap();
/// assert_eq!(voice.sample_rate(), 48_000);
/// ```
#[derive(Clone, Debug)]
pub struct InputFile {
    path: PathBuf,
    samples: Arc<[f32]>,
    channels: usize,
    sample_rate: u32,
}

impl InputFile {
    /// Reads `path` (16-, 24- or 32-bit integer or 32-bit float PCM).
    ///
    /// # Errors
    /// [`DeviceError::Config`] naming the file when it cannot be read or is not a WAV file.
    pub fn open(path: &Path) -> Result<Self, DeviceError> {
        let file = std::fs::File::open(path).map_err(|e| {
            DeviceError::Config(format!(
                "--input: cannot read `{}` as a WAV file: {e}",
                path.display()
            ))
        })?;
        Self::read(std::io::BufReader::new(file), path)
    }

    /// Reads WAV `bytes` already in memory exactly as [`open`](Self::open) reads a file;
    /// `path` only names them in errors. The fuzz target `wav_input` (`fuzz/`) feeds the
    /// reader this way, without a disk.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Self, DeviceError> {
        Self::read(std::io::Cursor::new(bytes), path)
    }

    fn read(reader: impl std::io::Read, path: &Path) -> Result<Self, DeviceError> {
        let bad = |e: hound::Error| {
            DeviceError::Config(format!(
                "--input: cannot read `{}` as a WAV file: {e}",
                path.display()
            ))
        };
        let mut r = hound::WavReader::new(reader).map_err(bad)?;
        let spec = r.spec();
        if spec.channels == 0 {
            return Err(DeviceError::Config(format!(
                "--input: `{}` has no channels",
                path.display()
            )));
        }
        let samples: Vec<f32> = match spec.sample_format {
            hound::SampleFormat::Float => r.samples::<f32>().collect::<Result<_, _>>(),
            // hound passes the header's bits on as they are (an extensible header's valid bits
            // can say 43280): the scale below is only defined for 1 to 32.
            hound::SampleFormat::Int if !(1..=32).contains(&spec.bits_per_sample) => {
                return Err(DeviceError::Config(format!(
                    "--input: `{}` has {}-bit integer samples; 8 to 32 bits are read",
                    path.display(),
                    spec.bits_per_sample
                )))
            }
            hound::SampleFormat::Int => {
                let scale = 1.0 / (1u64 << (spec.bits_per_sample - 1)) as f32;
                r.samples::<i32>()
                    .map(|s| s.map(|s| s as f32 * scale))
                    .collect::<Result<_, _>>()
            }
        }
        .map_err(bad)?;
        Ok(Self {
            path: path.to_path_buf(),
            samples: samples.into(),
            channels: usize::from(spec.channels),
            sample_rate: spec.sample_rate,
        })
    }

    /// Where it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Channels.
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// Sample rate in Hz.
    pub fn sample_rate(&self) -> u32 {
        self.sample_rate
    }

    /// Frames.
    pub fn frames(&self) -> usize {
        self.samples.len() / self.channels
    }

    /// All samples, interleaved.
    pub(crate) fn samples(&self) -> &Arc<[f32]> {
        &self.samples
    }

    /// Refuses a file the `input` nodes could not hear as it is.
    pub(crate) fn check_for(&self, renderer: &Renderer) -> Result<(), DeviceError> {
        let rate = renderer.engine().sample_rate();
        if self.sample_rate() != rate {
            return Err(DeviceError::Config(format!(
                "--input: `{}` is at {} Hz but the project runs at {rate} Hz; set the project's \
                 `sample_rate` to {} or resample the file",
                self.path().display(),
                self.sample_rate(),
                self.sample_rate()
            )));
        }
        if self.channels() != renderer.input_channels() {
            return Err(DeviceError::Config(format!(
                "--input: `{}` has {} channel(s) but the input was set up with {}",
                self.path().display(),
                self.channels(),
                renderer.input_channels()
            )));
        }
        Ok(())
    }
}
