//! [`Tap`]: the audio thread's side of one stream.

use std::sync::Arc;
use std::time::{Duration, Instant};

use downbeat_ring::{Consumer, Producer};

use super::chunk::{Chunk, End};
use super::cue::{CueCache, Then};
use super::status::StreamStatus;

/// How long an offline render waits for the reader before it gives up on a block and
/// counts it as an underrun: only a reader that is stuck, not one that is slow, gets there.
const OFFLINE_PATIENCE: Duration = Duration::from_secs(30);

/// What one [`Tap::read`] gave.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pull {
    /// Frames of the file's audio written at the start of the buffer.
    pub frames: usize,
    /// Frames after those that are silence because the reader was late (an underrun).
    pub underrun: usize,
    /// Frames that are silence because the file is damaged there.
    pub damaged: usize,
    /// Frames that are silence because the file (and any loop) ended.
    pub ended: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Streaming,
    Ended,
    Damaged,
}

/// The audio thread's end of a stream: reads decoded frames (in the file's channels and
/// rate) that the reader thread put in the stream's ring, plays cue caches, and asks for
/// seeks. Never decodes, never touches the disk, never waits on a real-time device.
pub struct Tap {
    filled: Consumer<Box<Chunk>>,
    empty: Producer<Box<Chunk>>,
    status: Arc<StreamStatus>,
    channels: usize,
    generation: u32,
    current: Option<Box<Chunk>>,
    /// Frames of `current` already read.
    offset: usize,
    state: State,
    cues: CueCache,
    /// The cue being played from its cache, and the frames of it already read.
    cue: Option<(usize, usize)>,
    wait: bool,
}

impl Tap {
    pub(crate) fn new(
        filled: Consumer<Box<Chunk>>,
        empty: Producer<Box<Chunk>>,
        status: Arc<StreamStatus>,
        channels: usize,
        cues: CueCache,
    ) -> Self {
        Self {
            filled,
            empty,
            status,
            channels,
            generation: 0,
            current: None,
            offset: 0,
            state: State::Streaming,
            cues,
            cue: None,
            wait: false,
        }
    }

    /// Channels per frame (the file's).
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// The stream's shared counters.
    pub fn status(&self) -> &Arc<StreamStatus> {
        &self.status
    }

    /// `true` makes [`read`](Tap::read) wait for the reader instead of playing silence: for
    /// offline renders only, where waiting costs nothing but time.
    pub fn set_wait(&mut self, wait: bool) {
        self.wait = wait;
    }

    /// Jumps to file frame `frame`. A cue point plays at once from its cache (returns
    /// `true`); elsewhere the stream is silent (an underrun) until the reader has decoded
    /// from there. Real-time safe: two atomic stores and ring operations.
    pub fn seek(&mut self, frame: u64) -> bool {
        self.generation = self.generation.wrapping_add(1);
        self.give_back();
        self.state = State::Streaming;
        match self.cues.find(frame) {
            Some(i) => {
                self.cue = Some((i, 0));
                let cue = self.cues.get(i);
                let next = match cue.then {
                    Then::Continue(next) => next,
                    // Nothing follows the cache: the reader finds the end right away.
                    Then::Stop(_) => frame + (cue.data.len() / self.channels) as u64,
                };
                self.status.request_seek(self.generation, next);
                true
            }
            None => {
                self.cue = None;
                self.status.request_seek(self.generation, frame);
                false
            }
        }
    }

    /// Fills `out` (interleaved, a whole number of frames in the file's channels) with the
    /// stream's next frames, silence where it has none, and says which is which. Counts
    /// underruns and damaged frames in the stream's status. Real-time safe unless
    /// [`set_wait`](Tap::set_wait) asked it to wait.
    pub fn read(&mut self, out: &mut [f32]) -> Pull {
        let ch = self.channels;
        let want = out.len() / ch;
        let mut pull = Pull::default();
        let mut done = 0;
        let mut waited: Option<Instant> = None;
        while done < want {
            if let Some((i, at)) = self.cue {
                let cue = self.cues.get(i);
                let have = cue.data.len() / ch - at;
                let n = have.min(want - done);
                out[done * ch..(done + n) * ch].copy_from_slice(&cue.data[at * ch..(at + n) * ch]);
                done += n;
                if n == have {
                    self.cue = None;
                    if let Then::Stop(end) = cue.then {
                        self.end_with(end);
                    }
                } else {
                    self.cue = Some((i, at + n));
                }
                continue;
            }
            if self.state != State::Streaming {
                break;
            }
            let Some(chunk) = self.current.as_ref() else {
                match self.filled.pop() {
                    Some(chunk) if chunk.generation != self.generation => {
                        // Filled before the reader saw the latest seek.
                        self.recycle(chunk);
                    }
                    Some(chunk) => {
                        self.current = Some(chunk);
                        self.offset = 0;
                    }
                    None if self.wait => {
                        let since = *waited.get_or_insert_with(Instant::now);
                        if since.elapsed() > OFFLINE_PATIENCE {
                            break;
                        }
                        std::thread::yield_now();
                    }
                    None => break,
                }
                continue;
            };
            let n = (chunk.frames - self.offset).min(want - done);
            out[done * ch..(done + n) * ch]
                .copy_from_slice(&chunk.data[self.offset * ch..(self.offset + n) * ch]);
            done += n;
            self.offset += n;
            if self.offset == chunk.frames {
                let end = chunk.end;
                self.give_back();
                if end != End::More {
                    self.end_with(end);
                }
            }
        }
        pull.frames = done;
        out[done * ch..].fill(0.0);
        let rest = want - done;
        if rest > 0 {
            match self.state {
                State::Streaming => {
                    pull.underrun = rest;
                    self.status.add_underrun(rest);
                }
                State::Damaged => {
                    pull.damaged = rest;
                    self.status.add_damaged_frames(rest);
                }
                State::Ended => pull.ended = rest,
            }
        }
        pull
    }

    fn end_with(&mut self, end: End) {
        self.state = match end {
            End::Damaged => State::Damaged,
            End::Eof | End::More => State::Ended,
        };
    }

    /// Returns the chunk being read, if any, to the reader.
    fn give_back(&mut self) {
        if let Some(chunk) = self.current.take() {
            self.recycle(chunk);
        }
    }

    fn recycle(&mut self, chunk: Box<Chunk>) {
        // The empty ring has room for every chunk the stream owns, so this never fails
        // (and a failure would drop the box on the audio thread: checked in debug builds).
        let pushed = self.empty.push(chunk);
        debug_assert!(pushed.is_ok(), "a stream's empty ring is never full");
        if let Err(full) = pushed {
            std::mem::forget(full);
        }
    }
}
