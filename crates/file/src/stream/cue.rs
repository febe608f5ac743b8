//! [`CueCache`]: the first moments of audio at each cue point, decoded before the run, so
//! that a seek to a cue plays at once.

use super::chunk::End;
use super::feed::LoopRegion;
use super::source::{Source, SourceError};

/// What follows a cue's cached frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Then {
    /// The stream goes on at this file frame (the frame after the cache, or the loop's
    /// start when the cache reached the loop's end).
    Continue(u64),
    /// The file ends (or is damaged) within the cache.
    Stop(End),
}

/// One cue: its frame, its cached frames (interleaved) and what follows them.
#[derive(Debug)]
pub(crate) struct Cue {
    pub(crate) frame: u64,
    pub(crate) data: Box<[f32]>,
    pub(crate) then: Then,
}

/// The cue points of a stream with their cached audio, sorted by frame.
#[derive(Debug, Default)]
pub struct CueCache {
    cues: Vec<Cue>,
    channels: usize,
}

impl CueCache {
    /// Decodes `frames` frames at each of `cues` (file frames) from `source`, stopping at
    /// the loop's end when the cue is inside `looping`. Leaves the source anywhere: seek it
    /// afterwards. Off the audio thread.
    ///
    /// # Errors
    /// The source's, when it cannot seek to or decode a cue's first frames.
    pub fn build(
        source: &mut dyn Source,
        cues: &[u64],
        frames: usize,
        looping: Option<LoopRegion>,
    ) -> Result<Self, SourceError> {
        let ch = source.channels();
        let mut sorted = cues.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut out = Vec::with_capacity(sorted.len());
        for frame in sorted {
            let limit = match looping {
                Some(l) if frame < l.end => frames.min((l.end - frame) as usize),
                _ => frames,
            };
            let mut data = vec![0.0f32; limit * ch];
            source.seek(frame)?;
            let mut got = 0;
            let mut then = Then::Continue(frame + limit as u64);
            while got < limit {
                let n = source.read(&mut data[got * ch..])?;
                if n == 0 {
                    then = match looping {
                        Some(l) => Then::Continue(l.start),
                        None => Then::Stop(End::Eof),
                    };
                    break;
                }
                got += n;
            }
            if let (Then::Continue(next), Some(l)) = (then, looping) {
                if next == l.end {
                    then = Then::Continue(l.start);
                }
            }
            data.truncate(got * ch);
            out.push(Cue {
                frame,
                data: data.into_boxed_slice(),
                then,
            });
        }
        Ok(Self {
            cues: out,
            channels: ch,
        })
    }

    /// The index of the cue at exactly `frame`, if any. Real-time safe (a binary search).
    pub(crate) fn find(&self, frame: u64) -> Option<usize> {
        self.cues.binary_search_by_key(&frame, |c| c.frame).ok()
    }

    pub(crate) fn get(&self, index: usize) -> &Cue {
        &self.cues[index]
    }

    /// The number of cues.
    pub fn len(&self) -> usize {
        self.cues.len()
    }

    /// True when there are no cues.
    pub fn is_empty(&self) -> bool {
        self.cues.is_empty()
    }

    /// Bytes of cached audio.
    pub fn bytes(&self) -> usize {
        self.cues.iter().map(|c| c.data.len() * 4).sum()
    }

    /// Channels per cached frame.
    pub fn channels(&self) -> usize {
        self.channels
    }
}
