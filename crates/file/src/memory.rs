//! Files handed over as bytes instead of read from disk: in a browser (the wasm engine)
//! there is no file system, so the page hands the engine the samples a project names, by the
//! path as the project writes it, and [`Decoder::open`](crate::Decoder::open) finds them
//! here before it looks at the disk. The bytes are decoded by the same code as a file's.
//!
//! ```
//! use std::path::Path;
//! downbeat_file::memory::add_file("kit/blip.wav", wav_bytes());
//! let audio = downbeat_file::decode_all(Path::new("kit/blip.wav"), 8000)?;
//! assert_eq!((audio.channels, audio.frames()), (1, 4));
//! downbeat_file::memory::clear();
//! # fn wav_bytes() -> Vec<u8> {
//! #     let mut b = Vec::new();
//! #     let data = [0i16, 1000, -1000, 0];
//! #     b.extend_from_slice(b"RIFF"); b.extend_from_slice(&(36u32 + 8).to_le_bytes());
//! #     b.extend_from_slice(b"WAVEfmt "); b.extend_from_slice(&16u32.to_le_bytes());
//! #     b.extend_from_slice(&1u16.to_le_bytes()); b.extend_from_slice(&1u16.to_le_bytes());
//! #     b.extend_from_slice(&8000u32.to_le_bytes()); b.extend_from_slice(&16000u32.to_le_bytes());
//! #     b.extend_from_slice(&2u16.to_le_bytes()); b.extend_from_slice(&16u16.to_le_bytes());
//! #     b.extend_from_slice(b"data"); b.extend_from_slice(&8u32.to_le_bytes());
//! #     for s in data { b.extend_from_slice(&s.to_le_bytes()); }
//! #     b
//! # }
//! # Ok::<(), downbeat_file::FileError>(())
//! ```

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// The files handed over so far, by path. Few (a kit's samples), so a list.
static FILES: Mutex<Vec<(PathBuf, Arc<[u8]>)>> = Mutex::new(Vec::new());

/// Makes `bytes` the content of the file at `path` for every later open of that path (as
/// spelled: no folder is resolved). A second call for the same path replaces the bytes.
pub fn add_file(path: impl Into<PathBuf>, bytes: impl Into<Arc<[u8]>>) {
    let path = path.into();
    let bytes = bytes.into();
    let mut files = FILES.lock().unwrap_or_else(PoisonError::into_inner);
    match files.iter_mut().find(|(p, _)| *p == path) {
        Some(entry) => entry.1 = bytes,
        None => files.push((path, bytes)),
    }
}

/// Forgets every file handed over.
pub fn clear() {
    FILES.lock().unwrap_or_else(PoisonError::into_inner).clear();
}

/// The bytes handed over for `path`, if any.
pub(crate) fn lookup(path: &Path) -> Option<Arc<[u8]>> {
    FILES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .find(|(p, _)| p == path)
        .map(|(_, b)| Arc::clone(b))
}
