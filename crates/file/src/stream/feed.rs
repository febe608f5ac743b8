//! [`Feed`]: the reader's side of one stream: its source, and the chunks it fills.

use std::sync::Arc;

use downbeat_ring::{Consumer, Producer};

use super::chunk::{Chunk, End};
use super::source::{Source, SourceError};
use super::status::StreamStatus;

/// A loop region in file frames: `start..end`, `end` past `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopRegion {
    /// First frame of the loop.
    pub start: u64,
    /// The frame after the loop's last: playback goes on at `start` from here.
    pub end: u64,
}

/// What one call of [`Feed::service`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Service {
    /// Filled a chunk (or took a seek): there may be more to do.
    Worked,
    /// Nothing to do until the audio thread empties a chunk or seeks.
    Idle,
    /// The audio side is gone: drop this feed.
    Gone,
}

/// The reader's side of a stream.
pub(crate) struct Feed {
    source: Box<dyn Source>,
    channels: usize,
    filled: Producer<Box<Chunk>>,
    empty: Consumer<Box<Chunk>>,
    status: Arc<StreamStatus>,
    generation: u32,
    /// The next file frame the source reads.
    next: u64,
    looping: Option<LoopRegion>,
    /// At the end of the file or past damage: nothing to fill until a seek.
    stopped: bool,
    /// A seek that failed, to report in the next chunk.
    broken: Option<SourceError>,
    /// Names the stream in messages: `player "name" (path)`.
    label: String,
    /// Whether damage is reported on stderr (not while the stream is built: the builder
    /// returns it as an error instead).
    report: bool,
    /// The latest damage found.
    last_error: Option<SourceError>,
}

impl Feed {
    pub(crate) fn new(
        source: Box<dyn Source>,
        filled: Producer<Box<Chunk>>,
        empty: Consumer<Box<Chunk>>,
        status: Arc<StreamStatus>,
        looping: Option<LoopRegion>,
        label: String,
    ) -> Self {
        let channels = source.channels();
        Self {
            source,
            channels,
            filled,
            empty,
            status,
            generation: 0,
            next: 0,
            looping,
            stopped: false,
            broken: None,
            label,
            report: true,
            last_error: None,
        }
    }

    /// Moves the source to `frame`: the next chunk starts there.
    pub(crate) fn seek(&mut self, frame: u64) {
        self.next = frame;
        self.stopped = false;
        self.broken = self.source.seek(frame).err();
    }

    /// Fills every free chunk: the read-ahead a stream starts with, on the thread that
    /// builds it.
    ///
    /// # Errors
    /// The first damage found: a file that is damaged within its read-ahead is refused.
    pub(crate) fn prefill(&mut self) -> Result<(), SourceError> {
        self.report = false;
        while self.service() == Service::Worked {
            if let Some(e) = self.last_error.take() {
                return Err(e);
            }
        }
        self.report = true;
        Ok(())
    }

    /// Takes the latest seek, then fills at most one chunk (so that one reader thread serves
    /// its streams in turn).
    pub(crate) fn service(&mut self) -> Service {
        if self.empty.is_abandoned() || self.filled.is_abandoned() {
            return Service::Gone;
        }
        let (generation, frame) = self.status.latest_seek();
        let mut worked = false;
        if generation != self.generation {
            self.generation = generation;
            self.seek(frame);
            worked = true;
        }
        if self.stopped {
            return if worked {
                Service::Worked
            } else {
                Service::Idle
            };
        }
        let Some(mut chunk) = self.empty.pop() else {
            return if worked {
                Service::Worked
            } else {
                Service::Idle
            };
        };
        self.fill(&mut chunk);
        // The filled ring has room for every chunk the stream owns, so this never fails.
        let pushed = self.filled.push(chunk);
        debug_assert!(pushed.is_ok(), "a stream's filled ring is never full");
        Service::Worked
    }

    fn fill(&mut self, chunk: &mut Chunk) {
        let ch = self.channels;
        let capacity = chunk.data.len() / ch;
        chunk.generation = self.generation;
        chunk.frame = self.next;
        chunk.frames = 0;
        chunk.end = End::More;
        if let Some(e) = self.broken.take() {
            self.damaged(chunk, &e);
            return;
        }
        let mut wraps = 0;
        loop {
            let limit = match self.looping {
                Some(l) if self.next <= l.end => {
                    capacity.min(chunk.frames + (l.end - self.next) as usize)
                }
                _ => capacity,
            };
            if chunk.frames >= limit {
                break;
            }
            match self
                .source
                .read(&mut chunk.data[chunk.frames * ch..limit * ch])
            {
                Ok(0) => match self.looping {
                    // The file ended before the loop's end: wrap there. An empty chunk
                    // starts again at the loop; a chunk with frames goes as it is (its
                    // frames are contiguous).
                    Some(l) if wraps < 2 => {
                        wraps += 1;
                        self.seek(l.start);
                        if let Some(e) = self.broken.take() {
                            self.damaged(chunk, &e);
                            return;
                        }
                        if chunk.frames > 0 {
                            return;
                        }
                        chunk.frame = l.start;
                    }
                    _ => {
                        chunk.end = End::Eof;
                        self.stopped = true;
                        return;
                    }
                },
                Ok(n) => {
                    chunk.frames += n;
                    self.next += n as u64;
                }
                Err(e) => {
                    self.damaged(chunk, &e);
                    return;
                }
            }
        }
        if let Some(l) = self.looping {
            if self.next == l.end {
                self.seek(l.start);
            }
        }
    }

    fn damaged(&mut self, chunk: &mut Chunk, e: &SourceError) {
        chunk.end = End::Damaged;
        self.stopped = true;
        self.last_error = Some(e.clone());
        if self.report {
            self.status.add_damage_report();
            eprintln!("downbeat: {}: {e}; playing silence from there", self.label);
        }
    }
}
