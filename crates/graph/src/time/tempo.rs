//! [`TempoMap`]: beats to seconds and frames and back, and the bar grid, from tempo changes
//! (steps and linear ramps) and signature changes.

use super::{Signature, TempoError};

/// Ticks in one counted beat of a signature (a quarter in 4/4, an eighth in 6/8): the
/// resolution of [`Bbt::tick`]. 960 divides into halves, thirds, fifths and sixteenths of a
/// beat, as MIDI sequencers' common resolutions do.
///
/// ```
/// use downbeat_graph::time::{TempoMap, TICKS_PER_BEAT};
///
/// let map = TempoMap::default();
/// assert_eq!(map.bbt(0.5).tick, TICKS_PER_BEAT / 2);
/// ```
pub const TICKS_PER_BEAT: u32 = 960;

/// How far below a bar line or a counted beat a position may lie and still count as on it,
/// in quarter-note beats, for the bar-grid queries ([`TempoMap::bar_at`],
/// [`TempoMap::next_bar`], [`TempoMap::next_beat`], [`TempoMap::bbt`],
/// [`TempoMap::signature_at`], [`TempoMap::next_signature_change`]).
///
/// A beat found by arithmetic (a block's start converted from frames, a sum of note lengths)
/// often lands a few ulps short of the line it means: 3.9999999999 is meant as beat 4, and
/// should count as bar 1's first beat, not bar 0's last tick. A billionth of a beat is far
/// below a tick (1/960 of a beat) and far above the rounding of `f64` beats in any song; the
/// tempo conversions themselves use no tolerance.
///
/// ```
/// use downbeat_graph::time::{TempoMap, GRID_TOLERANCE};
///
/// let map = TempoMap::default();
/// assert_eq!(map.bar_at(4.0 - GRID_TOLERANCE / 2.0), (1, 4.0));
/// assert_eq!(map.bar_at(4.0 - GRID_TOLERANCE * 2.0), (0, 0.0));
/// ```
pub const GRID_TOLERANCE: f64 = 1e-9;

/// A tempo change: a step, or a linear ramp to a new tempo.
///
/// From `beat` the tempo goes from the tempo in force there (the previous change's `bpm`,
/// or the map's initial tempo) to `bpm`, linearly in beats over `ramp` beats, and stays at
/// `bpm` after; with `ramp` 0 it steps to `bpm` at `beat`. Ramping in beats rather than in
/// seconds is what sequencers draw and what keeps the closed forms simple.
///
/// ```
/// use downbeat_graph::time::{Signature, TempoMap, TempoPoint};
///
/// // 100 bpm, up to 140 over beats 8 to 16.
/// let up = TempoPoint { beat: 8.0, bpm: 140.0, ramp: 8.0 };
/// let map = TempoMap::new(100.0, Signature::default(), &[up], &[], 48000).unwrap();
/// assert_eq!(map.bpm_at(12.0), 120.0);
/// assert_eq!(map.bpm_at(16.0), 140.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TempoPoint {
    /// Where the change starts, in quarter-note beats from 0.
    pub beat: f64,
    /// The tempo reached, in quarter notes per minute, `(0, 999]`.
    pub bpm: f64,
    /// How many beats the change takes; 0 for a step.
    pub ramp: f64,
}

/// A change of time signature, on a bar line of the signature before it.
///
/// Bars are counted across changes, so the change must fall where a bar of the old signature
/// ends; a change elsewhere would leave a bar with no signature and is refused.
///
/// ```
/// use downbeat_graph::time::{Signature, SignatureChange, TempoMap};
///
/// // Eight bars of 4/4, then 3/4.
/// let waltz = SignatureChange { beat: 32.0, signature: "3/4".parse().unwrap() };
/// let map = TempoMap::new(120.0, Signature::default(), &[], &[waltz], 48000).unwrap();
/// assert_eq!(map.bar_at(35.0), (9, 35.0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SignatureChange {
    /// The bar line it takes effect on, in quarter-note beats from 0.
    pub beat: f64,
    /// The signature from there on.
    pub signature: Signature,
}

/// A position as bar, beat and tick, all counted from 0.
///
/// `beat` counts the signature's own beats (eighths in 6/8) and `tick` the
/// [`TICKS_PER_BEAT`] parts of one. A display counting from 1 adds 1 to `bar` and `beat`.
///
/// ```
/// use downbeat_graph::time::{Bbt, TempoMap};
///
/// let map = TempoMap::default();
/// let position = Bbt { bar: 2, beat: 1, tick: 480 };
/// assert_eq!(map.beat_of_bbt(position), 9.5);
/// assert_eq!(map.bbt(9.5), position);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bbt {
    /// Bar, from 0 (negative before beat 0).
    pub bar: i64,
    /// Counted beat within the bar, from 0.
    pub beat: u32,
    /// Tick within the beat, `0..TICKS_PER_BEAT`.
    pub tick: u32,
}

/// A stretch of the map with one closed form: a constant tempo, or one linear ramp.
///
/// The map is a list of these, computed once. Each carries the time its start falls at
/// (`start_seconds`), computed from the segment before's closed form when the map was
/// built; a conversion then uses only its own segment, so its result does not depend on
/// what was converted before or on the way the segment was found.
///
/// Outside `start_beat..end_beat` the methods hold the tempo: `start_bpm` before the start,
/// `end_bpm` after the end. The map only asks a segment about its own span, except the first,
/// which answers for negative beats and times too.
///
/// None of the methods allocates; each costs a few arithmetic operations and, in a ramp,
/// one `log1p` or `expm1`.
///
/// ```
/// use downbeat_graph::time::Segment;
///
/// let ramp = Segment {
///     start_beat: 0.0,
///     end_beat: 8.0,
///     start_bpm: 60.0,
///     end_bpm: 120.0,
///     start_seconds: 0.0,
/// };
/// assert_eq!(ramp.bpm_at(4.0), 90.0);
/// // 60 L / (t1 - t0) ln(t1 / t0): 8 s ln 2.
/// assert!((ramp.seconds_at(8.0) - 8.0 * std::f64::consts::LN_2).abs() < 1e-12);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segment {
    /// The first beat of the segment.
    pub start_beat: f64,
    /// The beat the next segment starts on; `f64::INFINITY` for the last.
    pub end_beat: f64,
    /// Tempo at `start_beat`, bpm.
    pub start_bpm: f64,
    /// Tempo at `end_beat`, bpm; equal to `start_bpm` when the tempo is constant.
    pub end_bpm: f64,
    /// Seconds from beat 0 to `start_beat`.
    pub start_seconds: f64,
}

impl Segment {
    /// Whether the tempo is the same throughout, so the ramp's forms (which divide by the
    /// change of tempo) do not apply.
    fn is_constant(&self) -> bool {
        self.end_bpm == self.start_bpm
    }

    /// The tempo at `beat`: `t0 + (t1 - t0)(beat - b0) / L` within a ramp, held outside
    /// the segment.
    ///
    /// ```
    /// use downbeat_graph::time::Segment;
    ///
    /// let ramp = Segment {
    ///     start_beat: 4.0,
    ///     end_beat: 8.0,
    ///     start_bpm: 120.0,
    ///     end_bpm: 80.0,
    ///     start_seconds: 2.0,
    /// };
    /// assert_eq!(ramp.bpm_at(6.0), 100.0);
    /// assert_eq!(ramp.bpm_at(0.0), 120.0);
    /// assert_eq!(ramp.bpm_at(9.0), 80.0);
    /// ```
    #[inline]
    pub fn bpm_at(&self, beat: f64) -> f64 {
        if self.is_constant() || beat <= self.start_beat {
            self.start_bpm
        } else if beat >= self.end_beat {
            self.end_bpm
        } else {
            let length = self.end_beat - self.start_beat;
            self.start_bpm + (self.end_bpm - self.start_bpm) * (beat - self.start_beat) / length
        }
    }

    /// Seconds from beat 0 to `beat`, from this segment's anchor.
    ///
    /// Constant tempo: `s0 + 60 (b - b0) / t0`. Ramp: the integral of `60 / t(b)`,
    /// `s0 + 60 L / (t1 - t0) · ln(t(b) / t0)`, with the logarithm taken as
    /// `ln_1p((t1 - t0)(b - b0) / (L t0))`: near the start of a ramp, or in a gentle one,
    /// `t(b) / t0` is close to 1 and `ln` of it would lose most of its digits. Before the
    /// start, the tempo `t0` is held (how the map extrapolates to negative beats); after
    /// the end, `t1`.
    ///
    /// ```
    /// use downbeat_graph::time::Segment;
    ///
    /// let constant = Segment {
    ///     start_beat: 4.0,
    ///     end_beat: f64::INFINITY,
    ///     start_bpm: 120.0,
    ///     end_bpm: 120.0,
    ///     start_seconds: 3.0,
    /// };
    /// assert_eq!(constant.seconds_at(6.0), 4.0);
    /// assert_eq!(constant.seconds_at(2.0), 2.0);
    /// ```
    #[inline]
    pub fn seconds_at(&self, beat: f64) -> f64 {
        let elapsed = beat - self.start_beat;
        if self.is_constant() || elapsed <= 0.0 {
            self.start_seconds + 60.0 * elapsed / self.start_bpm
        } else if beat <= self.end_beat {
            self.ramp_seconds(elapsed)
        } else {
            let end = self.ramp_seconds(self.end_beat - self.start_beat);
            end + 60.0 * (beat - self.end_beat) / self.end_bpm
        }
    }

    /// The ramp's closed form, `elapsed` beats after the start (not past the end).
    #[inline]
    fn ramp_seconds(&self, elapsed: f64) -> f64 {
        let length = self.end_beat - self.start_beat;
        let change = self.end_bpm - self.start_bpm;
        self.start_seconds
            + 60.0 * length / change * libm::log1p(change * elapsed / (length * self.start_bpm))
    }

    /// The beat at `seconds` from beat 0: the inverse of [`Segment::seconds_at`].
    ///
    /// Constant tempo: `b0 + (s - s0) t0 / 60`. Ramp:
    /// `b0 + L t0 / (t1 - t0) · expm1((s - s0)(t1 - t0) / (60 L))`, `expm1` for the same
    /// reason as `ln_1p` in [`Segment::seconds_at`].
    ///
    /// ```
    /// use downbeat_graph::time::Segment;
    ///
    /// let ramp = Segment {
    ///     start_beat: 0.0,
    ///     end_beat: 16.0,
    ///     start_bpm: 90.0,
    ///     end_bpm: 150.0,
    ///     start_seconds: 0.0,
    /// };
    /// let seconds = ramp.seconds_at(10.0);
    /// assert!((ramp.beat_at_seconds(seconds) - 10.0).abs() < 1e-12);
    /// ```
    #[inline]
    pub fn beat_at_seconds(&self, seconds: f64) -> f64 {
        let elapsed = seconds - self.start_seconds;
        if self.is_constant() || elapsed <= 0.0 {
            return self.start_beat + elapsed * self.start_bpm / 60.0;
        }
        let length = self.end_beat - self.start_beat;
        let change = self.end_bpm - self.start_bpm;
        let beat = self.start_beat
            + length * self.start_bpm / change * libm::expm1(elapsed * change / (60.0 * length));
        if beat <= self.end_beat {
            return beat;
        }
        // Past the ramp's end (never asked by the map, which picks the segment whose span
        // holds the time): the end tempo, held. `end` is the same expression `seconds_at`
        // gives, so times just past it cannot map before the end.
        let end = self.ramp_seconds(length);
        let held = self.end_beat + (seconds - end) * self.end_bpm / 60.0;
        if held > self.end_beat {
            held
        } else {
            self.end_beat
        }
    }
}

/// A bar-grid region: from `beat` on (until the next region), bars of `signature`, the first
/// of which is bar `bar`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Region {
    beat: f64,
    bar: i64,
    signature: Signature,
}

/// Musical time: where each beat falls in seconds and frames, and where the bars are.
///
/// A beat is a quarter note, counted from 0 as `f64`, whatever the signature. The map is
/// built once from an initial tempo and signature and lists of changes, checked, and is
/// immutable after: every conversion starts from the anchor of the one segment that holds
/// its input (found by binary search), so it costs O(log segments), never allocates, and
/// gives the same bits for the same input whatever was asked before. The audio thread can
/// call it every block. A live tempo change ([`retempo`](TempoMap::retempo)) rewrites the
/// map from a beat on, within room reserved beforehand.
///
/// Before beat 0 (or time 0) the map holds the first segment's tempo and counts bars of the
/// first signature backwards (bar -1 starts one bar before 0).
///
/// ```
/// use downbeat_graph::time::{Signature, SignatureChange, TempoMap, TempoPoint};
///
/// let map = TempoMap::new(
///     120.0,
///     Signature::default(),
///     &[TempoPoint { beat: 16.0, bpm: 60.0, ramp: 0.0 }],
///     &[SignatureChange { beat: 16.0, signature: "6/8".parse().unwrap() }],
///     48000,
/// )
/// .unwrap();
/// assert_eq!(map.seconds_at(16.0), 8.0);
/// assert_eq!(map.seconds_at(18.0), 10.0);
/// assert_eq!(map.frame_of(18.0), 480_000);
/// assert_eq!(map.bar_at(19.0), (5, 19.0));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct TempoMap {
    sample_rate: u32,
    /// At least one; the first starts at beat 0, the last ends at infinity, each starts
    /// where the one before ends.
    segments: Vec<Segment>,
    /// At least one; the first starts at beat 0 and bar 0, sorted by beat and by bar.
    regions: Vec<Region>,
}

/// Whether a tempo can be used: finite, above 0, at most 999 bpm.
pub(crate) fn valid_bpm(bpm: f64) -> bool {
    bpm > 0.0 && bpm <= 999.0
}

impl TempoMap {
    /// Checks the changes and computes the segments and the bar grid.
    ///
    /// `bpm` and `signature` hold from beat 0 until the first change; a tempo change or a
    /// signature change at beat 0 replaces them there (a ramp at 0 ramps from `bpm`). The
    /// changes may come in any order; they are sorted by beat. A signature change within
    /// [`GRID_TOLERANCE`] of a bar line is taken to be on it.
    ///
    /// ```
    /// use downbeat_graph::time::{Signature, TempoError, TempoMap, TempoPoint};
    ///
    /// let points = [
    ///     TempoPoint { beat: 32.0, bpm: 90.0, ramp: 0.0 },
    ///     TempoPoint { beat: 16.0, bpm: 140.0, ramp: 8.0 },
    /// ];
    /// let map = TempoMap::new(120.0, Signature::default(), &points, &[], 44100).unwrap();
    /// assert_eq!(map.segments().len(), 4); // 120, ramp to 140, 140, 90
    ///
    /// let late = [TempoPoint { beat: 20.0, bpm: 100.0, ramp: 0.0 }, points[1]];
    /// let err = TempoMap::new(120.0, Signature::default(), &late, &[], 44100).unwrap_err();
    /// assert!(matches!(err, TempoError::Overlap { index: 0, previous: 1, .. }));
    /// ```
    ///
    /// # Errors
    /// The first problem found, as a [`TempoError`]: the initial tempo or the sample rate
    /// ([`InitialBpm`](TempoError::InitialBpm), [`SampleRate`](TempoError::SampleRate));
    /// each tempo change's beat, tempo and ramp in the caller's order
    /// ([`PointBeat`](TempoError::PointBeat), [`PointBpm`](TempoError::PointBpm),
    /// [`Ramp`](TempoError::Ramp)); then, in beat order, two changes at one beat
    /// ([`DuplicatePoint`](TempoError::DuplicatePoint)) or one inside the ramp before
    /// ([`Overlap`](TempoError::Overlap)); then the signature changes' beats
    /// ([`SignatureBeat`](TempoError::SignatureBeat)), two at one beat
    /// ([`DuplicateSignature`](TempoError::DuplicateSignature)) and one off a bar line
    /// ([`OffBar`](TempoError::OffBar)).
    pub fn new(
        bpm: f64,
        signature: Signature,
        points: &[TempoPoint],
        signatures: &[SignatureChange],
        sample_rate: u32,
    ) -> Result<TempoMap, TempoError> {
        if !valid_bpm(bpm) {
            return Err(TempoError::InitialBpm(bpm));
        }
        if sample_rate == 0 {
            return Err(TempoError::SampleRate(sample_rate));
        }
        Ok(TempoMap {
            sample_rate,
            segments: segments(bpm, points)?,
            regions: regions(signature, signatures)?,
        })
    }

    /// Makes room, written once so that no page of it faults later, for `changes` live
    /// tempo changes ([`retempo`](TempoMap::retempo)) without allocating. Allocates: off
    /// the audio thread.
    pub fn reserve_live(&mut self, changes: usize) {
        let len = self.segments.len();
        let last = self.segments[len - 1];
        self.segments.resize(len + 2 * changes, last);
        self.segments.truncate(len);
    }

    /// From `beat` on, the tempo goes from the one in force there to `bpm`, linearly over
    /// `ramp` beats (0: a step), and stays there; every tempo change after `beat` is
    /// dropped. Beats before `beat` keep their times, so a song playing at `beat` goes on
    /// without a jump. Real-time safe while the room [`reserve_live`](TempoMap::reserve_live)
    /// made lasts (each change takes at most two segments of it; the segments it drops
    /// give theirs back).
    ///
    /// ```
    /// use downbeat_graph::time::TempoMap;
    ///
    /// let mut map = TempoMap::constant(120.0, 48000).unwrap();
    /// map.reserve_live(4);
    /// map.retempo(4.0, 60.0, 0.0).unwrap(); // at beat 4 (2 s), down to 60 bpm
    /// assert_eq!(map.frame_of(4.0), 96_000);
    /// assert_eq!(map.frame_of(5.0), 144_000);
    /// map.retempo(2.0, 240.0, 2.0).unwrap(); // from beat 2 (1 s), up to 240 over 2 beats
    /// assert_eq!(map.bpm_at(3.0), 180.0);
    /// assert_eq!(map.bpm_at(10.0), 240.0, "the change at beat 4 is gone");
    /// ```
    ///
    /// # Errors
    /// [`TempoError::PointBeat`], [`TempoError::PointBpm`] or [`TempoError::Ramp`] (with
    /// index 0) for a value out of range, [`TempoError::NoRoom`] when the reserved room is
    /// used up; the map is unchanged then.
    pub fn retempo(&mut self, beat: f64, bpm: f64, ramp: f64) -> Result<(), TempoError> {
        if !(beat >= 0.0 && beat.is_finite()) {
            return Err(TempoError::PointBeat { index: 0, beat });
        }
        if !valid_bpm(bpm) {
            return Err(TempoError::PointBpm {
                index: 0,
                beat,
                bpm,
            });
        }
        if !(ramp >= 0.0 && (beat + ramp).is_finite()) {
            return Err(TempoError::Ramp {
                index: 0,
                beat,
                ramp,
            });
        }
        let k = self.segment_index_at(beat);
        let current = self.segments[k];
        let (from, start_seconds) = (current.bpm_at(beat), current.seconds_at(beat));
        // The segment holding `beat` ends there (or goes, if it starts there).
        let kept = if beat > current.start_beat { k + 1 } else { k };
        if kept + 2 > self.segments.capacity() {
            return Err(TempoError::NoRoom);
        }
        self.segments.truncate(kept);
        if let Some(last) = self.segments.last_mut() {
            if last.end_beat > beat {
                last.end_beat = beat;
                last.end_bpm = from;
            }
        }
        let mut start = (beat, start_seconds);
        if ramp > 0.0 {
            let ramped = Segment {
                start_beat: beat,
                end_beat: beat + ramp,
                start_bpm: from,
                end_bpm: bpm,
                start_seconds,
            };
            self.segments.push(ramped);
            start = (beat + ramp, ramped.seconds_at(beat + ramp));
        }
        self.segments.push(Segment {
            start_beat: start.0,
            end_beat: f64::INFINITY,
            start_bpm: bpm,
            end_bpm: bpm,
            start_seconds: start.1,
        });
        Ok(())
    }

    /// A map at one tempo in 4/4, for when there is no tempo track.
    ///
    /// ```
    /// use downbeat_graph::time::TempoMap;
    ///
    /// let map = TempoMap::constant(90.0, 44100).unwrap();
    /// assert_eq!(map.seconds_at(3.0), 2.0);
    /// assert!(TempoMap::constant(1000.0, 44100).is_err());
    /// ```
    ///
    /// # Errors
    /// [`TempoError::InitialBpm`] or [`TempoError::SampleRate`], as [`TempoMap::new`].
    pub fn constant(bpm: f64, sample_rate: u32) -> Result<TempoMap, TempoError> {
        TempoMap::new(bpm, Signature::default(), &[], &[], sample_rate)
    }

    /// The sample rate frames are counted at, Hz.
    ///
    /// ```
    /// use downbeat_graph::time::TempoMap;
    ///
    /// assert_eq!(TempoMap::constant(120.0, 44100).unwrap().sample_rate(), 44100);
    /// ```
    pub fn sample_rate(&self) -> u32 {
        self.sample_rate
    }

    /// The segments, in beat order: the first starts at beat 0, each starts where the one
    /// before ends, the last never ends. A segment boundary lies at every tempo change and
    /// at the end of every ramp, even where the tempo does not change there.
    ///
    /// ```
    /// use downbeat_graph::time::{Signature, TempoMap, TempoPoint};
    ///
    /// let ramp = TempoPoint { beat: 4.0, bpm: 60.0, ramp: 4.0 };
    /// let map = TempoMap::new(120.0, Signature::default(), &[ramp], &[], 48000).unwrap();
    /// let starts: Vec<f64> = map.segments().iter().map(|s| s.start_beat).collect();
    /// assert_eq!(starts, [0.0, 4.0, 8.0]);
    /// assert_eq!(map.segments()[1].start_seconds, 2.0);
    /// ```
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The segment holding `beat` (`start_beat <= beat < end_beat`); the first for beats
    /// before 0 (and for NaN).
    ///
    /// ```
    /// use downbeat_graph::time::{Signature, TempoMap, TempoPoint};
    ///
    /// let step = TempoPoint { beat: 4.0, bpm: 60.0, ramp: 0.0 };
    /// let map = TempoMap::new(120.0, Signature::default(), &[step], &[], 48000).unwrap();
    /// assert_eq!(map.segment_at(3.5).start_bpm, 120.0);
    /// assert_eq!(map.segment_at(4.0).start_bpm, 60.0);
    /// assert_eq!(map.segment_at(-1.0).start_bpm, 120.0);
    /// ```
    #[inline]
    pub fn segment_at(&self, beat: f64) -> &Segment {
        &self.segments[self.segment_index_at(beat)]
    }

    /// The index in [`TempoMap::segments`] of [`TempoMap::segment_at`]`(beat)`, for a caller
    /// that walks the segments from there.
    ///
    /// ```
    /// use downbeat_graph::time::{Signature, TempoMap, TempoPoint};
    ///
    /// let step = TempoPoint { beat: 4.0, bpm: 60.0, ramp: 0.0 };
    /// let map = TempoMap::new(120.0, Signature::default(), &[step], &[], 48000).unwrap();
    /// assert_eq!(map.segment_index_at(3.5), 0);
    /// assert_eq!(map.segment_index_at(4.0), 1);
    /// assert_eq!(map.segment_index_at(1e9), 1);
    /// ```
    #[inline]
    pub fn segment_index_at(&self, beat: f64) -> usize {
        self.segments
            .partition_point(|segment| segment.start_beat <= beat)
            .saturating_sub(1)
    }

    /// Seconds from beat 0 to `beat` (negative before it).
    ///
    /// ```
    /// use downbeat_graph::time::{Signature, TempoMap, TempoPoint};
    ///
    /// // 60 bpm, ramping up to 120 over beats 0 to 4: 4 · 60 / 60 · ln 2 seconds.
    /// let ramp = TempoPoint { beat: 0.0, bpm: 120.0, ramp: 4.0 };
    /// let map = TempoMap::new(60.0, Signature::default(), &[ramp], &[], 48000).unwrap();
    /// assert!((map.seconds_at(4.0) - 4.0 * std::f64::consts::LN_2).abs() < 1e-12);
    /// assert_eq!(map.seconds_at(-2.0), -2.0); // 60 bpm held before 0
    /// ```
    #[inline]
    pub fn seconds_at(&self, beat: f64) -> f64 {
        self.segment_at(beat).seconds_at(beat)
    }

    /// The beat at `seconds` from beat 0: the inverse of [`TempoMap::seconds_at`] (to
    /// rounding).
    ///
    /// ```
    /// use downbeat_graph::time::TempoMap;
    ///
    /// let map = TempoMap::default(); // 120 bpm
    /// assert_eq!(map.beat_at_seconds(1.5), 3.0);
    /// assert_eq!(map.beat_at_seconds(-0.5), -1.0);
    /// ```
    #[inline]
    pub fn beat_at_seconds(&self, seconds: f64) -> f64 {
        let index = self
            .segments
            .partition_point(|segment| segment.start_seconds <= seconds)
            .saturating_sub(1);
        self.segments[index].beat_at_seconds(seconds)
    }

    /// The frame nearest to the time of `beat`: `seconds_at(beat) * sample_rate`, rounded to
    /// the nearest integer (halves away from zero), and 0 for any time before 0 (or NaN).
    ///
    /// Rounding rather than truncating puts a beat on the frame closest to it, so a note on
    /// a beat that falls 1e-12 frames before frame 24 000 (as an inexact `f64` time may)
    /// still starts on frame 24 000. Frames never go backwards as beats increase.
    ///
    /// ```
    /// use downbeat_graph::time::TempoMap;
    ///
    /// let map = TempoMap::constant(100.0, 44100).unwrap();
    /// assert_eq!(map.frame_of(1.0), 26460); // 0.6 s
    /// assert_eq!(map.frame_of(1.0 / 3.0), 8820);
    /// assert_eq!(map.frame_of(-1.0), 0);
    /// ```
    #[inline]
    pub fn frame_of(&self, beat: f64) -> u64 {
        let frame = (self.seconds_at(beat) * f64::from(self.sample_rate)).round();
        if frame > 0.0 {
            // Saturates at u64::MAX, which no song reaches.
            frame as u64
        } else {
            0
        }
    }

    /// The beat at frame `frame`: [`TempoMap::beat_at_seconds`] of `frame / sample_rate`.
    ///
    /// ```
    /// use downbeat_graph::time::TempoMap;
    ///
    /// let map = TempoMap::default(); // 120 bpm, 48 kHz
    /// assert_eq!(map.beat_at_frame(24000), 1.0);
    /// assert_eq!(map.frame_of(map.beat_at_frame(12345)), 12345);
    /// ```
    #[inline]
    pub fn beat_at_frame(&self, frame: u64) -> f64 {
        self.beat_at_seconds(frame as f64 / f64::from(self.sample_rate))
    }

    /// The tempo at `beat`, in quarter notes per minute.
    ///
    /// ```
    /// use downbeat_graph::time::{Signature, TempoMap, TempoPoint};
    ///
    /// let down = TempoPoint { beat: 8.0, bpm: 80.0, ramp: 4.0 };
    /// let map = TempoMap::new(120.0, Signature::default(), &[down], &[], 48000).unwrap();
    /// assert_eq!(map.bpm_at(8.0), 120.0);
    /// assert_eq!(map.bpm_at(10.0), 100.0);
    /// assert_eq!(map.bpm_at(12.0), 80.0);
    /// ```
    #[inline]
    pub fn bpm_at(&self, beat: f64) -> f64 {
        self.segment_at(beat).bpm_at(beat)
    }

    /// The first segment boundary strictly after `beat`, where the tempo starts or stops
    /// changing, or `None` in the last segment. A block that ends before it can assume one
    /// closed form throughout.
    ///
    /// ```
    /// use downbeat_graph::time::{Signature, TempoMap, TempoPoint};
    ///
    /// let ramp = TempoPoint { beat: 4.0, bpm: 60.0, ramp: 4.0 };
    /// let map = TempoMap::new(120.0, Signature::default(), &[ramp], &[], 48000).unwrap();
    /// assert_eq!(map.next_tempo_change(0.0), Some(4.0));
    /// assert_eq!(map.next_tempo_change(4.0), Some(8.0));
    /// assert_eq!(map.next_tempo_change(8.0), None);
    /// ```
    #[inline]
    pub fn next_tempo_change(&self, beat: f64) -> Option<f64> {
        let end = self.segment_at(beat).end_beat;
        if end.is_finite() {
            Some(end)
        } else {
            None
        }
    }

    /// The index of the region holding `beat`, with [`GRID_TOLERANCE`]; the first for beats
    /// before 0.
    #[inline]
    fn region_index_at(&self, beat: f64) -> usize {
        let probe = beat + GRID_TOLERANCE;
        self.regions
            .partition_point(|region| region.beat <= probe)
            .saturating_sub(1)
    }

    /// The region, bar index and bar start holding `beat`, with [`GRID_TOLERANCE`].
    #[inline]
    fn locate(&self, beat: f64) -> (&Region, i64, f64) {
        let region = &self.regions[self.region_index_at(beat)];
        let length = region.signature.bar_beats();
        let bars = ((beat + GRID_TOLERANCE - region.beat) / length).floor();
        // `as` saturates (and takes NaN to 0); no song has 2^63 bars.
        let bar = region.bar.saturating_add(bars as i64);
        (region, bar, region.beat + bars * length)
    }

    /// The signature in force at `beat` (the first one before 0). A beat within
    /// [`GRID_TOLERANCE`] before a change already has the new signature, as it counts as on
    /// the change's bar line.
    ///
    /// ```
    /// use downbeat_graph::time::{Signature, SignatureChange, TempoMap};
    ///
    /// let three = "3/4".parse().unwrap();
    /// let change = SignatureChange { beat: 8.0, signature: three };
    /// let map = TempoMap::new(120.0, Signature::default(), &[], &[change], 48000).unwrap();
    /// assert_eq!(map.signature_at(7.5), Signature::default());
    /// assert_eq!(map.signature_at(8.0), three);
    /// ```
    #[inline]
    pub fn signature_at(&self, beat: f64) -> Signature {
        self.regions[self.region_index_at(beat)].signature
    }

    /// The bar holding `beat`: its index from 0 and the beat it starts on. Bars are counted
    /// across signature changes; before beat 0 they are bars of the first signature counted
    /// backwards (bar -1 starts one bar before 0). A beat within [`GRID_TOLERANCE`] before a
    /// bar line counts as on it, so the start returned may lie that little after `beat`.
    ///
    /// ```
    /// use downbeat_graph::time::{Signature, SignatureChange, TempoMap};
    ///
    /// // Two bars of 4/4, then 7/8 (3.5 beats a bar).
    /// let change = SignatureChange { beat: 8.0, signature: "7/8".parse().unwrap() };
    /// let map = TempoMap::new(120.0, Signature::default(), &[], &[change], 48000).unwrap();
    /// assert_eq!(map.bar_at(7.9), (1, 4.0));
    /// assert_eq!(map.bar_at(11.5), (3, 11.5));
    /// assert_eq!(map.bar_at(-0.5), (-1, -4.0));
    /// ```
    #[inline]
    pub fn bar_at(&self, beat: f64) -> (i64, f64) {
        let (_, bar, start) = self.locate(beat);
        (bar, start)
    }

    /// The beat bar `bar` starts on (bars from 0; negative ones count the first signature
    /// backwards from 0).
    ///
    /// ```
    /// use downbeat_graph::time::{Signature, SignatureChange, TempoMap};
    ///
    /// let change = SignatureChange { beat: 8.0, signature: "6/8".parse().unwrap() };
    /// let map = TempoMap::new(120.0, Signature::default(), &[], &[change], 48000).unwrap();
    /// assert_eq!(map.beat_of_bar(1), 4.0);
    /// assert_eq!(map.beat_of_bar(3), 11.0);
    /// assert_eq!(map.beat_of_bar(-2), -8.0);
    /// ```
    #[inline]
    pub fn beat_of_bar(&self, bar: i64) -> f64 {
        let index = self
            .regions
            .partition_point(|region| region.bar <= bar)
            .saturating_sub(1);
        let region = &self.regions[index];
        region.beat + bar.saturating_sub(region.bar) as f64 * region.signature.bar_beats()
    }

    /// The first signature change strictly after `beat` (with [`GRID_TOLERANCE`], so a beat
    /// just before a change counts as on it and gets the one after), or `None` if there is
    /// none.
    ///
    /// ```
    /// use downbeat_graph::time::{Signature, SignatureChange, TempoMap};
    ///
    /// let change = SignatureChange { beat: 8.0, signature: "6/8".parse().unwrap() };
    /// let map = TempoMap::new(120.0, Signature::default(), &[], &[change], 48000).unwrap();
    /// assert_eq!(map.next_signature_change(-3.0), Some(8.0));
    /// assert_eq!(map.next_signature_change(7.0), Some(8.0));
    /// assert_eq!(map.next_signature_change(8.0), None);
    /// ```
    #[inline]
    pub fn next_signature_change(&self, beat: f64) -> Option<f64> {
        self.regions
            .get(self.region_index_at(beat) + 1)
            .map(|region| region.beat)
    }

    /// The first bar line strictly after `beat`: the next bar's start, also when `beat` is
    /// on a bar line (or within [`GRID_TOLERANCE`] before one).
    ///
    /// ```
    /// use downbeat_graph::time::TempoMap;
    ///
    /// let map = TempoMap::default(); // 4/4
    /// assert_eq!(map.next_bar(1.0), 4.0);
    /// assert_eq!(map.next_bar(4.0), 8.0);
    /// assert_eq!(map.next_bar(3.9999999999), 8.0); // counts as on beat 4
    /// assert_eq!(map.next_bar(-1.0), 0.0);
    /// ```
    #[inline]
    pub fn next_bar(&self, beat: f64) -> f64 {
        let (_, bar, _) = self.locate(beat);
        self.beat_of_bar(bar.saturating_add(1))
    }

    /// The first counted beat of the signature strictly after `beat`: the beats are
    /// `4 / denominator` quarter notes apart from the bar line (every 0.5 in 6/8), and the
    /// last of a bar is followed by the next bar line. A position within [`GRID_TOLERANCE`]
    /// before a beat counts as on it: 3.9999999999 is on beat 4, and the next beat is 5.
    ///
    /// ```
    /// use downbeat_graph::time::{Signature, TempoMap};
    ///
    /// let map = TempoMap::new(120.0, "6/8".parse().unwrap(), &[], &[], 48000).unwrap();
    /// assert_eq!(map.next_beat(0.0), 0.5);
    /// assert_eq!(map.next_beat(0.7), 1.0);
    /// assert_eq!(map.next_beat(2.75), 3.0); // the next bar line
    /// assert_eq!(map.next_beat(0.4999999999), 1.0);
    /// ```
    #[inline]
    pub fn next_beat(&self, beat: f64) -> f64 {
        let (region, bar, start) = self.locate(beat);
        let signature = region.signature;
        let counted = ((beat + GRID_TOLERANCE - start) / signature.beat_length()).floor() + 1.0;
        if counted >= f64::from(signature.numerator) {
            self.beat_of_bar(bar.saturating_add(1))
        } else {
            start + counted * signature.beat_length()
        }
    }

    /// `beat` as bar, counted beat and tick (all floored, with [`GRID_TOLERANCE`]).
    ///
    /// ```
    /// use downbeat_graph::time::{Bbt, TempoMap};
    ///
    /// let map = TempoMap::new(120.0, "6/8".parse().unwrap(), &[], &[], 48000).unwrap();
    /// assert_eq!(map.bbt(4.25), Bbt { bar: 1, beat: 2, tick: 480 });
    /// assert_eq!(map.bbt(2.9999999999), Bbt { bar: 1, beat: 0, tick: 0 });
    /// assert_eq!(map.bbt(-0.5), Bbt { bar: -1, beat: 5, tick: 0 });
    /// ```
    pub fn bbt(&self, beat: f64) -> Bbt {
        let (region, bar, start) = self.locate(beat);
        let signature = region.signature;
        // Ticks per quarter note: 960 / (4 / d), exact.
        let per_quarter = 240.0 * f64::from(signature.denominator);
        let ticks = ((beat + GRID_TOLERANCE - start) * per_quarter).floor();
        let last = f64::from(u32::from(signature.numerator) * TICKS_PER_BEAT - 1);
        // Within the bar but for rounding at its ends (and NaN, taken to 0 by `as`).
        let ticks = if ticks < 0.0 {
            0
        } else if ticks > last {
            last as u32
        } else {
            ticks as u32
        };
        Bbt {
            bar,
            beat: ticks / TICKS_PER_BEAT,
            tick: ticks % TICKS_PER_BEAT,
        }
    }

    /// The beat at bar, counted beat and tick: the inverse of [`TempoMap::bbt`]. A beat or
    /// tick beyond the end of its bar is not refused but counted on in that bar's signature.
    ///
    /// ```
    /// use downbeat_graph::time::{Bbt, TempoMap};
    ///
    /// let map = TempoMap::new(120.0, "7/8".parse().unwrap(), &[], &[], 48000).unwrap();
    /// assert_eq!(map.beat_of_bbt(Bbt { bar: 2, beat: 3, tick: 480 }), 8.75);
    /// ```
    pub fn beat_of_bbt(&self, bbt: Bbt) -> f64 {
        let start = self.beat_of_bar(bbt.bar);
        let signature = self.regions[self.region_index_at(start)].signature;
        let ticks = u64::from(bbt.beat) * u64::from(TICKS_PER_BEAT) + u64::from(bbt.tick);
        start + ticks as f64 / (240.0 * f64::from(signature.denominator))
    }
}

/// 120 bpm in 4/4 at 48 kHz: a usable map where none was given.
///
/// ```
/// use downbeat_graph::time::TempoMap;
///
/// assert_eq!(TempoMap::default(), TempoMap::constant(120.0, 48000).unwrap());
/// ```
impl Default for TempoMap {
    fn default() -> Self {
        TempoMap {
            sample_rate: 48000,
            segments: vec![Segment {
                start_beat: 0.0,
                end_beat: f64::INFINITY,
                start_bpm: 120.0,
                end_bpm: 120.0,
                start_seconds: 0.0,
            }],
            regions: vec![Region {
                beat: 0.0,
                bar: 0,
                signature: Signature::default(),
            }],
        }
    }
}

/// Checks the tempo changes and turns them into segments, each anchored on the closed form
/// of the one before.
fn segments(bpm: f64, points: &[TempoPoint]) -> Result<Vec<Segment>, TempoError> {
    for (index, point) in points.iter().enumerate() {
        if !(point.beat >= 0.0 && point.beat.is_finite()) {
            return Err(TempoError::PointBeat {
                index,
                beat: point.beat,
            });
        }
        if !valid_bpm(point.bpm) {
            return Err(TempoError::PointBpm {
                index,
                beat: point.beat,
                bpm: point.bpm,
            });
        }
        if !(point.ramp >= 0.0 && (point.beat + point.ramp).is_finite()) {
            return Err(TempoError::Ramp {
                index,
                beat: point.beat,
                ramp: point.ramp,
            });
        }
    }
    // Stable, so that of two changes at one beat the error names the caller's first.
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|&a, &b| points[a].beat.total_cmp(&points[b].beat));
    for pair in order.windows(2) {
        let (before, after) = (&points[pair[0]], &points[pair[1]]);
        if after.beat == before.beat {
            return Err(TempoError::DuplicatePoint {
                index: pair[0],
                other: pair[1],
                beat: after.beat,
            });
        }
        if after.beat < before.beat + before.ramp {
            return Err(TempoError::Overlap {
                index: pair[1],
                beat: after.beat,
                previous: pair[0],
                ramp_start: before.beat,
                ramp_end: before.beat + before.ramp,
            });
        }
    }

    let mut segments: Vec<Segment> = Vec::with_capacity(2 * points.len() + 1);
    let mut push = |start_beat: f64, end_beat: f64, start_bpm: f64, end_bpm: f64| {
        let start_seconds = match segments.last() {
            // The previous segment's own closed form at its end: the one anchor every
            // conversion in this segment starts from.
            Some(previous) => previous.seconds_at(previous.end_beat),
            None => 0.0,
        };
        segments.push(Segment {
            start_beat,
            end_beat,
            start_bpm,
            end_bpm,
            start_seconds,
        });
    };
    let (mut beat, mut tempo) = (0.0, bpm);
    for point in order.iter().map(|&index| &points[index]) {
        if point.beat > beat {
            push(beat, point.beat, tempo, tempo);
        }
        beat = point.beat;
        if point.ramp > 0.0 {
            push(point.beat, point.beat + point.ramp, tempo, point.bpm);
            beat = point.beat + point.ramp;
        }
        tempo = point.bpm;
    }
    push(beat, f64::INFINITY, tempo, tempo);
    Ok(segments)
}

/// Checks the signature changes and numbers the bars each starts on.
fn regions(signature: Signature, changes: &[SignatureChange]) -> Result<Vec<Region>, TempoError> {
    for (index, change) in changes.iter().enumerate() {
        if !(change.beat >= 0.0 && change.beat.is_finite()) {
            return Err(TempoError::SignatureBeat {
                index,
                beat: change.beat,
            });
        }
    }
    let mut order: Vec<usize> = (0..changes.len()).collect();
    order.sort_by(|&a, &b| changes[a].beat.total_cmp(&changes[b].beat));
    for pair in order.windows(2) {
        if changes[pair[0]].beat == changes[pair[1]].beat {
            return Err(TempoError::DuplicateSignature {
                index: pair[0],
                other: pair[1],
                beat: changes[pair[0]].beat,
            });
        }
    }

    let mut regions = vec![Region {
        beat: 0.0,
        bar: 0,
        signature,
    }];
    // The change that made the last region, if one did (not the initial signature).
    let mut made_current = None;
    for index in order {
        let change = &changes[index];
        let current = regions[regions.len() - 1];
        let length = current.signature.bar_beats();
        let bars = ((change.beat - current.beat) / length).round();
        let line = current.beat + bars * length;
        if (change.beat - line).abs() > GRID_TOLERANCE {
            let before = current.beat + ((change.beat - current.beat) / length).floor() * length;
            return Err(TempoError::OffBar {
                index,
                beat: change.beat,
                signature: current.signature,
                before,
                after: before + length,
            });
        }
        let next = Region {
            beat: line,
            bar: current.bar.saturating_add(bars as i64),
            signature: change.signature,
        };
        if line == current.beat {
            // On the current region's start: two changes within the tolerance of one bar
            // line, or a change at beat 0, which replaces the initial signature.
            if let Some(previous) = made_current {
                return Err(TempoError::DuplicateSignature {
                    index: previous,
                    other: index,
                    beat: line,
                });
            }
            regions[0] = next;
        } else {
            regions.push(next);
        }
        made_current = Some(index);
    }
    Ok(regions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math;

    /// A tiny xorshift generator: random enough for test data, reproducible, no dependency.
    struct Xorshift(u64);

    impl Xorshift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        /// Uniform in `[0, 1)`.
        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }

        fn shuffle<T>(&mut self, items: &mut [T]) {
            for i in (1..items.len()).rev() {
                items.swap(i, self.below(i as u64 + 1) as usize);
            }
        }
    }

    fn sig(text: &str) -> Signature {
        text.parse().unwrap()
    }

    fn step(beat: f64, bpm: f64) -> TempoPoint {
        TempoPoint {
            beat,
            bpm,
            ramp: 0.0,
        }
    }

    fn ramp(beat: f64, bpm: f64, ramp: f64) -> TempoPoint {
        TempoPoint { beat, bpm, ramp }
    }

    fn change(beat: f64, signature: &str) -> SignatureChange {
        SignatureChange {
            beat,
            signature: sig(signature),
        }
    }

    /// Every tempo of the exact-frame test divides this, so that frame counts are fractions
    /// over it (a u128 numerator suffices) and their fractional parts vary (denominators
    /// 3, 7, 11, 13 and their products remain after 1 440 000 frames per half-beat-minute).
    const COMMON: u128 = 43_243_200; // 2^6 · 3^3 · 5^2 · 7 · 11 · 13

    #[test]
    fn steps_land_on_exactly_the_frames_of_rational_arithmetic() {
        let mut rng = Xorshift(0x2545_f491_4f6c_dd1d);
        let tempos: Vec<u32> = (40..=240u32)
            .filter(|bpm| COMMON % u128::from(*bpm) == 0)
            .collect();
        assert!(tempos.len() > 50, "{tempos:?}");

        // 200 steps at half-beat positions, and the tempo of every half beat, independently.
        let initial = 100u32;
        let mut points = Vec::new();
        let mut half_beat_tempo = Vec::new(); // tempo of half beat h, h + 1
        let mut half = 0usize;
        let mut tempo = initial;
        for _ in 0..200 {
            let next = half + 2 + rng.below(23) as usize;
            half_beat_tempo.resize(next, tempo);
            half = next;
            tempo = tempos[rng.below(tempos.len() as u64) as usize];
            points.push(step(half as f64 / 2.0, f64::from(tempo)));
        }
        rng.shuffle(&mut points); // out of order is fine

        let signatures = [
            change(240.0, "6/8"),
            change(80.0, "3/4"),
            change(360.0, "5/4"),
            change(170.0, "7/8"),
            change(610.0, "4/4"),
        ];
        let map = TempoMap::new(
            f64::from(initial),
            Signature::default(),
            &points,
            &signatures,
            48000,
        )
        .unwrap();
        assert_eq!(map.segments().len(), 201);

        // Frames from beat 0, as a fraction over COMMON: a half beat at `bpm` is
        // 48000 · 60 · 0.5 / bpm = 1 440 000 / bpm frames.
        let ten_minutes = 600 * 48000;
        let mut numerator: u128 = 0;
        let (mut checked, mut fractional) = (0, 0);
        for h in 0.. {
            let remainder = numerator % COMMON;
            assert_ne!(2 * remainder, COMMON, "a tie at half beat {h}");
            let exact = (2 * numerator + COMMON) / (2 * COMMON);
            let beat = h as f64 / 2.0;
            assert_eq!(map.frame_of(beat), exact as u64, "beat {beat}");
            let seconds = numerator as f64 / COMMON as f64 / 48000.0;
            assert!((map.seconds_at(beat) - seconds).abs() < 1e-9, "beat {beat}");
            checked += 1;
            fractional += usize::from(remainder != 0);
            if exact > ten_minutes && h > half + 8 {
                break;
            }
            let bpm = half_beat_tempo.get(h).copied().unwrap_or(tempo);
            numerator += 1_440_000 * (COMMON / u128::from(bpm));
        }
        // Most beats fall between frames, so the rounding is what is being checked.
        assert!(checked > 2400, "{checked}");
        assert!(fractional * 2 > checked, "{fractional} of {checked}");
    }

    /// The tempo of `ramp_map`, written out piece by piece: start and end beat, start and
    /// end tempo.
    const PIECES: [(f64, f64, f64, f64); 15] = [
        (0.0, 8.0, 100.0, 100.0),
        (8.0, 16.0, 140.0, 140.0),
        (16.0, 24.0, 140.0, 180.0),
        (24.0, 32.0, 180.0, 180.0),
        (32.0, 48.0, 180.0, 60.0),
        (48.0, 56.0, 90.0, 90.0),
        (56.0, 60.0, 90.0, 200.0),
        (60.0, 64.5, 200.0, 120.0),
        (64.5, 70.0, 120.0, 120.0),
        (70.0, 70.25, 120.0, 121.0),
        (70.25, 80.0, 121.0, 121.0),
        (80.0, 90.0, 121.0, 121.0001),
        (90.0, 96.0, 121.0001, 121.0001),
        (96.0, 100.0, 1.5, 1.5),
        (100.0, 1000.0, 1.5, 999.0),
    ];

    /// Steps, up- and down-ramps, a ramp from a step, ramps end to end, a short one, a
    /// gentle one and a steep one, given out of order.
    fn ramp_map() -> TempoMap {
        let points = [
            ramp(60.0, 120.0, 4.5),
            step(8.0, 140.0),
            ramp(32.0, 60.0, 16.0),
            ramp(16.0, 180.0, 8.0),
            step(48.0, 90.0),
            ramp(56.0, 200.0, 4.0),
            ramp(70.0, 121.0, 0.25),
            ramp(80.0, 121.0001, 10.0),
            step(96.0, 1.5),
            ramp(100.0, 999.0, 900.0),
        ];
        TempoMap::new(100.0, Signature::default(), &points, &[], 48000).unwrap()
    }

    fn reference_bpm(piece: (f64, f64, f64, f64), beat: f64) -> f64 {
        let (b0, b1, t0, t1) = piece;
        t0 + (t1 - t0) * (beat - b0) / (b1 - b0)
    }

    /// Seconds over a piece from its start to `beat`: composite Simpson, 10 000 steps, of
    /// 60 / tempo.
    fn simpson(piece: (f64, f64, f64, f64), beat: f64) -> f64 {
        let steps = 10_000;
        let h = (beat - piece.0) / steps as f64;
        let f = |i: usize| 60.0 / reference_bpm(piece, piece.0 + h * i as f64);
        let mut sum = f(0) + f(steps);
        for i in 1..steps {
            sum += if i % 2 == 1 { 4.0 * f(i) } else { 2.0 * f(i) };
        }
        sum * h / 3.0
    }

    /// Seconds over a piece from its start to `beat`, independently of the map: Simpson,
    /// except for a steep ramp (beyond a 4:1 change of tempo), where 10 000 steps leave
    /// an error of some 1e-7 s (1/t varies too fast near the slow end); there, the exact
    /// antiderivative taken as a difference of two logarithms rather than the map's
    /// `ln_1p` of a ratio (a difference that would lose digits in a gentle ramp, not here).
    fn integrated(piece: (f64, f64, f64, f64), beat: f64) -> f64 {
        let (b0, b1, t0, t1) = piece;
        if t1 > 4.0 * t0 || t0 > 4.0 * t1 {
            let t = reference_bpm(piece, beat);
            60.0 * (b1 - b0) / (t1 - t0) * (math::ln(t) - math::ln(t0))
        } else {
            simpson(piece, beat)
        }
    }

    #[test]
    fn ramps_match_numerical_integration() {
        let map = ramp_map();
        let mut start = 0.0;
        for piece in PIECES {
            for fraction in [0.0, 0.001, 1.0 / 3.0, 0.5, 0.9, 1.0] {
                let beat = piece.0 + (piece.1 - piece.0) * fraction;
                let expected = start + integrated(piece, beat);
                let got = map.seconds_at(beat);
                assert!(
                    (got - expected).abs() < 1e-9,
                    "beat {beat}: {got} s, integrated {expected} s"
                );
                // At a piece's end the next piece's tempo holds (a step may start there).
                let bpm = reference_bpm(piece, beat);
                let got = if fraction < 1.0 {
                    map.bpm_at(beat)
                } else {
                    map.segment_at(piece.0).bpm_at(beat)
                };
                assert!(
                    (got - bpm).abs() < 1e-12 * bpm,
                    "beat {beat}: {got} bpm, not {bpm}"
                );
            }
            start += integrated(piece, piece.1);
        }
        // Past the last change, the held tempo.
        assert!((map.seconds_at(1100.0) - start - 100.0 * 60.0 / 999.0).abs() < 1e-9);
    }

    #[test]
    fn ramps_match_high_precision_values() {
        // The same tempo, `PIECES`, in 50-digit decimal arithmetic (Python's `decimal`:
        // the sum of each piece's 60 (b - b0) / t0 or 60 L / (t1 - t0) ln(t(b) / t0)),
        // rounded to the nearest `f64`.
        let map = ramp_map();
        for (beat, seconds) in [
            (20.0, 9.830_948_140_065_7),
            (40.0, 17.154_732_099_474_284),
            (62.0, 30.436_079_435_017_433),
            (85.0, 41.688_009_084_164_41),
            (400.0, 499.780_643_558_523_7),
            (1000.0, 559.092_066_542_263_2),
        ] {
            let got = map.seconds_at(beat);
            assert!(
                (got - seconds).abs() < 1e-12,
                "beat {beat}: {got} s, not {seconds} s"
            );
        }
    }

    #[test]
    fn seconds_and_beats_round_trip() {
        let map = ramp_map();
        let mut beats: Vec<f64> = (-800..=110_000).map(|i| i as f64 / 100.0).collect();
        beats.extend(map.segments().iter().map(|s| s.start_beat));
        for beat in beats {
            let seconds = map.seconds_at(beat);
            let back = map.beat_at_seconds(seconds);
            assert!(
                (back - beat).abs() < 1e-9,
                "beat {beat}: {seconds} s, back to {back}"
            );
            // Frames hold a beat to half a frame (at most 999 bpm: 16.65 beats a second).
            let frame = map.frame_of(beat);
            if beat >= 0.0 {
                let back = map.beat_at_frame(frame);
                assert!((back - beat).abs() <= 0.5 / 48000.0 * 16.65 + 1e-12);
            }
        }
    }

    #[test]
    fn frames_never_go_backwards() {
        let map = ramp_map();
        let mut beats: Vec<f64> = (0..100_000)
            .map(|i| -2.0 + 1102.0 * i as f64 / 100_000.0)
            .collect();
        // Around every boundary, to the last bit.
        for segment in map.segments() {
            let b = segment.start_beat;
            let below = f64::from_bits(b.to_bits() - u64::from(b > 0.0));
            beats.extend([below, b, f64::from_bits(b.to_bits() + 1)]);
        }
        beats.sort_by(f64::total_cmp);
        assert!(beats.len() >= 100_000);
        let mut previous = (f64::NEG_INFINITY, 0u64);
        for beat in beats {
            let (seconds, frame) = (map.seconds_at(beat), map.frame_of(beat));
            assert!(
                seconds >= previous.0,
                "beat {beat}: {seconds} < {}",
                previous.0
            );
            assert!(
                frame >= previous.1,
                "beat {beat}: frame {frame} < {}",
                previous.1
            );
            previous = (seconds, frame);
        }
        let mut previous = f64::NEG_INFINITY;
        for frame in (0..10_000_000).step_by(97) {
            let beat = map.beat_at_frame(frame);
            assert!(beat >= previous, "frame {frame}: {beat} < {previous}");
            previous = beat;
        }
    }

    /// Everything the map answers about one beat, as bits.
    fn answers(map: &TempoMap, beat: f64) -> [u64; 7] {
        let seconds = map.seconds_at(beat);
        let frame = map.frame_of(beat);
        let bbt = map.bbt(beat);
        [
            seconds.to_bits(),
            map.beat_at_seconds(seconds).to_bits(),
            map.bpm_at(beat).to_bits(),
            frame,
            map.beat_at_frame(frame).to_bits(),
            map.next_beat(beat).to_bits(),
            (bbt.bar as u64) << 40 | u64::from(bbt.beat) << 16 | u64::from(bbt.tick),
        ]
    }

    #[test]
    fn answers_do_not_depend_on_what_was_asked_before() {
        let map = TempoMap::new(
            100.0,
            Signature::default(),
            &[
                step(8.0, 140.0),
                ramp(16.0, 180.0, 8.0),
                ramp(32.0, 60.0, 16.0),
                ramp(56.0, 200.0, 4.0),
                ramp(60.0, 120.0, 4.5),
            ],
            &[change(32.0, "7/8"), change(53.0, "6/8")],
            48000,
        )
        .unwrap();
        let boundaries: Vec<f64> = map.segments().iter().map(|s| s.start_beat).collect();
        let mut rng = Xorshift(0x9e37_79b9_7f4a_7c15);
        let beats: Vec<f64> = (0..10_000)
            .map(|_| {
                if rng.below(10) == 0 {
                    boundaries[rng.below(boundaries.len() as u64) as usize]
                } else {
                    -4.0 + 104.0 * rng.unit()
                }
            })
            .collect();
        let random: Vec<_> = beats.iter().map(|&beat| answers(&map, beat)).collect();

        let mut order: Vec<usize> = (0..beats.len()).collect();
        order.sort_by(|&a, &b| beats[a].total_cmp(&beats[b]));
        let copy = map.clone();
        for &index in &order {
            let beat = beats[index];
            assert_eq!(answers(&map, beat), random[index], "beat {beat}");
        }
        for &index in order.iter().rev() {
            assert_eq!(answers(&copy, beats[index]), random[index]);
        }
    }

    #[test]
    fn ramps_reach_their_target_from_the_tempo_in_force() {
        let map = ramp_map();
        // A ramp that starts on a step goes from the step's tempo, not the one before it.
        assert_eq!(map.bpm_at(16.0), 140.0);
        assert_eq!(map.bpm_at(20.0), 160.0);
        assert_eq!(map.segment_at(16.0).start_bpm, 140.0);
        // Each ramp ends on its target, also one that starts where another ends.
        // (One that a step ends: on its last beat, the step's tempo holds.)
        assert_eq!(map.segment_at(32.0).end_bpm, 60.0);
        assert_eq!(map.segment_at(32.0).bpm_at(48.0), 60.0);
        assert_eq!(map.bpm_at(48.0), 90.0);
        for (start, length, target) in [
            (16.0, 8.0, 180.0),
            (56.0, 4.0, 200.0),
            (60.0, 4.5, 120.0),
            (70.0, 0.25, 121.0),
            (80.0, 10.0, 121.0001),
        ] {
            assert_eq!(map.bpm_at(start + length), target, "ramp at {start}");
            let ramp = map.segment_at(start);
            assert_eq!(ramp.bpm_at(start + length + 1.0), target, "after {start}");
            assert_eq!(map.segment_at(start).end_bpm, target, "ramp at {start}");
            assert_eq!(map.next_tempo_change(start), Some(start + length));
        }
        assert_eq!(map.segment_at(60.0).start_bpm, 200.0);
        assert_eq!(map.bpm_at(62.25), 160.0);
        assert_eq!(map.next_tempo_change(1e6), None);

        // A ramp at beat 0 starts from the initial tempo; before 0 that tempo holds.
        let map = TempoMap::new(
            60.0,
            Signature::default(),
            &[ramp(0.0, 120.0, 4.0)],
            &[],
            48000,
        )
        .unwrap();
        assert_eq!(map.segments().len(), 2);
        assert_eq!(map.bpm_at(0.0), 60.0);
        assert_eq!(map.bpm_at(2.0), 90.0);
        assert_eq!(map.bpm_at(-2.0), 60.0);
        assert_eq!(map.seconds_at(-2.0), -2.0);
        assert_eq!(map.beat_at_seconds(-3.0), -3.0);
        assert_eq!(map.frame_of(-2.0), 0);

        // A step at beat 0 replaces the initial tempo, also before 0.
        let map =
            TempoMap::new(120.0, Signature::default(), &[step(0.0, 90.0)], &[], 48000).unwrap();
        assert_eq!(map.segments().len(), 1);
        assert_eq!(map.seconds_at(3.0), 2.0);
        assert_eq!(map.seconds_at(-3.0), -2.0);

        // A step to the tempo in force still makes a boundary, with the same closed form.
        let map =
            TempoMap::new(120.0, Signature::default(), &[step(4.0, 120.0)], &[], 48000).unwrap();
        assert_eq!(map.next_tempo_change(0.0), Some(4.0));
        assert_eq!(map.frame_of(6.0), 144_000);
    }

    #[test]
    fn gentle_ramps_keep_their_digits() {
        // 120 to 120.000001 bpm over 1000 beats: ln(t / t0) alone would keep about 8 of
        // the 16 digits of the difference from 500 s.
        let map = TempoMap::new(
            120.0,
            Signature::default(),
            &[ramp(0.0, 120.000_001, 1000.0)],
            &[],
            48000,
        )
        .unwrap();
        // ∫ 60 / (120 + k b) db with k = 1e-9, to second order in k b / 120.
        let (b, k) = (1000.0, 1e-9);
        let expected = 0.5 * b - 0.5 * k * b * b / 240.0 + k * k * b * b * b / 3.0 * 60.0 / 1.728e6;
        assert!((map.seconds_at(b) - expected).abs() < 1e-12);
        assert!((map.beat_at_seconds(expected) - b).abs() < 1e-10);
    }

    #[test]
    fn errors_name_what_is_wrong_and_where() {
        let four = Signature::default();
        let new = |points: &[TempoPoint], signatures: &[SignatureChange]| {
            TempoMap::new(120.0, four, points, signatures, 48000).unwrap_err()
        };
        let says = |err: &TempoError, parts: &[&str]| {
            let _: &dyn std::error::Error = err;
            let message = err.to_string();
            for part in parts {
                assert!(message.contains(part), "{message:?} lacks {part:?}");
            }
        };

        let err = TempoMap::constant(0.0, 48000).unwrap_err();
        assert_eq!(err, TempoError::InitialBpm(0.0));
        says(&err, &["bpm 0 ", "above 0"]);
        let err = TempoMap::constant(-1.0, 48000).unwrap_err();
        assert_eq!(err, TempoError::InitialBpm(-1.0));
        says(&err, &["bpm -1 "]);
        let err = TempoMap::constant(1000.0, 48000).unwrap_err();
        assert_eq!(err, TempoError::InitialBpm(1000.0));
        says(&err, &["bpm 1000 ", "at most 999"]);
        let err = TempoMap::constant(f64::NAN, 48000).unwrap_err();
        assert!(matches!(err, TempoError::InitialBpm(bpm) if bpm.is_nan()));
        says(&err, &["bpm NaN"]);
        assert!(TempoMap::constant(999.0, 48000).is_ok());

        let err = TempoMap::constant(120.0, 0).unwrap_err();
        assert_eq!(err, TempoError::SampleRate(0));
        says(&err, &["sample rate 0 Hz"]);

        let points = [step(8.0, 90.0), step(4.0, 80.0), step(2.0, 70.0)];
        let mut bad = points.to_vec();
        bad.push(step(64.0, -5.0));
        let err = new(&bad, &[]);
        assert_eq!(
            err,
            TempoError::PointBpm {
                index: 3,
                beat: 64.0,
                bpm: -5.0
            }
        );
        assert_eq!(
            err.to_string(),
            "tempo change 3 (beat 64): bpm -5 must be above 0 and at most 999"
        );
        bad[3].bpm = f64::NAN;
        says(&new(&bad, &[]), &["tempo change 3 (beat 64): bpm NaN"]);

        bad[3] = step(-1.0, 120.0);
        let err = new(&bad, &[]);
        assert_eq!(
            err,
            TempoError::PointBeat {
                index: 3,
                beat: -1.0
            }
        );
        says(&err, &["tempo change 3: beat -1 "]);
        bad[3] = step(f64::INFINITY, 120.0);
        says(&new(&bad, &[]), &["beat inf "]);

        bad[3] = ramp(64.0, 120.0, -2.0);
        let err = new(&bad, &[]);
        assert_eq!(
            err,
            TempoError::Ramp {
                index: 3,
                beat: 64.0,
                ramp: -2.0
            }
        );
        says(
            &err,
            &[
                "tempo change 3 (beat 64): ramp -2 ",
                "ends before it starts",
            ],
        );
        bad[3] = ramp(64.0, 120.0, f64::INFINITY);
        says(&new(&bad, &[]), &["ramp inf ", "never ends"]);
        bad[3] = ramp(64.0, 120.0, f64::NAN);
        says(&new(&bad, &[]), &["ramp NaN "]);

        let err = new(&[ramp(8.0, 90.0, 8.0), step(12.0, 100.0)], &[]);
        assert_eq!(
            err,
            TempoError::Overlap {
                index: 1,
                beat: 12.0,
                previous: 0,
                ramp_start: 8.0,
                ramp_end: 16.0
            }
        );
        says(
            &err,
            &[
                "tempo change 1 (beat 12)",
                "tempo change 0",
                "beat 8 to beat 16",
                "overlapping",
            ],
        );
        // Out of order: still the ramp before in beats.
        let err = new(
            &[ramp(14.0, 90.0, 4.0), step(1.0, 90.0), ramp(8.0, 90.0, 8.0)],
            &[],
        );
        assert!(
            matches!(
                err,
                TempoError::Overlap {
                    index: 0,
                    previous: 2,
                    ..
                }
            ),
            "{err:?}"
        );
        // On the ramp's end is not inside it.
        assert!(TempoMap::new(
            120.0,
            four,
            &[ramp(8.0, 90.0, 8.0), step(16.0, 100.0)],
            &[],
            48_000
        )
        .is_ok());

        let err = new(
            &[step(16.0, 90.0), step(4.0, 100.0), ramp(16.0, 80.0, 2.0)],
            &[],
        );
        assert_eq!(
            err,
            TempoError::DuplicatePoint {
                index: 0,
                other: 2,
                beat: 16.0
            }
        );
        says(&err, &["tempo changes 0 and 2 are both at beat 16"]);

        let err = new(&[], &[change(8.0, "3/4"), change(33.0, "5/4")]);
        assert_eq!(
            err,
            TempoError::OffBar {
                index: 1,
                beat: 33.0,
                signature: sig("3/4"),
                before: 32.0,
                after: 35.0
            }
        );
        says(
            &err,
            &["signature change 1 (beat 33)", "of 3/4", "beats 32 and 35"],
        );
        let err = new(&[], &[change(6.0, "3/4")]);
        says(&err, &["(beat 6)", "of 4/4", "beats 4 and 8"]);

        let err = new(
            &[],
            &[change(8.0, "3/4"), change(16.0, "5/4"), change(8.0, "6/8")],
        );
        assert_eq!(
            err,
            TempoError::DuplicateSignature {
                index: 0,
                other: 2,
                beat: 8.0
            }
        );
        says(&err, &["signature changes 0 and 2 are both at beat 8"]);
        // Two within the tolerance of one bar line are two at one beat too.
        let err = new(&[], &[change(8.0, "3/4"), change(8.0 - 1e-10, "6/8")]);
        let both = TempoError::DuplicateSignature {
            index: 1,
            other: 0,
            beat: 8.0,
        };
        assert_eq!(err, both);
        let err = new(&[], &[change(0.0, "3/4"), change(1e-10, "6/8")]);
        assert!(
            matches!(err, TempoError::DuplicateSignature { .. }),
            "{err:?}"
        );

        let err = new(&[], &[change(-4.0, "3/4")]);
        assert_eq!(
            err,
            TempoError::SignatureBeat {
                index: 0,
                beat: -4.0
            }
        );
        says(&err, &["signature change 0: beat -4 "]);
    }

    /// 4/4 for 8 bars, 3/4 for 4, 7/8 for 2, then 6/8; given out of order.
    fn bar_map() -> TempoMap {
        TempoMap::new(
            120.0,
            Signature::default(),
            &[ramp(10.0, 60.0, 20.0)],
            &[
                change(51.0, "6/8"),
                change(32.0, "3/4"),
                change(44.0, "7/8"),
            ],
            48000,
        )
        .unwrap()
    }

    #[test]
    fn bars_are_counted_across_signature_changes() {
        let map = bar_map();
        for (beat, bar) in [
            (0.0, (0, 0.0)),
            (3.5, (0, 0.0)),
            (31.5, (7, 28.0)),
            (32.0, (8, 32.0)),
            (35.0, (9, 35.0)),
            (43.9, (11, 41.0)),
            (44.0, (12, 44.0)),
            (47.5, (13, 47.5)),
            (50.99, (13, 47.5)),
            (51.0, (14, 51.0)),
            (54.0, (15, 54.0)),
            (80.5, (23, 78.0)),
            (-1.0, (-1, -4.0)),
            (-4.0, (-1, -4.0)),
            (-4.5, (-2, -8.0)),
            // Within the tolerance of a bar line, on it: also of a signature change.
            (32.0 - 1e-10, (8, 32.0)),
            (47.5 - 1e-10, (13, 47.5)),
            (-1e-10, (0, 0.0)),
        ] {
            assert_eq!(map.bar_at(beat), bar, "beat {beat}");
        }
        for (bar, beat) in [
            (-2, -8.0),
            (0, 0.0),
            (8, 32.0),
            (11, 41.0),
            (12, 44.0),
            (13, 47.5),
            (14, 51.0),
            (20, 69.0),
        ] {
            assert_eq!(map.beat_of_bar(bar), beat, "bar {bar}");
        }
        for bar in -5..40 {
            let start = map.beat_of_bar(bar);
            assert_eq!(map.bar_at(start), (bar, start));
            assert_eq!(map.next_bar(start), map.beat_of_bar(bar + 1));
            let bars = map.signature_at(start).bar_beats();
            assert_eq!(map.beat_of_bar(bar + 1) - start, bars, "bar {bar}");
        }

        assert_eq!(map.signature_at(-1.0), Signature::default());
        assert_eq!(map.signature_at(31.9), Signature::default());
        assert_eq!(map.signature_at(32.0 - 1e-10), sig("3/4"));
        assert_eq!(map.signature_at(47.0), sig("7/8"));
        assert_eq!(map.signature_at(1e6), sig("6/8"));
        assert_eq!(map.next_signature_change(-1.0), Some(32.0));
        assert_eq!(map.next_signature_change(32.0), Some(44.0));
        assert_eq!(map.next_signature_change(50.0), Some(51.0));
        assert_eq!(map.next_signature_change(51.0), None);

        // Bars before 0 are of the first signature.
        let waltz = TempoMap::new(90.0, sig("3/4"), &[], &[change(6.0, "4/4")], 48000).unwrap();
        assert_eq!(waltz.bar_at(-1.0), (-1, -3.0));
        assert_eq!(waltz.beat_of_bar(-3), -9.0);
        assert_eq!(waltz.bar_at(7.0), (2, 6.0));
        // A change at beat 0 replaces the initial signature, before 0 too; one a hair off a
        // bar line is put on it.
        let map = TempoMap::new(
            90.0,
            Signature::default(),
            &[],
            &[change(0.0, "6/8"), change(6.0 - 1e-10, "3/4")],
            48000,
        )
        .unwrap();
        assert_eq!(map.bar_at(-1.0), (-1, -3.0));
        assert_eq!(map.beat_of_bar(2), 6.0);
        assert_eq!(map.next_signature_change(0.0), Some(6.0));
        assert_eq!(map.bar_at(9.0), (3, 9.0));
    }

    #[test]
    fn next_bar_and_next_beat_are_strictly_after() {
        let map = bar_map();
        for (beat, bar) in [
            (0.0, 4.0),
            (-0.5, 0.0),
            (-4.0, 0.0),
            (31.0, 32.0),
            (32.0, 35.0),
            (32.0 - 1e-10, 35.0),
            (43.0, 44.0),
            (44.0, 47.5),
            (50.0, 51.0),
            (51.0, 54.0),
            (53.9999999999, 57.0),
        ] {
            assert_eq!(map.next_bar(beat), bar, "beat {beat}");
        }
        for (beat, next) in [
            (0.0, 1.0),
            (0.5, 1.0),
            (3.0, 4.0),
            (3.9999999999, 5.0), // counts as on beat 4
            (3.99, 4.0),
            (-0.5, 0.0),
            (31.5, 32.0),
            (43.0, 44.0), // 3/4: the last beat, then the bar line
            (44.0, 44.5), // 7/8: eighths
            (47.2, 47.5), // the seventh eighth, then the bar line
            (47.5, 48.0),
            (51.0, 51.5), // 6/8: eighths
            (53.75, 54.0),
            (53.4999999999, 54.0),
        ] {
            assert_eq!(map.next_beat(beat), next, "beat {beat}");
        }
        // Walking beat to beat meets every counted beat of every bar.
        let mut beat = 30.0;
        let mut walked = Vec::new();
        while beat < 56.0 {
            beat = map.next_beat(beat);
            walked.push(beat);
        }
        let mut expected = vec![31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0];
        expected.extend([41.0, 42.0, 43.0, 44.0]);
        expected.extend((1..=14).map(|i| 44.0 + 0.5 * f64::from(i)));
        expected.extend((1..=10).map(|i| 51.0 + 0.5 * f64::from(i)));
        assert_eq!(walked, expected);
    }

    #[test]
    fn bar_beat_tick_round_trips() {
        let map = bar_map();
        for (beat, bbt) in [
            (0.0, (0, 0, 0)),
            (2.25, (0, 2, 240)),
            (33.5, (8, 1, 480)),
            (44.0, (12, 0, 0)),
            (47.25, (12, 6, 480)),
            (47.5, (13, 0, 0)),
            (52.75, (14, 3, 480)),
            (3.9999999999, (1, 0, 0)),
            (0.5 - 1e-10, (0, 0, 480)),
            (-0.25, (-1, 3, 720)),
        ] {
            let (bar, counted, tick) = bbt;
            let expected = Bbt {
                bar,
                beat: counted,
                tick,
            };
            assert_eq!(map.bbt(beat), expected, "beat {beat}");
        }
        for bar in -3..24 {
            let numerator = map.signature_at(map.beat_of_bar(bar)).numerator;
            for counted in 0..u32::from(numerator) {
                for tick in [0, 1, 239, 320, 480, 959] {
                    let bbt = Bbt {
                        bar,
                        beat: counted,
                        tick,
                    };
                    let beat = map.beat_of_bbt(bbt);
                    assert_eq!(map.bbt(beat), bbt, "beat {beat}");
                    assert_eq!(map.bar_at(beat).0, bar);
                }
            }
        }
        // Any beat is at most a tick after its bar/beat/tick.
        for i in 0..60_000 {
            let beat = -8.0 + f64::from(i) * 0.001_37;
            let at = map.beat_of_bbt(map.bbt(beat));
            let tick = map.signature_at(beat).beat_length() / f64::from(TICKS_PER_BEAT);
            assert!(
                at <= beat + GRID_TOLERANCE && beat - at < tick,
                "beat {beat}: {at}"
            );
        }
    }

    #[test]
    fn default_is_120_bpm_in_four_four_at_48_khz() {
        let map = TempoMap::default();
        assert_eq!(map, TempoMap::constant(120.0, 48000).unwrap());
        assert_eq!(map.sample_rate(), 48000);
        assert_eq!(map.frame_of(1.0), 24000);
        assert_eq!(map.signature_at(0.0), Signature::default());
        assert_eq!(map.segment_index_at(f64::NAN), 0);
        assert_eq!(map.frame_of(f64::NAN), 0);
    }
}
