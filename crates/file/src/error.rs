//! [`FileError`]: why a file could not be opened, decoded or resampled.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Why a file could not be opened, decoded or resampled.
///
/// `Display` names the file (when there is one) and the problem, so a command can print it as it
/// is and exit with status 2.
///
/// ```
/// use downbeat_file::{Decoder, FileError};
/// use std::path::Path;
///
/// let err = Decoder::open(Path::new("/no/such/take.wav")).err().unwrap();
/// assert!(matches!(err, FileError::Open { .. }));
/// assert!(err.to_string().starts_with("/no/such/take.wav: cannot open"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum FileError {
    /// The file could not be opened (missing, unreadable, a folder...).
    Open {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: io::Error,
    },
    /// The file was opened but reading it failed below the decoder.
    Read {
        /// The file.
        path: PathBuf,
        /// The frame (at the file's rate) where reading stopped, when known.
        at_frame: Option<u64>,
        /// What the operating system said.
        source: io::Error,
    },
    /// The file's container or codec is not one we decode (or not audio at all).
    Unsupported {
        /// The file.
        path: PathBuf,
        /// What was not recognised.
        detail: String,
    },
    /// The file is in a format we decode but its data is damaged or cut short.
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The frame (at the file's rate) where the damage was found, when known; `None` for a
        /// damaged header.
        at_frame: Option<u64>,
        /// What the decoder said.
        detail: String,
    },
    /// A resampler from `from` Hz to `to` Hz cannot be built.
    Rate {
        /// The file being resampled, if any (a bare [`Resampler`](crate::Resampler) has none).
        path: Option<PathBuf>,
        /// The rate of the input, in Hz.
        from: u32,
        /// The rate asked for, in Hz.
        to: u32,
        /// Why not.
        detail: String,
    },
    /// A channel count that cannot be used (zero, or more than [`MAX_CHANNELS`](crate::MAX_CHANNELS)).
    Channels {
        /// The file, if any.
        path: Option<PathBuf>,
        /// The count given.
        channels: usize,
    },
    /// A seek beyond the end of the file.
    SeekOutOfRange {
        /// The file.
        path: PathBuf,
        /// The frame asked for.
        frame: u64,
        /// The file's length in frames.
        frames: u64,
    },
}

impl FileError {
    /// The file the error is about, when there is one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            FileError::Open { path, .. }
            | FileError::Read { path, .. }
            | FileError::Unsupported { path, .. }
            | FileError::Corrupt { path, .. }
            | FileError::SeekOutOfRange { path, .. } => Some(path),
            FileError::Rate { path, .. } | FileError::Channels { path, .. } => path.as_deref(),
        }
    }

    /// A [`FileError::Corrupt`] found in the header of the file at `path` (no frame).
    pub(crate) fn corrupt_header(path: &Path, detail: impl Into<String>) -> FileError {
        FileError::Corrupt {
            path: path.to_path_buf(),
            at_frame: None,
            detail: detail.into(),
        }
    }

    /// The same error about `path` (used when a path-less error from a [`Resampler`](crate::Resampler)
    /// is raised for a file).
    pub(crate) fn with_path(self, file: &Path) -> FileError {
        match self {
            FileError::Rate {
                path: None,
                from,
                to,
                detail,
            } => FileError::Rate {
                path: Some(file.to_path_buf()),
                from,
                to,
                detail,
            },
            FileError::Channels {
                path: None,
                channels,
            } => FileError::Channels {
                path: Some(file.to_path_buf()),
                channels,
            },
            other => other,
        }
    }
}

fn prefix(f: &mut fmt::Formatter<'_>, path: Option<&Path>) -> fmt::Result {
    match path {
        Some(path) => write!(f, "{}: ", path.display()),
        None => Ok(()),
    }
}

fn at(f: &mut fmt::Formatter<'_>, at_frame: Option<u64>) -> fmt::Result {
    match at_frame {
        Some(frame) => write!(f, " at frame {frame}"),
        None => Ok(()),
    }
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        prefix(f, self.path())?;
        match self {
            FileError::Open { source, .. } => write!(f, "cannot open: {source}"),
            FileError::Read {
                at_frame, source, ..
            } => {
                write!(f, "read failed")?;
                at(f, *at_frame)?;
                write!(f, ": {source}")
            }
            FileError::Unsupported { detail, .. } => write!(f, "unsupported audio file: {detail}"),
            FileError::Corrupt {
                at_frame, detail, ..
            } => {
                write!(f, "corrupt audio file")?;
                at(f, *at_frame)?;
                write!(f, ": {detail}")
            }
            FileError::Rate {
                from, to, detail, ..
            } => {
                write!(f, "cannot resample from {from} Hz to {to} Hz: {detail}")
            }
            FileError::Channels { channels, .. } => write!(
                f,
                "unusable channel count {channels} (1 to {} supported)",
                crate::MAX_CHANNELS
            ),
            FileError::SeekOutOfRange { frame, frames, .. } => {
                write!(
                    f,
                    "cannot seek to frame {frame}: the file has {frames} frames"
                )
            }
        }
    }
}

impl std::error::Error for FileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FileError::Open { source, .. } | FileError::Read { source, .. } => Some(source),
            _ => None,
        }
    }
}
