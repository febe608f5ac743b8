//! The part of a callback-driven device that runs on the audio thread: render a block into
//! an interleaved scratch buffer and record it, all without allocating.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::Engine;

/// Largest block a driver may ask for at once; longer callbacks are rendered in pieces.
pub const MAX_CALLBACK_FRAMES: usize = 8192;

/// Interleaved audio written by the audio thread and read by another, frame-complete.
pub struct Recording {
    data: *mut f32,
    len: usize,
    channels: usize,
    written: AtomicUsize,
}

// SAFETY: the audio thread writes only past `written` frames and publishes them with a
// Release store; readers only read the first `written` frames after an Acquire load, so
// no byte is written and read at the same time.
unsafe impl Send for Recording {}
// SAFETY: as for `Send`: shared access is split by `written` between one writer and readers.
unsafe impl Sync for Recording {}

impl Recording {
    /// Room for `frames` frames of `channels` channels, touched now so that recording
    /// never page-faults on the audio thread.
    pub fn new(frames: usize, channels: usize) -> Arc<Self> {
        let buf: Box<[f32]> = downbeat_graph::prefaulted(frames * channels).into_boxed_slice();
        let len = buf.len();
        Arc::new(Self {
            data: Box::into_raw(buf) as *mut f32,
            len,
            channels,
            written: AtomicUsize::new(0),
        })
    }

    /// Appends interleaved frames; what does not fit is left out (the run is over by then).
    /// Only one thread may call this.
    fn append(&self, interleaved: &[f32]) {
        let start = self.written.load(Ordering::Relaxed) * self.channels;
        let n = interleaved.len().min(self.len - start);
        // SAFETY: `start + n <= len`, the region lies past what readers may read, and only
        // the single writer touches it.
        unsafe { std::ptr::copy_nonoverlapping(interleaved.as_ptr(), self.data.add(start), n) };
        self.written
            .store((start + n) / self.channels, Ordering::Release);
    }

    /// The frames recorded so far, interleaved.
    pub fn frames(&self) -> &[f32] {
        let n = self.written.load(Ordering::Acquire) * self.channels;
        // SAFETY: the first `n` samples were published by `append` and are never written
        // again.
        unsafe { std::slice::from_raw_parts(self.data, n) }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        // SAFETY: `data`/`len` came from `Box::into_raw` of a boxed slice in `new`.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.data, self.len)) });
    }
}

/// Renders blocks of any size up to [`MAX_CALLBACK_FRAMES`] for a driver callback.
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

    /// True once the requested length has been produced.
    pub fn done(&self) -> bool {
        self.left == 0
    }
}
