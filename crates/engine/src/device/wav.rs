use std::path::Path;

use super::DeviceError;

/// Writes interleaved f32 samples to a 32-bit float WAV file.
///
/// ```no_run
/// downbeat::device::write_wav("tone.wav".as_ref(), &[0.0, 0.5, -0.5, 0.0], 2, 48000).unwrap();
/// ```
pub fn write_wav(
    path: &Path,
    samples: &[f32],
    channels: usize,
    sample_rate: u32,
) -> Result<(), DeviceError> {
    let mut w = create(path, channels, sample_rate)?;
    for &s in samples {
        w.write_sample(s).map_err(|e| io(path, e))?;
    }
    w.finalize().map_err(|e| io(path, e))
}

pub(crate) type Writer = hound::WavWriter<std::io::BufWriter<std::fs::File>>;

pub(crate) fn create(
    path: &Path,
    channels: usize,
    sample_rate: u32,
) -> Result<Writer, DeviceError> {
    let spec = hound::WavSpec {
        channels: channels as u16,
        sample_rate,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    hound::WavWriter::create(path, spec).map_err(|e| io(path, e))
}

pub(crate) fn io(path: &Path, e: hound::Error) -> DeviceError {
    let source = match e {
        hound::Error::IoError(e) => e,
        other => std::io::Error::other(other.to_string()),
    };
    DeviceError::Io {
        what: format!("cannot write `{}`", path.display()),
        source,
    }
}
