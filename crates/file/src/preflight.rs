//! Length fields checked before symphonia reads a file's header.
//!
//! symphonia 0.5 allocates the lengths that a FLAC file's VORBIS_COMMENT and PICTURE
//! metadata blocks state before it compares them with the block that holds them
//! (`vec![0; len]` in symphonia-metadata's `flac.rs` and `vorbis.rs`; 0.6 still does): one
//! damaged length asks the allocator for up to 4 GB, which aborts the process where the
//! system refuses it and takes that much address space where it does not. [`check`] walks
//! those blocks first, in the stream symphonia's probe finds, and refuses a length that runs
//! past its block as [`FileError::Corrupt`] naming the byte, before symphonia sees it.
//!
//! symphonia 0.5's WAV reader fills up the channel mask of a `WAVE_FORMAT_EXTENSIBLE`
//! header that names fewer channels than the header counts with a shift it does not check
//! (`fix_channel_mask` in symphonia-format-riff): a mask with no room above its highest
//! channel for the rest overflows, a panic with overflow checks on. It also makes the
//! stream's time base from the header's sample rate with `TimeBase::new`, which panics on a
//! rate of 0. [`check`] reads the `fmt ` chunk first and refuses either header (both found
//! by `bench fuzz`'s `audio_file` target).
//!
//! symphonia 0.5's ID3v2 reader allocates the size a frame states before it reads the frame:
//! a 35-byte tag holding a frame that states 4 GB asks the allocator for 4 GB. [`check`]
//! walks an ID3v2 tag's frames first and refuses a frame longer than what its tag has left
//! (found by `bench fuzz`'s `audio_file` target).
//!
//! symphonia 0.5's MP3 reader, asked for gapless playback, subtracts the encoder delay and
//! padding a LAME tag states from the length its Xing/Info tag states without a check
//! (`demuxer.rs` in symphonia-bundle-mp3): where they are longer, it panics with overflow
//! checks on and takes a length near 2^64 frames with them off. [`gapless`] reads the header
//! without the subtraction first and refuses such a file (found by `bench fuzz`'s
//! `audio_file` target).

use std::path::Path;

use symphonia::core::codecs::CODEC_TYPE_NULL;
use symphonia::core::formats::FormatOptions;
use symphonia::core::io::{MediaSource, MediaSourceStream, ReadBytes};
use symphonia::core::meta::MetadataOptions;
use symphonia::core::probe::{Hint, Instantiate};

use crate::FileError;

/// FLAC metadata block types whose contents symphonia sizes from their own fields.
const VORBIS_COMMENT: u32 = 4;
const PICTURE: u32 = 6;

/// Checks `source` (the file `path`, opened for this check alone).
///
/// Errors: [`FileError::Corrupt`] for a length that runs past its block. Anything else
/// wrong with the file (it cannot be read, it ends early) is left for symphonia to report
/// as it does.
pub(crate) fn check(source: Box<dyn MediaSource>, path: &Path) -> Result<(), FileError> {
    let mut mss = MediaSourceStream::new(source, Default::default());
    let probe = symphonia::default::get_probe();
    // As `Probe::format` does: metadata elements before the stream (an ID3v2 tag) are
    // passed over until a format's marker.
    loop {
        match probe.next(&mut mss) {
            Ok(Instantiate::Format(_)) => {
                let at = mss.pos();
                let mut marker = [0u8; 4];
                match mss.read_buf_exact(&mut marker).map(|()| &marker) {
                    Ok(b"fLaC") => flac_blocks(&mut mss, at + 4, path)?,
                    Ok(b"RIFF") => wave_format(&mut mss, path)?,
                    _ => {}
                }
                break;
            }
            Ok(Instantiate::Metadata(_)) => {
                if !id3v2_frames(&mut mss, path)? {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    Ok(())
}

/// Checks `source` (the file `path`, opened for this check alone, `hint` naming its
/// format as the file's name does) for a gapless trim longer than the length it trims: see
/// the module docs.
///
/// Errors: [`FileError::Corrupt`] naming both lengths. Anything else is left for the real
/// open to report.
pub(crate) fn gapless(
    source: Box<dyn MediaSource>,
    hint: &Hint,
    path: &Path,
) -> Result<(), FileError> {
    let stream = MediaSourceStream::new(source, Default::default());
    let options = FormatOptions {
        enable_gapless: false,
        ..Default::default()
    };
    let Ok(probed) =
        symphonia::default::get_probe().format(hint, stream, &options, &MetadataOptions::default())
    else {
        return Ok(());
    };
    let Some(track) = probed
        .format
        .tracks()
        .iter()
        .find(|t| t.codec_params.codec != CODEC_TYPE_NULL)
    else {
        return Ok(());
    };
    let p = &track.codec_params;
    if let (Some(frames), Some(delay), Some(padding)) = (p.n_frames, p.delay, p.padding) {
        let trim = u64::from(delay) + u64::from(padding);
        if trim > frames {
            return Err(FileError::corrupt_header(
                path,
                format!(
                    "its header says it holds {frames} frames, fewer than the encoder delay \
                     and padding it says to trim from them ({delay} and {padding})"
                ),
            ));
        }
    }
    Ok(())
}

/// The format tag of a `WAVE_FORMAT_EXTENSIBLE` header.
const EXTENSIBLE: u16 = 0xFFFE;

/// Walks a RIFF/WAVE file's chunks, after its `RIFF` marker, to its `fmt ` chunk and checks
/// its sample rate, which must not be 0, and an extensible header's channel mask against
/// its channel count: the channels the mask lacks must fit above its highest bit, as
/// symphonia shifts them in. A file that ends first is left for symphonia.
fn wave_format(mss: &mut MediaSourceStream, path: &Path) -> Result<(), FileError> {
    let mut riff = [0u8; 8];
    if mss.read_buf_exact(&mut riff).is_err() || &riff[4..] != b"WAVE" {
        return Ok(());
    }
    loop {
        let mut head = [0u8; 8];
        if mss.read_buf_exact(&mut head).is_err() {
            return Ok(());
        }
        let len = u32::from_le_bytes(head[4..].try_into().expect("four bytes"));
        if &head[..4] != b"fmt " {
            // Chunks are padded to an even length.
            if mss
                .ignore_bytes(u64::from(len) + u64::from(len & 1))
                .is_err()
            {
                return Ok(());
            }
            continue;
        }
        // The common fields (16 bytes), then an extensible header's (8 more), checked in
        // the order symphonia reads them: the channel mask as it parses the chunk, the
        // rate as it makes the stream's time base.
        let mut fmt = [0u8; 24];
        if len < 16 || mss.read_buf_exact(&mut fmt[..16]).is_err() {
            return Ok(());
        }
        let tag = u16::from_le_bytes([fmt[0], fmt[1]]);
        if tag == EXTENSIBLE && len >= 24 && mss.read_buf_exact(&mut fmt[16..]).is_ok() {
            let channels = u32::from(u16::from_le_bytes([fmt[2], fmt[3]]));
            let mask = u32::from_le_bytes(fmt[20..24].try_into().expect("four bytes"));
            let missing = channels.saturating_sub(mask.count_ones());
            if missing > mask.leading_zeros() {
                return Err(FileError::corrupt_header(
                    path,
                    format!(
                        "its header counts {channels} channels, and its channel mask \
                         ({mask:#010x}) names {} with room for {} more",
                        mask.count_ones(),
                        mask.leading_zeros()
                    ),
                ));
            }
        }
        if u32::from_le_bytes(fmt[4..8].try_into().expect("four bytes")) == 0 {
            return Err(FileError::corrupt_header(
                path,
                "its header states a sample rate of 0 Hz",
            ));
        }
        return Ok(());
    }
}

/// Walks an ID3v2 tag's frames and passes over the tag: its 10-byte header, its size (28
/// bits, 7 a byte), an extended header, the frames, and the 10-byte footer its flags may
/// announce. False when the file ends first (left for symphonia, which says so).
///
/// Errors: [`FileError::Corrupt`] for a frame (or extended header) that states more bytes
/// than its tag has left. Not walked: a tag unsynchronised as a whole (ID3v2.2 and 2.3),
/// whose frame headers may hold inserted bytes.
fn id3v2_frames(mss: &mut MediaSourceStream, path: &Path) -> Result<bool, FileError> {
    let mut header = [0u8; 10];
    if mss.read_buf_exact(&mut header).is_err() {
        return Ok(false);
    }
    let syncsafe = |b: &[u8]| b.iter().fold(0u64, |n, &b| (n << 7) | u64::from(b & 0x7F));
    let plain = |b: &[u8]| b.iter().fold(0u64, |n, &b| (n << 8) | u64::from(b));
    let (version, flags) = (header[3], header[5]);
    let size = syncsafe(&header[6..10]);
    let footer = if flags & 0x10 != 0 { 10 } else { 0 };
    let corrupt = |what: String, states: u64, left: u64| {
        FileError::corrupt_header(
            path,
            format!("{what} states {states} bytes, and its ID3v2 tag has {left} left"),
        )
    };
    let mut left = size;
    let walk = flags & 0x80 == 0 || version >= 4;
    if walk && flags & 0x40 != 0 && version >= 3 {
        let mut ext = [0u8; 4];
        if mss.read_buf_exact(&mut ext).is_err() {
            return Ok(false);
        }
        // ID3v2.4 counts the size field in; ID3v2.3 does not.
        let (rest, counted) = if version >= 4 {
            (syncsafe(&ext), 4)
        } else {
            (plain(&ext) + 4, 4)
        };
        if rest > left || rest < counted {
            return Err(corrupt("its extended header".into(), rest, left));
        }
        if mss.ignore_bytes(rest - counted).is_err() {
            return Ok(false);
        }
        left -= rest;
    }
    let (id_len, head_len) = if version <= 2 { (3, 6) } else { (4, 10) };
    while walk && left >= head_len {
        let mut frame = [0u8; 10];
        if mss.read_buf_exact(&mut frame[..head_len as usize]).is_err() {
            return Ok(false);
        }
        left -= head_len;
        if frame[0] == 0 {
            // Padding: zeros to the end of the tag.
            break;
        }
        let id = String::from_utf8_lossy(&frame[..id_len]).into_owned();
        let states = match version {
            0..=2 => plain(&frame[3..6]),
            3 => plain(&frame[4..8]),
            _ => syncsafe(&frame[4..8]),
        };
        if states > left {
            return Err(corrupt(format!("ID3v2 frame `{id}`"), states, left));
        }
        if mss.ignore_bytes(states).is_err() {
            return Ok(false);
        }
        left -= states;
    }
    Ok(mss.ignore_bytes(left + footer).is_ok())
}

/// Walks the metadata blocks that start at byte `at`, after the `fLaC` marker. A file that
/// ends inside them is left for symphonia, which says so.
fn flac_blocks(mss: &mut MediaSourceStream, mut at: u64, path: &Path) -> Result<(), FileError> {
    loop {
        let Ok(header) = mss.read_be_u32() else {
            return Ok(());
        };
        let (last, kind, len) = (header >> 31 == 1, (header >> 24) & 0x7F, header & 0xFF_FFFF);
        let body = at + 4;
        if kind == VORBIS_COMMENT || kind == PICTURE {
            // Read as it comes, never more than the file holds (at most 16 MiB: the length
            // has 24 bits). A file that ends inside the block still has its lengths checked
            // against what it holds: symphonia allocates them before it finds the end.
            let mut block = Vec::new();
            let mut limited = std::io::Read::take(&mut *mss, u64::from(len));
            let whole = std::io::Read::read_to_end(&mut limited, &mut block).is_ok()
                && block.len() == len as usize;
            let overrun = if kind == VORBIS_COMMENT {
                comment_overrun(&block)
            } else {
                picture_overrun(&block)
            };
            if let Some((offset, what, claimed)) = overrun {
                return Err(FileError::corrupt_header(
                    path,
                    format!(
                        "the {what} length at byte {} says {claimed} bytes, more than the \
                         rest of the metadata block at byte {at} holds",
                        body + offset as u64
                    ),
                ));
            }
            if !whole {
                return Ok(());
            }
        } else if mss.ignore_bytes(u64::from(len)).is_err() {
            return Ok(());
        }
        at = body + u64::from(len);
        if last {
            return Ok(());
        }
    }
}

/// A length field's offset in a block, what it measures, and the bytes it claims.
type Overrun = (usize, &'static str, u32);

/// Why a walk through a block stopped early.
enum Stop {
    /// The block ends before a field: symphonia reports it, as a short read.
    End,
    /// A length runs past the block.
    Overrun(Overrun),
}

/// Reads 4-byte lengths from a block and checks that each fits in what follows it.
struct Fields<'a> {
    block: &'a [u8],
    pos: usize,
    big_endian: bool,
}

impl Fields<'_> {
    fn number(&mut self) -> Result<u32, Stop> {
        let bytes: [u8; 4] = self
            .block
            .get(self.pos..self.pos + 4)
            .and_then(|b| b.try_into().ok())
            .ok_or(Stop::End)?;
        self.pos += 4;
        Ok(if self.big_endian {
            u32::from_be_bytes(bytes)
        } else {
            u32::from_le_bytes(bytes)
        })
    }

    /// A length and the bytes it measures.
    fn skip_counted(&mut self, what: &'static str) -> Result<(), Stop> {
        let at = self.pos;
        let len = self.number()?;
        if len as usize > self.block.len() - self.pos {
            return Err(Stop::Overrun((at, what, len)));
        }
        self.pos += len as usize;
        Ok(())
    }
}

fn overrun(walk: Result<(), Stop>) -> Option<Overrun> {
    match walk {
        Err(Stop::Overrun(o)) => Some(o),
        _ => None,
    }
}

/// A Vorbis comment block: vendor string, comment count, then each comment, every length
/// little-endian.
fn comment_overrun(block: &[u8]) -> Option<Overrun> {
    let mut f = Fields {
        block,
        pos: 0,
        big_endian: false,
    };
    let mut walk = || {
        f.skip_counted("vendor string")?;
        // Each comment takes at least its 4-byte length: a count past that ends the walk.
        for _ in 0..f.number()? {
            f.skip_counted("comment")?;
        }
        Ok(())
    };
    overrun(walk())
}

/// A picture block: type, MIME type, description, four numbers, then the picture data,
/// every field big-endian.
fn picture_overrun(block: &[u8]) -> Option<Overrun> {
    let mut f = Fields {
        block,
        pos: 0,
        big_endian: true,
    };
    let mut walk = || {
        f.number()?;
        f.skip_counted("picture MIME type")?;
        f.skip_counted("picture description")?;
        for _ in 0..4 {
            f.number()?;
        }
        f.skip_counted("picture data")
    };
    overrun(walk())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comment_lengths_past_the_block_are_found_at_their_byte() {
        let mut ok = Vec::new();
        ok.extend(3u32.to_le_bytes());
        ok.extend(b"abc");
        ok.extend(1u32.to_le_bytes());
        ok.extend(2u32.to_le_bytes());
        ok.extend(b"hi");
        assert_eq!(comment_overrun(&ok), None);
        let mut bad = ok.clone();
        bad[11..15].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(comment_overrun(&bad), Some((11, "comment", u32::MAX)));
        // Cut short: symphonia's own error, not ours.
        assert_eq!(comment_overrun(&ok[..9]), None);
    }

    #[test]
    fn picture_lengths_past_the_block_are_found_at_their_byte() {
        let mut ok = Vec::new();
        ok.extend(3u32.to_be_bytes());
        ok.extend(9u32.to_be_bytes());
        ok.extend(b"image/png");
        ok.extend(0u32.to_be_bytes());
        ok.extend([0u8; 16]);
        ok.extend(1u32.to_be_bytes());
        ok.push(7);
        assert_eq!(picture_overrun(&ok), None);
        let mut bad = ok.clone();
        let data_at = ok.len() - 5;
        bad[data_at..data_at + 4].copy_from_slice(&0x8000_0000u32.to_be_bytes());
        assert_eq!(
            picture_overrun(&bad),
            Some((data_at, "picture data", 0x8000_0000))
        );
    }
}
