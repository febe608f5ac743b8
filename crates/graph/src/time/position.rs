//! Where the song is at a block's first frame: what every node reads from its
//! [`ProcessContext::musical`](crate::ProcessContext::musical).

use super::signature::Signature;
use super::tempo::{Segment, TempoMap};

/// Tolerance, in beats, below which a position counts as on a beat or bar line: a position
/// computed from frames lands a few ulps off an integer beat.
const ON_LINE: f64 = 1e-9;

/// The musical position of one frame: the song's beat, bar, tempo and signature there, and
/// whether the transport plays and loops.
///
/// A [`Transport`](super::Transport) splits blocks at every tempo point, signature change,
/// loop wrap and transport command, so within one block the position moves along one
/// tempo segment and [`at`](MusicalPosition::at) gives the exact position of any frame of
/// it, the same the [`TempoMap`] gives for that frame.
///
/// ```
/// use downbeat_graph::time::{MusicalPosition, TempoMap};
///
/// let map = TempoMap::constant(120.0, 48000).unwrap(); // a beat every 24,000 frames
/// let p = MusicalPosition::of(&map, 96000, true, None);
/// assert_eq!((p.beat, p.bar, p.bpm), (4.0, 1, 120.0));
/// assert_eq!(p.at(12000).beat, 4.5);
/// assert_eq!(p.offset_of(5.0, 64), None); // beat 5 is 24,000 frames away
/// assert_eq!(p.at(23990).offset_of(5.0, 64), Some(10));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MusicalPosition {
    /// Whether the transport is playing. While stopped the position stands still (the
    /// engine's frame count goes on).
    pub playing: bool,
    /// Frames into the song: the tempo map's time axis, which a locate or a loop wrap moves.
    pub song_frame: u64,
    /// Quarter-note beats from the song's start.
    pub beat: f64,
    /// The tempo at this frame, in quarter notes per minute.
    pub bpm: f64,
    /// The time signature in force.
    pub signature: Signature,
    /// The bar, counted from 0.
    pub bar: i64,
    /// The beat the bar started on.
    pub bar_beat: f64,
    /// The loop, as beats `(start, end)`, while looping is on.
    pub looping: Option<(f64, f64)>,
    /// The tempo segment this frame lies in, which the rest of the block stays in.
    segment: Segment,
    sample_rate: u32,
}

impl MusicalPosition {
    /// The position at `song_frame` of `map`, with the transport playing or not and looping
    /// over `looping`. Does not allocate.
    pub fn of(map: &TempoMap, song_frame: u64, playing: bool, looping: Option<(f64, f64)>) -> Self {
        Self::in_segment(
            map,
            *segment_at_frame(map, song_frame),
            song_frame,
            playing,
            looping,
        )
    }

    /// [`of`](MusicalPosition::of) when the tempo segment holding `song_frame` is known.
    pub(crate) fn in_segment(
        map: &TempoMap,
        segment: Segment,
        song_frame: u64,
        playing: bool,
        looping: Option<(f64, f64)>,
    ) -> Self {
        let beat = segment.beat_at_seconds(song_frame as f64 / f64::from(map.sample_rate()));
        let (bar, bar_beat) = map.bar_at(beat + ON_LINE);
        Self {
            playing,
            song_frame,
            beat,
            bpm: segment.bpm_at(beat),
            signature: map.signature_at(beat + ON_LINE),
            bar,
            bar_beat,
            looping,
            segment,
            sample_rate: map.sample_rate(),
        }
    }

    /// A transport stopped at the start of a 120 bpm 4/4 song: what a node sees from a
    /// schedule nobody gave a tempo map.
    /// Does not allocate (no map is built).
    pub fn stopped(sample_rate: u32) -> Self {
        Self {
            playing: false,
            song_frame: 0,
            beat: 0.0,
            bpm: 120.0,
            signature: Signature::default(),
            bar: 0,
            bar_beat: 0.0,
            looping: None,
            segment: Segment {
                start_beat: 0.0,
                end_beat: f64::INFINITY,
                start_bpm: 120.0,
                end_bpm: 120.0,
                start_seconds: 0.0,
            },
            sample_rate,
        }
    }

    /// The position `offset` frames later in the same block: the same if stopped. Exact
    /// within a block a transport allowed (one tempo segment, no loop wrap, no signature
    /// change); beyond, it extrapolates. Does not allocate.
    pub fn at(&self, offset: usize) -> Self {
        if !self.playing || offset == 0 {
            return *self;
        }
        let song_frame = self.song_frame + offset as u64;
        let beat = self
            .segment
            .beat_at_seconds(song_frame as f64 / f64::from(self.sample_rate));
        let bar_beats = self.signature.bar_beats();
        let bars = ((beat - self.bar_beat + ON_LINE) / bar_beats).floor();
        Self {
            song_frame,
            beat,
            bpm: self.segment.bpm_at(beat),
            bar: self.bar + bars as i64,
            bar_beat: self.bar_beat + bars * bar_beats,
            ..*self
        }
    }

    /// The frame of the song at which `beat` falls, by this position's tempo segment: the
    /// same frame [`TempoMap::frame_of`] gives, for a beat inside this block.
    pub fn song_frame_of(&self, beat: f64) -> u64 {
        let s = self.segment.seconds_at(beat) * f64::from(self.sample_rate);
        if s <= 0.0 {
            0
        } else {
            s.round() as u64
        }
    }

    /// Where `beat` falls in a block of `frames` frames starting here: its offset, or `None`
    /// when it falls outside the block or the transport is stopped. This is how a node
    /// finds the exact frame of a beat or bar line.
    pub fn offset_of(&self, beat: f64, frames: usize) -> Option<usize> {
        if !self.playing {
            return None;
        }
        let f = self.song_frame_of(beat);
        (f >= self.song_frame && f < self.song_frame + frames as u64)
            .then(|| (f - self.song_frame) as usize)
    }

    /// The lines of the signature's beats (every `4 / denominator` quarter notes from the
    /// bar line), from the last one at or before this position on, each with its bar and
    /// its place in the bar. A node that clicks on beats walks them with
    /// [`offset_of`](MusicalPosition::offset_of), which says which fall in its block: the
    /// first may (a line on this very frame, though a hair before this frame's beat) or
    /// may not.
    pub fn beat_lines(&self) -> impl Iterator<Item = BeatLine> + '_ {
        let step = self.signature.beat_length();
        let per_bar = u32::from(self.signature.numerator);
        let lines = ((self.beat - self.bar_beat + ON_LINE) / step).floor();
        // A position a hair before its bar line counts as on it.
        let first = if lines > 0.0 { lines as u64 } else { 0 };
        (first..).map(move |k| {
            let bars = k / u64::from(per_bar);
            let index = (k % u64::from(per_bar)) as u32;
            BeatLine {
                beat: self.bar_beat + k as f64 * step,
                bar: self.bar + bars as i64,
                index,
            }
        })
    }

    /// The tempo segment this position lies in.
    pub fn segment(&self) -> &Segment {
        &self.segment
    }

    /// The sample rate of the song's frames.
    pub fn sample_rate(&self) -> u32 {
        self.sample_rate
    }
}

/// One line of the signature's beats: see [`MusicalPosition::beat_lines`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BeatLine {
    /// Where it is, in quarter-note beats.
    pub beat: f64,
    /// The bar it belongs to.
    pub bar: i64,
    /// Its place in the bar, from 0: 0 is the bar line.
    pub index: u32,
}

/// The tempo segment whose frames include `frame`: segment `k` holds the frames from the
/// frame of its first beat ([`TempoMap::frame_of`]) up to that of the next segment's.
pub(crate) fn segment_at_frame(map: &TempoMap, frame: u64) -> &Segment {
    &map.segments()[segment_index_at_frame(map, frame)]
}

/// The index of [`segment_at_frame`]'s segment.
pub(crate) fn segment_index_at_frame(map: &TempoMap, frame: u64) -> usize {
    let rate = map.sample_rate();
    map.segments()
        .partition_point(|s| start_frame(s, rate) <= frame)
        .saturating_sub(1)
}

/// The frame of a segment's first beat: what [`TempoMap::frame_of`] gives for it (the map
/// finds this segment for that beat, whose time is the segment's anchor), without the
/// search.
pub(crate) fn start_frame(segment: &Segment, sample_rate: u32) -> u64 {
    let frame = (segment.start_seconds * f64::from(sample_rate)).round();
    if frame > 0.0 {
        frame as u64
    } else {
        0
    }
}
