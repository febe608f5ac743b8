//! The transport: plays, stops, locates and loops the song over a [`TempoMap`], and cuts
//! the engine's blocks wherever the musical position must not run on unbroken.

use std::fmt;

use super::error::TempoError;
use super::position::{segment_index_at_frame, start_frame, MusicalPosition};
use super::tempo::{valid_bpm, TempoMap};

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

/// `beat` when it is a beat of the song (a number from 0 up), else why not: the one check
/// every place that takes a beat from outside makes (a command, an event's time, an OSC
/// address).
///
/// ```
/// use downbeat_graph::time::{checked_beat, TransportError};
/// assert_eq!(checked_beat(4.5), Ok(4.5));
/// assert_eq!(checked_beat(-1.0), Err(TransportError::BadBeat(-1.0)));
/// assert!(checked_beat(f64::NAN).is_err());
/// ```
pub fn checked_beat(beat: f64) -> Result<f64, TransportError> {
    if beat.is_finite() && beat >= 0.0 {
        Ok(beat)
    } else {
        Err(TransportError::BadBeat(beat))
    }
}

impl TransportCommand {
    /// Refuses what [`Transport::apply`] refuses for the command's values alone: a beat
    /// that is not one, a loop that does not end after it starts, a tempo not above 0 or
    /// above 999, a ramp that is negative or not a number. The map decides the rest (a
    /// loop shorter than a frame, the room for live tempo changes). For a control thread,
    /// so that the sender hears why.
    ///
    /// ```
    /// use downbeat_graph::time::TransportCommand;
    /// assert!(TransportCommand::Loop(0.0, 16.0).check().is_ok());
    /// assert!(TransportCommand::Loop(8.0, 4.0).check().is_err());
    /// assert!(TransportCommand::Tempo { bpm: 0.0, ramp: 0.0 }.check().is_err());
    /// ```
    pub fn check(self) -> Result<(), TransportError> {
        match self {
            TransportCommand::LocateBeat(b) => checked_beat(b).map(|_| ()),
            TransportCommand::Loop(start, end) => {
                checked_beat(start)?;
                checked_beat(end)?;
                if end <= start {
                    return Err(TransportError::BadLoop { start, end });
                }
                Ok(())
            }
            TransportCommand::Tempo { bpm, ramp } => {
                if valid_bpm(bpm) && ramp >= 0.0 && ramp.is_finite() {
                    Ok(())
                } else {
                    Err(TransportError::BadTempo {
                        bpm,
                        ramp,
                        no_room: false,
                    })
                }
            }
            TransportCommand::Play
            | TransportCommand::Stop
            | TransportCommand::LocateFrame(_)
            | TransportCommand::Unloop => Ok(()),
        }
    }
}

/// The song's last frame: a locate or a loop past it is refused. Far enough that no song
/// reaches it (three million years at 48 kHz), near enough that a frame plus any block,
/// and the frames of any two beats' distance, stay inside `u64`.
pub const LAST_FRAME: u64 = 1 << 62;

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
    /// A beat, or a frame, past the song's [`LAST_FRAME`].
    PastTheEnd {
        /// The beat asked for (for a frame, the beat there).
        beat: f64,
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
            Self::PastTheEnd { beat } => write!(
                f,
                "beat {beat} is past the end of the song (frame {LAST_FRAME} at this tempo)"
            ),
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
///     &[TempoPoint { beat: 2.0, bpm: 60.0, ramp: 0.0 }], &[], 48000).unwrap();
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
    /// Where the song is in the map, kept so that a block costs no search: see [`Place`].
    place: Place,
}

/// The tempo segment the song's frame lies in and the next frame at which the segment or
/// the signature changes, valid for song frames from `from` (where it was looked up) up to
/// `cut`: playing moves forward within it, and a jump back or a change of map looks it up
/// again.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Place {
    segment: usize,
    from: u64,
    cut: u64,
}

impl Place {
    /// Whether it is good for song frame `frame`.
    fn holds(&self, frame: u64) -> bool {
        self.from <= frame && frame < self.cut
    }

    /// Matches no frame: the next [`Transport::settle`] looks the place up.
    const NONE: Place = Place {
        segment: 0,
        from: u64::MAX,
        cut: 0,
    };
}

impl Transport {
    /// A transport over `map`, playing from beat 0.
    pub fn new(map: TempoMap) -> Self {
        let base = map.clone();
        let mut map = map;
        map.reserve_live(LIVE_TEMPO_CHANGES);
        let mut t = Self {
            map,
            base,
            playing: true,
            song_frame: 0,
            looping: None,
            place: Place::NONE,
        };
        t.settle();
        t
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
        MusicalPosition::in_segment(
            &self.map,
            self.map.segments()[self.place().segment],
            self.song_frame,
            self.playing,
            self.looping(),
        )
    }

    /// The place kept, or looked up when it does not hold the song's frame (never so after
    /// a `&mut` method, which settles it).
    fn place(&self) -> Place {
        if self.place.holds(self.song_frame) {
            self.place
        } else {
            self.look_up()
        }
    }

    /// Where the song's frame is in the map: its tempo segment and the next frame at which
    /// the segment or the signature changes. Real-time safe: two binary searches.
    fn look_up(&self) -> Place {
        let here = self.song_frame;
        let k = segment_index_at_frame(&self.map, here);
        let (segments, rate) = (self.map.segments(), self.map.sample_rate());
        let beat = segments[k].beat_at_seconds(here as f64 / f64::from(rate));
        let mut cut = segments
            .get(k + 1)
            .map_or(u64::MAX, |s| start_frame(s, rate));
        if let Some(b) = self.map.next_signature_change(beat) {
            cut = cut.min(self.map.frame_of(b));
        }
        Place {
            segment: k,
            from: here,
            cut: cut.max(here + 1),
        }
    }

    /// Keeps the place good for the song's frame, looking it up only when it is not.
    fn settle(&mut self) {
        if !self.place.holds(self.song_frame) {
            self.place = self.look_up();
        }
    }

    /// Carries on where `old` was: playing or not, looping or not, at the same beat. When
    /// both were made with the same tempo map, `old`'s map goes on here, live tempo changes
    /// and all (a swap: this one's goes back with `old`); otherwise this one's map holds
    /// from the beat the song was at. For a schedule that replaces another; does not
    /// allocate.
    pub fn continue_from(&mut self, old: &mut Transport) {
        self.place = Place::NONE;
        self.continue_state(old);
        self.settle();
    }

    fn continue_state(&mut self, old: &mut Transport) {
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
        let done = self.carry_out(command);
        self.settle();
        done
    }

    fn carry_out(&mut self, command: TransportCommand) -> Result<(), TransportError> {
        match command {
            TransportCommand::Play => self.playing = true,
            TransportCommand::Stop => self.playing = false,
            TransportCommand::LocateBeat(b) => self.song_frame = self.frame_in_song(b)?,
            TransportCommand::LocateFrame(f) => {
                if f > LAST_FRAME {
                    let beat = self.map.beat_at_frame(f);
                    return Err(TransportError::PastTheEnd { beat });
                }
                self.song_frame = f;
            }
            TransportCommand::Loop(start, end) => {
                let (start_frame, end_frame) =
                    (self.frame_in_song(start)?, self.frame_in_song(end)?);
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
                self.place = Place::NONE;
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

    /// The frame of `beat`, a beat of the song no further than [`LAST_FRAME`].
    fn frame_in_song(&self, beat: f64) -> Result<u64, TransportError> {
        let frame = self.map.frame_of(checked_beat(beat)?);
        if frame > LAST_FRAME {
            return Err(TransportError::PastTheEnd { beat });
        }
        Ok(frame)
    }

    /// How many of the next `frames` frames (at least 1) may run as one piece: up to the
    /// next tempo segment, signature change or loop end, if one comes sooner. Stopped, the
    /// position does not move and nothing cuts.
    pub fn piece(&self, frames: usize) -> usize {
        if !self.playing || frames == 0 {
            return frames;
        }
        let here = self.song_frame;
        let mut end = here.saturating_add(frames as u64).min(self.place().cut);
        if let Some(l) = self.looping.filter(|l| l.end_frame > here) {
            end = end.min(l.end_frame);
        }
        (end - here) as usize
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
        self.settle();
    }
}

impl Default for Transport {
    /// 120 bpm in 4/4 at 48 kHz, playing from beat 0.
    fn default() -> Self {
        Self::new(TempoMap::default())
    }
}
