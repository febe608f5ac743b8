//! [`Audio`], [`decode_all`] and [`check`]: whole files into memory, and load-time checks.

use std::path::Path;

use crate::{Decoder, FileError, FileInfo, Resampler};

/// A whole file decoded into memory, interleaved, at `rate`.
#[derive(Clone, Debug, PartialEq)]
pub struct Audio {
    /// Frames per second.
    pub rate: u32,
    /// Channels per frame (the file's own count; see [`map_channels`](crate::map_channels)).
    pub channels: usize,
    /// `frames() * channels` samples, frame after frame.
    pub samples: Vec<f32>,
}

impl Audio {
    /// Number of frames.
    pub fn frames(&self) -> usize {
        self.samples.len() / self.channels.max(1)
    }

    /// Bytes the samples hold (what a sampler reports as its memory).
    pub fn bytes(&self) -> usize {
        self.samples.len() * std::mem::size_of::<f32>()
    }
}

/// Frames read per call while decoding a whole file.
const BLOCK: usize = 8192;
/// The most samples [`decode_all`] reserves before it has decoded them: 16 MiB, a minute
/// of stereo at 32 kHz.
const RESERVE_MOST: usize = 1 << 22;

/// Decodes the whole of `path` into memory at `rate` Hz, resampled with [`Resampler`] if the
/// file's rate differs (output frame *n* is the file at time *n* / `rate`; the output has
/// `ceil(frames · rate / file_rate)` frames, the file's whole duration).
///
/// Errors: any of [`Decoder::open`]'s and [`Decoder::read`]'s, and [`FileError::Rate`] naming the
/// file when the resampler cannot convert its rate to `rate`.
///
/// ```no_run
/// use downbeat_file::decode_all;
/// use std::path::Path;
///
/// let kick = decode_all(Path::new("kit/kick.wav"), 48_000)?;
/// println!("{} frames of {} channels", kick.frames(), kick.channels);
/// # Ok::<(), downbeat_file::FileError>(())
/// ```
pub fn decode_all(path: &Path, rate: u32) -> Result<Audio, FileError> {
    let mut decoder = Decoder::open(path)?;
    let info = decoder.info().clone();
    let ch = info.channels;
    let mut resampler = if info.sample_rate == rate {
        None
    } else {
        Some(Resampler::new(ch, info.sample_rate, rate).map_err(|e| e.with_path(path))?)
    };
    // The header's frame count is a claim, not a fact (an MP3's Info header or a damaged WAV
    // can say a billion): it sizes the first reservation up to a bound, and the vector grows
    // with what really decodes.
    let claimed = usize::try_from(info.frames.unwrap_or(0)).unwrap_or(usize::MAX);
    let mut samples = Vec::with_capacity(claimed.saturating_mul(ch).min(RESERVE_MOST));
    let mut block = vec![0.0f32; BLOCK * ch];
    loop {
        let n = decoder.read(&mut block)?;
        if n == 0 {
            break;
        }
        samples.extend_from_slice(&block[..n * ch]);
    }
    let Some(resampler) = resampler.as_mut() else {
        return Ok(Audio {
            rate,
            channels: ch,
            samples,
        });
    };
    let in_frames = (samples.len() / ch) as u64;
    let out_frames = (in_frames * u64::from(rate)).div_ceil(u64::from(info.sample_rate)) as usize;
    let mut out = vec![0.0f32; out_frames * ch];
    let (used, mut written) = resampler.process(&samples, &mut out);
    debug_assert_eq!(used as u64, in_frames);
    // The filter looks ahead: the last frames need silence after the end.
    let zeros = vec![0.0f32; BLOCK * ch];
    while written < out_frames {
        let (_, w) = resampler.process(&zeros, &mut out[written * ch..]);
        written += w;
    }
    Ok(Audio {
        rate,
        channels: ch,
        samples: out,
    })
}

/// Opens `path`, reads its header and decodes its first second (or all of it, if shorter),
/// so that a file damaged or cut short there is refused at load, not found mid-run.
///
/// Errors: as [`Decoder::open`] and [`Decoder::read`]: [`FileError::Corrupt`] for a FLAC or
/// WAV that ends before its header's length inside its first second, or damaged data there.
///
/// ```no_run
/// use downbeat_file::check;
/// use std::path::Path;
///
/// let info = check(Path::new("loop.ogg"))?;
/// println!("{} Hz, {} channels, {}", info.sample_rate, info.channels, info.codec);
/// # Ok::<(), downbeat_file::FileError>(())
/// ```
pub fn check(path: &Path) -> Result<FileInfo, FileError> {
    let mut decoder = Decoder::open(path)?;
    let info = decoder.info().clone();
    let mut block = vec![0.0f32; BLOCK * info.channels];
    let mut left = u64::from(info.sample_rate);
    while left > 0 {
        let n = decoder.read(&mut block)?;
        if n == 0 {
            if info.frames.is_none_or(|f| f > 0) && decoder.position() == 0 {
                return Err(FileError::Corrupt {
                    path: path.to_path_buf(),
                    at_frame: Some(0),
                    detail: "no audio could be decoded".into(),
                });
            }
            break;
        }
        left = left.saturating_sub(n as u64);
    }
    Ok(info)
}
