//! The block of memory a ring lives in, owned or borrowed, and who frees it.

use alloc::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use alloc::sync::Arc;
use core::ptr::NonNull;

use crate::layout::{self, RingLayout, LINE};
use crate::sync::AtomicU32;

/// Shared by the producer and the consumer of one ring; the last one dropped frees owned memory.
///
/// Both ends copy the pointers they need out of it at construction, so the hot paths never go
/// through the `Arc`.
pub(crate) struct Region {
    base: NonNull<u8>,
    /// `Some` when we allocated the memory and must free it.
    owned: Option<Layout>,
    /// Loom cannot model atomics living in raw memory, so under loom the indices live here.
    #[cfg(loom)]
    indices: [AtomicU32; 2],
    #[cfg(loom)]
    tracker: crate::sync::Tracker,
}

// SAFETY: `Region` only hands out raw pointers; the producer/consumer protocol is what makes
// accessing through them sound, and it holds whichever thread each end is on.
unsafe impl Send for Region {}
// SAFETY: as above; the region itself is never mutated after construction.
unsafe impl Sync for Region {}

impl Region {
    /// Allocates zeroed memory for `capacity` elements of `T` and writes the header.
    ///
    /// Returns the region and the byte offset of the storage.
    pub(crate) fn allocate<T>(ring: &RingLayout) -> (Arc<Self>, usize) {
        let align = LINE.max(core::mem::align_of::<T>());
        let offset = layout::data_offset(core::mem::align_of::<T>());
        let bytes = core::mem::size_of::<T>()
            .checked_mul(ring.capacity())
            .and_then(|data| data.checked_add(offset))
            .and_then(|bytes| Layout::from_size_align(bytes, align).ok())
            .expect("ring buffer size overflows isize::MAX");
        // SAFETY: the size is at least `DATA_OFFSET`, never zero.
        let base = unsafe { alloc(bytes) };
        let Some(base) = NonNull::new(base) else {
            handle_alloc_error(bytes)
        };
        // Zeroes make every slot a valid `Element` from the start. Writing them ourselves, rather
        // than taking lazily zeroed pages from `alloc_zeroed`, faults every page in here, at
        // construction, instead of on the audio thread the first time the ring wraps.
        // SAFETY: the allocation is `bytes.size()` bytes long and ours alone.
        unsafe { base.as_ptr().write_bytes(0, bytes.size()) };
        // SAFETY: the allocation is fresh, at least `DATA_OFFSET` bytes, aligned to `LINE`.
        unsafe { layout::write_header(base.as_ptr(), ring) };
        let region = Self {
            base,
            owned: Some(bytes),
            #[cfg(loom)]
            indices: [AtomicU32::new(0), AtomicU32::new(0)],
            #[cfg(loom)]
            tracker: crate::sync::Tracker::new(ring.capacity()),
        };
        (Arc::new(region), offset)
    }

    /// Wraps memory someone else owns.
    ///
    /// # Safety
    ///
    /// `base` must stay valid for the whole ring layout as long as the region lives.
    #[cfg(not(loom))]
    pub(crate) unsafe fn borrowed(base: NonNull<u8>) -> Arc<Self> {
        Arc::new(Self { base, owned: None })
    }

    pub(crate) fn base(&self) -> NonNull<u8> {
        self.base
    }

    pub(crate) fn write_index(&self) -> NonNull<AtomicU32> {
        #[cfg(loom)]
        return NonNull::from(&self.indices[0]);
        #[cfg(not(loom))]
        // SAFETY: the write index lies inside the layout, which `base` covers.
        unsafe {
            self.base.add(layout::WRITE_INDEX_OFFSET).cast()
        }
    }

    pub(crate) fn read_index(&self) -> NonNull<AtomicU32> {
        #[cfg(loom)]
        return NonNull::from(&self.indices[1]);
        #[cfg(not(loom))]
        // SAFETY: the read index lies inside the layout, which `base` covers.
        unsafe {
            self.base.add(layout::READ_INDEX_OFFSET).cast()
        }
    }

    /// Tells loom that slots are being written; nothing outside loom.
    #[inline(always)]
    pub(crate) fn track_write(&self, _slot: u32, _n: u32) {
        #[cfg(loom)]
        self.tracker.write(_slot, _n);
    }

    /// Tells loom that slots are being read; nothing outside loom.
    #[inline(always)]
    pub(crate) fn track_read(&self, _slot: u32, _n: u32) {
        #[cfg(loom)]
        self.tracker.read(_slot, _n);
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if let Some(bytes) = self.owned {
            // SAFETY: allocated in `allocate` with exactly this layout; `Arc` runs this once,
            // after both ends are gone.
            unsafe { dealloc(self.base.as_ptr(), bytes) };
        }
    }
}
