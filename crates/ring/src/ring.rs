//! Creating a ring in memory of its own.

use core::marker::PhantomData;

use crate::consumer::Consumer;
use crate::element::Element;
use crate::layout::{self, RingLayout};
use crate::producer::Producer;
use crate::region::Region;

/// A bounded, wait-free, single-producer single-consumer queue of values of any type.
///
/// `RingBuffer` itself only builds rings: [`RingBuffer::new`] allocates one and returns its two
/// ends, a [`Producer`] that moves values in and a [`Consumer`] that moves them out, in order.
/// Both ends are [`Send`] when `T` is, so each can go to its own thread.
///
/// The memory has the shared layout of [`layout`](crate::layout). It is freed when both ends are
/// dropped, whichever goes last, and values still in the ring are dropped then, exactly once
/// each. Drop the ends off the audio thread: freeing is not real-time safe.
///
/// ```
/// use downbeat_ring::RingBuffer;
/// let (mut tx, mut rx) = RingBuffer::<f32>::new(256);
/// std::thread::spawn(move || {
///     for i in 0..1000 {
///         while tx.push(i as f32).is_err() {}
///     }
/// });
/// let mut expected = 0.0;
/// while expected < 1000.0 {
///     if let Some(x) = rx.pop() {
///         assert_eq!(x, expected);
///         expected += 1.0;
///     }
/// }
/// ```
///
/// Values that own memory cross just as well; the ring moves them without allocating:
///
/// ```
/// use downbeat_ring::RingBuffer;
/// let (mut tx, mut rx) = RingBuffer::<Box<[f32]>>::new(2);
/// tx.push(vec![0.5; 64].into_boxed_slice()).unwrap();
/// tx.push(vec![0.25; 64].into_boxed_slice()).unwrap();
/// assert_eq!(rx.pop().map(|b| b[0]), Some(0.5));
/// drop((tx, rx)); // the second box is dropped with the ring
/// ```
#[derive(Debug)]
pub struct RingBuffer<T> {
    _never: PhantomData<fn() -> T>,
    _private: core::convert::Infallible,
}

impl<T> RingBuffer<T> {
    /// Allocates a ring of exactly `capacity` elements (no slot is wasted; 0 is allowed) and
    /// returns its producer and consumer.
    ///
    /// # Panics
    ///
    /// If `capacity` exceeds [`MAX_CAPACITY`](crate::layout::MAX_CAPACITY) or the memory size
    /// overflows `isize`.
    ///
    /// ```
    /// use downbeat_ring::RingBuffer;
    /// let (tx, rx) = RingBuffer::<u64>::new(3);
    /// assert_eq!((tx.capacity(), rx.capacity()), (3, 3));
    /// ```
    #[allow(clippy::new_ret_no_self)]
    pub fn new(capacity: usize) -> (Producer<T>, Consumer<T>) {
        split(&layout::opaque::<T>(capacity))
    }
}

impl<T: Element> RingBuffer<T> {
    /// Allocates a ring with a given layout; adapters use it so the header names their element
    /// kind and record length, exactly as a shared ring of theirs would.
    pub(crate) fn with_layout(layout: &RingLayout) -> (Producer<T>, Consumer<T>) {
        split(layout)
    }
}

fn split<T>(layout: &RingLayout) -> (Producer<T>, Consumer<T>) {
    let region = Region::<T>::allocate(layout);
    // SAFETY: the region was just allocated for its capacity of `T`, with both indices zero, and
    // these are its only two ends.
    unsafe { (Producer::attach(region.clone()), Consumer::attach(region)) }
}
