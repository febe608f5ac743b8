//! Parameter changes for sample-accurate automation.

use crate::consumer::Consumer;
use crate::error::Full;
use crate::layout::RingLayout;
use crate::producer::Producer;
use crate::ring::RingBuffer;

/// Words per record in a parameter ring: `[id, value as f32 bits, frame]`, each a little-endian
/// `u32` (see `docs/ring-layout.md`).
pub const PARAM_RECORD_LEN: usize = 3;

/// One parameter change: set parameter `id` to `value` at `frame` samples into the next block.
///
/// ```
/// use downbeat_ring::ParamChange;
/// let change = ParamChange { id: 3, value: -6.0, frame: 0 };
/// assert_eq!(change.to_words(), [3, (-6.0f32).to_bits(), 0]);
/// assert_eq!(ParamChange::from_words(change.to_words()), change);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParamChange {
    /// Parameter identifier; the whole `u32` range is available.
    pub id: u32,
    /// New value.
    pub value: f32,
    /// Frame offset within the next block at which the value applies.
    pub frame: u32,
}

impl ParamChange {
    /// The record as it sits in the ring.
    pub const fn to_words(self) -> [u32; PARAM_RECORD_LEN] {
        [self.id, self.value.to_bits(), self.frame]
    }

    /// A change from its record.
    pub const fn from_words(words: [u32; PARAM_RECORD_LEN]) -> Self {
        Self {
            id: words[0],
            value: f32::from_bits(words[1]),
            frame: words[2],
        }
    }
}

/// Creates parameter queues: a ring of `u32` words holding whole [`ParamChange`] records.
///
/// A record is written and read through one chunk of [`PARAM_RECORD_LEN`] words and published by
/// one index store, so the reader never sees part of a change.
///
/// ```
/// use downbeat_ring::{ParamChange, ParamQueue};
/// let (mut control, mut audio) = ParamQueue::new(64);
/// control.push(ParamChange { id: 1, value: 440.0, frame: 12 }).unwrap();
/// control.push(ParamChange { id: 2, value: 0.25, frame: 300 }).unwrap();
/// // In the audio callback: apply every change that arrived before this block.
/// for change in audio.drain() {
///     assert!(change.frame < 512);
/// }
/// assert!(audio.is_empty());
/// ```
#[derive(Debug)]
pub struct ParamQueue {
    _private: core::convert::Infallible,
}

impl ParamQueue {
    /// Allocates a queue holding up to `capacity` changes.
    ///
    /// # Panics
    ///
    /// If `capacity * 3` exceeds [`MAX_CAPACITY`](crate::layout::MAX_CAPACITY).
    ///
    /// ```
    /// use downbeat_ring::ParamQueue;
    /// let (writer, reader) = ParamQueue::new(16);
    /// assert_eq!((writer.capacity(), reader.capacity()), (16, 16));
    /// ```
    #[allow(clippy::new_ret_no_self)]
    pub fn new(capacity: usize) -> (ParamWriter, ParamReader) {
        let layout = RingLayout::records::<u32>(capacity, PARAM_RECORD_LEN)
            .expect("parameter queue capacity too large");
        let (producer, consumer) = RingBuffer::with_layout(&layout);
        (ParamWriter { producer }, ParamReader { consumer })
    }
}

/// The sending end of a [`ParamQueue`], typically on the control thread.
#[derive(Debug)]
pub struct ParamWriter {
    producer: Producer<u32>,
}

impl ParamWriter {
    /// Queues a change, or hands it back when the queue is full.
    ///
    /// # Errors
    ///
    /// [`Full`] with the change when there is no room for a whole record.
    ///
    /// ```
    /// use downbeat_ring::{Full, ParamChange, ParamQueue};
    /// let (mut tx, _rx) = ParamQueue::new(1);
    /// let change = ParamChange { id: 0, value: 1.0, frame: 0 };
    /// tx.push(change).unwrap();
    /// assert_eq!(tx.push(change), Err(Full(change)));
    /// ```
    #[inline]
    pub fn push(&mut self, change: ParamChange) -> Result<(), Full<ParamChange>> {
        let Ok(mut chunk) = self.producer.write_chunk(PARAM_RECORD_LEN) else {
            return Err(Full(change));
        };
        let words = change.to_words();
        let (a, b) = chunk.as_mut_slices();
        if a.len() == PARAM_RECORD_LEN {
            a.copy_from_slice(&words);
        } else {
            // Only a peer that broke the record alignment makes a record straddle the end.
            for (slot, word) in a.iter_mut().chain(b).zip(words) {
                *slot = word;
            }
        }
        chunk.commit_all();
        Ok(())
    }

    /// Changes that fit right now.
    ///
    /// ```
    /// # use downbeat_ring::ParamQueue;
    /// let (tx, _rx) = ParamQueue::new(4);
    /// assert_eq!(tx.available_write(), 4);
    /// ```
    pub fn available_write(&self) -> usize {
        self.producer.available_write() / PARAM_RECORD_LEN
    }

    /// Whether no whole change fits right now.
    ///
    /// ```
    /// # use downbeat_ring::ParamQueue;
    /// let (tx, _rx) = ParamQueue::new(0);
    /// assert!(tx.is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        self.available_write() == 0
    }

    /// Capacity in changes.
    ///
    /// ```
    /// # use downbeat_ring::ParamQueue;
    /// assert_eq!(ParamQueue::new(9).0.capacity(), 9);
    /// ```
    pub fn capacity(&self) -> usize {
        self.producer.capacity() / PARAM_RECORD_LEN
    }

    /// Attaches to a parameter ring in foreign memory: a `u32` ring with record length
    /// [`PARAM_RECORD_LEN`], as made by `RingLayout::records::<u32>(n, PARAM_RECORD_LEN)`.
    ///
    /// # Errors
    ///
    /// As [`Producer::from_raw`], including a record length other than 3.
    ///
    /// # Safety
    ///
    /// As [`Producer::from_raw`].
    ///
    /// ```
    /// use downbeat_ring::{layout::RingLayout, ParamReader, ParamWriter, PARAM_RECORD_LEN};
    /// let layout = RingLayout::records::<u32>(8, PARAM_RECORD_LEN).unwrap();
    /// let mut mem = vec![0u64; layout.bytes().div_ceil(8)];
    /// let ptr = mem.as_mut_ptr().cast::<u8>();
    /// // SAFETY: `mem` outlives both ends, the only ones attached.
    /// unsafe { layout.init(ptr, layout.bytes()) }.unwrap();
    /// let tx = unsafe { ParamWriter::from_raw(ptr, layout.bytes()) }.unwrap();
    /// let rx = unsafe { ParamReader::from_raw(ptr, layout.bytes()) }.unwrap();
    /// assert_eq!((tx.capacity(), rx.capacity()), (8, 8));
    /// ```
    #[cfg(all(target_endian = "little", not(loom)))]
    pub unsafe fn from_raw(ptr: *mut u8, len: usize) -> Result<Self, crate::LayoutError> {
        // SAFETY: forwarded from the caller.
        let producer = unsafe { Producer::from_raw_records(ptr, len, PARAM_RECORD_LEN as u32) }?;
        Ok(Self { producer })
    }
}

/// The receiving end of a [`ParamQueue`], typically on the audio thread.
#[derive(Debug)]
pub struct ParamReader {
    consumer: Consumer<u32>,
}

impl ParamReader {
    /// The oldest change, or `None` if there is none.
    ///
    /// ```
    /// use downbeat_ring::{ParamChange, ParamQueue};
    /// let (mut tx, mut rx) = ParamQueue::new(2);
    /// assert_eq!(rx.pop(), None);
    /// tx.push(ParamChange { id: 9, value: 0.0, frame: 5 }).unwrap();
    /// assert_eq!(rx.pop().map(|c| c.frame), Some(5));
    /// ```
    #[inline]
    pub fn pop(&mut self) -> Option<ParamChange> {
        let chunk = self.consumer.read_chunk(PARAM_RECORD_LEN).ok()?;
        let (a, b) = chunk.as_slices();
        let mut words = [0; PARAM_RECORD_LEN];
        if a.len() == PARAM_RECORD_LEN {
            words.copy_from_slice(a);
        } else {
            for (word, slot) in words.iter_mut().zip(a.iter().chain(b)) {
                *word = *slot;
            }
        }
        chunk.commit_all();
        Some(ParamChange::from_words(words))
    }

    /// Pops changes until the queue is empty; allocation-free, so usable in the callback.
    ///
    /// ```
    /// use downbeat_ring::{ParamChange, ParamQueue};
    /// let (mut tx, mut rx) = ParamQueue::new(4);
    /// for frame in [0, 64, 128] {
    ///     tx.push(ParamChange { id: 0, value: 1.0, frame }).unwrap();
    /// }
    /// assert_eq!(rx.drain().map(|c| c.frame).sum::<u32>(), 192);
    /// ```
    pub fn drain(&mut self) -> ParamDrain<'_> {
        ParamDrain { reader: self }
    }

    /// Changes ready right now.
    ///
    /// ```
    /// # use downbeat_ring::{ParamChange, ParamQueue};
    /// let (mut tx, rx) = ParamQueue::new(4);
    /// tx.push(ParamChange { id: 0, value: 1.0, frame: 0 }).unwrap();
    /// assert_eq!(rx.available_read(), 1);
    /// ```
    pub fn available_read(&self) -> usize {
        self.consumer.available_read() / PARAM_RECORD_LEN
    }

    /// Whether no whole change is ready.
    ///
    /// ```
    /// # use downbeat_ring::ParamQueue;
    /// assert!(ParamQueue::new(4).1.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.available_read() == 0
    }

    /// Capacity in changes.
    ///
    /// ```
    /// # use downbeat_ring::ParamQueue;
    /// assert_eq!(ParamQueue::new(9).1.capacity(), 9);
    /// ```
    pub fn capacity(&self) -> usize {
        self.consumer.capacity() / PARAM_RECORD_LEN
    }

    /// Attaches to a parameter ring in foreign memory; the counterpart of
    /// [`ParamWriter::from_raw`].
    ///
    /// # Errors
    ///
    /// As [`Consumer::from_raw`], including a record length other than 3.
    ///
    /// # Safety
    ///
    /// As [`Consumer::from_raw`].
    ///
    /// ```
    /// use downbeat_ring::{layout::RingLayout, LayoutError, ParamReader};
    /// let plain = RingLayout::new::<u32>(12).unwrap();
    /// let mut mem = vec![0u64; plain.bytes().div_ceil(8)];
    /// let ptr = mem.as_mut_ptr().cast::<u8>();
    /// // SAFETY: `mem` outlives the reader.
    /// unsafe { plain.init(ptr, plain.bytes()) }.unwrap();
    /// let err = unsafe { ParamReader::from_raw(ptr, plain.bytes()) }.unwrap_err();
    /// assert_eq!(err, LayoutError::RecordMismatch { expected: 3, found: 1 });
    /// ```
    #[cfg(all(target_endian = "little", not(loom)))]
    pub unsafe fn from_raw(ptr: *mut u8, len: usize) -> Result<Self, crate::LayoutError> {
        // SAFETY: forwarded from the caller.
        let consumer = unsafe { Consumer::from_raw_records(ptr, len, PARAM_RECORD_LEN as u32) }?;
        Ok(Self { consumer })
    }
}

/// Iterator returned by [`ParamReader::drain`].
#[derive(Debug)]
pub struct ParamDrain<'a> {
    reader: &'a mut ParamReader,
}

impl Iterator for ParamDrain<'_> {
    type Item = ParamChange;

    fn next(&mut self) -> Option<ParamChange> {
        self.reader.pop()
    }
}
