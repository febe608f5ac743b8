//! Zero-copy access: slots lent as slices, published or released by `commit`.

use core::fmt;
use core::mem::MaybeUninit;
use core::slice;

use crate::consumer::Consumer;
use crate::element::Element;
use crate::position;
use crate::producer::Producer;

/// Free slots lent by [`Producer::write_chunk`]: write them in place, then commit.
///
/// Dropping the chunk without committing publishes nothing.
///
/// ```
/// use downbeat_ring::RingBuffer;
/// let (mut tx, mut rx) = RingBuffer::<f32>::new(4);
/// let mut chunk = tx.write_chunk(4).unwrap();
/// let (a, b) = chunk.as_mut_slices();
/// for (i, x) in a.iter_mut().chain(b).enumerate() {
///     *x = i as f32;
/// }
/// chunk.commit(2); // only the first two become visible
/// assert_eq!(rx.available_read(), 2);
/// ```
pub struct WriteChunk<'a, T> {
    producer: &'a mut Producer<T>,
    /// The write index when the chunk was lent; only the chunk can move it.
    tail: u32,
    len: u32,
}

impl<'a, T: Copy> WriteChunk<'a, T> {
    pub(crate) fn new(producer: &'a mut Producer<T>, tail: u32, len: u32) -> Self {
        Self {
            producer,
            tail,
            len,
        }
    }

    /// Raw parts of the two runs of slots.
    fn parts(&self) -> (*mut T, usize, *mut T, usize) {
        let slot = position::slot(self.tail, self.producer.capacity);
        let (first, second) = self.producer.spans(slot, self.len);
        let data = self.producer.base.data();
        // SAFETY: `slot < capacity` (the producer checked `tail`), so the offset stays inside
        // the storage.
        (unsafe { data.add(slot as usize) }, first, data, second)
    }

    /// Number of slots lent.
    ///
    /// ```
    /// # use downbeat_ring::RingBuffer;
    /// let (mut tx, _rx) = RingBuffer::<u8>::new(4);
    /// assert_eq!(tx.write_chunk(3).unwrap().len(), 3);
    /// ```
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether no slot was lent.
    ///
    /// ```
    /// # use downbeat_ring::RingBuffer;
    /// let (mut tx, _rx) = RingBuffer::<u8>::new(4);
    /// assert!(tx.write_chunk(0).unwrap().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slots as possibly uninitialised memory, for element types that are not [`Element`].
    ///
    /// ```
    /// use std::mem::MaybeUninit;
    /// use downbeat_ring::RingBuffer;
    /// let (mut tx, mut rx) = RingBuffer::<(u8, char)>::new(2);
    /// let mut chunk = tx.write_chunk(1).unwrap();
    /// chunk.as_uninit_slices().0[0] = MaybeUninit::new((1, 'x'));
    /// // SAFETY: the first slot was just written.
    /// unsafe { chunk.commit_unchecked(1) };
    /// assert_eq!(rx.pop(), Some((1, 'x')));
    /// ```
    pub fn as_uninit_slices(&mut self) -> (&mut [MaybeUninit<T>], &mut [MaybeUninit<T>]) {
        let (a, a_len, b, b_len) = self.parts();
        // SAFETY: the runs are disjoint free slots inside the storage that only this chunk may
        // touch while it borrows the producer; `MaybeUninit` makes no claim about their contents.
        unsafe {
            (
                slice::from_raw_parts_mut(a.cast(), a_len),
                slice::from_raw_parts_mut(b.cast(), b_len),
            )
        }
    }

    /// Publishes the first `n` slots.
    ///
    /// # Safety
    ///
    /// Each of the first `n` slots holds a valid `T`: written through
    /// [`as_uninit_slices`](Self::as_uninit_slices) since the ring was created, or by an earlier
    /// commit of the same slot.
    ///
    /// # Panics
    ///
    /// If `n` is larger than the chunk.
    pub unsafe fn commit_unchecked(self, n: usize) {
        assert!(
            n <= self.len as usize,
            "commit of {n} slots exceeds chunk of {}",
            self.len
        );
        self.producer.publish(self.tail, n as u32);
    }
}

impl<T: Element> WriteChunk<'_, T> {
    /// The slots as two slices, in ring order; the second is empty unless the chunk wraps around
    /// the end of the storage.
    ///
    /// Slots hold whatever was there before (zero in a new ring), which is always a valid `T`.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (mut tx, _rx) = RingBuffer::<i32>::new(4);
    /// let mut chunk = tx.write_chunk(2).unwrap();
    /// assert_eq!(chunk.as_mut_slices().0, &mut [0, 0]);
    /// ```
    pub fn as_mut_slices(&mut self) -> (&mut [T], &mut [T]) {
        let (a, a_len, b, b_len) = self.parts();
        // SAFETY: as for `as_uninit_slices`; in addition every slot is initialised, because the
        // storage starts zeroed (or comes from foreign memory the attach contract says is
        // initialised) and every bit pattern is a valid `Element`.
        unsafe {
            (
                slice::from_raw_parts_mut(a, a_len),
                slice::from_raw_parts_mut(b, b_len),
            )
        }
    }

    /// Publishes the first `n` slots to the consumer.
    ///
    /// # Panics
    ///
    /// If `n` is larger than the chunk.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (mut tx, rx) = RingBuffer::<u8>::new(4);
    /// let mut chunk = tx.write_chunk(3).unwrap();
    /// chunk.as_mut_slices().0.copy_from_slice(&[1, 2, 3]);
    /// chunk.commit(1);
    /// assert_eq!(rx.available_read(), 1);
    /// ```
    pub fn commit(self, n: usize) {
        // SAFETY: every slot of an `Element` ring holds a valid value.
        unsafe { self.commit_unchecked(n) }
    }

    /// Publishes every slot of the chunk.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (mut tx, rx) = RingBuffer::<u8>::new(4);
    /// tx.write_chunk(4).unwrap().commit_all();
    /// assert_eq!(rx.available_read(), 4);
    /// ```
    pub fn commit_all(self) {
        let n = self.len as usize;
        self.commit(n);
    }
}

impl<T> fmt::Debug for WriteChunk<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteChunk")
            .field("len", &self.len)
            .finish()
    }
}

/// Ready elements lent by [`Consumer::read_chunk`]: read them in place, then commit to free
/// their slots.
///
/// Dropping the chunk without committing removes nothing.
///
/// ```
/// use downbeat_ring::RingBuffer;
/// let (mut tx, mut rx) = RingBuffer::<u8>::new(3);
/// tx.push_slice(&[1, 2, 3]);
/// rx.pop();
/// tx.push(4).unwrap(); // wraps around
/// let chunk = rx.read_chunk(3).unwrap();
/// assert_eq!(chunk.as_slices(), (&[2, 3][..], &[4][..]));
/// chunk.commit(1);
/// assert_eq!(rx.pop(), Some(3));
/// ```
pub struct ReadChunk<'a, T> {
    consumer: &'a mut Consumer<T>,
    /// The read index when the chunk was lent; only the chunk can move it.
    head: u32,
    len: u32,
}

impl<'a, T: Copy> ReadChunk<'a, T> {
    pub(crate) fn new(consumer: &'a mut Consumer<T>, head: u32, len: u32) -> Self {
        Self {
            consumer,
            head,
            len,
        }
    }

    /// The elements as two slices, oldest first; the second is empty unless the chunk wraps
    /// around the end of the storage.
    ///
    /// ```
    /// # use downbeat_ring::RingBuffer;
    /// let (mut tx, mut rx) = RingBuffer::<u8>::new(4);
    /// tx.push_slice(&[5, 6]);
    /// assert_eq!(rx.read_chunk(2).unwrap().as_slices(), (&[5, 6][..], &[][..]));
    /// ```
    pub fn as_slices(&self) -> (&[T], &[T]) {
        let slot = position::slot(self.head, self.consumer.capacity);
        let (first, second) = self.consumer.spans(slot, self.len);
        let data = self.consumer.base.data();
        // SAFETY: the runs are published slots inside the storage, initialised by the producer
        // before its release store that our acquire load saw; it will not write them again until
        // we commit, which needs the `&mut` this chunk holds.
        unsafe {
            (
                slice::from_raw_parts(data.add(slot as usize), first),
                slice::from_raw_parts(data, second),
            )
        }
    }

    /// Number of elements lent.
    ///
    /// ```
    /// # use downbeat_ring::RingBuffer;
    /// let (mut tx, mut rx) = RingBuffer::<u8>::new(4);
    /// tx.push_slice(&[5, 6]);
    /// assert_eq!(rx.read_chunk(1).unwrap().len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether no element was lent.
    ///
    /// ```
    /// # use downbeat_ring::RingBuffer;
    /// let (_tx, mut rx) = RingBuffer::<u8>::new(4);
    /// assert!(rx.read_chunk(0).unwrap().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Removes the first `n` elements, freeing their slots for the producer.
    ///
    /// # Panics
    ///
    /// If `n` is larger than the chunk.
    ///
    /// ```
    /// # use downbeat_ring::RingBuffer;
    /// let (mut tx, mut rx) = RingBuffer::<u8>::new(4);
    /// tx.push_slice(&[5, 6]);
    /// rx.read_chunk(2).unwrap().commit(1);
    /// assert_eq!(rx.pop(), Some(6));
    /// ```
    pub fn commit(self, n: usize) {
        assert!(
            n <= self.len as usize,
            "commit of {n} slots exceeds chunk of {}",
            self.len
        );
        self.consumer.release(self.head, n as u32);
    }

    /// Removes every element of the chunk.
    ///
    /// ```
    /// # use downbeat_ring::RingBuffer;
    /// let (mut tx, mut rx) = RingBuffer::<u8>::new(4);
    /// tx.push_slice(&[5, 6]);
    /// rx.read_chunk(2).unwrap().commit_all();
    /// assert!(rx.is_empty());
    /// ```
    pub fn commit_all(self) {
        let n = self.len as usize;
        self.commit(n);
    }
}

impl<T> fmt::Debug for ReadChunk<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadChunk").field("len", &self.len).finish()
    }
}
