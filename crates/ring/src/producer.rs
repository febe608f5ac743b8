//! The writing end.

use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;

use crate::chunk::WriteChunk;
use crate::error::{ChunkError, Full};
use crate::position;
use crate::region::{Base, Handle, Region};
use crate::sync::{Arc, AtomicU32, Ordering};

/// The writing end of a ring: moves values in for the [`Consumer`](crate::Consumer).
///
/// Every method is wait-free and allocation-free: it finishes in a bounded number of steps
/// whatever the consumer does. It can move to another thread (`Send`, when `T` is) but not be
/// shared (`!Sync`). Single values ([`push`](Self::push)) may be of any type; slices and chunks
/// need `T: Copy`.
///
/// Dropping the producer leaves what it pushed in the ring for the consumer; the values still
/// there when the consumer is gone too are dropped with the ring.
///
/// ```
/// use downbeat_ring::RingBuffer;
/// let (mut tx, mut rx) = RingBuffer::<f32>::new(3);
/// assert_eq!(tx.push_slice(&[1.0, 2.0, 3.0, 4.0]), 3);
/// assert!(tx.is_full());
/// assert_eq!(rx.pop(), Some(1.0));
/// ```
pub struct Producer<T> {
    /// The ring's memory: storage and both indices at constant offsets from it.
    pub(crate) base: Base<T>,
    pub(crate) capacity: u32,
    /// Our position: the write index as we last stored it. Only we write the index, so we never
    /// need to read it back.
    tail: u32,
    /// Where the ring is full as far as we know: the consumer's index as last read, plus the
    /// capacity. The consumer's line is written by the consumer, so reading it only when we
    /// reach this position keeps that line still; and keeping the sum, not the index, makes
    /// "full?" a single compare with our position on every push.
    limit: u32,
    /// The consumer's index as last read, the one `limit` was made from: a fresh read equal to
    /// it means nothing was freed.
    head: u32,
    pub(crate) region: Handle<T>,
    _owns: PhantomData<T>,
}

// SAFETY: the producer is the only writer of its index and of the free slots, from whichever one
// thread holds it; moving it moves that right along.
unsafe impl<T: Send> Send for Producer<T> {}

impl<T> Producer<T> {
    /// Builds the producer of a region.
    ///
    /// # Safety
    ///
    /// The region holds a valid layout of `T` with consistent indices, and no other producer is
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
            tail,
            limit: limit(head, region.capacity()),
            head,
            region: Handle::new(region),
            _owns: PhantomData,
        }
    }

    /// Moves one value into the ring, or hands it back if the ring is full.
    ///
    /// The value is moved, not copied or cloned, so a `Box` crosses without allocating or
    /// freeing anything.
    ///
    /// A push that finds the ring still full since its last look issues one spin-loop hint
    /// (`PAUSE` on x86) before handing the value back, so a loop that retries at once leaves
    /// the consumer's index alone between looks. A push that succeeds never does.
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
        let tail = self.position();
        let cap = self.capacity;
        if tail == self.limit && !self.refresh_any(tail) {
            return Err(Full(value));
        }
        let slot = position::slot(tail, cap);
        self.region.track_write(slot, 1);
        // SAFETY: there is room, so `slot` (below `capacity`: `tail` is ours and valid) is outside
        // the consumer's readable range until `publish` moves the index past it.
        unsafe { self.base.data().add(slot as usize).write(value) };
        self.store(position::next(tail, cap));
        Ok(())
    }

    /// Whether the consumer of a ring made by [`RingBuffer::new`](crate::RingBuffer::new) has
    /// been dropped: nothing pushed from now on will be read. Always `false` for a ring in
    /// memory the caller provided ([`from_raw`](Self::from_raw)), whose consumer we cannot see.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (tx, rx) = RingBuffer::<u8>::new(2);
    /// assert!(!tx.is_abandoned());
    /// drop(rx);
    /// assert!(tx.is_abandoned());
    /// ```
    pub fn is_abandoned(&self) -> bool {
        crate::region::peer_gone(&self.region)
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
        let tail = self.position();
        fresh_head(self.read_index(), tail, self.capacity)
            .map_or(0, |(_, used)| (self.capacity - used) as usize)
    }

    /// Whether no slot is free right now.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (tx, _rx) = RingBuffer::<u8>::new(0);
    /// assert!(tx.is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        let tail = self.position();
        tail == self.limit && self.available_write() == 0
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

    /// Up to `want` free slots, for adapters that size a chunk before asking for it.
    #[inline]
    pub(crate) fn reserve(&mut self, want: usize) -> u32 {
        let tail = self.position();
        self.room(tail, clamp(want)).min(clamp(want))
    }

    /// Free slots from position `tail`: the cached count if it reaches `want`, otherwise a fresh
    /// one.
    #[inline(always)]
    pub(crate) fn room(&mut self, tail: u32, want: u32) -> u32 {
        let cached = position::distance(tail, self.limit, self.capacity);
        if cached >= want {
            cached
        } else {
            self.refresh(tail)
        }
    }

    /// Re-reads the consumer's index.
    ///
    /// Inlined into every caller: as an out-of-line call taking `&mut self` it made the
    /// compiler keep the whole producer in memory and reload its fields after every store,
    /// even on the paths that never call it (37% more instructions per push on a ring of 4).
    #[inline(always)]
    fn refresh(&mut self, tail: u32) -> u32 {
        match fresh_head(self.read_index(), tail, self.capacity) {
            Some((head, used)) => {
                self.head = head;
                self.limit = limit(head, self.capacity);
                self.capacity - used
            }
            None => 0,
        }
    }

    /// [`refresh`](Self::refresh) for a caller that needs one slot, when the cache says none: a
    /// consumer's index that has not moved means still full, which needs no check and no store
    /// (a producer retrying on a full ring does only this).
    ///
    /// A ring we allocated has our own consumer at the other end, which only moves its index
    /// forward, so a new index means at least one slot was freed and needs no check either.
    /// Only a peer in shared memory (JavaScript, wasm, another program) can store a position
    /// that is not one, and only for such a ring is the index checked. Asking the region
    /// costs a load on this path alone, where a flag in the producer would take a register on
    /// every push.
    #[inline(always)]
    fn refresh_any(&mut self, tail: u32) -> bool {
        // Acquire: as in `fresh_head`.
        let head = self.read_index().load(Ordering::Acquire);
        if head == self.head {
            // Still full. A producer that retries at once (`while tx.push(x).is_err() {}`)
            // would otherwise re-read the consumer's line every few cycles and take it away
            // each time the consumer stores to it: on a ring of 4 it failed 55 times per item
            // against rtrb's 16-18, and moved 5-10% fewer items. With one spin-loop hint here it
            // fails less than once per item. The hint costs a push that fails anyway, never
            // one that succeeds, and the consumer's empty path has none (the audio thread ends
            // every drain there).
            core::hint::spin_loop();
            return false;
        }
        if self.region.is_owned() {
            self.head = head;
            self.limit = limit(head, self.capacity);
            return true;
        }
        match position::checked(head, tail, head, self.capacity) {
            Some(used) => {
                self.head = head;
                self.limit = limit(head, self.capacity);
                used < self.capacity
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

    /// Publishes the `n` slots after position `tail`, whose contents must already be written.
    #[inline(always)]
    pub(crate) fn publish(&mut self, tail: u32, n: u32) {
        self.region
            .track_write(position::slot(tail, self.capacity), n);
        self.store(position::advance(tail, n, self.capacity));
    }

    #[inline(always)]
    fn store(&mut self, tail: u32) {
        self.tail = tail;
        // SAFETY: the index lives as long as the region, which we hold.
        let write = unsafe { self.base.write_index() };
        // Release: the consumer that acquires this position must also see the slots before it.
        write.store(tail, Ordering::Release);
    }
}

// Slices and chunks: bulk copies in, for `Copy` elements only (a chunk hands slots out as
// plain memory, so it cannot own values that need dropping).
impl<T: Copy> Producer<T> {
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
        let tail = self.position();
        let n = self.room(tail, clamp(src.len())).min(clamp(src.len()));
        if n == 0 {
            // Skipping the store keeps the index's cache line shared while the ring stays full.
            return 0;
        }
        let slot = position::slot(tail, self.capacity);
        let (first, second) = self.spans(slot, n);
        self.region.track_write(slot, n);
        // SAFETY: `n` is at most the free slots and `src.len()`; `spans` splits the `n` slots from
        // `slot` into the run before the end of the storage and the run wrapped to its start,
        // none of which the consumer may read yet.
        unsafe {
            let dst = self.base.data();
            src.as_ptr()
                .copy_to_nonoverlapping(dst.add(slot as usize), first);
            src.as_ptr().add(first).copy_to_nonoverlapping(dst, second);
        }
        self.publish(tail, n);
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
        let tail = self.position();
        let free = self.room(tail, clamp(n));
        if n > free as usize {
            return Err(ChunkError {
                requested: n,
                available: free as usize,
            });
        }
        self.region
            .track_write(position::slot(tail, self.capacity), n as u32);
        Ok(WriteChunk::new(self, tail, n as u32))
    }
}

/// The position at which a producer is full while the consumer is at `head`.
#[inline(always)]
fn limit(head: u32, capacity: u32) -> u32 {
    position::advance(head, capacity, capacity)
}

/// The consumer's index and the slots in use up to `tail`, if the index is consistent with ours.
#[inline(always)]
fn fresh_head(read: &AtomicU32, tail: u32, capacity: u32) -> Option<(u32, u32)> {
    // Acquire: slots the consumer released must be read out before we overwrite them.
    let head = read.load(Ordering::Acquire);
    // Anything else comes from a peer breaking the protocol; refusing to write keeps us in bounds.
    position::checked(head, tail, head, capacity).map(|used| (head, used))
}

/// A slice length as a slot count; no ring holds more than `u32::MAX` anyway.
#[inline(always)]
pub(crate) fn clamp(n: usize) -> u32 {
    n.min(u32::MAX as usize) as u32
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
        Ok(unsafe { Self::attach(Region::borrowed(base, layout.capacity() as u32)) })
    }
}

impl<T> Producer<T> {
    #[inline(always)]
    fn position(&self) -> u32 {
        self.tail
    }

    #[inline(always)]
    fn read_index(&self) -> &AtomicU32 {
        // SAFETY: the index lives as long as the region, which we hold.
        unsafe { self.base.read_index() }
    }
}

impl<T> fmt::Debug for Producer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer")
            .field("capacity", &self.capacity)
            .field("write_index", &self.position())
            .field("cached_read_index", &self.head)
            .finish()
    }
}
