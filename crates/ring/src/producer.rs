//! The writing end.

use alloc::sync::Arc;
use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;

use crate::chunk::WriteChunk;
use crate::error::{ChunkError, Full};
use crate::position;
use crate::region::Region;
use crate::sync::{AtomicU32, Ordering};

/// The writing end of a ring: pushes elements for the [`Consumer`](crate::Consumer).
///
/// Every method is wait-free and allocation-free: it finishes in a bounded number of steps
/// whatever the consumer does. It can move to another thread (`Send`) but not be shared (`!Sync`).
///
/// ```
/// use downbeat_ring::RingBuffer;
/// let (mut tx, mut rx) = RingBuffer::<f32>::new(3);
/// assert_eq!(tx.push_slice(&[1.0, 2.0, 3.0, 4.0]), 3);
/// assert!(tx.is_full());
/// assert_eq!(rx.pop(), Some(1.0));
/// ```
pub struct Producer<T> {
    pub(crate) data: NonNull<T>,
    write: NonNull<AtomicU32>,
    read: NonNull<AtomicU32>,
    pub(crate) capacity: u32,
    /// Where the next element goes; the published write index is `slot + lap`.
    pub(crate) slot: u32,
    lap: u32,
    /// Slots known to be free without looking at the consumer's index, which lives on a cache
    /// line the consumer writes: reading it only when this runs out keeps that line still.
    pub(crate) free: u32,
    pub(crate) region: Arc<Region>,
    _owns: PhantomData<T>,
}

// SAFETY: the producer is the only writer of its index and of the free slots, from whichever one
// thread holds it; moving it moves that right along.
unsafe impl<T: Send> Send for Producer<T> {}

impl<T: Copy> Producer<T> {
    /// Builds the producer of a region.
    ///
    /// # Safety
    ///
    /// The region holds a valid layout with `capacity` elements of `T` at `data_offset` and
    /// consistent indices, and no other producer is attached to it.
    pub(crate) unsafe fn attach(region: Arc<Region>, data_offset: usize, capacity: u32) -> Self {
        let write = region.write_index();
        // SAFETY: the index is valid while the region lives, and the caller checked its value.
        let position = unsafe { write.as_ref() }.load(Ordering::Acquire);
        let (slot, lap) = position::split(position, capacity);
        let mut producer = Self {
            // SAFETY: the storage lies inside the region.
            data: unsafe { region.base().add(data_offset).cast() },
            write,
            read: region.read_index(),
            capacity,
            slot,
            lap,
            free: 0,
            region,
            _owns: PhantomData,
        };
        producer.refresh();
        producer
    }

    /// Appends one element, or hands it back if the ring is full.
    ///
    /// # Errors
    ///
    /// [`Full`] with the value when no slot is free.
    ///
    /// ```
    /// use downbeat_ring::{Full, RingBuffer};
    /// let (mut tx, _rx) = RingBuffer::new(1);
    /// assert_eq!(tx.push(7u32), Ok(()));
    /// assert_eq!(tx.push(8), Err(Full(8)));
    /// ```
    #[inline]
    pub fn push(&mut self, value: T) -> Result<(), Full<T>> {
        if self.free == 0 && self.refresh() == 0 {
            return Err(Full(value));
        }
        self.region.track_write(self.slot, 1);
        // SAFETY: `free > 0`, so `slot` (always below `capacity`) is outside the consumer's
        // readable range until `advance` publishes it.
        unsafe { self.data.as_ptr().add(self.slot as usize).write(value) };
        self.advance(1);
        Ok(())
    }

    /// Appends as many leading elements of `src` as fit; returns how many.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (mut tx, _rx) = RingBuffer::<i16>::new(4);
    /// assert_eq!(tx.push_slice(&[1, 2, 3]), 3);
    /// assert_eq!(tx.push_slice(&[4, 5, 6]), 1);
    /// ```
    #[inline]
    pub fn push_slice(&mut self, src: &[T]) -> usize {
        let n = self.reserve(src.len());
        if n == 0 {
            // Skipping the store keeps the index's cache line shared while the ring stays full.
            return 0;
        }
        let (first, second) = self.spans(n);
        // SAFETY: `reserve` guarantees `n <= free` and `n <= src.len()`; `spans` splits the `n`
        // free slots from `slot` into the part before the end of the storage and the part
        // wrapped to its start, none of which the consumer may read yet.
        unsafe {
            let dst = self.data.as_ptr();
            src.as_ptr()
                .copy_to_nonoverlapping(dst.add(self.slot as usize), first);
            src.as_ptr().add(first).copy_to_nonoverlapping(dst, second);
        }
        self.advance(n);
        n as usize
    }

    /// Lends exactly `n` free slots for writing in place, as up to two slices.
    ///
    /// Nothing becomes visible to the consumer until the chunk is committed.
    ///
    /// # Errors
    ///
    /// [`ChunkError`] if fewer than `n` slots are free.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (mut tx, mut rx) = RingBuffer::<f32>::new(8);
    /// let mut chunk = tx.write_chunk(3).unwrap();
    /// let (first, second) = chunk.as_mut_slices();
    /// assert_eq!(first.len() + second.len(), 3);
    /// first.fill(0.5);
    /// second.fill(0.5);
    /// chunk.commit_all();
    /// assert_eq!(rx.available_read(), 3);
    /// ```
    #[inline]
    pub fn write_chunk(&mut self, n: usize) -> Result<WriteChunk<'_, T>, ChunkError> {
        if n > self.free as usize && n > self.refresh() as usize {
            return Err(ChunkError {
                requested: n,
                available: self.free as usize,
            });
        }
        self.region.track_write(self.slot, n as u32);
        Ok(WriteChunk::new(self, n as u32))
    }

    /// Free slots right now; the consumer may free more at any moment.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (mut tx, _rx) = RingBuffer::<u8>::new(5);
    /// tx.push(1).unwrap();
    /// assert_eq!(tx.available_write(), 4);
    /// ```
    pub fn available_write(&self) -> usize {
        self.fresh_free() as usize
    }

    /// Whether no slot is free right now.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (tx, _rx) = RingBuffer::<u8>::new(0);
    /// assert!(tx.is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        self.free == 0 && self.fresh_free() == 0
    }

    /// Capacity in elements.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (tx, _rx) = RingBuffer::<u8>::new(5);
    /// assert_eq!(tx.capacity(), 5);
    /// ```
    pub fn capacity(&self) -> usize {
        self.capacity as usize
    }

    /// Up to `want` slots that are free, re-reading the consumer's index only when the cached
    /// count is short.
    #[inline]
    pub(crate) fn reserve(&mut self, want: usize) -> u32 {
        let want = want.min(self.capacity as usize) as u32;
        if self.free < want {
            self.refresh();
        }
        want.min(self.free)
    }

    /// Lengths of the runs of `n` slots from `slot` before and after the end of the storage.
    #[inline(always)]
    pub(crate) fn spans(&self, n: u32) -> (usize, usize) {
        let first = n.min(self.capacity - self.slot);
        (first as usize, (n - first) as usize)
    }

    /// Publishes the next `n` slots, whose contents must already be written.
    #[inline(always)]
    pub(crate) fn advance(&mut self, n: u32) {
        debug_assert!(n <= self.free);
        self.region.track_write(self.slot, n);
        self.free -= n;
        let slot = self.slot + n;
        if slot >= self.capacity {
            self.slot = slot - self.capacity;
            self.lap = self.capacity - self.lap;
        } else {
            self.slot = slot;
        }
        // SAFETY: the index lives as long as the region, which we hold.
        let write = unsafe { self.write.as_ref() };
        // Release: the consumer that acquires this position must also see the slots before it.
        write.store(self.slot + self.lap, Ordering::Release);
    }

    #[cold]
    #[inline(never)]
    fn refresh(&mut self) -> u32 {
        self.free = self.fresh_free();
        self.free
    }

    fn fresh_free(&self) -> u32 {
        // SAFETY: the index lives as long as the region, which we hold.
        let read = unsafe { self.read.as_ref() };
        // Acquire: slots the consumer released must be read out before we overwrite them.
        let head = read.load(Ordering::Acquire);
        if !position::valid(head, self.capacity) {
            // Only a peer breaking the protocol gets here; refusing to write keeps us in bounds.
            return 0;
        }
        let used = position::distance(head, self.slot + self.lap, self.capacity);
        self.capacity.saturating_sub(used)
    }
}

#[cfg(all(target_endian = "little", not(loom)))]
impl<T: crate::Element> Producer<T> {
    /// Attaches a producer to a ring in memory someone else owns, such as a `SharedArrayBuffer`
    /// seen from WebAssembly, after checking the header and the indices.
    ///
    /// The memory must have been initialised as a plain ring of `T` (record length 1), by
    /// [`RingLayout::init`](crate::layout::RingLayout::init) or by the JavaScript package.
    ///
    /// # Errors
    ///
    /// A [`LayoutError`](crate::LayoutError) when the memory is null, misaligned, too short, not
    /// a ring, of another version, element type or record length, or has inconsistent indices.
    ///
    /// # Safety
    ///
    /// * `ptr` is valid for reads and writes of `len` bytes for as long as the producer lives.
    /// * No other producer is attached to the same ring at the same time.
    /// * Whoever else uses the memory follows the layout contract: only the consumer writes the
    ///   read index, and it reads slots only between the read and the write index.
    ///
    /// ```
    /// use downbeat_ring::{layout::RingLayout, Consumer, Producer};
    /// let layout = RingLayout::new::<f32>(4).unwrap();
    /// let mut mem = vec![0u64; layout.bytes().div_ceil(8)];
    /// let (ptr, len) = (mem.as_mut_ptr().cast::<u8>(), mem.len() * 8);
    /// // SAFETY: `mem` outlives both ends, which are the only ones attached.
    /// let (mut tx, mut rx) = unsafe {
    ///     layout.init(ptr, len).unwrap();
    ///     (Producer::<f32>::from_raw(ptr, len).unwrap(), Consumer::<f32>::from_raw(ptr, len).unwrap())
    /// };
    /// tx.push(1.5).unwrap();
    /// assert_eq!(rx.pop(), Some(1.5));
    /// // The wrong element type is refused.
    /// assert!(unsafe { Producer::<u32>::from_raw(ptr, len) }.is_err());
    /// ```
    pub unsafe fn from_raw(ptr: *mut u8, len: usize) -> Result<Self, crate::LayoutError> {
        // SAFETY: forwarded from the caller.
        unsafe { Self::from_raw_records(ptr, len, 1) }
    }

    /// [`from_raw`](Self::from_raw) for a ring of `record_len`-element records.
    ///
    /// # Safety
    ///
    /// As for [`from_raw`](Self::from_raw).
    pub(crate) unsafe fn from_raw_records(
        ptr: *mut u8,
        len: usize,
        record_len: u32,
    ) -> Result<Self, crate::LayoutError> {
        // SAFETY: the caller vouches for `len` readable bytes; `read` checks the rest of the
        // header fits in them before `check_view` looks at the indices.
        let layout = unsafe { crate::layout::RingLayout::read(ptr, len) }?;
        // SAFETY: as above.
        unsafe { layout.check_view::<T>(ptr, record_len) }?;
        let base = NonNull::new(ptr).ok_or(crate::LayoutError::Null)?;
        // SAFETY: the caller keeps the memory alive and is the only producer; the layout and
        // indices were just checked.
        Ok(unsafe {
            Self::attach(
                Region::borrowed(base),
                crate::layout::DATA_OFFSET,
                layout.capacity() as u32,
            )
        })
    }
}

impl<T> fmt::Debug for Producer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer")
            .field("capacity", &self.capacity)
            .field("write_index", &(self.slot + self.lap))
            .field("cached_free", &self.free)
            .finish()
    }
}
