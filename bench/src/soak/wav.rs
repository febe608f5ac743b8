//! Checks the run's recording without trusting the writer: walks the RIFF or RF64 chunks,
//! checks the sizes the header states against the file, then reads every sample.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

/// What the recording holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recording {
    /// Why the file is not a valid 32-bit float WAV or RF64 file whose header states its
    /// size; `None` when it is.
    pub invalid: Option<String>,
    pub channels: u16,
    pub rate: u32,
    pub frames: u64,
    /// Samples that are NaN or infinite.
    pub nonfinite: u64,
    /// Over every sample of every channel.
    pub rms: f64,
    /// Frames that are exactly zero on every channel from the start (the graph filling).
    pub leading_silence: u64,
    /// The longest run of such frames from `gaps_from` on (past the start, where the
    /// sources begin at their own moments).
    pub longest_gap: u64,
    /// The frame that run ends at.
    pub longest_gap_end: u64,
}

/// The format and where the samples are.
struct Layout {
    channels: u16,
    rate: u32,
    data_at: u64,
    data_len: u64,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Reads and checks the header of a file `file_len` bytes long whose first bytes are `head`.
fn layout(head: &[u8], file_len: u64) -> Result<Layout, String> {
    if head.len() < 12 || &head[8..12] != b"WAVE" {
        return Err("not a WAVE file".into());
    }
    let rf64 = match &head[0..4] {
        b"RIFF" => false,
        b"RF64" => true,
        other => return Err(format!("starts with {other:?}, not RIFF or RF64")),
    };
    let mut riff_len = u64::from(u32_at(head, 4));
    let mut ds64_data = None;
    let mut fmt = None;
    let mut at = 12;
    while at + 8 <= head.len() {
        let (id, len) = (&head[at..at + 4], u64::from(u32_at(head, at + 4)));
        let body = at + 8;
        match id {
            b"ds64" if len >= 24 && body + 24 <= head.len() => {
                riff_len = u64_at(head, body);
                ds64_data = Some(u64_at(head, body + 8));
            }
            b"fmt " if len >= 16 && body + 16 <= head.len() => fmt = Some(body),
            b"data" => {
                let data_len = match (rf64, ds64_data) {
                    (true, Some(n)) => n,
                    (true, None) => return Err("RF64 without a ds64 chunk".into()),
                    (false, _) => len,
                };
                let fmt = fmt.ok_or("the data chunk comes before any fmt chunk")?;
                let (mut tag, channels) = (u16_at(head, fmt), u16_at(head, fmt + 2));
                // WAVE_FORMAT_EXTENSIBLE: the format is the sub-format GUID's first two bytes.
                if tag == 0xFFFE && fmt + 26 <= head.len() {
                    tag = u16_at(head, fmt + 24);
                }
                let (rate, align, bits) = (
                    u32_at(head, fmt + 4),
                    u16_at(head, fmt + 12),
                    u16_at(head, fmt + 14),
                );
                if tag != 3
                    || bits != 32
                    || channels == 0
                    || u32::from(align) != 4 * u32::from(channels)
                {
                    return Err(format!(
                        "format {tag}, {bits} bits, {channels} channels, {align}-byte frames: \
                         not 32-bit float"
                    ));
                }
                let data_at = body as u64;
                if riff_len + 8 != file_len {
                    return Err(format!(
                        "the header states a file of {} bytes; it has {file_len}",
                        riff_len + 8
                    ));
                }
                if data_at + data_len != file_len || data_len % u64::from(align) != 0 {
                    return Err(format!(
                        "the header states {data_len} bytes of samples from byte {data_at}; the \
                         file has {file_len} bytes"
                    ));
                }
                return Ok(Layout {
                    channels,
                    rate,
                    data_at,
                    data_len,
                });
            }
            _ => {}
        }
        // Chunks are padded to an even length.
        at = body + (len as usize).next_multiple_of(2);
    }
    Err("no data chunk in the header".into())
}

/// Checks the file at `path` and reads every sample; gaps count from frame `gaps_from`.
pub fn check(path: &Path, gaps_from: u64) -> Recording {
    match read(path, gaps_from) {
        Ok(r) => r,
        Err(why) => Recording {
            invalid: Some(why),
            ..Recording::default()
        },
    }
}

fn read(path: &Path, gaps_from: u64) -> Result<Recording, String> {
    let failed = |e: std::io::Error| format!("{}: {e}", path.display());
    let file = File::open(path).map_err(failed)?;
    let file_len = file.metadata().map_err(failed)?.len();
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut head = vec![0u8; 4096.min(file_len as usize)];
    reader.read_exact(&mut head).map_err(failed)?;
    let l = layout(&head, file_len)?;
    let ch = usize::from(l.channels);
    let mut r = Recording {
        channels: l.channels,
        rate: l.rate,
        frames: l.data_len / (4 * ch as u64),
        ..Recording::default()
    };
    // The samples after the header bytes already read, then the rest of the file.
    let mut pending: Vec<u8> = head[l.data_at as usize..].to_vec();
    let (mut sum_sq, mut silence, mut frame) = (0.0f64, 0u64, vec![0f32; ch]);
    let (mut heard, mut at) = (false, 0u64);
    let mut buf = vec![0u8; 1 << 20];
    let mut left = l.data_len - pending.len() as u64;
    loop {
        let whole = pending.len() / (4 * ch) * (4 * ch);
        for bytes in pending[..whole].chunks_exact(4 * ch) {
            for (c, s) in frame.iter_mut().zip(bytes.chunks_exact(4)) {
                *c = f32::from_le_bytes(s.try_into().expect("4 bytes"));
            }
            let mut silent = true;
            for &x in &frame {
                if x.is_finite() {
                    sum_sq += f64::from(x) * f64::from(x);
                } else {
                    r.nonfinite += 1;
                }
                silent &= x == 0.0;
            }
            if !silent {
                heard = true;
                silence = 0;
            } else if !heard {
                r.leading_silence += 1;
            } else if at >= gaps_from {
                silence += 1;
                if silence > r.longest_gap {
                    (r.longest_gap, r.longest_gap_end) = (silence, at + 1);
                }
            }
            at += 1;
        }
        pending.drain(..whole);
        if left == 0 {
            break;
        }
        let n = (buf.len() as u64).min(left) as usize;
        reader.read_exact(&mut buf[..n]).map_err(failed)?;
        pending.extend_from_slice(&buf[..n]);
        left -= n as u64;
    }
    let samples = r.frames * ch as u64;
    r.rms = if samples > 0 {
        (sum_sq / samples as f64).sqrt()
    } else {
        0.0
    };
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, samples: &[f32]) {
        let spec = hound::WavSpec {
            channels: 2,
            sample_rate: 44_100,
            bits_per_sample: 32,
            sample_format: hound::SampleFormat::Float,
        };
        let mut w = hound::WavWriter::create(path, spec).unwrap();
        for &s in samples {
            w.write_sample(s).unwrap();
        }
        w.finalize().unwrap();
    }

    #[test]
    fn reads_what_was_written_and_refuses_a_short_file() {
        let dir = std::env::temp_dir().join(format!("soak-wav-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.wav");
        // 2 frames of silence, 3 of sound, 4 of silence, 1 of sound with a NaN.
        let mut samples = vec![0.0; 4];
        samples.extend([0.5, -0.5, 0.25, 0.25, 0.1, 0.0]);
        samples.extend([0.0; 8]);
        samples.extend([f32::NAN, 0.5]);
        write(&path, &samples);
        let r = check(&path, 0);
        assert_eq!(r.invalid, None);
        assert_eq!((r.channels, r.rate, r.frames), (2, 44_100, 10));
        assert_eq!((r.nonfinite, r.leading_silence, r.longest_gap), (1, 2, 4));
        // Gaps judged from frame 7: two of the four.
        assert_eq!(check(&path, 7).longest_gap, 2);
        assert!(r.rms > 0.1, "{r:?}");
        // Cut short, the header states more than the file holds.
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 8]).unwrap();
        assert!(check(&path, 0).invalid.is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
