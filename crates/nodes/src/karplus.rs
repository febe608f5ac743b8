//! `karplus`: a Karplus-Strong plucked string playing a repeating note pattern, or the
//! notes it is sent.
//!
//! It plays incoming notes ([`Node::note`]): a note on plucks the string at the note's pitch
//! at its frame, its velocity scaling the pluck. The string is monophonic, like a real one:
//! a new pluck replaces the ringing note, and a note off leaves it ringing out for
//! `length` (a plucked string has no key to lift). The first note received silences the
//! built-in pattern for good, so the pattern plays only in projects without MIDI.

use crate::string_controls::StringControls;
use crate::string_loop::{lowest_ring_len, StringLoop, Tuning, HIGHEST_NOTE, LOWEST_NOTE};
use crate::{check_channels, invalid, Pcg32, CHANNELS, SEED};
use downbeat_graph::{
    AudioMut, AudioRef, Node, NodeConfig, NodeType, NoteError, NoteEvent, ParamCurve, ParamError,
    ParamKind, ParamSpec, Params, ProcessContext, Unit,
};

/// Incoming plucks a string holds for later frames; more are refused (`NoteError::Full`).
pub const KARPLUS_PENDING: usize = 256;

/// Everything about a [`Karplus`] string except its channel count and sample rate.
///
/// Times are in seconds. Note `k` (counting from 0) starts at `offset + k * interval`, plays
/// `notes[k % notes.len()]`, rings for `length` seconds and is then cut to exact silence
/// until the next onset.
#[derive(Clone, Debug, PartialEq)]
pub struct KarplusSettings {
    /// MIDI note numbers (69 = A4 = 440 Hz; fractions allowed), played in turn, repeating.
    pub notes: Vec<f64>,
    /// Seconds between two note onsets.
    pub interval: f64,
    /// Seconds each note rings before it is cut to silence; must be less than `interval`.
    pub length: f64,
    /// Seconds of silence before the first note.
    pub offset: f64,
    /// Loop gain per period (`0.8..=1`): 1 rings longest, lower dies faster.
    pub decay: f64,
    /// Linear output amplitude (the excitation is uniform noise in `(-1, 1)`).
    pub amp: f32,
    /// Seed of the excitation noise.
    pub seed: u64,
}

impl Default for KarplusSettings {
    /// The defaults of the `karplus` node type.
    fn default() -> Self {
        Self {
            notes: DEFAULT_NOTES.to_vec(),
            interval: 0.5,
            length: 0.4,
            offset: 0.0,
            decay: 0.996,
            amp: 0.5,
            seed: 1,
        }
    }
}

const DEFAULT_NOTES: &[f64] = &[60.0, 64.0, 67.0, 72.0];

/// A Karplus-Strong plucked string playing `notes` in turn, the same signal on every channel.
///
/// Each onset fills the string's delay line with one period of zero-mean noise (from
/// `seed`). The loop is: delay line of `N` samples, two-point averager (0.5 sample, the
/// string's damping), first-order allpass tuned so the loop delay is exactly
/// `sample_rate / freq` at the fundamental, and the per-period loss `decay`. After `length`
/// seconds the note is cut and the node outputs exact `0.0` until the next onset (and before
/// the first, during `offset`), so downstream silence detection can skip work.
///
/// The delay line is allocated once for the lowest accepted note (MIDI 21, 27.5 Hz); note
/// changes never allocate. Output depends only on the settings, sample rate and the number of
/// samples produced so far, not on block sizes.
///
/// ```
/// use downbeat_nodes::{Karplus, KarplusSettings};
/// use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};
///
/// let settings = KarplusSettings {
///     notes: vec![69.0],
///     interval: 0.1,
///     length: 0.05,
///     offset: 0.01,
///     ..KarplusSettings::default()
/// };
/// let mut string = Karplus::new(1, 48000, &settings).unwrap();
/// let ctx = ProcessContext::new(48000, 4800, 0);
/// let mut out = vec![0.0f32; 4800];
/// string.process(&ctx, AudioRef::new(&[], 0, 4800, 4800), AudioMut::new(&mut out, 1, 4800, 4800));
/// assert!(out[..480].iter().all(|&s| s == 0.0)); // offset
/// assert!(out[480..480 + 2400].iter().any(|&s| s != 0.0)); // the note rings
/// assert!(out[480 + 2400..].iter().all(|&s| s == 0.0)); // cut after `length`
///
/// // A note may not ring into the next onset.
/// let bad = KarplusSettings { length: 0.2, ..settings };
/// assert!(Karplus::new(1, 48000, &bad).is_err());
/// ```
#[derive(Debug)]
pub struct Karplus {
    channels: usize,
    sample_rate: f64,
    settings: KarplusSettings,
    /// Tuning of each entry of `settings.notes`.
    tunings: Vec<Tuning>,
    /// The string itself: delay line (long enough for the lowest note), allpass, silence.
    string: StringLoop,
    /// `decay` and `amp`, and the amplitude's curve.
    controls: StringControls,
    rng: Pcg32,
    /// Samples produced so far.
    time: u64,
    /// Index of the next note to start.
    next_note: u64,
    /// Sample at which it starts.
    next_onset: u64,
    /// Samples left in the current note (0 = silent).
    remaining: u64,
    length_samples: u64,
    /// Incoming plucks not yet played, in frame order: sample (on `time`'s count), tuning
    /// and velocity. Fixed capacity, so taking a note never allocates.
    pending: [(u64, Tuning, f64); KARPLUS_PENDING],
    pending_len: usize,
    /// Gain of the current pluck: its velocity (1 for the pattern's notes).
    velocity: f64,
}

impl Karplus {
    /// A string on `channels` channels at `sample_rate` playing `settings`.
    ///
    /// # Errors
    /// [`ParamError::Invalid`] naming the offending setting: `length` not less than
    /// `interval`, a note outside MIDI 21..=108 or too high to tune at this sample rate,
    /// an empty `notes`, `decay` outside `0.8..=1`, a negative `offset`, or non-positive times.
    pub fn new(
        channels: usize,
        sample_rate: u32,
        settings: &KarplusSettings,
    ) -> Result<Self, ParamError> {
        check_channels(channels)?;
        let sample_rate = f64::from(sample_rate);
        let s = settings;
        if !(s.interval.is_finite() && s.interval > 0.0) {
            return Err(invalid("interval", "must be a positive number of seconds"));
        }
        if !(s.length.is_finite() && s.length > 0.0) {
            return Err(invalid("length", "must be a positive number of seconds"));
        }
        if s.length >= s.interval {
            return Err(invalid(
                "length",
                format!(
                    "{} s must be less than `interval` ({} s): a note must end before the next \
                     one starts",
                    s.length, s.interval
                ),
            ));
        }
        if !(s.offset.is_finite() && s.offset >= 0.0) {
            return Err(invalid(
                "offset",
                "must be zero or a positive number of seconds",
            ));
        }
        let controls = StringControls::new(P_DECAY, P_AMP, s.decay, s.amp)?;
        if s.notes.is_empty() {
            return Err(invalid("notes", "needs at least one note"));
        }
        let mut tunings = Vec::with_capacity(s.notes.len());
        for &note in &s.notes {
            if !(LOWEST_NOTE..=HIGHEST_NOTE).contains(&note) {
                return Err(invalid(
                    "notes",
                    format!("note {note} is outside MIDI {LOWEST_NOTE} to {HIGHEST_NOTE}"),
                ));
            }
            let tuning = Tuning::for_note(note, sample_rate).ok_or_else(|| {
                invalid(
                    "notes",
                    format!("note {note} is too high for a sample rate of {sample_rate} Hz"),
                )
            })?;
            tunings.push(tuning);
        }
        let lowest =
            lowest_ring_len(sample_rate).max(tunings.iter().map(|t| t.ring_len).max().unwrap_or(2));
        let tunings_first = tunings[0];
        let mut string = Self {
            channels,
            sample_rate,
            settings: settings.clone(),
            string: StringLoop::new(lowest, tunings[0]),
            tunings,
            controls,
            rng: Pcg32::new(s.seed, 0),
            time: 0,
            next_note: 0,
            next_onset: 0,
            remaining: 0,
            length_samples: (s.length * sample_rate).round() as u64,
            pending: [(0, tunings_first, 0.0); KARPLUS_PENDING],
            pending_len: 0,
            velocity: 1.0,
        };
        string.next_onset = string.onset(0);
        Ok(string)
    }

    /// Whether the string has rung out: its loop holds only zeros (every sample decayed
    /// below the flush level), so it outputs zeros and computes nothing until its next
    /// pluck, exactly what computing on would give.
    ///
    /// ```
    /// use downbeat_nodes::{Karplus, KarplusSettings};
    /// use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};
    ///
    /// // A high note losing 20% a period, ringing for up to 5 s.
    /// let settings = KarplusSettings { notes: vec![100.0], interval: 6.0, length: 5.0, decay: 0.8, ..KarplusSettings::default() };
    /// let mut string = Karplus::new(1, 48000, &settings).unwrap();
    /// let ctx = ProcessContext::new(48000, 4800, 0);
    /// let mut out = vec![0.0f32; 4800];
    /// string.process(&ctx, AudioRef::new(&[], 0, 4800, 4800), AudioMut::new(&mut out, 1, 4800, 4800));
    /// assert!(!string.is_silent());
    /// for _ in 0..5 {
    ///     string.process(&ctx, AudioRef::new(&[], 0, 4800, 4800), AudioMut::new(&mut out, 1, 4800, 4800));
    /// }
    /// assert!(string.is_silent());
    /// ```
    pub fn is_silent(&self) -> bool {
        self.string.is_silent()
    }

    /// The settings this string was built with.
    pub fn settings(&self) -> &KarplusSettings {
        &self.settings
    }

    /// Sample at which note `k` starts. Computed from `k` directly, so onsets never drift.
    fn onset(&self, k: u64) -> u64 {
        let s = &self.settings;
        ((s.offset + k as f64 * s.interval) * self.sample_rate).round() as u64
    }

    /// Plucks note `k`: retunes the loop and fills it with one period of zero-mean noise.
    /// Bounded work: at most the length of the delay line.
    fn pluck(&mut self, k: u64) {
        let index = (k % self.tunings.len() as u64) as usize;
        self.pluck_tuned(self.tunings[index], 1.0);
    }

    /// Plucks the string tuned to `tuning`, the noise scaled by `velocity`.
    fn pluck_tuned(&mut self, tuning: Tuning, velocity: f64) {
        self.velocity = velocity;
        self.string.pluck(tuning, velocity, &mut self.rng);
        self.remaining = self.length_samples;
    }

    /// Takes a note event at `frame` of the next block: a note on (at any pitch from MIDI
    /// 21 to 108 that is below a third of the sample rate) plucks the string then; other
    /// events are accepted and change nothing. Real-time safe.
    ///
    /// # Errors
    /// [`NoteError`] for an out-of-range field or a note the string cannot play, or when
    /// [`KARPLUS_PENDING`] plucks are already waiting; the event is then not taken.
    pub fn note(&mut self, frame: usize, event: NoteEvent) -> Result<(), NoteError> {
        event.validate()?;
        let NoteEvent::On { note, velocity, .. } = event.normalized() else {
            return Ok(());
        };
        let tuning =
            Tuning::for_note(f64::from(note), self.sample_rate).ok_or(NoteError::Note(note))?;
        if self.pending_len == KARPLUS_PENDING {
            return Err(NoteError::Full {
                capacity: KARPLUS_PENDING,
            });
        }
        let at = self.time + frame as u64;
        // Insert after every pluck at or before `at`: same-frame events keep their order.
        let mut i = self.pending_len;
        while i > 0 && self.pending[i - 1].0 > at {
            self.pending[i] = self.pending[i - 1];
            i -= 1;
        }
        self.pending[i] = (at, tuning, f64::from(velocity));
        self.pending_len += 1;
        // Notes take over the string from the built-in pattern.
        self.next_onset = u64::MAX;
        Ok(())
    }

    /// Plays the pending plucks due at the current sample.
    fn pluck_due(&mut self) {
        let mut due = 0;
        while due < self.pending_len && self.pending[due].0 <= self.time {
            due += 1;
        }
        if due == 0 {
            return;
        }
        // Several at one sample: the last one is what the string plays.
        let (_, tuning, velocity) = self.pending[due - 1];
        self.pluck_tuned(tuning, velocity);
        self.pending.copy_within(due..self.pending_len, 0);
        self.pending_len -= due;
    }
}

const P_DECAY: usize = 5;
const P_AMP: usize = 6;

static PARAMS: &[ParamSpec] = &[
    CHANNELS,
    ParamSpec {
        name: "notes",
        doc: "MIDI note numbers (69 = A4 = 440 Hz, fractions allowed), played in turn, repeating",
        kind: ParamKind::FloatList {
            min: LOWEST_NOTE,
            max: HIGHEST_NOTE,
            default: DEFAULT_NOTES,
        },
        unit: Unit::Note,
        live: false,
    },
    ParamSpec {
        name: "interval",
        doc: "seconds between note onsets",
        kind: ParamKind::Float {
            min: 0.01,
            max: 60.0,
            default: 0.5,
        },
        unit: Unit::Seconds,
        live: false,
    },
    ParamSpec {
        name: "length",
        doc: "seconds each note rings before it is cut to exact silence; must be less \
              than interval",
        kind: ParamKind::Float {
            min: 0.001,
            max: 60.0,
            default: 0.4,
        },
        unit: Unit::Seconds,
        live: false,
    },
    ParamSpec {
        name: "offset",
        doc: "seconds of silence before the first note (to stagger strings)",
        kind: ParamKind::Float {
            min: 0.0,
            max: 3600.0,
            default: 0.0,
        },
        unit: Unit::Seconds,
        live: false,
    },
    ParamSpec {
        name: "decay",
        doc: "loop gain per period: 1 rings longest, lower dies faster",
        kind: ParamKind::Float {
            min: 0.8,
            max: 1.0,
            default: 0.996,
        },
        unit: Unit::None,
        live: true,
    },
    ParamSpec {
        name: "amp",
        doc: "linear output amplitude",
        kind: ParamKind::Float {
            min: 0.0,
            max: 16.0,
            default: 0.5,
        },
        unit: Unit::None,
        live: true,
    },
    SEED,
];

pub(crate) const TYPE: NodeType = NodeType {
    name: "karplus",
    doc: "Karplus-Strong plucked string playing a note pattern, exact silence between notes",
    params: PARAMS,
    build,
};

fn build(p: &Params, cfg: &NodeConfig) -> Result<Box<dyn Node>, ParamError> {
    let settings = KarplusSettings {
        notes: p.list("notes").to_vec(),
        interval: p.float("interval"),
        length: p.float("length"),
        offset: p.float("offset"),
        decay: p.float("decay"),
        amp: p.float("amp") as f32,
        seed: p.int("seed") as u64,
    };
    Ok(Box::new(Karplus::new(
        p.int("channels") as usize,
        cfg.sample_rate,
        &settings,
    )?))
}

impl Node for Karplus {
    fn type_name(&self) -> Option<&'static str> {
        Some(TYPE.name)
    }

    fn input_channels(&self) -> usize {
        0
    }

    fn output_channels(&self) -> usize {
        self.channels
    }

    fn process(&mut self, _ctx: &ProcessContext, _input: AudioRef<'_>, mut output: AudioMut<'_>) {
        let mut channels = output.channels_mut();
        let Some(first) = channels.next() else {
            return;
        };
        // The block in runs between the samples where something happens to the string (a
        // pluck, the pattern's next onset, the end of the ringing): each run is one tight
        // loop, with no per-sample check for events.
        let frames = first.len();
        let mut k = 0;
        while k < frames {
            if self.pending_len > 0 {
                self.pluck_due();
            }
            if self.time >= self.next_onset {
                let n = self.next_note;
                self.pluck(n);
                self.next_note = n + 1;
                self.next_onset = self.onset(n + 1);
            }
            let until = |at: u64| usize::try_from(at - self.time).unwrap_or(usize::MAX);
            let mut run = (frames - k).min(until(self.next_onset));
            if self.pending_len > 0 {
                run = run.min(until(self.pending[0].0));
            }
            let out = &mut first[k..k + run];
            if self.remaining == 0 {
                out.fill(0.0);
            } else {
                let ringing = run.min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
                let (ring, rest) = out.split_at_mut(ringing);
                let decay = self.controls.decay;
                match self.controls.amp_curve {
                    None => {
                        let amp = f64::from(self.controls.amp);
                        self.string.ring_out::<false>(ring, decay, |_| amp);
                    }
                    Some(curve) => self
                        .string
                        .ring_out::<false>(ring, decay, |j| f64::from(curve.at(k + j))),
                }
                rest.fill(0.0);
                self.remaining -= ringing as u64;
            }
            self.time += run as u64;
            k += run;
        }
        for ch in channels {
            ch.copy_from_slice(first);
        }
    }

    fn plays_notes(&self) -> bool {
        true
    }

    fn note(&mut self, frame: usize, event: NoteEvent) -> Result<(), NoteError> {
        Karplus::note(self, frame, event)
    }

    fn release_seconds(&self) -> f64 {
        self.settings.length
    }

    fn set_param(&mut self, index: usize, value: f32) -> bool {
        let set = self.controls.set(PARAMS, index, value);
        (self.settings.decay, self.settings.amp) = (self.controls.decay, self.controls.amp);
        set
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn get_param(&self, index: usize) -> Option<f32> {
        self.controls.get(index)
    }

    fn follow_param(&mut self, index: usize, curve: ParamCurve) -> bool {
        self.controls.follow(PARAMS, index, curve)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_line_is_sized_for_lowest_note() {
        let k = Karplus::new(1, 96000, &KarplusSettings::default()).unwrap();
        // One period of A0 (27.5 Hz) fits: ring_len = floor(period - 0.6) + 1.
        assert!(k.string.capacity() as f64 > 96000.0 / 27.5 - 1.0);
    }
}
