//! The part of a real-time device that runs on the audio thread: render a block, record it,
//! hand it to the driver's buffers, all without allocating, freeing or faulting.

use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

use super::DeviceError;
use crate::Engine;

/// Largest block a driver may ask for at once; longer callbacks are rendered in pieces.
pub const MAX_CALLBACK_FRAMES: usize = 8192;

/// Interleaved audio written by the audio thread and read by another, frame-complete.
///
/// Every real-time device records into one of these: the memory is allocated and touched
/// before the run, so appending on the audio thread never allocates or takes a page fault.
/// Samples are stored as the bits of `f32` in relaxed atomics (a plain load or store on the
/// machines we run on), so a reader may look at the frames published so far while the run
/// goes on, without a lock and without `unsafe`.
///
/// ```
/// use downbeat::device::Recording;
///
/// let rec = Recording::new(4, 2);
/// rec.append(&[0.5, -0.5, 0.25, -0.25]);
/// assert_eq!(rec.frames(), 2);
/// assert_eq!(rec.to_vec(), [0.5, -0.5, 0.25, -0.25]);
/// ```
#[derive(Debug)]
pub struct Recording {
    samples: Box<[AtomicU32]>,
    channels: usize,
    written: AtomicUsize,
}

impl Recording {
    /// Room for `frames` frames of `channels` channels, touched now so that recording
    /// never page-faults on the audio thread.
    pub fn new(frames: usize, channels: usize) -> Arc<Self> {
        let samples: Box<[AtomicU32]> = (0..frames * channels).map(|_| AtomicU32::new(0)).collect();
        // The allocator may hand out zeroed pages that are only mapped on first write; one
        // store per page maps them now.
        for s in samples
            .iter()
            .step_by(4096 / std::mem::size_of::<AtomicU32>())
        {
            s.store(0, Ordering::Relaxed);
        }
        Arc::new(Self {
            samples,
            channels: channels.max(1),
            written: AtomicUsize::new(0),
        })
    }

    /// Appends interleaved frames; what does not fit is left out (the run is over by then).
    /// Real-time safe. Meant for one writer: two threads appending at once would interleave
    /// their frames unpredictably (never unsoundly).
    pub fn append(&self, interleaved: &[f32]) {
        let start = self.written.load(Ordering::Relaxed) * self.channels;
        let room = &self.samples[start.min(self.samples.len())..];
        let n = interleaved.len().min(room.len()) / self.channels * self.channels;
        for (slot, s) in room.iter().zip(&interleaved[..n]) {
            slot.store(s.to_bits(), Ordering::Relaxed);
        }
        // Publishes the stores above to readers that acquire `written`.
        self.written
            .store((start + n) / self.channels, Ordering::Release);
    }

    /// Frames recorded so far.
    pub fn frames(&self) -> usize {
        self.written.load(Ordering::Acquire)
    }

    /// Interleaved channels.
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// The frames recorded so far, interleaved (a copy).
    pub fn to_vec(&self) -> Vec<f32> {
        let n = self.frames() * self.channels;
        self.samples[..n]
            .iter()
            .map(|s| f32::from_bits(s.load(Ordering::Relaxed)))
            .collect()
    }

    /// Writes the frames recorded so far to a 32-bit float WAV file.
    ///
    /// # Errors
    /// [`DeviceError::Io`] when the file cannot be written.
    pub fn write_wav(&self, path: &Path, sample_rate: u32) -> Result<(), DeviceError> {
        let mut w = super::wav::create(path, self.channels, sample_rate)?;
        let n = self.frames() * self.channels;
        for s in &self.samples[..n] {
            w.write_sample(f32::from_bits(s.load(Ordering::Relaxed)))
                .map_err(|e| super::wav::io(path, e))?;
        }
        w.finalize().map_err(|e| super::wav::io(path, e))
    }
}

/// The per-channel buffers a driver hands its callback (JACK's ports, for instance): one
/// slice per channel, each at least as long as the callback's frames.
///
/// Implemented for slices of `Vec<f32>`, which is how tests stand in for a driver.
pub trait PlanarBuffers {
    /// Channel `c`'s buffer.
    fn channel_mut(&mut self, c: usize) -> &mut [f32];
}

impl PlanarBuffers for [Vec<f32>] {
    fn channel_mut(&mut self, c: usize) -> &mut [f32] {
        &mut self[c]
    }
}

/// Renders blocks of any size up to [`MAX_CALLBACK_FRAMES`] for a driver callback.
#[derive(Debug)]
pub struct Renderer {
    scratch: Vec<f32>,
    channels: usize,
    left: u64,
    recording: Option<Arc<Recording>>,
}

impl Renderer {
    /// A renderer for `channels` channels that produces `frames` frames before reporting
    /// done, recording into `recording` when given.
    pub fn new(channels: usize, frames: u64, recording: Option<Arc<Recording>>) -> Self {
        Self {
            scratch: downbeat_graph::prefaulted(MAX_CALLBACK_FRAMES * channels),
            channels,
            left: frames,
            recording,
        }
    }

    /// Renders `frames` frames (at most [`MAX_CALLBACK_FRAMES`]) and returns them
    /// interleaved. Real-time safe.
    pub fn render(&mut self, engine: &mut Engine, frames: usize) -> &[f32] {
        let buf = &mut self.scratch[..frames * self.channels];
        engine.process(buf);
        let keep = (frames as u64).min(self.left) as usize;
        if let Some(r) = &self.recording {
            r.append(&buf[..keep * self.channels]);
        }
        self.left -= keep as u64;
        buf
    }

    /// Renders `frames` frames, any number, straight into a driver's per-channel buffers:
    /// the whole body of a planar driver callback. Real-time safe.
    pub fn render_planar(
        &mut self,
        engine: &mut Engine,
        frames: usize,
        out: &mut (impl PlanarBuffers + ?Sized),
    ) {
        let ch = self.channels;
        let mut offset = 0;
        while offset < frames {
            let n = (frames - offset).min(MAX_CALLBACK_FRAMES);
            let block = self.render(engine, n);
            for c in 0..ch {
                let port = &mut out.channel_mut(c)[offset..offset + n];
                for (o, frame) in port.iter_mut().zip(block.chunks_exact(ch)) {
                    *o = frame[c];
                }
            }
            offset += n;
        }
    }

    /// True once the requested length has been produced.
    pub fn done(&self) -> bool {
        self.left == 0
    }
}
