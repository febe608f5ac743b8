//! The shared memory layout: one contract for Rust, WebAssembly and JavaScript.
//!
//! ```text
//! byte 0    header (128 bytes, read-only once initialised)
//!             +0  u32 magic          "DBRG" = 0x4752_4244
//!             +4  u32 layout version  1
//!             +8  u32 element size in bytes
//!             +12 u32 element kind    (ElementKind code)
//!             +16 u32 capacity        in elements
//!             +20 u32 record length   elements per record (1 = plain ring)
//!             +24 .. +128 zero, reserved
//! byte 128  u32 write index (written by the producer only), rest of the 128 bytes unused
//! byte 256  u32 read index  (written by the consumer only), rest of the 128 bytes unused
//! byte 384  storage: capacity elements
//! ```
//!
//! Everything is little-endian. Indices run in `0..2 * capacity`: equal means empty, `capacity`
//! apart means full, the slot of index `i` is `i % capacity`. Each index has 128 bytes to itself
//! because x86 prefetches cache lines in pairs, so 64 would still let the producer and the
//! consumer evict each other. The full contract, with the memory orderings, is in
//! `docs/ring-layout.md`.

use core::mem::size_of;

use crate::element::{Element, ElementKind};
use crate::error::LayoutError;
#[cfg(all(target_endian = "little", not(loom)))]
use crate::position;

/// First header word: the bytes `DBRG`.
pub const MAGIC: u32 = u32::from_le_bytes(*b"DBRG");
/// Layout version this build reads and writes.
pub const VERSION: u32 = 1;
/// Spacing that keeps the header, the two indices and the storage out of each other's cache lines.
pub const LINE: usize = 128;
/// Byte offset of the producer's write index.
pub const WRITE_INDEX_OFFSET: usize = LINE;
/// Byte offset of the consumer's read index.
pub const READ_INDEX_OFFSET: usize = 2 * LINE;
/// Byte offset of the first element.
pub const DATA_OFFSET: usize = 3 * LINE;
/// Largest capacity in elements: keeps indices below 2^31, so JavaScript can hold them in an
/// `Int32Array` and in small integers.
pub const MAX_CAPACITY: usize = 1 << 30;
/// Alignment memory must have to be attached to (that of the widest element, `u64`).
pub const MIN_ALIGN: usize = 8;

/// Byte offsets of the header words.
pub mod header {
    /// [`MAGIC`](super::MAGIC).
    pub const MAGIC: usize = 0;
    /// Layout version.
    pub const VERSION: usize = 4;
    /// Element size in bytes.
    pub const ELEMENT_SIZE: usize = 8;
    /// [`ElementKind`](crate::ElementKind) code.
    pub const ELEMENT_KIND: usize = 12;
    /// Capacity in elements.
    pub const CAPACITY: usize = 16;
    /// Elements per record.
    pub const RECORD_LEN: usize = 20;
}

/// The shape of a ring in shared memory: what its header says.
///
/// Use it to size and initialise memory that a [`Producer`](crate::Producer) and a
/// [`Consumer`](crate::Consumer) (or their JavaScript twins) then attach to.
///
/// ```
/// use downbeat_ring::layout::{RingLayout, DATA_OFFSET};
/// let layout = RingLayout::new::<f32>(1000).unwrap();
/// assert_eq!(layout.bytes(), DATA_OFFSET + 4000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingLayout {
    capacity: u32,
    element_size: u32,
    kind: ElementKind,
    record_len: u32,
}

impl RingLayout {
    /// A plain ring of `capacity` elements of `T`.
    ///
    /// # Errors
    ///
    /// [`LayoutError::BadCapacity`] above [`MAX_CAPACITY`].
    ///
    /// ```
    /// use downbeat_ring::layout::RingLayout;
    /// assert_eq!(RingLayout::new::<u8>(7).unwrap().capacity(), 7);
    /// assert!(RingLayout::new::<u8>(1 << 31).is_err());
    /// ```
    pub fn new<T: Element>(capacity: usize) -> Result<Self, LayoutError> {
        Self::records::<T>(capacity, 1)
    }

    /// A ring of `records` records of `record_len` elements of `T` each; adapters use it so that
    /// readers can check they agree on the record shape.
    ///
    /// # Errors
    ///
    /// [`LayoutError::BadCapacity`] if the total is above [`MAX_CAPACITY`], and
    /// [`LayoutError::RecordMismatch`] for a record length of 0.
    ///
    /// ```
    /// use downbeat_ring::layout::RingLayout;
    /// let stereo = RingLayout::records::<f32>(512, 2).unwrap();
    /// assert_eq!((stereo.capacity(), stereo.record_len()), (1024, 2));
    /// ```
    pub fn records<T: Element>(records: usize, record_len: usize) -> Result<Self, LayoutError> {
        if record_len == 0 || record_len > u32::MAX as usize {
            return Err(LayoutError::RecordMismatch {
                expected: 1,
                found: record_len.min(u32::MAX as usize) as u32,
            });
        }
        let capacity = records
            .checked_mul(record_len)
            .filter(|&c| c <= MAX_CAPACITY)
            .ok_or(LayoutError::BadCapacity {
                capacity: (records as u64).saturating_mul(record_len as u64),
            })?;
        Ok(Self {
            capacity: capacity as u32,
            element_size: size_of::<T>() as u32,
            kind: T::KIND,
            record_len: record_len as u32,
        })
    }

    /// Capacity in elements.
    ///
    /// ```
    /// # use downbeat_ring::layout::RingLayout;
    /// assert_eq!(RingLayout::new::<i16>(3).unwrap().capacity(), 3);
    /// ```
    pub fn capacity(&self) -> usize {
        self.capacity as usize
    }

    /// Element size in bytes.
    ///
    /// ```
    /// # use downbeat_ring::layout::RingLayout;
    /// assert_eq!(RingLayout::new::<f64>(3).unwrap().element_size(), 8);
    /// ```
    pub fn element_size(&self) -> usize {
        self.element_size as usize
    }

    /// Element kind.
    ///
    /// ```
    /// # use downbeat_ring::{layout::RingLayout, ElementKind};
    /// assert_eq!(RingLayout::new::<f64>(3).unwrap().kind(), ElementKind::F64);
    /// ```
    pub fn kind(&self) -> ElementKind {
        self.kind
    }

    /// Elements per record (1 for a plain ring).
    ///
    /// ```
    /// # use downbeat_ring::layout::RingLayout;
    /// assert_eq!(RingLayout::new::<f64>(3).unwrap().record_len(), 1);
    /// ```
    pub fn record_len(&self) -> usize {
        self.record_len as usize
    }

    /// Total bytes of memory the ring needs.
    ///
    /// ```
    /// # use downbeat_ring::layout::RingLayout;
    /// assert_eq!(RingLayout::new::<u16>(10).unwrap().bytes(), 384 + 20);
    /// ```
    pub fn bytes(&self) -> usize {
        DATA_OFFSET + self.capacity as usize * self.element_size as usize
    }

    /// Writes this header at `ptr`, zeroes the indices and the storage, and publishes the magic
    /// word last with a release store, so a side that polls for it sees a complete ring.
    ///
    /// # Errors
    ///
    /// [`LayoutError::Null`], [`LayoutError::Misaligned`] (below [`MIN_ALIGN`]) or
    /// [`LayoutError::TooSmall`]; nothing is written then.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for writes of `len` bytes and nothing else may access that memory until
    /// this returns.
    ///
    /// ```
    /// use downbeat_ring::layout::{RingLayout, MAGIC};
    /// let layout = RingLayout::new::<f32>(16).unwrap();
    /// let mut mem = vec![0u64; layout.bytes().div_ceil(8)];
    /// // SAFETY: `mem` is ours and large enough.
    /// unsafe { layout.init(mem.as_mut_ptr().cast(), layout.bytes()) }.unwrap();
    /// assert_eq!(mem[0] as u32, MAGIC);
    /// ```
    #[cfg(target_endian = "little")]
    pub unsafe fn init(&self, ptr: *mut u8, len: usize) -> Result<(), LayoutError> {
        check_memory(ptr, len, self.bytes())?;
        // SAFETY: `check_memory` verified `len >= self.bytes()`, and the caller gives us `len`
        // writable bytes that no one else touches during the call.
        unsafe {
            ptr.write_bytes(0, self.bytes());
            write_header(ptr, self);
        }
        Ok(())
    }

    /// Reads and checks the header at `ptr` without looking at the indices.
    ///
    /// # Errors
    ///
    /// Any [`LayoutError`] except [`LayoutError::ElementMismatch`],
    /// [`LayoutError::RecordMismatch`] and [`LayoutError::CorruptIndex`], which depend on the
    /// view being built.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for reads of `len` bytes for the duration of the call.
    ///
    /// ```
    /// use downbeat_ring::layout::RingLayout;
    /// let layout = RingLayout::records::<u32>(8, 3).unwrap();
    /// let mut mem = vec![0u64; layout.bytes().div_ceil(8)];
    /// let (ptr, len) = (mem.as_mut_ptr().cast::<u8>(), mem.len() * 8);
    /// // SAFETY: `mem` is ours and large enough.
    /// unsafe { layout.init(ptr, len) }.unwrap();
    /// assert_eq!(unsafe { RingLayout::read(ptr, len) }, Ok(layout));
    /// ```
    #[cfg(target_endian = "little")]
    pub unsafe fn read(ptr: *const u8, len: usize) -> Result<Self, LayoutError> {
        check_memory(ptr, len, DATA_OFFSET)?;
        // SAFETY: `check_memory` verified alignment and that the header lies within `len`.
        let word = |offset| unsafe { load(ptr, offset) };
        let magic = word(header::MAGIC);
        if magic != MAGIC {
            return Err(LayoutError::BadMagic { found: magic });
        }
        let version = word(header::VERSION);
        if version != VERSION {
            return Err(LayoutError::UnsupportedVersion { found: version });
        }
        let (element_size, kind_code) = (word(header::ELEMENT_SIZE), word(header::ELEMENT_KIND));
        let kind = ElementKind::from_code(kind_code)
            .filter(|kind| kind_size(*kind).is_none_or(|size| size == element_size))
            .ok_or(LayoutError::ElementMismatch {
                expected_size: element_size,
                expected_kind: ElementKind::Opaque,
                found_size: element_size,
                found_kind: kind_code,
            })?;
        let (capacity, record_len) = (word(header::CAPACITY), word(header::RECORD_LEN));
        if capacity as usize > MAX_CAPACITY || record_len == 0 || capacity % record_len != 0 {
            return Err(LayoutError::BadCapacity {
                capacity: capacity as u64,
            });
        }
        let layout = Self {
            capacity,
            element_size,
            kind,
            record_len,
        };
        if len < layout.bytes() {
            return Err(LayoutError::TooSmall {
                needed: layout.bytes(),
                got: len,
            });
        }
        Ok(layout)
    }

    /// Checks that this layout holds `T` in records of `record_len`, then that the indices in
    /// memory are consistent: everything a view needs before it may trust the memory.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for reads of `self.bytes()` bytes.
    #[cfg(all(target_endian = "little", not(loom)))]
    pub(crate) unsafe fn check_view<T: Element>(
        &self,
        ptr: *const u8,
        record_len: u32,
    ) -> Result<(), LayoutError> {
        if self.kind != T::KIND || self.element_size as usize != size_of::<T>() {
            return Err(LayoutError::ElementMismatch {
                expected_size: size_of::<T>() as u32,
                expected_kind: T::KIND,
                found_size: self.element_size,
                found_kind: self.kind as u32,
            });
        }
        if self.record_len != record_len {
            return Err(LayoutError::RecordMismatch {
                expected: record_len,
                found: self.record_len,
            });
        }
        // SAFETY: both indices lie inside the header area the caller vouches for.
        let (write, read) =
            unsafe { (load(ptr, WRITE_INDEX_OFFSET), load(ptr, READ_INDEX_OFFSET)) };
        let cap = self.capacity;
        if !position::valid(write, cap)
            || !position::valid(read, cap)
            || position::distance(read, write, cap) > cap
        {
            return Err(LayoutError::CorruptIndex { write, read });
        }
        Ok(())
    }
}

/// Byte size of the elements of a kind, `None` for [`ElementKind::Opaque`].
const fn kind_size(kind: ElementKind) -> Option<u32> {
    use ElementKind::*;
    Some(match kind {
        Opaque => return None,
        U8 | I8 => 1,
        U16 | I16 => 2,
        U32 | I32 | F32 => 4,
        U64 | I64 | F64 => 8,
    })
}

fn check_memory(ptr: *const u8, len: usize, needed: usize) -> Result<(), LayoutError> {
    if ptr.is_null() {
        return Err(LayoutError::Null);
    }
    if (ptr as usize) % MIN_ALIGN != 0 {
        return Err(LayoutError::Misaligned {
            address: ptr as usize,
            required: MIN_ALIGN,
        });
    }
    if len < needed {
        return Err(LayoutError::TooSmall { needed, got: len });
    }
    Ok(())
}

/// Loads a header or index word atomically, so that reading memory another thread or JavaScript
/// may be writing is a race on values, never undefined behaviour.
///
/// # Safety
///
/// `ptr + offset` must be valid for reads of 4 bytes and 4-aligned.
#[cfg(target_endian = "little")]
unsafe fn load(ptr: *const u8, offset: usize) -> u32 {
    // SAFETY: the caller guarantees validity and alignment; `AtomicU32` has the layout of `u32`.
    unsafe {
        (*ptr.add(offset).cast::<core::sync::atomic::AtomicU32>())
            .load(core::sync::atomic::Ordering::Acquire)
    }
}

/// Writes the header words; the magic goes last with a release store.
///
/// # Safety
///
/// `ptr` must be valid for writes of [`DATA_OFFSET`] bytes, aligned to [`MIN_ALIGN`], and not
/// accessed by anyone else during the call.
pub(crate) unsafe fn write_header(ptr: *mut u8, layout: &RingLayout) {
    let words = [
        (header::VERSION, VERSION),
        (header::ELEMENT_SIZE, layout.element_size),
        (header::ELEMENT_KIND, layout.kind as u32),
        (header::CAPACITY, layout.capacity),
        (header::RECORD_LEN, layout.record_len),
    ];
    // SAFETY: every offset is below `DATA_OFFSET` and 4-aligned, and the caller gives exclusive,
    // writable memory.
    unsafe {
        for (offset, value) in words {
            ptr.add(offset).cast::<u32>().write(value.to_le());
        }
        (*ptr
            .add(header::MAGIC)
            .cast::<core::sync::atomic::AtomicU32>())
        .store(MAGIC.to_le(), core::sync::atomic::Ordering::Release);
    }
}

/// The layout of a ring built by [`RingBuffer::new`](crate::RingBuffer::new), which may hold any
/// type and so records its kind as opaque.
pub(crate) fn opaque<T>(capacity: usize) -> RingLayout {
    assert!(
        capacity <= MAX_CAPACITY,
        "ring capacity {capacity} exceeds MAX_CAPACITY ({MAX_CAPACITY})"
    );
    RingLayout {
        capacity: capacity as u32,
        element_size: u32::try_from(size_of::<T>()).unwrap_or(u32::MAX),
        kind: ElementKind::Opaque,
        record_len: 1,
    }
}

/// Where storage starts for an element alignment: [`DATA_OFFSET`] unless the type needs more.
pub(crate) const fn data_offset(align: usize) -> usize {
    if align > DATA_OFFSET {
        align
    } else {
        DATA_OFFSET.div_ceil(align) * align
    }
}
