//! Error types.

use core::fmt;

use crate::element::ElementKind;

/// A push that found the ring full; carries the value back so nothing is lost.
///
/// ```
/// use downbeat_ring::{Full, RingBuffer};
/// let (mut tx, _rx) = RingBuffer::<u8>::new(1);
/// tx.push(1).unwrap();
/// assert_eq!(tx.push(2), Err(Full(2)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full<T>(pub T);

impl<T> fmt::Display for Full<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ring buffer is full")
    }
}

impl<T: fmt::Debug> core::error::Error for Full<T> {}

/// A chunk asked for more slots than the ring could give at that moment.
///
/// ```
/// use downbeat_ring::{ChunkError, RingBuffer};
/// let (mut tx, _rx) = RingBuffer::<f32>::new(4);
/// let err = tx.write_chunk(5).unwrap_err();
/// assert_eq!(err, ChunkError { requested: 5, available: 4 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkError {
    /// Slots asked for.
    pub requested: usize,
    /// Slots available when the request was made.
    pub available: usize,
}

impl fmt::Display for ChunkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "requested {} slots but only {} are available",
            self.requested, self.available
        )
    }
}

impl core::error::Error for ChunkError {}

/// Why memory could not be used as a ring (see `docs/ring-layout.md`).
///
/// Attaching to memory never trusts it: each of these is returned instead of reading or writing
/// out of bounds.
///
/// ```
/// use downbeat_ring::{LayoutError, Producer};
/// let mut words = vec![0u64; 64];
/// // Zeroed memory has no header.
/// let err = unsafe { Producer::<f32>::from_raw(words.as_mut_ptr().cast(), 512) }.unwrap_err();
/// assert_eq!(err, LayoutError::BadMagic { found: 0 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LayoutError {
    /// The pointer was null.
    Null,
    /// The memory does not start on the required boundary.
    Misaligned {
        /// The address given.
        address: usize,
        /// The alignment required, in bytes.
        required: usize,
    },
    /// The memory is shorter than the layout needs.
    TooSmall {
        /// Bytes the layout needs.
        needed: usize,
        /// Bytes given.
        got: usize,
    },
    /// The first word is not [`MAGIC`](crate::layout::MAGIC).
    BadMagic {
        /// The word found.
        found: u32,
    },
    /// The layout version is not [`VERSION`](crate::layout::VERSION).
    UnsupportedVersion {
        /// The version found.
        found: u32,
    },
    /// The header describes another element type.
    ElementMismatch {
        /// Size of the element type asked for, in bytes.
        expected_size: u32,
        /// Kind of the element type asked for.
        expected_kind: ElementKind,
        /// Element size in the header.
        found_size: u32,
        /// Element kind code in the header.
        found_kind: u32,
    },
    /// The capacity is above [`MAX_CAPACITY`](crate::layout::MAX_CAPACITY) or not a whole
    /// number of records.
    BadCapacity {
        /// The capacity found or asked for, in elements.
        capacity: u64,
    },
    /// The record length (elements per record) is not the one this view needs.
    RecordMismatch {
        /// Elements per record this view needs.
        expected: u32,
        /// Elements per record in the header.
        found: u32,
    },
    /// An index lies outside `0..2 * capacity`, or the two are more than `capacity` apart.
    CorruptIndex {
        /// The write index found.
        write: u32,
        /// The read index found.
        read: u32,
    },
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Null => f.write_str("ring memory pointer is null"),
            Self::Misaligned { address, required } => write!(
                f,
                "ring memory at {address:#x} is not aligned to {required} bytes"
            ),
            Self::TooSmall { needed, got } => {
                write!(f, "ring memory holds {got} bytes but the layout needs {needed}")
            }
            Self::BadMagic { found } => write!(
                f,
                "ring header magic is {found:#010x}, expected {:#010x} (memory not initialised as a ring?)",
                crate::layout::MAGIC
            ),
            Self::UnsupportedVersion { found } => write!(
                f,
                "ring layout version {found} is not supported (this build reads version {})",
                crate::layout::VERSION
            ),
            Self::ElementMismatch {
                expected_size,
                expected_kind,
                found_size,
                found_kind,
            } => write!(
                f,
                "ring holds elements of kind {found_kind} and size {found_size}, \
                 but {expected_kind:?} (kind {}, size {expected_size}) was asked for",
                expected_kind as u32
            ),
            Self::BadCapacity { capacity } => write!(f, "ring capacity {capacity} is invalid"),
            Self::RecordMismatch { expected, found } => write!(
                f,
                "ring records are {found} elements long, this view needs {expected}"
            ),
            Self::CorruptIndex { write, read } => write!(
                f,
                "ring indices are inconsistent (write {write}, read {read})"
            ),
        }
    }
}

impl core::error::Error for LayoutError {}
