//! Interleaved multichannel audio that never splits a frame.

use crate::consumer::Consumer;
use crate::layout::RingLayout;
use crate::producer::Producer;
use crate::ring::RingBuffer;

/// Creates audio queues: a ring of `f32` samples, interleaved, whose record is one frame.
///
/// Both ends move whole frames only, so the reader always starts on channel 0, and each end can
/// take or give planar (one slice per channel) or interleaved blocks of any length.
///
/// ```
/// use downbeat_ring::AudioQueue;
/// let (mut tx, mut rx) = AudioQueue::new(2, 1024);
/// let (left, right) = ([0.1f32; 128], [0.2f32; 128]);
/// assert_eq!(tx.push_planar(&[&left, &right]), 128);
/// let mut out = [0.0f32; 256];
/// assert_eq!(rx.pop_interleaved(&mut out), 128);
/// assert_eq!(out[..4], [0.1, 0.2, 0.1, 0.2]);
/// ```
#[derive(Debug)]
pub struct AudioQueue {
    _private: core::convert::Infallible,
}

impl AudioQueue {
    /// Allocates a queue of `capacity_frames` frames of `channels` samples.
    ///
    /// # Panics
    ///
    /// If `channels` is 0 or the total exceeds [`MAX_CAPACITY`](crate::layout::MAX_CAPACITY)
    /// samples.
    ///
    /// ```
    /// use downbeat_ring::AudioQueue;
    /// let (tx, rx) = AudioQueue::new(6, 480);
    /// assert_eq!((tx.channels(), rx.capacity()), (6, 480));
    /// ```
    #[allow(clippy::new_ret_no_self)]
    pub fn new(channels: usize, capacity_frames: usize) -> (AudioWriter, AudioReader) {
        assert!(channels > 0, "an audio queue needs at least one channel");
        let layout = RingLayout::records::<f32>(capacity_frames, channels)
            .expect("audio queue capacity too large");
        let (producer, consumer) = RingBuffer::with_layout(&layout);
        (
            AudioWriter { producer, channels },
            AudioReader { consumer, channels },
        )
    }
}

/// The sending end of an [`AudioQueue`].
#[derive(Debug)]
pub struct AudioWriter {
    producer: Producer<f32>,
    channels: usize,
}

impl AudioWriter {
    /// Appends as many whole frames of `samples` (interleaved) as fit; returns the frame count.
    /// A trailing partial frame is never written.
    ///
    /// ```
    /// use downbeat_ring::AudioQueue;
    /// let (mut tx, _rx) = AudioQueue::new(2, 2);
    /// assert_eq!(tx.push_interleaved(&[1.0, 2.0, 3.0]), 1);
    /// assert_eq!(tx.push_interleaved(&[3.0, 4.0, 5.0, 6.0]), 1);
    /// ```
    #[inline]
    pub fn push_interleaved(&mut self, samples: &[f32]) -> usize {
        let ch = self.channels;
        let n = self.producer.reserve(samples.len() / ch * ch) as usize / ch * ch;
        self.producer.push_slice(&samples[..n]) / ch
    }

    /// Interleaves and appends as many frames of `planar` (one slice per channel) as fit, straight
    /// into the ring; returns the frame count. Frames past the shortest slice are ignored.
    ///
    /// # Panics
    ///
    /// If `planar.len()` differs from the channel count.
    ///
    /// ```
    /// use downbeat_ring::AudioQueue;
    /// let (mut tx, mut rx) = AudioQueue::new(2, 8);
    /// assert_eq!(tx.push_planar(&[&[1.0, 2.0], &[-1.0, -2.0]]), 2);
    /// let mut out = [0.0; 4];
    /// rx.pop_interleaved(&mut out);
    /// assert_eq!(out, [1.0, -1.0, 2.0, -2.0]);
    /// ```
    #[inline]
    pub fn push_planar(&mut self, planar: &[&[f32]]) -> usize {
        let ch = self.channels;
        assert_eq!(planar.len(), ch, "one slice per channel");
        let frames = planar.iter().map(|c| c.len()).min().unwrap_or(0);
        let frames = self.producer.reserve(frames * ch) as usize / ch;
        let Ok(mut chunk) = self.producer.write_chunk(frames * ch) else {
            return 0;
        };
        let (a, b) = chunk.as_mut_slices();
        if a.len() % ch == 0 {
            interleave_frames(planar, 0, a);
            interleave_frames(planar, a.len() / ch, b);
        } else {
            // Only a peer that broke frame alignment makes a frame straddle the end.
            for (k, sample) in a.iter_mut().chain(b.iter_mut()).enumerate() {
                *sample = planar[k % ch][k / ch];
            }
        }
        chunk.commit_all();
        frames
    }

    /// Whole frames that fit right now.
    ///
    /// ```
    /// # use downbeat_ring::AudioQueue;
    /// let (tx, _rx) = AudioQueue::new(2, 100);
    /// assert_eq!(tx.available_write(), 100);
    /// ```
    pub fn available_write(&self) -> usize {
        self.producer.available_write() / self.channels
    }

    /// Whether no whole frame fits right now.
    ///
    /// ```
    /// # use downbeat_ring::AudioQueue;
    /// let (tx, _rx) = AudioQueue::new(2, 0);
    /// assert!(tx.is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        self.available_write() == 0
    }

    /// Samples per frame.
    ///
    /// ```
    /// # use downbeat_ring::AudioQueue;
    /// assert_eq!(AudioQueue::new(2, 100).0.channels(), 2);
    /// ```
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// Capacity in frames.
    ///
    /// ```
    /// # use downbeat_ring::AudioQueue;
    /// assert_eq!(AudioQueue::new(2, 100).0.capacity(), 100);
    /// ```
    pub fn capacity(&self) -> usize {
        self.producer.capacity() / self.channels
    }

    /// Attaches to an audio ring in foreign memory: an `f32` ring whose record length is the
    /// channel count, as made by `RingLayout::records::<f32>(frames, channels)`.
    ///
    /// # Errors
    ///
    /// As [`Producer::from_raw`], including a record length other than `channels`.
    ///
    /// # Safety
    ///
    /// As [`Producer::from_raw`].
    ///
    /// ```
    /// use downbeat_ring::{layout::RingLayout, AudioReader, AudioWriter};
    /// let layout = RingLayout::records::<f32>(128, 2).unwrap();
    /// let mut mem = vec![0u64; layout.bytes().div_ceil(8)];
    /// let ptr = mem.as_mut_ptr().cast::<u8>();
    /// // SAFETY: `mem` outlives both ends, the only ones attached.
    /// unsafe { layout.init(ptr, layout.bytes()) }.unwrap();
    /// let mut tx = unsafe { AudioWriter::from_raw(ptr, layout.bytes(), 2) }.unwrap();
    /// let mut rx = unsafe { AudioReader::from_raw(ptr, layout.bytes(), 2) }.unwrap();
    /// tx.push_interleaved(&[0.5, -0.5]);
    /// let mut out = [0.0; 2];
    /// assert_eq!(rx.pop_interleaved(&mut out), 1);
    /// assert!(unsafe { AudioReader::from_raw(ptr, layout.bytes(), 1) }.is_err());
    /// ```
    #[cfg(all(target_endian = "little", not(loom)))]
    pub unsafe fn from_raw(
        ptr: *mut u8,
        len: usize,
        channels: usize,
    ) -> Result<Self, crate::LayoutError> {
        let record = record_len(channels)?;
        // SAFETY: forwarded from the caller.
        let producer = unsafe { Producer::from_raw_records(ptr, len, record) }?;
        Ok(Self { producer, channels })
    }
}

/// The receiving end of an [`AudioQueue`].
#[derive(Debug)]
pub struct AudioReader {
    consumer: Consumer<f32>,
    channels: usize,
}

impl AudioReader {
    /// Moves as many whole frames as fit into `out` (interleaved); returns the frame count.
    ///
    /// ```
    /// use downbeat_ring::AudioQueue;
    /// let (mut tx, mut rx) = AudioQueue::new(2, 8);
    /// tx.push_interleaved(&[1.0, 2.0, 3.0, 4.0]);
    /// let mut out = [0.0; 3]; // room for one frame and a half
    /// assert_eq!(rx.pop_interleaved(&mut out), 1);
    /// assert_eq!(out, [1.0, 2.0, 0.0]);
    /// ```
    #[inline]
    pub fn pop_interleaved(&mut self, out: &mut [f32]) -> usize {
        let ch = self.channels;
        let n = self.consumer.reserve(out.len() / ch * ch) as usize / ch * ch;
        self.consumer.pop_slice(&mut out[..n]) / ch
    }

    /// Moves as many frames as fit into `planar` (one slice per channel), deinterleaving straight
    /// from the ring; returns the frame count.
    ///
    /// # Panics
    ///
    /// If `planar.len()` differs from the channel count.
    ///
    /// ```
    /// use downbeat_ring::AudioQueue;
    /// let (mut tx, mut rx) = AudioQueue::new(2, 8);
    /// tx.push_interleaved(&[1.0, -1.0, 2.0, -2.0]);
    /// let (mut left, mut right) = ([0.0; 4], [0.0; 4]);
    /// assert_eq!(rx.pop_planar(&mut [&mut left, &mut right]), 2);
    /// assert_eq!((left[1], right[1]), (2.0, -2.0));
    /// ```
    #[inline]
    pub fn pop_planar(&mut self, planar: &mut [&mut [f32]]) -> usize {
        let ch = self.channels;
        assert_eq!(planar.len(), ch, "one slice per channel");
        let frames = planar.iter().map(|c| c.len()).min().unwrap_or(0);
        let frames = self.consumer.reserve(frames * ch) as usize / ch;
        let Ok(chunk) = self.consumer.read_chunk(frames * ch) else {
            return 0;
        };
        let (a, b) = chunk.as_slices();
        if a.len() % ch == 0 {
            deinterleave_frames(a, planar, 0);
            deinterleave_frames(b, planar, a.len() / ch);
        } else {
            // Only a peer that broke frame alignment makes a frame straddle the end.
            for (k, sample) in a.iter().chain(b).enumerate() {
                planar[k % ch][k / ch] = *sample;
            }
        }
        chunk.commit_all();
        frames
    }

    /// Whole frames ready right now.
    ///
    /// ```
    /// # use downbeat_ring::AudioQueue;
    /// let (mut tx, rx) = AudioQueue::new(2, 8);
    /// tx.push_interleaved(&[0.0; 5]);
    /// assert_eq!(rx.available_read(), 2);
    /// ```
    pub fn available_read(&self) -> usize {
        self.consumer.available_read() / self.channels
    }

    /// Whether no whole frame is ready.
    ///
    /// ```
    /// # use downbeat_ring::AudioQueue;
    /// assert!(AudioQueue::new(2, 8).1.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.available_read() == 0
    }

    /// Samples per frame.
    ///
    /// ```
    /// # use downbeat_ring::AudioQueue;
    /// assert_eq!(AudioQueue::new(3, 8).1.channels(), 3);
    /// ```
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// Capacity in frames.
    ///
    /// ```
    /// # use downbeat_ring::AudioQueue;
    /// assert_eq!(AudioQueue::new(3, 8).1.capacity(), 8);
    /// ```
    pub fn capacity(&self) -> usize {
        self.consumer.capacity() / self.channels
    }

    /// Attaches to an audio ring in foreign memory; the counterpart of
    /// [`AudioWriter::from_raw`].
    ///
    /// # Errors
    ///
    /// As [`Consumer::from_raw`], including a record length other than `channels`.
    ///
    /// # Safety
    ///
    /// As [`Consumer::from_raw`].
    ///
    /// ```
    /// use downbeat_ring::{layout::RingLayout, AudioReader, LayoutError};
    /// let layout = RingLayout::records::<f32>(16, 2).unwrap();
    /// let mut mem = vec![0u64; layout.bytes().div_ceil(8)];
    /// let ptr = mem.as_mut_ptr().cast::<u8>();
    /// // SAFETY: `mem` outlives the reader.
    /// unsafe { layout.init(ptr, layout.bytes()) }.unwrap();
    /// let err = unsafe { AudioReader::from_raw(ptr, layout.bytes(), 6) }.unwrap_err();
    /// assert_eq!(err, LayoutError::RecordMismatch { expected: 6, found: 2 });
    /// ```
    #[cfg(all(target_endian = "little", not(loom)))]
    pub unsafe fn from_raw(
        ptr: *mut u8,
        len: usize,
        channels: usize,
    ) -> Result<Self, crate::LayoutError> {
        let record = record_len(channels)?;
        // SAFETY: forwarded from the caller.
        let consumer = unsafe { Consumer::from_raw_records(ptr, len, record) }?;
        Ok(Self { consumer, channels })
    }
}

#[cfg(all(target_endian = "little", not(loom)))]
fn record_len(channels: usize) -> Result<u32, crate::LayoutError> {
    match u32::try_from(channels) {
        Ok(record) if record > 0 => Ok(record),
        _ => Err(crate::LayoutError::RecordMismatch {
            expected: channels.min(u32::MAX as usize) as u32,
            found: 0,
        }),
    }
}

/// Interleaves planar channels into `interleaved`, for any block length; returns the frames
/// written: the shortest channel, or what `interleaved` holds, whichever is less.
///
/// ```
/// use downbeat_ring::interleave;
/// let mut out = [0.0; 6];
/// assert_eq!(interleave(&[&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]], &mut out), 3);
/// assert_eq!(out, [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
/// ```
pub fn interleave(planar: &[&[f32]], interleaved: &mut [f32]) -> usize {
    let ch = planar.len();
    if ch == 0 {
        return 0;
    }
    let frames = planar
        .iter()
        .map(|c| c.len())
        .min()
        .unwrap_or(0)
        .min(interleaved.len() / ch);
    interleave_frames(planar, 0, &mut interleaved[..frames * ch]);
    frames
}

/// Splits interleaved frames into planar channels, for any block length; returns the frames
/// read: what `interleaved` holds, or the shortest channel, whichever is less.
///
/// ```
/// use downbeat_ring::deinterleave;
/// let (mut l, mut r) = ([0.0; 2], [0.0; 2]);
/// assert_eq!(deinterleave(&[1.0, 4.0, 2.0, 5.0], &mut [&mut l, &mut r]), 2);
/// assert_eq!((l, r), ([1.0, 2.0], [4.0, 5.0]));
/// ```
pub fn deinterleave(interleaved: &[f32], planar: &mut [&mut [f32]]) -> usize {
    let ch = planar.len();
    if ch == 0 {
        return 0;
    }
    let frames = planar
        .iter()
        .map(|c| c.len())
        .min()
        .unwrap_or(0)
        .min(interleaved.len() / ch);
    deinterleave_frames(&interleaved[..frames * ch], planar, 0);
    frames
}

/// Fills `out` (whole frames) from frame `start` of each channel.
#[inline]
fn interleave_frames(planar: &[&[f32]], start: usize, out: &mut [f32]) {
    let ch = planar.len();
    let frames = out.len() / ch;
    if frames == 0 {
        return;
    }
    let range = start..start + frames;
    match planar {
        [mono] => out.copy_from_slice(&mono[range]),
        [left, right] => {
            for ((frame, l), r) in out
                .chunks_exact_mut(2)
                .zip(&left[range.clone()])
                .zip(&right[range])
            {
                frame[0] = *l;
                frame[1] = *r;
            }
        }
        _ => {
            for (c, channel) in planar.iter().enumerate() {
                for (sample, x) in out[c..].iter_mut().step_by(ch).zip(&channel[range.clone()]) {
                    *sample = *x;
                }
            }
        }
    }
}

/// Spreads `src` (whole frames) into each channel from frame `start`.
#[inline]
fn deinterleave_frames(src: &[f32], planar: &mut [&mut [f32]], start: usize) {
    let ch = planar.len();
    let frames = src.len() / ch;
    if frames == 0 {
        return;
    }
    let range = start..start + frames;
    match planar {
        [mono] => mono[range].copy_from_slice(src),
        [left, right] => {
            for ((frame, l), r) in src
                .chunks_exact(2)
                .zip(&mut left[range.clone()])
                .zip(&mut right[range])
            {
                *l = frame[0];
                *r = frame[1];
            }
        }
        _ => {
            for (c, channel) in planar.iter_mut().enumerate() {
                for (x, sample) in channel[range.clone()]
                    .iter_mut()
                    .zip(src[c..].iter().step_by(ch))
                {
                    *x = *sample;
                }
            }
        }
    }
}
