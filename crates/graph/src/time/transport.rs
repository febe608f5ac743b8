//! The transport: plays, stops, locates and loops the song over a [`TempoMap`], and cuts
//! the engine's blocks wherever the musical position must not run on unbroken.

use std::fmt;

use super::error::TempoError;
use super::position::{segment_at_frame, MusicalPosition};
use super::tempo::TempoMap;

/// What a transport is told to do.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TransportCommand {
    /// Play from where it stands.
    Play,
    /// Stop where it is (the position stays).
    Stop,
    /// Go to this beat (playing or not).
    LocateBeat(f64),
    /// Go to this frame of the song.
    LocateFrame(u64),
    /// Loop from the first beat to the second: when the song reaches the end it goes on
    /// from the start.
    Loop(f64, f64),
    /// No more looping.
    Unloop,
    /// From where the song is, the tempo goes to `bpm`, linearly over `ramp` beats (0: at
    /// once), and stays there; the tempo map's later changes are dropped.
    Tempo {
        /// The tempo to reach, in quarter notes per minute (above 0, at most 999).
        bpm: f64,
        /// Beats the change takes.
        ramp: f64,
    },
}

/// Live tempo changes a transport has room for ([`TransportCommand::Tempo`]): each takes
/// at most two segments of its map, reserved when the transport is made.
pub const LIVE_TEMPO_CHANGES: usize = 512;

/// Why a transport refused a command.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TransportError {
    /// A beat that is negative, infinite or not a number.
    BadBeat(f64),
    /// A tempo change the map refuses: a tempo not above 0 or above 999, a ramp that is
    /// negative or not a number, or no room left.
    BadTempo {
        /// The tempo asked for.
        bpm: f64,
        /// The ramp asked for, in beats.
        ramp: f64,
        /// Whether the room for live changes is used up (the values were fine).
        no_room: bool,
    },
    /// A loop that does not end after it starts (or that is shorter than one frame).
    BadLoop {
        /// Where it was to start.
        start: f64,
        /// Where it was to end.
        end: f64,
    },
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadBeat(b) => write!(f, "beat {b} must be a number of beats from 0 up"),
            Self::BadTempo { no_room: true, .. } => write!(
                f,
                "no room left for another live tempo change ({LIVE_TEMPO_CHANGES} per run)"
            ),
            Self::BadTempo { bpm, ramp, .. } => write!(
                f,
                "a tempo of {bpm} bpm over {ramp} beats: the tempo must be above 0 and at most \
                 999, the ramp 0 or more beats"
            ),
            Self::BadLoop { start, end } => write!(
                f,
                "a loop from beat {start} to beat {end} must end at least one frame after it starts"
            ),
        }
    }
}

impl std::error::Error for TransportError {}

/// A loop, in beats and in the song's frames.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Loop {
    start: f64,
    end: f64,
    start_frame: u64,
    end_frame: u64,
}

/// Play, stop, locate and loop over a tempo map, on the audio thread.
///
/// The transport counts the song's frames (the [`TempoMap`]'s time axis) apart from the
/// engine's: while it is stopped the song's frame stands still, a locate or a loop wrap
/// moves it. [`piece`](Transport::piece) says how much of a block may run before the
/// position must be recomputed (a tempo point, a signature change, the loop's end), so
/// that within every piece one tempo segment holds and [`MusicalPosition::at`] is exact.
/// Nothing here allocates or locks.
///
/// ```
/// use downbeat_graph::time::{TempoMap, TempoPoint, Transport, TransportCommand};
///
/// // 120 bpm, then 60 bpm from beat 2 (one second in).
/// let map = TempoMap::new(120.0, Default::default(),
///     &[TempoPoint { beat: 2.0, bpm: 60.0, ramp: 0.0 }], &[], 48000.0).unwrap();
/// let mut t = Transport::new(map);
/// assert_eq!(t.piece(64), 64);
/// t.advance(47_990);
/// assert_eq!(t.piece(64), 10, "the block is cut at the tempo change");
/// t.advance(10);
/// assert_eq!((t.position().beat, t.position().bpm), (2.0, 60.0));
/// t.apply(TransportCommand::Loop(2.0, 3.0)).unwrap(); // one beat at 60 bpm: 48,000 frames
/// t.advance(47_999);
/// assert_eq!(t.piece(64), 1);
/// t.advance(1);
/// assert_eq!(t.position().beat, 2.0, "wrapped to the loop's start");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Transport {
    map: TempoMap,
    /// The map as it was made, before any live tempo change: a schedule replacing this
    /// one with the same keeps the live changes.
    base: TempoMap,
    playing: bool,
    song_frame: u64,
    looping: Option<Loop>,
}

impl Transport {
    /// A transport over `map`, playing from beat 0.
    pub fn new(map: TempoMap) -> Self {
        let base = map.clone();
        let mut map = map;
        map.reserve_live(LIVE_TEMPO_CHANGES);
        Self {
            map,
            base,
            playing: true,
            song_frame: 0,
            looping: None,
        }
    }

    /// The tempo map.
    pub fn map(&self) -> &TempoMap {
        &self.map
    }

    /// Whether it plays.
    pub fn is_playing(&self) -> bool {
        self.playing
    }

    /// The song's frame it stands at.
    pub fn song_frame(&self) -> u64 {
        self.song_frame
    }

    /// The loop, as beats, while looping is on.
    pub fn looping(&self) -> Option<(f64, f64)> {
        self.looping.map(|l| (l.start, l.end))
    }

    /// The musical position at the current frame.
    pub fn position(&self) -> MusicalPosition {
        MusicalPosition::of(&self.map, self.song_frame, self.playing, self.looping())
    }

    /// Carries on where `old` was: playing or not, looping or not, at the same beat. When
    /// both were made with the same tempo map, `old`'s map goes on here, live tempo changes
    /// and all (a swap: this one's goes back with `old`); otherwise this one's map holds
    /// from the beat the song was at. For a schedule that replaces another; does not
    /// allocate.
    pub fn continue_from(&mut self, old: &mut Transport) {
        self.playing = old.playing;
        if self.base == old.base {
            std::mem::swap(&mut self.map, &mut old.map);
            self.song_frame = old.song_frame;
            self.looping = old.looping;
        } else {
            let beat = old.position().beat;
            self.song_frame = self.map.frame_of(beat);
            self.looping = None;
            if let Some(l) = old.looping {
                let _ = self.apply(TransportCommand::Loop(l.start, l.end));
            }
        }
    }

    /// Carries out `command` now. Does not allocate.
    ///
    /// # Errors
    /// A beat that is not a number from 0 up, or a loop that does not end at least one
    /// frame after it starts; the transport is then unchanged.
    pub fn apply(&mut self, command: TransportCommand) -> Result<(), TransportError> {
        let beat_ok = |b: f64| {
            if b.is_finite() && b >= 0.0 {
                Ok(b)
            } else {
                Err(TransportError::BadBeat(b))
            }
        };
        match command {
            TransportCommand::Play => self.playing = true,
            TransportCommand::Stop => self.playing = false,
            TransportCommand::LocateBeat(b) => self.song_frame = self.map.frame_of(beat_ok(b)?),
            TransportCommand::LocateFrame(f) => self.song_frame = f,
            TransportCommand::Loop(start, end) => {
                let (start, end) = (beat_ok(start)?, beat_ok(end)?);
                let (start_frame, end_frame) = (self.map.frame_of(start), self.map.frame_of(end));
                if end_frame <= start_frame {
                    return Err(TransportError::BadLoop { start, end });
                }
                self.looping = Some(Loop {
                    start,
                    end,
                    start_frame,
                    end_frame,
                });
            }
            TransportCommand::Unloop => self.looping = None,
            TransportCommand::Tempo { bpm, ramp } => {
                let beat = self.position().beat;
                let beat = if beat > 0.0 { beat } else { 0.0 };
                self.map
                    .retempo(beat, bpm, ramp)
                    .map_err(|e| TransportError::BadTempo {
                        bpm,
                        ramp,
                        no_room: e == TempoError::NoRoom,
                    })?;
                // The loop's beats stay; their frames move with the new tempo.
                if let Some(l) = &mut self.looping {
                    l.start_frame = self.map.frame_of(l.start);
                    l.end_frame = self.map.frame_of(l.end);
                }
            }
        }
        Ok(())
    }

    /// How many of the next `frames` frames (at least 1) may run as one piece: up to the
    /// next tempo segment, signature change or loop end, if one comes sooner. Stopped, the
    /// position does not move and nothing cuts.
    pub fn piece(&self, frames: usize) -> usize {
        if !self.playing || frames == 0 {
            return frames;
        }
        let here = self.song_frame;
        let mut end = here.saturating_add(frames as u64);
        let beat =
            segment_at_frame(&self.map, here).beat_at_seconds(here as f64 / self.map.sample_rate());
        for next in [
            self.next_segment_frame(here),
            self.map
                .next_signature_change(beat)
                .map(|b| self.map.frame_of(b)),
            self.looping
                .filter(|l| l.end_frame > here)
                .map(|l| l.end_frame),
        ]
        .into_iter()
        .flatten()
        {
            if next > here {
                end = end.min(next);
            }
        }
        (end - here) as usize
    }

    /// The first frame of the tempo segment after the one `frame` lies in.
    fn next_segment_frame(&self, frame: u64) -> Option<u64> {
        let segments = self.map.segments();
        let k = segments.partition_point(|s| self.map.frame_of(s.start_beat) <= frame);
        segments.get(k).map(|s| self.map.frame_of(s.start_beat))
    }

    /// Moves on `frames` frames (a piece [`piece`](Transport::piece) allowed), wrapping at
    /// the loop's end.
    pub fn advance(&mut self, frames: usize) {
        if !self.playing {
            return;
        }
        self.song_frame += frames as u64;
        if let Some(l) = self.looping {
            if self.song_frame >= l.end_frame && self.song_frame - (frames as u64) < l.end_frame {
                self.song_frame = l.start_frame + (self.song_frame - l.end_frame);
            }
        }
    }
}

impl Default for Transport {
    /// 120 bpm in 4/4 at 48 kHz, playing from beat 0.
    fn default() -> Self {
        Self::new(TempoMap::default())
    }
}
