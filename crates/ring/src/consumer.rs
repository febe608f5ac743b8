//! The reading end.

use alloc::sync::Arc;
use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;

use crate::chunk::ReadChunk;
use crate::error::ChunkError;
use crate::position;
use crate::region::Region;
use crate::sync::{AtomicU32, Ordering};

/// The reading end of a ring: pops what the [`Producer`](crate::Producer) pushed, in order.
///
/// Every method is wait-free and allocation-free. It can move to another thread (`Send`) but
/// not be shared (`!Sync`).
///
/// ```
/// use downbeat_ring::RingBuffer;
/// let (mut tx, mut rx) = RingBuffer::<u32>::new(4);
/// tx.push_slice(&[1, 2, 3]);
/// let mut out = [0; 8];
/// assert_eq!(rx.pop_slice(&mut out), 3);
/// assert_eq!(out[..3], [1, 2, 3]);
/// assert!(rx.is_empty());
/// ```
pub struct Consumer<T> {
    pub(crate) data: NonNull<T>,
    write: NonNull<AtomicU32>,
    read: NonNull<AtomicU32>,
    pub(crate) capacity: u32,
    /// Where the next element is read from; the published read index is `slot + lap`.
    pub(crate) slot: u32,
    lap: u32,
    /// Elements known to be readable without looking at the producer's index, which lives on a
    /// cache line the producer writes.
    pub(crate) ready: u32,
    pub(crate) region: Arc<Region>,
    _owns: PhantomData<T>,
}

// SAFETY: the consumer is the only writer of its index and the only reader of the filled slots,
// from whichever one thread holds it.
unsafe impl<T: Send> Send for Consumer<T> {}

impl<T: Copy> Consumer<T> {
    /// Builds the consumer of a region.
    ///
    /// # Safety
    ///
    /// The region holds a valid layout with `capacity` elements of `T` at `data_offset` and
    /// consistent indices, and no other consumer is attached to it.
    pub(crate) unsafe fn attach(region: Arc<Region>, data_offset: usize, capacity: u32) -> Self {
        let read = region.read_index();
        // SAFETY: the index is valid while the region lives, and the caller checked its value.
        let position = unsafe { read.as_ref() }.load(Ordering::Acquire);
        let (slot, lap) = position::split(position, capacity);
        let mut consumer = Self {
            // SAFETY: the storage lies inside the region.
            data: unsafe { region.base().add(data_offset).cast() },
            write: region.write_index(),
            read,
            capacity,
            slot,
            lap,
            ready: 0,
            region,
            _owns: PhantomData,
        };
        consumer.refresh();
        consumer
    }

    /// Removes and returns the oldest element, or `None` if the ring is empty.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (mut tx, mut rx) = RingBuffer::new(2);
    /// tx.push('a').unwrap();
    /// assert_eq!(rx.pop(), Some('a'));
    /// assert_eq!(rx.pop(), None);
    /// ```
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        if self.ready == 0 && self.refresh() == 0 {
            return None;
        }
        self.region.track_read(self.slot, 1);
        // SAFETY: `ready > 0`: the producer published `slot` and will not write it again until
        // `advance` releases it.
        let value = unsafe { self.data.as_ptr().add(self.slot as usize).read() };
        self.advance(1);
        Some(value)
    }

    /// The oldest element, without removing it.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (mut tx, rx) = RingBuffer::new(2);
    /// assert_eq!(rx.peek(), None);
    /// tx.push(3u8).unwrap();
    /// assert_eq!(rx.peek(), Some(&3));
    /// ```
    pub fn peek(&self) -> Option<&T> {
        if self.ready == 0 && self.fresh_ready() == 0 {
            return None;
        }
        self.region.track_read(self.slot, 1);
        // SAFETY: the slot is published and stays untouched while `&self` blocks `advance`.
        Some(unsafe { &*self.data.as_ptr().add(self.slot as usize) })
    }

    /// Moves as many of the oldest elements as fit into `dst`; returns how many.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (mut tx, mut rx) = RingBuffer::<f64>::new(4);
    /// tx.push_slice(&[1.0, 2.0, 3.0]);
    /// let mut two = [0.0; 2];
    /// assert_eq!(rx.pop_slice(&mut two), 2);
    /// assert_eq!(two, [1.0, 2.0]);
    /// ```
    #[inline]
    pub fn pop_slice(&mut self, dst: &mut [T]) -> usize {
        let n = self.reserve(dst.len());
        if n == 0 {
            // Skipping the store keeps the index's cache line shared while the ring stays empty.
            return 0;
        }
        let (first, second) = self.spans(n);
        self.region.track_read(self.slot, n);
        // SAFETY: `reserve` guarantees `n <= ready` and `n <= dst.len()`; the two spans are the
        // published slots from `slot`, before and after the end of the storage.
        unsafe {
            let src = self.data.as_ptr();
            src.add(self.slot as usize)
                .copy_to_nonoverlapping(dst.as_mut_ptr(), first);
            src.copy_to_nonoverlapping(dst.as_mut_ptr().add(first), second);
        }
        self.advance(n);
        n as usize
    }

    /// Lends exactly the `n` oldest elements for reading in place, as up to two slices.
    ///
    /// Nothing is removed until the chunk is committed.
    ///
    /// # Errors
    ///
    /// [`ChunkError`] if fewer than `n` elements are ready.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (mut tx, mut rx) = RingBuffer::<u16>::new(4);
    /// tx.push_slice(&[1, 2, 3]);
    /// let chunk = rx.read_chunk(2).unwrap();
    /// assert_eq!(chunk.as_slices(), (&[1, 2][..], &[][..]));
    /// chunk.commit_all();
    /// assert_eq!(rx.pop(), Some(3));
    /// ```
    #[inline]
    pub fn read_chunk(&mut self, n: usize) -> Result<ReadChunk<'_, T>, ChunkError> {
        if n > self.ready as usize && n > self.refresh() as usize {
            return Err(ChunkError {
                requested: n,
                available: self.ready as usize,
            });
        }
        self.region.track_read(self.slot, n as u32);
        Ok(ReadChunk::new(self, n as u32))
    }

    /// Elements ready right now; the producer may add more at any moment.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (mut tx, rx) = RingBuffer::<u8>::new(5);
    /// tx.push(1).unwrap();
    /// assert_eq!(rx.available_read(), 1);
    /// ```
    pub fn available_read(&self) -> usize {
        self.fresh_ready() as usize
    }

    /// Whether nothing is ready right now.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (_tx, rx) = RingBuffer::<u8>::new(5);
    /// assert!(rx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.ready == 0 && self.fresh_ready() == 0
    }

    /// Capacity in elements.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (_tx, rx) = RingBuffer::<u8>::new(5);
    /// assert_eq!(rx.capacity(), 5);
    /// ```
    pub fn capacity(&self) -> usize {
        self.capacity as usize
    }

    #[inline]
    pub(crate) fn reserve(&mut self, want: usize) -> u32 {
        let want = want.min(self.capacity as usize) as u32;
        if self.ready < want {
            self.refresh();
        }
        want.min(self.ready)
    }

    /// Lengths of the runs of `n` slots from `slot` before and after the end of the storage.
    #[inline(always)]
    pub(crate) fn spans(&self, n: u32) -> (usize, usize) {
        let first = n.min(self.capacity - self.slot);
        (first as usize, (n - first) as usize)
    }

    /// Releases the next `n` slots back to the producer.
    #[inline(always)]
    pub(crate) fn advance(&mut self, n: u32) {
        debug_assert!(n <= self.ready);
        self.region.track_read(self.slot, n);
        self.ready -= n;
        let slot = self.slot + n;
        if slot >= self.capacity {
            self.slot = slot - self.capacity;
            self.lap = self.capacity - self.lap;
        } else {
            self.slot = slot;
        }
        // SAFETY: the index lives as long as the region, which we hold.
        let read = unsafe { self.read.as_ref() };
        // Release: our reads of these slots must be done before the producer reuses them.
        read.store(self.slot + self.lap, Ordering::Release);
    }

    #[cold]
    #[inline(never)]
    fn refresh(&mut self) -> u32 {
        self.ready = self.fresh_ready();
        self.ready
    }

    fn fresh_ready(&self) -> u32 {
        // SAFETY: the index lives as long as the region, which we hold.
        let write = unsafe { self.write.as_ref() };
        // Acquire: the slots before this position must be visible with their contents.
        let tail = write.load(Ordering::Acquire);
        if !position::valid(tail, self.capacity) {
            // Only a peer breaking the protocol gets here; reading nothing keeps us in bounds.
            return 0;
        }
        let ready = position::distance(self.slot + self.lap, tail, self.capacity);
        if ready > self.capacity {
            0
        } else {
            ready
        }
    }
}

#[cfg(all(target_endian = "little", not(loom)))]
impl<T: crate::Element> Consumer<T> {
    /// Attaches a consumer to a ring in memory someone else owns, after checking the header and
    /// the indices; the counterpart of [`Producer::from_raw`](crate::Producer::from_raw).
    ///
    /// # Errors
    ///
    /// A [`LayoutError`](crate::LayoutError) when the memory is null, misaligned, too short, not
    /// a ring, of another version, element type or record length, or has inconsistent indices.
    ///
    /// # Safety
    ///
    /// * `ptr` is valid for reads and writes of `len` bytes for as long as the consumer lives.
    /// * No other consumer is attached to the same ring at the same time.
    /// * Whoever else uses the memory follows the layout contract: only the producer writes the
    ///   write index, and it writes slots only outside the read..write range.
    ///
    /// ```
    /// use downbeat_ring::{layout::RingLayout, Consumer, LayoutError};
    /// let layout = RingLayout::new::<i32>(4).unwrap();
    /// let mut mem = vec![0u64; layout.bytes().div_ceil(8)];
    /// let ptr = mem.as_mut_ptr().cast::<u8>();
    /// // SAFETY: `mem` outlives the consumer, the only one attached.
    /// unsafe { layout.init(ptr, layout.bytes()) }.unwrap();
    /// let rx = unsafe { Consumer::<i32>::from_raw(ptr, layout.bytes()) }.unwrap();
    /// assert!(rx.is_empty());
    /// let short = unsafe { Consumer::<i32>::from_raw(ptr, layout.bytes() - 1) };
    /// assert_eq!(short.unwrap_err(), LayoutError::TooSmall { needed: 400, got: 399 });
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
        // SAFETY: the caller keeps the memory alive and is the only consumer; the layout and
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

impl<T> fmt::Debug for Consumer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumer")
            .field("capacity", &self.capacity)
            .field("read_index", &(self.slot + self.lap))
            .field("cached_ready", &self.ready)
            .finish()
    }
}
