//! [`Decoder`]: a streaming decoder over symphonia, with sample-exact seeking.

use std::fs::File;
use std::io;
use std::path::Path;

use symphonia::core::audio::SampleBuffer;
use symphonia::core::codecs::{self, DecoderOptions, CODEC_TYPE_NULL};
use symphonia::core::errors::{Error as SymphoniaError, SeekErrorKind};
use symphonia::core::formats::{FormatOptions, FormatReader, SeekMode, SeekTo};
use symphonia::core::io::{MediaSource, MediaSourceStream};
use symphonia::core::meta::MetadataOptions;
use symphonia::core::probe::Hint;
use symphonia::core::units::TimeBase;

use crate::{FileError, FileInfo};

/// `path` opened for reading, refused if it is a folder.
fn open_file(path: &Path) -> Result<File, FileError> {
    let file = File::open(path).map_err(|source| FileError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err(FileError::Open {
            path: path.to_path_buf(),
            source: io::Error::other("is a directory"),
        });
    }
    Ok(file)
}

/// A streaming decoder: interleaved `f32` frames at the file's own rate and channel count.
///
/// WAV (8/16/24/32-bit integer, 32/64-bit float), FLAC, Ogg Vorbis and MP3 at any rate and
/// channel count, through `symphonia`. MP3 and Vorbis come out gapless: the encoder's delay
/// and padding are removed, so frame 0 is the first frame of the original signal. (symphonia's
/// MP3 and Vorbis decoders clamp their output to ±1, where ffmpeg's let overshoot through: a
/// lossy file mastered at full scale may be clipped slightly. Measured against ffmpeg on
/// files with headroom: the same frames, residual -117 to -138 dB, `tests/lossy.rs`.)
///
/// It reads the file and allocates, so it runs **off the audio thread** (the player's reader
/// thread, a sampler's loader).
///
/// ```no_run
/// use downbeat_file::Decoder;
/// use std::path::Path;
///
/// let mut dec = Decoder::open(Path::new("take.flac"))?;
/// let channels = dec.info().channels;
/// let mut block = vec![0.0f32; 4096 * channels];
/// dec.seek(48_000)?; // one second in, at a 48 kHz file's rate
/// loop {
///     let frames = dec.read(&mut block)?;
///     if frames == 0 {
///         break; // end of file
///     }
///     // use block[..frames * channels]
/// }
/// # Ok::<(), downbeat_file::FileError>(())
/// ```
pub struct Decoder {
    info: FileInfo,
    format: Box<dyn FormatReader>,
    decoder: Box<dyn codecs::Decoder>,
    track_id: u32,
    time_base: Option<TimeBase>,
    /// Whether the header's frame count is exact, so ending early is damage (PCM, FLAC).
    exact_length: bool,
    samples: Option<SampleBuffer<f32>>,
    /// Decoded samples not yet returned: `samples[pending..pending_end]`.
    pending: usize,
    pending_end: usize,
    /// The frame the next returned sample belongs to.
    position: u64,
    /// After a seek: the frame to start at; frames before it are decoded and dropped.
    seek_target: Option<u64>,
    /// After a seek: the first decoded frame, when it came after the target.
    overshoot: Option<u64>,
    ended: bool,
}

/// Frames decoded before a seek's target in lossy formats, at first (doubled while too few).
const PREROLL: u64 = 4096;

fn hint_for(path: &Path) -> Hint {
    let mut hint = Hint::new();
    if let Some(ext) = path.extension().and_then(|e| e.to_str()) {
        hint.with_extension(ext);
    }
    hint
}

/// Symphonia's error as ours, about `path`, met at `at_frame` (`None`: in the header).
fn convert(path: &Path, at_frame: Option<u64>, err: SymphoniaError) -> FileError {
    let path = path.to_path_buf();
    match err {
        SymphoniaError::IoError(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            FileError::Corrupt {
                path,
                at_frame,
                detail: "the file ends too early".into(),
            }
        }
        SymphoniaError::IoError(source) => FileError::Read {
            path,
            at_frame,
            source,
        },
        SymphoniaError::DecodeError(detail) => FileError::Corrupt {
            path,
            at_frame,
            detail: detail.to_string(),
        },
        SymphoniaError::Unsupported(detail) => FileError::Unsupported {
            path,
            detail: detail.to_string(),
        },
        SymphoniaError::LimitError(detail) => FileError::Corrupt {
            path,
            at_frame,
            detail: format!("limit exceeded: {detail}"),
        },
        SymphoniaError::ResetRequired => FileError::Unsupported {
            path,
            detail: "the stream changes its parameters mid-file".into(),
        },
        SymphoniaError::SeekError(kind) => FileError::Corrupt {
            path,
            at_frame,
            detail: format!("seek failed: {kind:?}"),
        },
    }
}

fn is_end_of_stream(err: &SymphoniaError) -> bool {
    matches!(err, SymphoniaError::IoError(e) if e.kind() == io::ErrorKind::UnexpectedEof)
}

impl Decoder {
    /// Opens `path` and reads its header (no audio is decoded yet: [`check`](crate::check)
    /// also decodes the first second).
    ///
    /// Errors: [`FileError::Open`] when the file cannot be opened, [`FileError::Unsupported`]
    /// when it is not audio we decode, [`FileError::Corrupt`] for a damaged header.
    ///
    /// A path handed over as bytes ([`memory::add_file`](crate::memory::add_file)) is
    /// decoded from those bytes, without looking at the disk.
    pub fn open(path: &Path) -> Result<Decoder, FileError> {
        let open = || -> Result<Box<dyn MediaSource>, FileError> {
            Ok(match crate::memory::lookup(path) {
                Some(bytes) => Box::new(io::Cursor::new(bytes)),
                None => Box::new(open_file(path)?),
            })
        };
        // Once for the lengths symphonia would trust (see `preflight`), once for the trim it
        // would subtract unchecked, then for symphonia.
        crate::preflight::check(open()?, path)?;
        crate::preflight::gapless(open()?, &hint_for(path), path)?;
        let source = open()?;
        let stream = MediaSourceStream::new(source, Default::default());
        let options = FormatOptions {
            enable_gapless: true,
            ..Default::default()
        };
        let probed = symphonia::default::get_probe()
            .format(
                &hint_for(path),
                stream,
                &options,
                &MetadataOptions::default(),
            )
            .map_err(|e| match e {
                SymphoniaError::Unsupported(_) => FileError::Unsupported {
                    path: path.to_path_buf(),
                    detail: "not a WAV, FLAC, Ogg Vorbis or MP3 file".into(),
                },
                e if is_end_of_stream(&e) => {
                    FileError::corrupt_header(path, "the file ends inside its header")
                }
                e => convert(path, None, e),
            })?;
        let format = probed.format;
        let track = format
            .tracks()
            .iter()
            .find(|t| t.codec_params.codec != CODEC_TYPE_NULL)
            .ok_or_else(|| FileError::Unsupported {
                path: path.to_path_buf(),
                detail: "no audio track".into(),
            })?;
        let params = &track.codec_params;
        let registry = symphonia::default::get_codecs();
        let codec = registry
            .get_codec(params.codec)
            .map(|d| d.short_name)
            .ok_or_else(|| FileError::Unsupported {
                path: path.to_path_buf(),
                detail: format!("no decoder for codec {}", params.codec),
            })?;
        let decoder = registry
            .make(params, &DecoderOptions::default())
            .map_err(|e| convert(path, None, e))?;
        let sample_rate = params
            .sample_rate
            .filter(|&r| r > 0)
            .ok_or_else(|| FileError::corrupt_header(path, "the header gives no sample rate"))?;
        let channels = params
            .channels
            .map(|c| c.count())
            .filter(|&c| c > 0)
            .ok_or_else(|| FileError::corrupt_header(path, "the header gives no channel count"))?;
        let exact_length = codec.starts_with("pcm") || codec == "flac";
        let info = FileInfo {
            path: path.to_path_buf(),
            sample_rate,
            channels,
            frames: params.n_frames,
            codec,
            bits_per_sample: params.bits_per_sample.or(params.bits_per_coded_sample),
        };
        Ok(Decoder {
            info,
            track_id: track.id,
            time_base: params.time_base,
            exact_length,
            format,
            decoder,
            samples: None,
            pending: 0,
            pending_end: 0,
            position: 0,
            seek_target: None,
            overshoot: None,
            ended: false,
        })
    }

    /// What the header says.
    pub fn info(&self) -> &FileInfo {
        &self.info
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.info.path
    }

    /// The frame the next [`read`](Decoder::read) starts at.
    pub fn position(&self) -> u64 {
        self.seek_target.unwrap_or(self.position)
    }

    /// Decodes up to `out.len() / channels` frames into `out` (interleaved, the file's channel
    /// count); returns the frames written, `Ok(0)` at the end of the file.
    ///
    /// Errors: [`FileError::Corrupt`] for damaged data (with the frame where it was found; the
    /// damaged packet is skipped, so reading again goes on after it), or a PCM or FLAC file
    /// that ends before the length its header gives; [`FileError::Read`] when the disk fails.
    pub fn read(&mut self, out: &mut [f32]) -> Result<usize, FileError> {
        let ch = self.info.channels;
        let capacity = out.len() / ch;
        let mut written = 0;
        while written < capacity {
            if self.pending == self.pending_end {
                if self.ended || !self.decode_packet()? {
                    break;
                }
                continue;
            }
            let samples = self
                .samples
                .as_ref()
                .expect("pending samples have a buffer");
            let n = ((self.pending_end - self.pending) / ch).min(capacity - written);
            out[written * ch..(written + n) * ch]
                .copy_from_slice(&samples.samples()[self.pending..self.pending + n * ch]);
            self.pending += n * ch;
            written += n;
            self.position += n as u64;
        }
        Ok(written)
    }

    /// Decodes the next packet into `samples`; false at the end of the file.
    fn decode_packet(&mut self) -> Result<bool, FileError> {
        let path = &self.info.path;
        let at = Some(self.position());
        let packet = loop {
            match self.format.next_packet() {
                Ok(p) if p.track_id() == self.track_id => break p,
                Ok(_) => continue,
                Err(e) if is_end_of_stream(&e) => {
                    self.ended = true;
                    return self.check_end();
                }
                Err(e) => return Err(convert(path, at, e)),
            }
        };
        let decoded = match self.decoder.decode(&packet) {
            Ok(d) => d,
            Err(e) => return Err(convert(path, at, e)),
        };
        let frames = decoded.frames();
        let spec = *decoded.spec();
        if spec.channels.count() != self.info.channels {
            return Err(FileError::Unsupported {
                path: path.clone(),
                detail: format!(
                    "the channel count changes from {} to {} mid-file",
                    self.info.channels,
                    spec.channels.count()
                ),
            });
        }
        let needed = decoded.capacity() as u64;
        if self
            .samples
            .as_ref()
            .is_none_or(|b| (b.capacity() as u64) < needed)
        {
            self.samples = Some(SampleBuffer::new(needed, spec));
        }
        let samples = self.samples.as_mut().expect("made above");
        samples.copy_interleaved_ref(decoded);
        self.pending = 0;
        self.pending_end = frames * self.info.channels;
        if let Some(target) = self.seek_target {
            let start = self.frame_of(packet.ts());
            if start > target {
                // `seek` starts again further back.
                self.overshoot = Some(start);
                self.pending_end = 0;
                return Ok(true);
            }
            let skip = (target - start).min(frames as u64);
            self.pending = skip as usize * self.info.channels;
            if start + frames as u64 > target {
                self.seek_target = None;
                self.position = target;
            }
        }
        Ok(true)
    }

    /// The frame of a packet timestamp.
    fn frame_of(&self, ts: u64) -> u64 {
        match self.time_base {
            Some(tb) if tb.numer != 1 || tb.denom != self.info.sample_rate => {
                let time = tb.calc_time(ts);
                time.seconds * u64::from(self.info.sample_rate)
                    + (time.frac * f64::from(self.info.sample_rate)).round() as u64
            }
            _ => ts,
        }
    }

    /// At the end of the stream: damage if the header promised more (PCM, FLAC).
    fn check_end(&mut self) -> Result<bool, FileError> {
        let here = self.position();
        match self.info.frames {
            Some(frames) if self.exact_length && here < frames => Err(FileError::Corrupt {
                path: self.info.path.clone(),
                at_frame: Some(here),
                detail: format!("the file ends at frame {here} but its header says {frames}"),
            }),
            _ => Ok(false),
        }
    }

    /// Seeks so that the next [`read`](Decoder::read) starts exactly at `frame` (the file's
    /// rate), for every format: symphonia seeks to a packet at or before it (for MP3 and
    /// Vorbis, at least 4096 frames before, so that the decoder's overlap and filter-bank
    /// history is rebuilt) and the frames before `frame` are decoded and dropped: what follows
    /// is what decoding from the start gives. Seeking to the end is allowed (the next read
    /// returns 0). Decodes up to the target before returning.
    ///
    /// Errors: [`FileError::SeekOutOfRange`] beyond the end when the length is known;
    /// [`FileError::Corrupt`] or [`FileError::Read`] when the file cannot be sought.
    pub fn seek(&mut self, frame: u64) -> Result<(), FileError> {
        if let Some(frames) = self.info.frames {
            if frame > frames {
                return Err(FileError::SeekOutOfRange {
                    path: self.info.path.clone(),
                    frame,
                    frames,
                });
            }
            if frame == frames {
                // Some demuxers refuse to seek to the very end; nothing is left to read there.
                self.pending = 0;
                self.pending_end = 0;
                self.ended = true;
                self.position = frame;
                self.seek_target = None;
                return Ok(());
            }
        }
        // Lossy decoders need history (MP3's overlap and synthesis filter bank, Vorbis'
        // overlapping windows): start that far before the target and drop what comes before it,
        // further back each time the first decoded frame still lands after the target.
        let mut preroll = if self.exact_length { 0 } else { PREROLL };
        loop {
            let start = frame.saturating_sub(preroll);
            self.seek_demuxer(start)?;
            self.decoder.reset();
            self.seek_target = Some(frame);
            self.overshoot = None;
            while self.seek_target.is_some() && !self.ended && self.overshoot.is_none() {
                self.decode_packet()?;
            }
            match self.overshoot {
                None => return Ok(()),
                Some(landed) if start == 0 => {
                    return Err(FileError::Corrupt {
                        path: self.info.path.clone(),
                        at_frame: Some(frame),
                        detail: format!("a seek to frame 0 first decoded frame {landed}"),
                    })
                }
                Some(_) => preroll = (preroll * 2).max(PREROLL),
            }
        }
    }

    /// Moves the demuxer to a packet at or before `frame`.
    fn seek_demuxer(&mut self, frame: u64) -> Result<(), FileError> {
        let to = match self.time_base {
            Some(tb) if tb.numer != 1 || tb.denom != self.info.sample_rate => {
                // Codec time base differs from the sample rate: go through seconds.
                let seconds = frame as f64 / f64::from(self.info.sample_rate);
                SeekTo::Time {
                    time: seconds.into(),
                    track_id: Some(self.track_id),
                }
            }
            _ => SeekTo::TimeStamp {
                ts: frame,
                track_id: self.track_id,
            },
        };
        self.pending = 0;
        self.pending_end = 0;
        self.ended = false;
        match self.format.seek(SeekMode::Accurate, to) {
            Ok(_) => Ok(()),
            Err(SymphoniaError::SeekError(SeekErrorKind::OutOfRange)) => {
                // Past the end of a file of unknown length: nothing left to read.
                self.ended = true;
                Ok(())
            }
            Err(e) => Err(convert(&self.info.path, Some(frame), e)),
        }
    }
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder")
            .field("info", &self.info)
            .field("position", &self.position())
            .finish_non_exhaustive()
    }
}
