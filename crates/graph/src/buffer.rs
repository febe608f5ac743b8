//! Planar audio views handed to [`Node::process`](crate::Node::process).
//!
//! A node's audio lives in one preallocated slice, channel after channel, each channel
//! `stride` samples long (the schedule's maximum block size). Only the first `frames`
//! samples of each channel belong to the current block.

/// Read-only view of a block of planar audio.
///
/// ```
/// use downbeat_graph::AudioRef;
/// let data = [1.0, 2.0, 0.0, 3.0, 4.0, 0.0];
/// let audio = AudioRef::new(&data, 2, 3, 2);
/// assert_eq!(audio.channel(1), &[3.0, 4.0]);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct AudioRef<'a> {
    data: &'a [f32],
    channels: usize,
    stride: usize,
    /// First sample of the view in each channel: the schedule cuts a block into sub-blocks
    /// at event frames and hands each one to the node as a block of its own.
    offset: usize,
    frames: usize,
}

impl<'a> AudioRef<'a> {
    /// Views `data` as `channels` channels of `stride` samples, of which `frames` are used.
    ///
    /// # Panics
    /// If `frames > stride` or `data` is shorter than `channels * stride`.
    pub fn new(data: &'a [f32], channels: usize, stride: usize, frames: usize) -> Self {
        Self::window(data, channels, stride, 0, frames)
    }

    /// Views frames `offset..offset + frames` of each channel of `data`.
    pub(crate) fn window(
        data: &'a [f32],
        channels: usize,
        stride: usize,
        offset: usize,
        frames: usize,
    ) -> Self {
        assert!(
            offset + frames <= stride,
            "frames {offset}..{} exceed stride {stride}",
            offset + frames
        );
        assert!(data.len() >= channels * stride, "buffer too short");
        Self {
            data,
            channels,
            stride,
            offset,
            frames,
        }
    }

    /// Number of channels.
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// Number of frames in this block.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// The samples of channel `c` for this block.
    pub fn channel(&self, c: usize) -> &'a [f32] {
        let start = c * self.stride + self.offset;
        &self.data[start..start + self.frames]
    }

    /// True when every sample of every channel in this block is exactly zero.
    pub fn is_silent(&self) -> bool {
        (0..self.channels).all(|c| self.channel(c).iter().all(|&s| s == 0.0))
    }
}

/// Mutable view of a block of planar audio.
///
/// ```
/// use downbeat_graph::AudioMut;
/// let mut data = [0.0f32; 4];
/// let mut audio = AudioMut::new(&mut data, 2, 2, 2);
/// audio.channel_mut(1).fill(0.5);
/// assert_eq!(data, [0.0, 0.0, 0.5, 0.5]);
/// ```
#[derive(Debug)]
pub struct AudioMut<'a> {
    data: &'a mut [f32],
    channels: usize,
    stride: usize,
    /// As [`AudioRef`]'s.
    offset: usize,
    frames: usize,
}

impl<'a> AudioMut<'a> {
    /// Views `data` as `channels` channels of `stride` samples, of which `frames` are used.
    ///
    /// # Panics
    /// If `frames > stride` or `data` is shorter than `channels * stride`.
    pub fn new(data: &'a mut [f32], channels: usize, stride: usize, frames: usize) -> Self {
        Self::window(data, channels, stride, 0, frames)
    }

    /// Views frames `offset..offset + frames` of each channel of `data`, writable.
    pub(crate) fn window(
        data: &'a mut [f32],
        channels: usize,
        stride: usize,
        offset: usize,
        frames: usize,
    ) -> Self {
        assert!(
            offset + frames <= stride,
            "frames {offset}..{} exceed stride {stride}",
            offset + frames
        );
        assert!(data.len() >= channels * stride, "buffer too short");
        Self {
            data,
            channels,
            stride,
            offset,
            frames,
        }
    }

    /// Number of channels.
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// Number of frames in this block.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// The samples of channel `c` for this block.
    pub fn channel(&self, c: usize) -> &[f32] {
        let start = c * self.stride + self.offset;
        &self.data[start..start + self.frames]
    }

    /// The samples of channel `c` for this block, writable.
    pub fn channel_mut(&mut self, c: usize) -> &mut [f32] {
        let start = c * self.stride + self.offset;
        &mut self.data[start..start + self.frames]
    }

    /// Every channel of this block at once, writable, for nodes that process channels jointly.
    pub fn channels_mut(&mut self) -> impl Iterator<Item = &mut [f32]> + '_ {
        let (offset, frames) = (self.offset, self.frames);
        self.data[..self.channels * self.stride]
            .chunks_exact_mut(self.stride)
            .map(move |ch| &mut ch[offset..offset + frames])
    }

    /// Sets every sample of this block to zero.
    pub fn fill_zero(&mut self) {
        for ch in self.channels_mut() {
            ch.fill(0.0);
        }
    }

    /// A read-only view of the same block.
    pub fn as_ref(&self) -> AudioRef<'_> {
        AudioRef::window(
            self.data,
            self.channels,
            self.stride,
            self.offset,
            self.frames,
        )
    }
}

/// A zero-filled buffer whose pages are already touched, for memory the audio thread will
/// write later.
///
/// `vec![0.0; n]` may get fresh pages from the kernel that are only mapped on first touch,
/// so the first write on the audio thread takes a page fault. Allocate node state with this
/// function instead (in the constructor, off the audio thread).
///
/// ```
/// let delay: Vec<f32> = downbeat_graph::prefaulted(48_000);
/// assert!(delay.iter().all(|&s| s == 0.0));
/// ```
pub fn prefaulted<T: Copy + Default>(len: usize) -> Vec<T> {
    let mut v = vec![T::default(); len];
    let step = (4096 / std::mem::size_of::<T>().max(1)).max(1);
    for i in (0..len).step_by(step) {
        // SAFETY: `i < len`, so the pointer is in bounds and aligned; a volatile write of
        // the value already there forces the page in without the optimiser removing it.
        unsafe { std::ptr::write_volatile(v.as_mut_ptr().add(i), T::default()) };
    }
    v
}
