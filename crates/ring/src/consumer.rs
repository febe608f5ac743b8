//! The reading end.

use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;

use crate::chunk::ReadChunk;
use crate::error::ChunkError;
use crate::position;
use crate::producer::clamp;
use crate::region::{Base, Handle, Region};
use crate::sync::{Arc, AtomicU32, Ordering};

/// The reading end of a ring: moves out what the [`Producer`](crate::Producer) pushed, in order.
///
/// Every method is wait-free and allocation-free. It can move to another thread (`Send`, when
/// `T` is) but not be shared (`!Sync`). Single values ([`pop`](Self::pop),
/// [`peek`](Self::peek)) may be of any type; slices and chunks need `T: Copy`.
///
/// Values never popped are dropped with the ring, when the producer is gone too: dropping the
/// consumer frees nothing while the producer lives.
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
    /// The ring's memory: storage and both indices at constant offsets from it.
    pub(crate) base: Base<T>,
    pub(crate) capacity: u32,
    /// Our position: the read index as we last stored it.
    head: u32,
    /// The producer's index as last read; refreshed only when it says the ring is empty.
    tail: u32,
    pub(crate) region: Handle<T>,
    _owns: PhantomData<T>,
}

// SAFETY: the consumer is the only writer of its index and the only reader of the filled slots,
// from whichever one thread holds it.
unsafe impl<T: Send> Send for Consumer<T> {}

impl<T> Consumer<T> {
    /// Builds the consumer of a region.
    ///
    /// # Safety
    ///
    /// The region holds a valid layout of `T` with consistent indices, and no other consumer is
    /// attached to it.
    pub(crate) unsafe fn attach(region: Arc<Region<T>>) -> Self {
        let base = region.base();
        // SAFETY: we hold the region; the caller checked the indices' values.
        let (tail, head) = unsafe {
            (
                base.write_index().load(Ordering::Acquire),
                base.read_index().load(Ordering::Acquire),
            )
        };
        Self {
            base,
            capacity: region.capacity(),
            head,
            tail,
            region: Handle::new(region),
            _owns: PhantomData,
        }
    }

    /// Moves the oldest value out of the ring, or returns `None` if the ring is empty.
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
        let head = self.position();
        let cap = self.capacity;
        if head == self.tail && !self.refresh_any(head) {
            return None;
        }
        let slot = position::slot(head, cap);
        self.region.track_read(slot, 1);
        // SAFETY: an element is ready, so the producer published `slot` (below `capacity`:
        // `head` is ours and valid) and will not write it again until we move past it.
        let value = unsafe { self.base.data().add(slot as usize).read() };
        self.store(position::next(head, cap));
        Some(value)
    }

    /// Lends the oldest value without removing it; `peek().copied()` reads a `Copy` one.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (mut tx, rx) = RingBuffer::new(2);
    /// assert_eq!(rx.peek(), None);
    /// tx.push(3u8).unwrap();
    /// assert_eq!(rx.peek(), Some(&3));
    /// ```
    pub fn peek(&self) -> Option<&T> {
        let head = self.position();
        if ready(head, self.tail, self.capacity) == 0 && self.available_read() == 0 {
            return None;
        }
        let slot = position::slot(head, self.capacity);
        self.region.track_read(slot, 1);
        // SAFETY: the slot is published and stays untouched while `&self` blocks `release`.
        Some(unsafe { &*self.base.data().add(slot as usize) })
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
        let head = self.position();
        // Acquire: as in `refresh`.
        let tail = self.write_index().load(Ordering::Acquire);
        fresh(tail, head, self.capacity).map_or(0, |(_, n)| n as usize)
    }

    /// Whether the producer of a ring made by [`RingBuffer::new`](crate::RingBuffer::new) has
    /// been dropped: nothing more will arrive, and what [`is_empty`](Self::is_empty) reads
    /// after this says `true` includes everything it pushed. Always `false` for a ring in
    /// memory the caller provided ([`from_raw`](Self::from_raw)), whose producer we cannot see.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (tx, rx) = RingBuffer::<u8>::new(2);
    /// assert!(!rx.is_abandoned());
    /// drop(tx);
    /// assert!(rx.is_abandoned());
    /// ```
    pub fn is_abandoned(&self) -> bool {
        crate::region::peer_gone(&self.region)
    }

    /// Whether nothing is ready right now.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (_tx, rx) = RingBuffer::<u8>::new(5);
    /// assert!(rx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        let head = self.position();
        ready(head, self.tail, self.capacity) == 0 && self.available_read() == 0
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

    /// Up to `want` ready elements, for adapters that size a chunk before asking for it.
    #[inline]
    pub(crate) fn reserve(&mut self, want: usize) -> u32 {
        let head = self.position();
        self.ready(head, clamp(want)).min(clamp(want))
    }

    /// Elements ready from position `head`: the cached count if it reaches `want`, otherwise a
    /// fresh one.
    #[inline(always)]
    pub(crate) fn ready(&mut self, head: u32, want: u32) -> u32 {
        let cached = ready(head, self.tail, self.capacity);
        if cached >= want {
            cached
        } else {
            self.refresh(head)
        }
    }

    /// Re-reads the producer's index; inlined for the same reason as the producer's.
    #[inline(always)]
    fn refresh(&mut self, head: u32) -> u32 {
        // Acquire: the slots before this position must be visible with their contents.
        let tail = self.write_index().load(Ordering::Acquire);
        match fresh(tail, head, self.capacity) {
            Some((tail, ready)) => {
                self.tail = tail;
                ready
            }
            None => 0,
        }
    }

    /// [`refresh`](Self::refresh) for a caller that needs one element, when the cache says
    /// none: a producer's index that has not moved means still empty, which needs no check and
    /// no store (a consumer polling an empty ring does only this).
    #[inline(always)]
    fn refresh_any(&mut self, head: u32) -> bool {
        // Acquire: the slots before this position must be visible with their contents.
        let tail = self.write_index().load(Ordering::Acquire);
        if tail == head {
            return false;
        }
        // A new index from our own producer means at least one more element; only a peer in
        // shared memory needs checking (see `Producer::refresh_any`).
        if self.region.is_owned() {
            self.tail = tail;
            return true;
        }
        match fresh(tail, head, self.capacity) {
            Some((tail, ready)) => {
                self.tail = tail;
                ready != 0
            }
            None => false,
        }
    }

    /// Lengths of the runs of `n` slots from `slot` before and after the end of the storage.
    #[inline(always)]
    pub(crate) fn spans(&self, slot: u32, n: u32) -> (usize, usize) {
        let first = n.min(self.capacity - slot);
        (first as usize, (n - first) as usize)
    }

    /// Hands the `n` slots after position `head` back to the producer.
    #[inline(always)]
    pub(crate) fn release(&mut self, head: u32, n: u32) {
        self.region
            .track_read(position::slot(head, self.capacity), n);
        self.store(position::advance(head, n, self.capacity));
    }

    #[inline(always)]
    fn store(&mut self, head: u32) {
        self.head = head;
        // SAFETY: the index lives as long as the region, which we hold.
        let read = unsafe { self.base.read_index() };
        // Release: our reads of these slots must be done before the producer reuses them.
        read.store(head, Ordering::Release);
    }
}

// Slices and chunks: bulk copies out, for `Copy` elements only (a committed read chunk forgets
// its elements instead of dropping them).
impl<T: Copy> Consumer<T> {
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
        let head = self.position();
        let n = self.ready(head, clamp(dst.len())).min(clamp(dst.len()));
        if n == 0 {
            // Skipping the store keeps the index's cache line shared while the ring stays empty.
            return 0;
        }
        let slot = position::slot(head, self.capacity);
        let (first, second) = self.spans(slot, n);
        self.region.track_read(slot, n);
        // SAFETY: `n` is at most the ready elements and `dst.len()`; the two spans are the
        // published slots from `slot`, before and after the end of the storage.
        unsafe {
            let src = self.base.data();
            src.add(slot as usize)
                .copy_to_nonoverlapping(dst.as_mut_ptr(), first);
            src.copy_to_nonoverlapping(dst.as_mut_ptr().add(first), second);
        }
        self.release(head, n);
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
        let head = self.position();
        let ready = self.ready(head, clamp(n));
        if n > ready as usize {
            return Err(ChunkError {
                requested: n,
                available: ready as usize,
            });
        }
        self.region
            .track_read(position::slot(head, self.capacity), n as u32);
        Ok(ReadChunk::new(self, head, n as u32))
    }
}

impl<T> Consumer<T> {
    #[inline(always)]
    fn position(&self) -> u32 {
        self.head
    }

    #[inline(always)]
    fn write_index(&self) -> &AtomicU32 {
        // SAFETY: the index lives as long as the region, which we hold.
        unsafe { self.base.write_index() }
    }
}

/// Elements between us at `head` and the producer at `tail`; zero if they are inconsistent.
#[inline(always)]
fn ready(head: u32, tail: u32, capacity: u32) -> u32 {
    let n = position::distance(head, tail, capacity);
    if n > capacity {
        0
    } else {
        n
    }
}

/// The producer's index `tail`, just loaded, with the elements ready from `head`, if it is
/// consistent with ours.
#[inline(always)]
fn fresh(tail: u32, head: u32, capacity: u32) -> Option<(u32, u32)> {
    // Anything else comes from a peer breaking the protocol; reading nothing keeps us in bounds.
    position::checked(head, tail, tail, capacity).map(|n| (tail, n))
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
        Ok(unsafe { Self::attach(Region::borrowed(base, layout.capacity() as u32)) })
    }
}

impl<T> fmt::Debug for Consumer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumer")
            .field("capacity", &self.capacity)
            .field("read_index", &self.position())
            .field("cached_write_index", &self.tail)
            .finish()
    }
}
