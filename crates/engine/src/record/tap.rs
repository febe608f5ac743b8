//! The audio thread's end of a recording: frames into a wait-free ring, and what does not
//! fit counted, never waited for (unless the recording was made to wait, offline).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use downbeat_ring::{AudioWriter, Producer};

/// What the audio thread does when the ring to the writer thread is full.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WhenFull {
    /// Leave the frames out and count them as lost: the real-time devices, whose audio
    /// thread must never wait. The file gets silence in their place, so it stays aligned
    /// with what was played.
    #[default]
    CountLost,
    /// Wait for the writer to make room: the offline device, which loses nothing.
    Wait,
}

/// Frames lost at a point of the stream: the writer writes `frames` frames of silence
/// after the `at`-th frame it takes from the ring.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Gap {
    pub(crate) at: u64,
    pub(crate) frames: u64,
}

/// What the tap, the writer thread and the control thread share: counters and flags.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// Frames the audio thread could not hand over, in all.
    pub(crate) lost: AtomicU64,
    /// Set by the control thread: write what is queued, then close the file.
    pub(crate) closing: AtomicBool,
    /// Set by the writer when writing failed: nothing more will be taken from the ring.
    pub(crate) failed: AtomicBool,
}

/// The audio thread's end of a [`Recorder`](super::Recorder): [`write`](Self::write) hands
/// frames to the writer thread through a wait-free ring, without allocating, locking or a
/// system call (with [`WhenFull::CountLost`]).
pub struct RecordTap {
    audio: AudioWriter,
    gaps: Producer<Gap>,
    shared: Arc<Shared>,
    /// Frames pushed into the ring so far.
    pushed: u64,
    /// Frames lost since the last gap the writer was told of.
    pending_gap: u64,
    when_full: WhenFull,
}

impl std::fmt::Debug for RecordTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordTap")
            .field("channels", &self.audio.channels())
            .field("capacity", &self.audio.capacity())
            .field("pushed", &self.pushed)
            .field("when_full", &self.when_full)
            .finish_non_exhaustive()
    }
}

impl RecordTap {
    pub(crate) fn new(
        audio: AudioWriter,
        gaps: Producer<Gap>,
        shared: Arc<Shared>,
        when_full: WhenFull,
    ) -> Self {
        Self {
            audio,
            gaps,
            shared,
            pushed: 0,
            pending_gap: 0,
            when_full,
        }
    }

    /// Channels per frame.
    pub fn channels(&self) -> usize {
        self.audio.channels()
    }

    /// Frames lost so far (the ring was full), in all.
    pub fn lost_frames(&self) -> u64 {
        self.shared.lost.load(Ordering::Relaxed)
    }

    /// Hands interleaved frames (whole frames; a trailing partial frame is ignored) to the
    /// writer. With [`WhenFull::CountLost`] real-time safe: what does not fit is counted
    /// as lost and becomes silence in the file. With [`WhenFull::Wait`] it sleeps until the
    /// writer has taken enough (or has failed).
    pub fn write(&mut self, interleaved: &[f32]) {
        let ch = self.audio.channels();
        let frames = (interleaved.len() / ch) as u64;
        if frames == 0 {
            return;
        }
        match self.when_full {
            WhenFull::CountLost => self.write_or_count(interleaved, frames),
            WhenFull::Wait => self.write_waiting(interleaved, frames),
        }
    }

    fn write_or_count(&mut self, interleaved: &[f32], frames: u64) {
        // The gap goes first, so the writer knows of it before it takes the frames after
        // it; while the gap ring is full, the frames after it are lost too.
        if self.pending_gap > 0 {
            let gap = Gap {
                at: self.pushed,
                frames: self.pending_gap,
            };
            if self.gaps.push(gap).is_ok() {
                self.pending_gap = 0;
            }
        }
        let pushed = if self.pending_gap == 0 {
            self.audio.push_interleaved(interleaved) as u64
        } else {
            0
        };
        self.pushed += pushed;
        self.lose(frames - pushed);
    }

    fn write_waiting(&mut self, mut rest: &[f32], frames: u64) {
        let ch = self.audio.channels();
        let mut left = frames;
        loop {
            let n = self.audio.push_interleaved(rest);
            self.pushed += n as u64;
            left -= n as u64;
            rest = &rest[n * ch..];
            if left == 0 {
                return;
            }
            if self.shared.failed.load(Ordering::Acquire) {
                // The writer has stopped: its error ends the run, these frames are lost.
                self.lose(left);
                return;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    fn lose(&mut self, frames: u64) {
        if frames > 0 {
            self.pending_gap += frames;
            self.shared.lost.fetch_add(frames, Ordering::Release);
        }
    }
}
