//! A 32-bit float WAV file written as it grows, valid at every moment: data first, then
//! the header's sizes, so a reader (or a crash) never sees a header that claims more than
//! the file holds. Past 4 GB the header becomes RF64 (EBU Tech 3306).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Bytes before the first sample: `RIFF` header (12), a 28-byte `JUNK` chunk that becomes
/// `ds64` when the file outgrows 32-bit sizes (36), `fmt ` with its (empty) extension size,
/// which readers expect of a float format (26), `data` header (8).
pub(crate) const HEADER_BYTES: u64 = 82;

/// The largest data size a plain WAV header can state: its RIFF size (data + 74) must fit
/// in 32 bits.
pub(crate) const WAV_MAX_DATA: u64 = u32::MAX as u64 - (HEADER_BYTES - 8);

/// A growing WAV file: append interleaved samples, then [`sync`](Self::sync) to make the
/// header say so.
pub(crate) struct WavStream {
    file: File,
    path: PathBuf,
    channels: u16,
    rate: u32,
    /// Bytes of samples written after the header.
    data: u64,
    /// Bytes of samples the header states.
    stated: u64,
    /// Data size past which the header is RF64.
    rf64_after: u64,
    /// The bytes of one write, reused.
    bytes: Vec<u8>,
}

impl WavStream {
    /// Creates (or truncates) `path` with a header stating no data. `rf64_after`: data
    /// bytes past which the header becomes RF64 (at most [`WAV_MAX_DATA`]).
    pub(crate) fn create(
        path: &Path,
        channels: usize,
        rate: u32,
        rf64_after: u64,
    ) -> io::Result<Self> {
        let file = File::create(path)?;
        let w = Self {
            file,
            path: path.to_path_buf(),
            channels: channels.clamp(1, u16::MAX as usize) as u16,
            rate,
            data: 0,
            stated: 0,
            rf64_after: rf64_after.min(WAV_MAX_DATA),
            bytes: Vec::new(),
        };
        w.write_header()?;
        Ok(w)
    }

    /// Where the file is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Appends interleaved samples (whole frames) after the data written so far. The
    /// header still states the old size until [`sync`](Self::sync).
    pub(crate) fn append(&mut self, samples: &[f32]) -> io::Result<()> {
        self.bytes.clear();
        self.bytes
            .extend(samples.iter().flat_map(|s| s.to_le_bytes()));
        self.file
            .write_all_at(&self.bytes, HEADER_BYTES + self.data)?;
        self.data += self.bytes.len() as u64;
        Ok(())
    }

    /// Appends `frames` frames of silence.
    pub(crate) fn append_silence(&mut self, frames: u64) -> io::Result<()> {
        let zeros = [0.0f32; 1024];
        let mut left = frames * u64::from(self.channels);
        while left > 0 {
            let n = left.min(zeros.len() as u64) as usize;
            self.append(&zeros[..n])?;
            left -= n as u64;
        }
        Ok(())
    }

    /// Frames written so far.
    pub(crate) fn frames(&self) -> u64 {
        self.data / (4 * u64::from(self.channels))
    }

    /// Makes the header state everything written: the data reaches the disk first
    /// (`fdatasync`), then the header is rewritten in one write, so that at no moment,
    /// crash or power loss included, does the header claim data the file lacks.
    pub(crate) fn sync(&mut self) -> io::Result<()> {
        if self.stated == self.data {
            return Ok(());
        }
        self.file.sync_data()?;
        self.stated = self.data;
        self.write_header()
    }

    /// Syncs and closes the file.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.sync()?;
        self.file.sync_all()
    }

    fn write_header(&self) -> io::Result<()> {
        self.file.write_all_at(&self.header(), 0)
    }

    /// The header stating `self.stated` bytes of data.
    fn header(&self) -> [u8; HEADER_BYTES as usize] {
        let data = self.stated;
        let rf64 = data > self.rf64_after;
        let (ch, rate) = (self.channels, self.rate);
        let block = ch * 4;
        let mut h = Vec::with_capacity(HEADER_BYTES as usize);
        let (riff_size, data_size) = if rf64 {
            (u32::MAX, u32::MAX)
        } else {
            ((data + HEADER_BYTES - 8) as u32, data as u32)
        };
        h.extend_from_slice(if rf64 { b"RF64" } else { b"RIFF" });
        h.extend_from_slice(&riff_size.to_le_bytes());
        h.extend_from_slice(b"WAVE");
        // The ds64 chunk's room, claimed in every file so the switch rewrites the header
        // only: RIFF size, data size, sample count (64-bit each), an empty table.
        h.extend_from_slice(if rf64 { b"ds64" } else { b"JUNK" });
        h.extend_from_slice(&28u32.to_le_bytes());
        let frames = data / u64::from(block);
        for v in [data + HEADER_BYTES - 8, data, frames] {
            h.extend_from_slice(&(if rf64 { v } else { 0 }).to_le_bytes());
        }
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(b"fmt ");
        h.extend_from_slice(&18u32.to_le_bytes());
        h.extend_from_slice(&3u16.to_le_bytes()); // WAVE_FORMAT_IEEE_FLOAT
        h.extend_from_slice(&ch.to_le_bytes());
        h.extend_from_slice(&rate.to_le_bytes());
        h.extend_from_slice(&(rate * u32::from(block)).to_le_bytes());
        h.extend_from_slice(&block.to_le_bytes());
        h.extend_from_slice(&32u16.to_le_bytes());
        h.extend_from_slice(&0u16.to_le_bytes());
        h.extend_from_slice(b"data");
        h.extend_from_slice(&data_size.to_le_bytes());
        h.try_into().expect("the header is HEADER_BYTES long")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    fn u64_at(b: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
    }

    #[test]
    fn header_states_only_synced_data_then_switches_to_rf64() {
        let dir = std::env::temp_dir().join(format!("downbeat-wavstream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.wav");
        let mut w = WavStream::create(&path, 2, 48_000, 64).unwrap();
        w.append(&[0.5; 8]).unwrap(); // 4 frames, 32 bytes
        let b = std::fs::read(&path).unwrap();
        assert_eq!(&b[0..4], b"RIFF");
        assert_eq!(u32_at(&b, 78), 0, "the header states data before a sync");
        w.sync().unwrap();
        let b = std::fs::read(&path).unwrap();
        assert_eq!((u32_at(&b, 4), u32_at(&b, 78)), (74 + 32, 32));
        assert_eq!(b.len() as u64, HEADER_BYTES + 32);
        assert_eq!(&b[12..16], b"JUNK");
        w.append(&[0.25; 16]).unwrap(); // 96 bytes in all: past 64, RF64
        w.finish().unwrap();
        let b = std::fs::read(&path).unwrap();
        assert_eq!(&b[0..4], b"RF64");
        assert_eq!(&b[12..16], b"ds64");
        assert_eq!((u32_at(&b, 4), u32_at(&b, 78)), (u32::MAX, u32::MAX));
        assert_eq!(
            (u64_at(&b, 20), u64_at(&b, 28), u64_at(&b, 36)),
            (74 + 96, 96, 12)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
