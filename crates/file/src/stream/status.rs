//! [`StreamStatus`]: what one stream's two sides tell each other and the host, in atomics.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The state one stream shares between the audio thread, the reader thread and whoever
/// reads its counts: the latest seek the audio thread asked for, and the losses.
///
/// Every field is an atomic written without locks; the audio thread only stores and adds.
#[derive(Debug, Default)]
pub struct StreamStatus {
    /// The generation of the latest seek, stored after `seek_frame` (Release), so that a
    /// reader that sees a generation sees its frame or a later one.
    seek_generation: AtomicU32,
    seek_frame: AtomicU64,
    underrun_frames: AtomicU64,
    underruns: AtomicU64,
    damage_reports: AtomicU64,
    damaged_frames: AtomicU64,
}

impl StreamStatus {
    /// Frames of silence played where the file's audio should have been, because the
    /// reader had not delivered it yet (never on an offline render, which waits).
    pub fn underrun_frames(&self) -> u64 {
        self.underrun_frames.load(Ordering::Relaxed)
    }

    /// Blocks in which at least one frame was an underrun.
    pub fn underruns(&self) -> u64 {
        self.underruns.load(Ordering::Relaxed)
    }

    /// Times the reader found the file damaged (after which the stream plays silence until
    /// a seek).
    pub fn damage_reports(&self) -> u64 {
        self.damage_reports.load(Ordering::Relaxed)
    }

    /// Frames of silence played because the file was damaged there.
    pub fn damaged_frames(&self) -> u64 {
        self.damaged_frames.load(Ordering::Relaxed)
    }

    /// Audio thread: asks the reader to decode from `frame` under `generation`.
    pub(crate) fn request_seek(&self, generation: u32, frame: u64) {
        self.seek_frame.store(frame, Ordering::Relaxed);
        self.seek_generation.store(generation, Ordering::Release);
    }

    /// Reader: the latest seek, as (generation, frame). The frame may belong to a later
    /// generation than the one returned; the chunks the reader then fills carry the older
    /// generation and are dropped by the audio thread, and the next look sees the newer one.
    pub(crate) fn latest_seek(&self) -> (u32, u64) {
        let generation = self.seek_generation.load(Ordering::Acquire);
        (generation, self.seek_frame.load(Ordering::Relaxed))
    }

    pub(crate) fn add_underrun(&self, frames: usize) {
        self.underrun_frames
            .fetch_add(frames as u64, Ordering::Relaxed);
        self.underruns.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_damaged_frames(&self, frames: usize) {
        self.damaged_frames
            .fetch_add(frames as u64, Ordering::Relaxed);
    }

    pub(crate) fn add_damage_report(&self) {
        self.damage_reports.fetch_add(1, Ordering::Relaxed);
    }
}
