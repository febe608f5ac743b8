//! The block of memory a ring lives in, owned or borrowed, and who frees it and what is left in it.

use alloc::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::ops::Deref;
use core::ptr::NonNull;

use crate::layout::{self, RingLayout, LINE};
use crate::position;
use crate::sync::{fence, Arc, AtomicU32, Ordering};

/// Shared by the producer and the consumer of one ring; the last one dropped drops the values
/// still in the ring and frees owned memory.
///
/// Both ends copy the pointers they need out of it at construction, so the hot paths never go
/// through the `Arc`.
pub(crate) struct Region<T> {
    base: NonNull<u8>,
    /// `Some` when we allocated the memory and must free it.
    owned: Option<Layout>,
    capacity: u32,
    /// Loom cannot model atomics living in raw memory, so under loom the indices live here.
    #[cfg(loom)]
    indices: [AtomicU32; 2],
    #[cfg(loom)]
    tracker: crate::sync::Tracker,
    /// The region may own values of `T` (those between the indices) and drops them.
    _values: PhantomData<T>,
}

// SAFETY: `Region` only hands out raw pointers; the producer/consumer protocol is what makes
// accessing through them sound, and it holds whichever thread each end is on. Values of `T` are
// moved in on one thread and out (or dropped) on another, hence `T: Send`.
unsafe impl<T: Send> Send for Region<T> {}
// SAFETY: as above; the region itself is never mutated after construction, and no `&T` is handed
// to two threads (only the consumer reads values).
unsafe impl<T: Send> Sync for Region<T> {}

/// Where a ring's memory starts: the one pointer each end keeps on its hot path.
///
/// Every other address is a constant offset from it: the two indices at fixed offsets of the
/// layout, the storage at [`Base::DATA`] (the same for owned and borrowed memory, since shared
/// element types are at most 8-aligned). Keeping one pointer instead of three leaves two more
/// registers to a loop that drives both ends, or two rings, on one thread: with a push and a
/// pop in one loop, the extra pointers were spilled to the stack and reloaded on every
/// operation.
pub(crate) struct Base<T> {
    ptr: NonNull<u8>,
    /// Loom cannot model atomics in raw memory; its indices live in the region.
    #[cfg(loom)]
    indices: NonNull<[AtomicU32; 2]>,
    _slots: PhantomData<*mut T>,
}

impl<T> Clone for Base<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Base<T> {}

impl<T> Base<T> {
    /// Byte offset of the storage.
    pub(crate) const DATA: usize = layout::data_offset(core::mem::align_of::<T>());

    /// The first slot of the storage.
    #[inline(always)]
    pub(crate) fn data(self) -> *mut T {
        // SAFETY: the storage lies inside the region's memory.
        unsafe { self.ptr.as_ptr().add(Self::DATA).cast() }
    }

    /// The producer's index.
    ///
    /// # Safety
    ///
    /// The region this came from is alive for `'a`.
    #[inline(always)]
    pub(crate) unsafe fn write_index<'a>(self) -> &'a AtomicU32 {
        #[cfg(loom)]
        // SAFETY: the caller keeps the region, which holds the indices, alive.
        return unsafe { &self.indices.as_ref()[0] };
        #[cfg(not(loom))]
        // SAFETY: the index lies inside the layout, 4-aligned, alive as long as the region.
        unsafe {
            self.ptr.add(layout::WRITE_INDEX_OFFSET).cast().as_ref()
        }
    }

    /// The consumer's index.
    ///
    /// # Safety
    ///
    /// As for [`write_index`](Self::write_index).
    #[inline(always)]
    pub(crate) unsafe fn read_index<'a>(self) -> &'a AtomicU32 {
        #[cfg(loom)]
        // SAFETY: as in `write_index`.
        return unsafe { &self.indices.as_ref()[1] };
        #[cfg(not(loom))]
        // SAFETY: as in `write_index`.
        unsafe {
            self.ptr.add(layout::READ_INDEX_OFFSET).cast().as_ref()
        }
    }
}

/// One end's counted reference to its region: an `Arc` that is dropped from a copy of itself.
///
/// Dropping an `Arc` field in place hands its address to `Arc::drop_slow`. That address points
/// into the producer or consumer, so the compiler must then assume the whole end escapes and
/// keep every field of it in memory: each push stored its position to the stack and reloaded
/// the data and index pointers, where rtrb keeps them in registers. Moving the `Arc` out first
/// leaves only a temporary's address to escape.
pub(crate) struct Handle<T>(ManuallyDrop<Arc<Region<T>>>);

impl<T> Handle<T> {
    pub(crate) fn new(region: Arc<Region<T>>) -> Self {
        Self(ManuallyDrop::new(region))
    }
}

impl<T> Deref for Handle<T> {
    type Target = Arc<Region<T>>;

    #[inline(always)]
    fn deref(&self) -> &Arc<Region<T>> {
        &self.0
    }
}

impl<T> Drop for Handle<T> {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: `self.0` is never used again: this is the handle's drop.
        drop(unsafe { ManuallyDrop::take(&mut self.0) });
    }
}

/// Whether the other end of a ring we allocated is gone: only the caller's end still holds
/// `region`. Always `false` for borrowed memory, whose peer (another program, JavaScript)
/// holds no reference we could count.
pub(crate) fn peer_gone<T>(region: &Arc<Region<T>>) -> bool {
    let gone = region.owned.is_some() && Arc::strong_count(region) == 1;
    if gone {
        // Acquire: pairs with the Release of the other end's reference drop (the count is read
        // Relaxed), so the index it stored before it went is visible to what the caller reads
        // next: an end that is gone and a ring that looks empty mean nothing is left.
        fence(Ordering::Acquire);
    }
    gone
}

impl<T> Region<T> {
    /// Allocates memory for `capacity` elements of `T`, zeroed, and writes the header.
    pub(crate) fn allocate(ring: &RingLayout) -> Arc<Self> {
        let align = LINE.max(core::mem::align_of::<T>());
        let offset = Base::<T>::DATA;
        let bytes = core::mem::size_of::<T>()
            .checked_mul(ring.capacity())
            .and_then(|data| data.checked_add(offset))
            .and_then(|bytes| Layout::from_size_align(bytes, align).ok())
            // Whole line pairs: the next heap object must not share the last slots' pair. The
            // spatial prefetcher fetches lines in aligned pairs, so an end reading its region's
            // `owned` flag from an `Arc` placed right after the slots pulled the slots' line
            // from the other core on every refresh (contended: 8% slower than rtrb).
            .map(|bytes| bytes.pad_to_align())
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
        Arc::new(Self {
            base,
            owned: Some(bytes),
            capacity: ring.capacity() as u32,
            #[cfg(loom)]
            indices: [AtomicU32::new(0), AtomicU32::new(0)],
            #[cfg(loom)]
            tracker: crate::sync::Tracker::new(ring.capacity()),
            _values: PhantomData,
        })
    }

    /// Wraps memory someone else owns, holding `capacity` elements at [`DATA_OFFSET`].
    ///
    /// # Safety
    ///
    /// `base` must stay valid for the whole ring layout as long as the region lives.
    ///
    /// [`DATA_OFFSET`]: layout::DATA_OFFSET
    #[cfg(not(loom))]
    pub(crate) unsafe fn borrowed(base: NonNull<u8>, capacity: u32) -> Arc<Self> {
        // Shared element types are at most 8-aligned, so their storage starts where the layout
        // says.
        const { assert!(Base::<T>::DATA == layout::DATA_OFFSET) };
        Arc::new(Self {
            base,
            owned: None,
            capacity,
            _values: PhantomData,
        })
    }

    /// Whether we allocated the memory, so both ends are ours and every index in it is one
    /// they stored; memory someone else provided may have a peer that stores anything.
    #[inline(always)]
    pub(crate) fn is_owned(&self) -> bool {
        self.owned.is_some()
    }

    pub(crate) fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Where the memory starts, for the ends to address everything from.
    pub(crate) fn base(&self) -> Base<T> {
        Base {
            ptr: self.base,
            #[cfg(loom)]
            indices: NonNull::from(&self.indices),
            _slots: PhantomData,
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

    /// Drops the values between the read and the write index: pushed and never popped.
    ///
    /// # Safety
    ///
    /// Both ends are gone (so nothing else reads or writes the ring) and the memory is ours, so
    /// the indices are the ones our own producer and consumer kept, and every slot between them
    /// holds a value that was moved in and not out.
    unsafe fn drop_values(&mut self) {
        let base = self.base();
        // SAFETY: the indices live as long as the region. Relaxed is enough: the `Arc` count's
        // release-acquire pair orders both ends' last stores and slot writes before this drop.
        let (mut head, tail) = unsafe {
            (
                base.read_index().load(Ordering::Relaxed),
                base.write_index().load(Ordering::Relaxed),
            )
        };
        let data = base.data();
        while head != tail {
            let slot = position::slot(head, self.capacity);
            self.track_read(slot, 1);
            // SAFETY: the caller's promise: the slot holds a live value no one else can reach;
            // `slot < capacity` because our own ends only store valid positions.
            unsafe { data.add(slot as usize).drop_in_place() };
            head = position::next(head, self.capacity);
        }
    }
}

impl<T> Drop for Region<T> {
    fn drop(&mut self) {
        if let Some(bytes) = self.owned {
            if core::mem::needs_drop::<T>() {
                // SAFETY: `Arc` runs this once, after both ends are gone, and we own the memory:
                // no JavaScript or foreign peer wrote the indices.
                unsafe { self.drop_values() };
            }
            // SAFETY: allocated in `allocate` with exactly this layout; nothing refers to it now.
            unsafe { dealloc(self.base.as_ptr(), bytes) };
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Owned memory ends on a line-pair boundary for every capacity and element size, so no
    /// other heap object shares a pair with the last slots.
    #[test]
    fn owned_memory_fills_whole_line_pairs() {
        fn size<T>(capacity: usize) -> usize {
            let region = Region::<T>::allocate(&layout::opaque::<T>(capacity));
            region.owned.expect("allocated memory is owned").size()
        }
        for capacity in [0, 1, 3, 4, 5, 17, 3000, 4096] {
            for bytes in [
                size::<u8>(capacity),
                size::<u64>(capacity),
                size::<[f32; 3]>(capacity),
            ] {
                assert_eq!(bytes % LINE, 0, "{bytes} bytes for capacity {capacity}");
            }
        }
    }
}
