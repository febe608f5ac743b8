//! Creating a ring in memory of its own.

use core::marker::PhantomData;

use crate::consumer::Consumer;
use crate::element::Element;
use crate::layout::{self, RingLayout};
use crate::producer::Producer;
use crate::region::Region;

/// A bounded, wait-free, single-producer single-consumer queue of `Copy` elements.
///
/// `RingBuffer` itself only builds rings: [`RingBuffer::new`] allocates one and returns its two
/// ends. The memory has the shared layout of [`layout`](crate::layout) and is freed when both
/// ends are dropped; drop them off the audio thread, as freeing is not real-time safe.
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
#[derive(Debug)]
pub struct RingBuffer<T> {
    _never: PhantomData<fn() -> T>,
    _private: core::convert::Infallible,
}

impl<T: Copy> RingBuffer<T> {
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

fn split<T: Copy>(layout: &RingLayout) -> (Producer<T>, Consumer<T>) {
    let (region, offset) = Region::allocate::<T>(layout);
    let capacity = layout.capacity() as u32;
    // SAFETY: the region was just allocated for `capacity` elements of `T` at `offset`, with
    // both indices zero, and these are its only two ends.
    unsafe {
        (
            Producer::attach(region.clone(), offset, capacity),
            Consumer::attach(region, offset, capacity),
        )
    }
}
