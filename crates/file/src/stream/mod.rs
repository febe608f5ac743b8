//! Streaming a file from disk: a reader thread decodes ahead into a wait-free ring per
//! stream, and the audio thread only reads that ring.
//!
//! ```text
//!  reader thread (normal priority)                 audio thread
//!  ───────────────────────────────                 ────────────
//!  Source::read ─▶ fill an empty Chunk ─filled ring──▶ Tap::read copies frames out
//!            ▲                                       │
//!            └──────────── empty ring ◀──────────────┘ (the chunk goes back)
//!  StreamStatus::latest_seek ◀── two atomic stores ── Tap::seek
//! ```
//!
//! * **Chunks go round, nothing is allocated.** A stream owns a fixed set of chunks
//!   (`chunks × chunk_frames` frames: its read-ahead), moved as boxes through two
//!   `downbeat-ring` rings: the reader fills empty ones, the audio thread empties filled
//!   ones and gives them back.
//! * **A seek is a generation.** [`Tap::seek`] bumps the stream's generation and publishes
//!   it with the target frame in two atomics ([`StreamStatus`]); the reader sees it at its
//!   next turn, seeks its source and tags what it fills with the new generation. The audio
//!   thread drops (gives back) every chunk of an older one, so nothing filled before the
//!   seek is ever played after it, and a seek never fails or waits.
//! * **Cue points** are decoded before the run ([`CueCache`]): a seek to one plays the
//!   cache at once while the reader seeks to the frame after it.
//! * **Loops** are the reader's: it wraps at the loop's end, so the ring holds the frames
//!   in playing order; each chunk says which file frame it starts at.
//! * **Underruns** (the ring is empty where audio should be) are silence, counted in
//!   [`StreamStatus`], never waited for, except on an offline render
//!   ([`Tap::set_wait`]), which waits for the reader so that its output does not depend
//!   on the disk's speed.
//! * **Damage** found by the reader is reported on stderr and counted; the stream plays
//!   silence from there (counted as damaged frames) until a seek.
//!
//! ```
//! use downbeat_file::stream::{open, Reader, Source, SourceError, StreamConfig};
//!
//! /// A ramp: frame `n` is `n` on its one channel.
//! struct Ramp { next: u64, frames: u64 }
//! impl Source for Ramp {
//!     fn channels(&self) -> usize { 1 }
//!     fn read(&mut self, out: &mut [f32]) -> Result<usize, SourceError> {
//!         let n = (self.frames - self.next.min(self.frames)).min(out.len() as u64) as usize;
//!         for (k, s) in out[..n].iter_mut().enumerate() { *s = (self.next + k as u64) as f32; }
//!         self.next += n as u64;
//!         Ok(n)
//!     }
//!     fn seek(&mut self, frame: u64) -> Result<(), SourceError> { self.next = frame; Ok(()) }
//! }
//!
//! let config = StreamConfig { start: 10, cues: vec![500], ..StreamConfig::default() };
//! let mut tap = open(Box::new(Ramp { next: 0, frames: 1000 }), &config, Reader::shared()).unwrap();
//! let mut block = [0.0f32; 4];
//! tap.read(&mut block); // the read-ahead was filled when the stream was opened
//! assert_eq!(block, [10.0, 11.0, 12.0, 13.0]);
//! assert!(tap.seek(500)); // a cue: its frames are there at once
//! tap.read(&mut block);
//! assert_eq!(block, [500.0, 501.0, 502.0, 503.0]);
//! ```

mod chunk;
mod cue;
mod feed;
mod reader;
mod source;
mod status;
mod tap;

use std::sync::Arc;

use downbeat_ring::RingBuffer;

pub use cue::CueCache;
pub use feed::LoopRegion;
pub use reader::{Reader, DEFAULT_POLL};
pub use source::{Source, SourceError};
pub use status::StreamStatus;
pub use tap::{Pull, Tap};

use chunk::Chunk;
use feed::Feed;

/// How a stream is opened: its read-ahead, where it starts, its loop and its cues.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamConfig {
    /// Frames per chunk: the reader's unit of work.
    pub chunk_frames: usize,
    /// Chunks per stream: the read-ahead is `chunks × chunk_frames` frames.
    pub chunks: usize,
    /// File frame the stream starts at.
    pub start: u64,
    /// The loop, if the stream loops.
    pub looping: Option<LoopRegion>,
    /// Cue points, in file frames.
    pub cues: Vec<u64>,
    /// Frames cached at each cue.
    pub cue_frames: usize,
    /// Names the stream in the reader's messages (`player "a" (a.wav)`).
    pub label: String,
}

impl Default for StreamConfig {
    /// 8 chunks of 4096 frames (0.68 s at 48 kHz), no loop or cue, 0.25 s cue caches at
    /// 48 kHz.
    fn default() -> Self {
        Self {
            chunk_frames: 4096,
            chunks: 8,
            start: 0,
            looping: None,
            cues: Vec::new(),
            cue_frames: 12_000,
            label: "stream".to_string(),
        }
    }
}

impl StreamConfig {
    /// Bytes a stream of `channels` channels holds for its read-ahead (its cue caches
    /// come on top: [`CueCache::bytes`]).
    pub fn ring_bytes(&self, channels: usize) -> usize {
        self.chunks * self.chunk_frames * channels * std::mem::size_of::<f32>()
    }
}

/// Opens a stream over `source`: decodes the cue caches and fills the whole read-ahead from
/// `config.start` on the calling thread (so a run starts with its data there), then hands
/// the source to `reader` and returns the audio thread's end. Off the audio thread.
///
/// # Errors
/// The source's, when it cannot seek to or decode the start, a cue, or the read-ahead.
///
/// # Panics
/// If `chunk_frames` or `chunks` is 0.
pub fn open(
    mut source: Box<dyn Source>,
    config: &StreamConfig,
    reader: &Reader,
) -> Result<Tap, SourceError> {
    assert!(
        config.chunk_frames > 0 && config.chunks > 0,
        "a stream needs chunks"
    );
    let ch = source.channels();
    let cues = CueCache::build(
        source.as_mut(),
        &config.cues,
        config.cue_frames,
        config.looping,
    )?;
    let (mut empty_tx, empty_rx) = RingBuffer::<Box<Chunk>>::new(config.chunks);
    let (filled_tx, filled_rx) = RingBuffer::<Box<Chunk>>::new(config.chunks);
    for _ in 0..config.chunks {
        let pushed = empty_tx.push(Chunk::new(config.chunk_frames, ch));
        debug_assert!(pushed.is_ok());
    }
    let status = Arc::new(StreamStatus::default());
    let mut feed = Feed::new(
        source,
        filled_tx,
        empty_rx,
        status.clone(),
        config.looping,
        config.label.clone(),
    );
    feed.seek(config.start);
    feed.prefill()?;
    reader.add(feed);
    Ok(Tap::new(filled_rx, empty_tx, status, ch, cues))
}
