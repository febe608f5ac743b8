//! `strings`: a bank of Karplus-Strong plucked strings played as voices, each note plucking
//! the next string in turn.
//!
//! Every string is the one the `karplus` node plays ([`StringLoop`]), so a bank of `N`
//! strings sounds like `N` `karplus` nodes summed, bit for bit, but costs less: one node
//! instead of `N`, and four strings computed side by side, whose one-sample feedback loops
//! then overlap in the processor instead of waiting on each other.

use crate::note_queue::NoteQueue;
use crate::string_controls::StringControls;
use crate::string_loop::{lowest_ring_len, ring_out_four, StringLoop, Tuning};
use crate::{check_channels, invalid, Pcg32, CHANNELS, SEED};
use downbeat_graph::{
    AudioMut, AudioRef, Node, NodeConfig, NodeType, NoteError, NoteEvent, ParamCurve, ParamError,
    ParamKind, ParamSpec, Params, ProcessContext, Unit,
};

/// Most strings one `strings` node holds.
pub const MAX_STRINGS: usize = 4096;

/// Everything about a [`Strings`] bank except its channel count and sample rate.
#[derive(Clone, Debug, PartialEq)]
pub struct StringsSettings {
    /// Strings in the bank: the most notes that ring at once (`1..=MAX_STRINGS`).
    pub voices: usize,
    /// Seconds a plucked string rings before it is cut to exact silence.
    pub length: f64,
    /// Loop gain per period (`0.8..=1`): 1 rings longest, lower dies faster.
    pub decay: f64,
    /// Linear output amplitude of each string (its pluck is noise in `(-1, 1)` times the
    /// note's velocity).
    pub amp: f32,
    /// Seed of string 0's excitation noise; string `i` uses `seed + i`.
    pub seed: u64,
}

impl Default for StringsSettings {
    /// The defaults of the `strings` node type.
    fn default() -> Self {
        Self {
            voices: 16,
            length: 4.0,
            decay: 0.996,
            amp: 0.5,
            seed: 1,
        }
    }
}

/// One string of the bank and what it needs besides its loop.
#[derive(Debug)]
struct Voice {
    string: StringLoop,
    /// Its own noise, so string `i` plucks as a `karplus` node seeded `seed + i` would.
    rng: Pcg32,
    /// Samples left before the ringing note is cut (0: not sounding).
    remaining: u64,
}

impl Voice {
    /// Plucked, not yet cut, not yet rung out to exact zeros.
    fn sounding(&self) -> bool {
        self.remaining > 0 && !self.string.is_silent()
    }
}

/// A bank of `voices` Karplus-Strong strings, mono, the same signal on every channel: each
/// note on plucks the next string in turn (string 0 first; after the last, string 0 again,
/// which is then the one plucked longest ago) at the note's pitch, its velocity scaling the
/// pluck. A string rings for `length` seconds and is then cut to exact silence; note offs and
/// the other note events change nothing (a plucked string has no key to lift).
///
/// The output is the sum of the sounding strings in string order, each as the `karplus` node
/// computes it: a bank equals that many `karplus` nodes seeded `seed`, `seed + 1`, ... and
/// plucked in turn, summed in order, bit for bit. Strings are computed four at a time, so a
/// bank costs less per string than separate nodes.
///
/// Every delay line is allocated when the bank is built, for the lowest accepted note (MIDI
/// 21, 27.5 Hz), and touched then; notes never allocate.
///
/// ```
/// use downbeat_nodes::{Strings, StringsSettings};
/// use downbeat_graph::{AudioMut, AudioRef, Node, NoteEvent, ProcessContext};
///
/// let settings = StringsSettings { voices: 4, length: 0.05, ..StringsSettings::default() };
/// let mut bank = Strings::new(1, 48000, &settings).unwrap();
/// let ctx = ProcessContext::new(48000, 4800, 0);
/// let mut out = vec![0.0f32; 4800];
/// // A chord: three notes at frame 480, three strings plucked.
/// for note in [57.0, 61.0, 64.0] {
///     bank.note(480, NoteEvent::On { channel: 0, note, velocity: 0.8 }).unwrap();
/// }
/// bank.process(&ctx, AudioRef::new(&[], 0, 4800, 4800), AudioMut::new(&mut out, 1, 4800, 4800));
/// assert!(out[..480].iter().all(|&s| s == 0.0)); // nothing before the chord
/// assert!(out[480..480 + 2400].iter().any(|&s| s != 0.0)); // it rings for `length`
/// assert!(out[480 + 2400..].iter().all(|&s| s == 0.0)); // then is cut
/// ```
#[derive(Debug)]
pub struct Strings {
    channels: usize,
    sample_rate: f64,
    settings: StringsSettings,
    voices: Box<[Voice]>,
    /// The string the next note plucks.
    next_voice: usize,
    queue: NoteQueue,
    length_samples: u64,
    /// `decay` and `amp`, and the amplitude's curve.
    controls: StringControls,
}

impl Strings {
    /// A bank on `channels` channels at `sample_rate` with `settings`.
    ///
    /// # Errors
    /// [`ParamError::Invalid`] naming the offending setting: `voices` outside
    /// `1..=MAX_STRINGS`, a non-positive `length`, or `decay` outside `0.8..=1`.
    pub fn new(
        channels: usize,
        sample_rate: u32,
        settings: &StringsSettings,
    ) -> Result<Self, ParamError> {
        check_channels(channels)?;
        let s = settings;
        if !(1..=MAX_STRINGS).contains(&s.voices) {
            return Err(invalid(
                "voices",
                format!("got {}, expected 1 to {MAX_STRINGS}", s.voices),
            ));
        }
        if !(s.length.is_finite() && s.length > 0.0) {
            return Err(invalid("length", "must be a positive number of seconds"));
        }
        let controls = StringControls::new(P_DECAY, P_AMP, s.decay, s.amp)?;
        let sample_rate = f64::from(sample_rate);
        let capacity = lowest_ring_len(sample_rate);
        // Any tuning will do until the first pluck retunes the string.
        let idle = Tuning::for_note(69.0, sample_rate).ok_or_else(|| {
            invalid(
                "channels",
                format!("a sample rate of {sample_rate} Hz is too low for a string"),
            )
        })?;
        let voices = (0..s.voices as u64)
            .map(|i| Voice {
                string: StringLoop::new(capacity, idle),
                rng: Pcg32::new(s.seed.wrapping_add(i), 0),
                remaining: 0,
            })
            .collect();
        Ok(Self {
            channels,
            sample_rate,
            settings: settings.clone(),
            voices,
            next_voice: 0,
            // A strum of every string, twice over, waits without a refusal.
            queue: NoteQueue::new((2 * s.voices).max(256)),
            length_samples: (s.length * sample_rate).round() as u64,
            controls,
        })
    }

    /// The settings this bank was built with.
    pub fn settings(&self) -> &StringsSettings {
        &self.settings
    }

    /// Strings ringing now (plucked, not yet cut, not yet rung out to exact zeros).
    ///
    /// ```
    /// use downbeat_nodes::{Strings, StringsSettings};
    /// use downbeat_graph::{AudioMut, AudioRef, Node, NoteEvent, ProcessContext};
    ///
    /// let mut bank = Strings::new(1, 48000, &StringsSettings::default()).unwrap();
    /// assert_eq!(bank.sounding(), 0);
    /// bank.note(0, NoteEvent::On { channel: 0, note: 60.0, velocity: 1.0 }).unwrap();
    /// let ctx = ProcessContext::new(48000, 64, 0);
    /// let mut out = vec![0.0f32; 64];
    /// bank.process(&ctx, AudioRef::new(&[], 0, 64, 64), AudioMut::new(&mut out, 1, 64, 64));
    /// assert_eq!(bank.sounding(), 1);
    /// ```
    pub fn sounding(&self) -> usize {
        self.voices.iter().filter(|v| v.sounding()).count()
    }

    /// Takes a note event at `frame` of the next block: a note on (at any pitch from MIDI
    /// 21 to 108 that is below a third of the sample rate) will pluck the next string then;
    /// other events are accepted and change nothing. Real-time safe.
    ///
    /// # Errors
    /// [`NoteError`] for an out-of-range field or a note no string can play, or when twice
    /// `voices` (at least 256) events are already waiting; the event is then not taken.
    pub fn note(&mut self, frame: usize, event: NoteEvent) -> Result<(), NoteError> {
        event.validate()?;
        let event = event.normalized();
        let NoteEvent::On { note, .. } = event else {
            return Ok(());
        };
        if Tuning::for_note(f64::from(note), self.sample_rate).is_none() {
            return Err(NoteError::Note(note));
        }
        self.queue.push(frame, event)
    }

    /// Plucks the next string in turn for a note on.
    fn pluck(&mut self, event: NoteEvent) {
        let NoteEvent::On { note, velocity, .. } = event else {
            return;
        };
        // `note` checked every note on it took.
        let Some(tuning) = Tuning::for_note(f64::from(note), self.sample_rate) else {
            return;
        };
        let v = &mut self.voices[self.next_voice];
        v.string.pluck(tuning, f64::from(velocity), &mut v.rng);
        v.remaining = self.length_samples;
        self.next_voice = (self.next_voice + 1) % self.voices.len();
    }

    /// Adds the sounding strings to `out`, frames `from..from + out.len()` of the block.
    fn ring(&mut self, out: &mut [f32], from: usize) {
        let StringControls {
            decay,
            amp,
            amp_curve,
            ..
        } = self.controls;
        let amp = f64::from(amp);
        let gain = move |j: usize| amp_curve.map_or(amp, |c| f64::from(c.at(from + j)));
        let frames = out.len();
        let mut sounding = self.voices.iter_mut().filter(|v| v.sounding());
        while let Some(a) = sounding.next() {
            let [b, c, d] = match [sounding.next(), sounding.next(), sounding.next()] {
                [Some(b), Some(c), Some(d)] => [b, c, d],
                last => {
                    // Fewer than four left: one at a time, still in string order.
                    Self::ring_one(a, out, decay, gain);
                    for v in last.into_iter().flatten() {
                        Self::ring_one(v, out, decay, gain);
                    }
                    break;
                }
            };
            // Side by side for as long as all four ring, then each on its own.
            let together = [a.remaining, b.remaining, c.remaining, d.remaining]
                .into_iter()
                .map(|r| usize::try_from(r).unwrap_or(usize::MAX))
                .fold(frames, usize::min);
            ring_out_four(
                [&mut a.string, &mut b.string, &mut c.string, &mut d.string],
                &mut out[..together],
                decay,
                gain,
            );
            for v in [a, b, c, d] {
                v.remaining -= together as u64;
                Self::ring_one(v, &mut out[together..], decay, |j| gain(together + j));
            }
        }
    }

    /// Adds one string to `out` while it rings, and counts the samples off its note.
    fn ring_one(v: &mut Voice, out: &mut [f32], decay: f64, gain: impl Fn(usize) -> f64) {
        let ringing = out
            .len()
            .min(usize::try_from(v.remaining).unwrap_or(usize::MAX));
        if ringing > 0 {
            v.string.ring_out::<true>(&mut out[..ringing], decay, gain);
            v.remaining -= ringing as u64;
        }
    }
}

const P_DECAY: usize = 3;
const P_AMP: usize = 4;

static PARAMS: &[ParamSpec] = &[
    CHANNELS,
    ParamSpec {
        name: "voices",
        doc: "strings in the bank, allocated up front: the most notes that ring at once (each \
              note plucks the next string in turn)",
        kind: ParamKind::Int {
            min: 1,
            max: MAX_STRINGS as i64,
            default: 16,
        },
        unit: Unit::None,
        live: false,
    },
    ParamSpec {
        name: "length",
        doc: "seconds a plucked string rings before it is cut to exact silence",
        kind: ParamKind::Float {
            min: 0.001,
            max: 60.0,
            default: 4.0,
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
        doc: "linear output amplitude of each string",
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
    name: "strings",
    doc: "a bank of Karplus-Strong plucked strings played as voices: each note plucks the next \
          string in turn; the same strings as karplus, four computed at a time",
    params: PARAMS,
    build,
};

fn build(p: &Params, cfg: &NodeConfig) -> Result<Box<dyn Node>, ParamError> {
    let settings = StringsSettings {
        voices: p.int("voices") as usize,
        length: p.float("length"),
        decay: p.float("decay"),
        amp: p.float("amp") as f32,
        seed: p.int("seed") as u64,
    };
    Ok(Box::new(Strings::new(
        p.int("channels") as usize,
        cfg.sample_rate,
        &settings,
    )?))
}

impl Node for Strings {
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
        let frames = first.len();
        first.fill(0.0);
        // The block in runs between notes: a note plucks at its frame, exactly.
        let mut k = 0;
        while k < frames {
            let next = self.queue.next_before(frames);
            let until = next.map_or(frames, |(frame, _)| frame.max(k));
            if until > k {
                self.ring(&mut first[k..until], k);
                k = until;
            }
            match next {
                Some((_, event)) => self.pluck(event),
                None => break,
            }
        }
        self.queue.end_block(frames);
        for ch in channels {
            ch.copy_from_slice(first);
        }
    }

    fn plays_notes(&self) -> bool {
        true
    }

    fn note(&mut self, frame: usize, event: NoteEvent) -> Result<(), NoteError> {
        Strings::note(self, frame, event)
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
