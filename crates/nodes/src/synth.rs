//! `synth`: a polyphonic subtractive synthesizer played by note events.

mod envelope;
mod filter;
mod voice;
mod wavetable;

use super::note_queue::NoteQueue;
use crate::{check_channels, invalid, CHANNELS};
use downbeat_graph::{
    denormal::flush, float_param_accepts, math, AudioMut, AudioRef, Node, NodeConfig, NodeType,
    NoteError, NoteEvent, ParamError, ParamKind, ParamSpec, Params, ProcessContext, Unit,
    MAX_CHANNEL,
};

use envelope::Adsr;
use filter::LowpassCoefs;
use voice::{render_lanes, Fade, Shared, Voice, LANES};
pub use wavetable::Wave;
use wavetable::Wavetables;

/// Seconds over which a stolen voice fades out while its slot starts the new note.
pub const STEAL_FADE: f64 = 0.003;

/// Note events a synth holds between two blocks: enough for a burst of every MIDI note on
/// all of a block's frames plus their releases. Fixed when the synth is built, so taking an
/// event never allocates; beyond it [`Synth::note`] refuses with [`NoteError::Full`].
pub const PENDING_EVENTS: usize = 1024;

/// Most voices a synth may have.
pub const MAX_VOICES: usize = 1024;

/// Everything about a [`Synth`] except its channel count and sample rate. Times are in
/// seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct SynthSettings {
    /// Voices, allocated when the synth is built: the most notes that sound at once.
    pub voices: usize,
    /// Oscillator waveform (band-limited).
    pub wave: Wave,
    /// Attack: silence to full level, a straight line.
    pub attack: f64,
    /// Decay: full level to the sustain level, an exponential curve.
    pub decay: f64,
    /// Sustain level, `0..=1`, held while the key is down.
    pub sustain: f64,
    /// Release: from the level reached to silence after the note off, exponential, ending
    /// exactly on time.
    pub release: f64,
    /// Filter cutoff in Hz for middle C (note 60) at full velocity.
    pub cutoff: f64,
    /// Filter quality: 0.707 is flat, higher values resonate.
    pub resonance: f64,
    /// How far the cutoff follows the note: 0 not at all, 1 by the same interval.
    pub key_track: f64,
    /// Octaves the cutoff falls from velocity 1 to velocity 0.
    pub vel_track: f64,
    /// Linear output gain of one voice at full velocity.
    pub amp: f32,
    /// Semitones of a full pitch bend (±1).
    pub bend_range: f64,
    /// The only MIDI channel (`0..=15`) the synth listens to, or `None` for every channel.
    pub midi_channel: Option<u8>,
}

impl Default for SynthSettings {
    /// The defaults of the `synth` node type: a crisp saw (2 ms attack, 80 ms release).
    fn default() -> Self {
        Self {
            voices: 16,
            wave: Wave::Saw,
            attack: 0.002,
            decay: 0.3,
            sustain: 0.7,
            release: 0.08,
            cutoff: 5000.0,
            resonance: 0.707,
            key_track: 0.5,
            vel_track: 1.0,
            amp: 0.1,
            bend_range: 2.0,
            midi_channel: None,
        }
    }
}

/// A polyphonic synthesizer: per voice a band-limited wavetable oscillator, an ADSR
/// envelope and a resonant low-pass filter with key and velocity tracking; the mix on
/// every output channel.
///
/// Notes arrive through [`Synth::note`] (or [`note_on`](Synth::note_on) /
/// [`note_off`](Synth::note_off)) with the frame, counted from the start of the next
/// block, at which they take effect; they sound from exactly that sample, whatever the
/// block size. Everything the synth needs is allocated when it is built: `voices` voices,
/// as many fade slots, and room for [`PENDING_EVENTS`] events.
///
/// When every voice is busy, a new note takes the voice whose release started first, or
/// if none is releasing, the oldest note. The stolen voice is not cut: it moves to a fade
/// slot and fades out over [`STEAL_FADE`] while the new note starts on time.
///
/// ```
/// use downbeat_nodes::{Synth, SynthSettings};
/// use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};
///
/// let mut synth = Synth::new(1, 48000, &SynthSettings::default()).unwrap();
/// synth.note_on(100, 69.0, 1.0).unwrap(); // A4 from frame 100 of the next block
/// synth.note_off(4000, 69.0).unwrap();
/// let ctx = ProcessContext::new(48000, 9000, 0);
/// let mut out = vec![0.0f32; 9000];
/// synth.process(&ctx, AudioRef::new(&[], 0, 9000, 9000), AudioMut::new(&mut out, 1, 9000, 9000));
/// assert!(out[..100].iter().all(|&s| s == 0.0));
/// assert!(out[100..4000].iter().any(|&s| s != 0.0));
/// assert!(out[4000 + 3840..].iter().all(|&s| s == 0.0)); // released after 80 ms
/// ```
pub struct Synth {
    channels: usize,
    sample_rate: f64,
    settings: SynthSettings,
    adsr: Adsr,
    tables: &'static Wavetables,
    voices: Box<[Voice]>,
    fades: Box<[Fade]>,
    pending: NoteQueue,
    /// Pitch bend per MIDI channel, `-1..=1`.
    bend: [f32; 16],
    /// Sustain pedal per MIDI channel.
    pedal: [bool; 16],
    /// Counts note ons and releases, ordering voices for stealing.
    order: u64,
    steals: u64,
    cut_fades: u64,
    fade_samples: u32,
    amp: f32,
    target_amp: f32,
    /// A filter setting changed: every sounding voice's coefficients are recomputed before
    /// the next sample.
    filter_dirty: bool,
}

impl std::fmt::Debug for Synth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Synth")
            .field("channels", &self.channels)
            .field("sample_rate", &self.sample_rate)
            .field("settings", &self.settings)
            .field("active_voices", &self.active_voices())
            .field("steals", &self.steals)
            .finish_non_exhaustive()
    }
}

impl Synth {
    /// A synth on `channels` channels at `sample_rate` with `settings`.
    ///
    /// The first synth of a process builds the shared wavetables (a few milliseconds).
    ///
    /// # Errors
    /// [`ParamError::Invalid`] naming the setting out of range: `voices` outside
    /// `1..=1024`, negative or non-finite times, `sustain` outside `0..=1`, a cutoff or
    /// resonance that is not positive, or a MIDI channel above 15.
    pub fn new(
        channels: usize,
        sample_rate: u32,
        settings: &SynthSettings,
    ) -> Result<Self, ParamError> {
        check_channels(channels)?;
        let s = settings;
        if !(1..=MAX_VOICES).contains(&s.voices) {
            return Err(invalid(
                "voices",
                format!("got {}, expected 1 to {MAX_VOICES}", s.voices),
            ));
        }
        for (name, t) in [
            ("attack", s.attack),
            ("decay", s.decay),
            ("release", s.release),
        ] {
            if !(t.is_finite() && t >= 0.0) {
                return Err(invalid(
                    name,
                    format!("got {t}, expected seconds, 0 or more"),
                ));
            }
        }
        if !(0.0..=1.0).contains(&s.sustain) {
            return Err(invalid(
                "sustain",
                format!("got {}, expected 0 to 1", s.sustain),
            ));
        }
        for (name, v) in [("cutoff", s.cutoff), ("resonance", s.resonance)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(invalid(
                    name,
                    format!("got {v}, expected a positive number"),
                ));
            }
        }
        for (name, v) in [
            ("key_track", s.key_track),
            ("vel_track", s.vel_track),
            ("bend_range", s.bend_range),
            ("amp", f64::from(s.amp)),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(invalid(name, format!("got {v}, expected 0 or more")));
            }
        }
        if let Some(c) = s.midi_channel {
            if c > MAX_CHANNEL {
                return Err(invalid(
                    "midi_channel",
                    format!("got {}, expected 1 to 16", u32::from(c) + 1),
                ));
            }
        }
        let sample_rate = f64::from(sample_rate);
        Ok(Self {
            channels,
            sample_rate,
            adsr: Adsr::new(s.attack, s.decay, s.sustain, s.release, sample_rate),
            tables: wavetable::wavetables(),
            voices: vec![Voice::IDLE; s.voices].into_boxed_slice(),
            fades: vec![Fade::FREE; s.voices].into_boxed_slice(),
            pending: NoteQueue::new(PENDING_EVENTS),
            bend: [0.0; 16],
            pedal: [false; 16],
            order: 0,
            steals: 0,
            cut_fades: 0,
            fade_samples: ((STEAL_FADE * sample_rate).round() as u32).max(1),
            amp: s.amp,
            target_amp: s.amp,
            filter_dirty: false,
            settings: settings.clone(),
        })
    }

    /// The settings, including live changes made since the synth was built.
    pub fn settings(&self) -> &SynthSettings {
        &self.settings
    }

    /// Queues `event` to take effect at `frame`, counted from the first frame of the next
    /// block [`process`](Node::process) renders; frames beyond that block carry over to the
    /// following ones. Events at the same frame apply in the order given. Events on a MIDI
    /// channel the synth does not listen to are accepted and ignored. Real-time safe.
    ///
    /// # Errors
    /// [`NoteError`] when a field is out of range ([`NoteEvent::validate`]) or
    /// [`PENDING_EVENTS`] events are already waiting; the event is then not taken.
    pub fn note(&mut self, frame: usize, event: NoteEvent) -> Result<(), NoteError> {
        event.validate()?;
        if let (Some(listen), Some(channel)) = (self.settings.midi_channel, event.channel()) {
            if listen != channel {
                return Ok(());
            }
        }
        self.pending.push(frame, event)
    }

    /// Note on, MIDI channel 1: `note` (fractional allowed) at `velocity` (`0..=1`; 0 is a
    /// note off) from `frame` of the next block. See [`Synth::note`].
    ///
    /// # Errors
    /// As [`Synth::note`].
    pub fn note_on(&mut self, frame: usize, note: f32, velocity: f32) -> Result<(), NoteError> {
        self.note(
            frame,
            NoteEvent::On {
                channel: 0,
                note,
                velocity,
            },
        )
    }

    /// Note off, MIDI channel 1, at `frame` of the next block. See [`Synth::note`].
    ///
    /// # Errors
    /// As [`Synth::note`].
    pub fn note_off(&mut self, frame: usize, note: f32) -> Result<(), NoteError> {
        self.note(frame, NoteEvent::Off { channel: 0, note })
    }

    /// Voices stolen since the synth was built.
    pub fn steals(&self) -> u64 {
        self.steals
    }

    /// Stolen voices that had to be cut instead of faded because every fade slot was
    /// busy (more steals of sounding voices within [`STEAL_FADE`] than there are voices).
    pub fn cut_fades(&self) -> u64 {
        self.cut_fades
    }

    /// Voices sounding now (attack to the end of the release), fading stolen voices not
    /// counted.
    pub fn active_voices(&self) -> usize {
        self.voices.iter().filter(|v| !v.is_idle()).count()
    }

    /// The pitches in Hz of the sounding voices, in voice order (for tests and meters).
    pub fn voice_freqs(&self) -> impl Iterator<Item = f64> + '_ {
        self.voices
            .iter()
            .filter(|v| !v.is_idle())
            .map(|v| v.freq(self.sample_rate))
    }

    /// How long a note sounds after its note off, in seconds: the release time.
    pub fn release_seconds(&self) -> f64 {
        f64::from(self.adsr.release_samples()) / self.sample_rate
    }

    /// Events waiting for a later frame.
    pub fn pending_events(&self) -> usize {
        self.pending.len()
    }

    fn bend_semitones(&self, channel: u8) -> f64 {
        f64::from(self.bend[usize::from(channel)]) * self.settings.bend_range
    }

    fn coefs_for(&self, voice: &Voice) -> LowpassCoefs {
        let s = &self.settings;
        let note = f64::from(voice.note) + self.bend_semitones(voice.channel);
        let octaves =
            s.key_track * (note - 60.0) / 12.0 - s.vel_track * (1.0 - f64::from(voice.velocity));
        LowpassCoefs::new(
            s.cutoff * math::exp2(octaves),
            s.resonance,
            self.sample_rate,
        )
    }

    fn next_order(&mut self) -> u64 {
        self.order += 1;
        self.order
    }

    /// Applies one event now.
    fn apply(&mut self, event: NoteEvent) {
        match event.normalized() {
            NoteEvent::On {
                channel,
                note,
                velocity,
            } => {
                // The same key struck again: the old note releases, the new one takes a voice.
                self.release_matching(|v| v.channel == channel && v.note == note, true);
                let slot = self.allocate();
                let order = self.next_order();
                let bend = self.bend_semitones(channel);
                let voice = &mut self.voices[slot];
                voice.start(
                    channel,
                    note,
                    velocity,
                    order,
                    &self.adsr,
                    bend,
                    self.sample_rate,
                );
                let coefs = self.coefs_for(&self.voices[slot]);
                self.voices[slot].set_coefs(coefs);
            }
            NoteEvent::Off { channel, note } => {
                if self.pedal[usize::from(channel)] {
                    for v in self.voices.iter_mut() {
                        if v.key_down && v.channel == channel && v.note == note {
                            v.key_down = false;
                            v.sustained = true;
                        }
                    }
                } else {
                    self.release_matching(|v| v.channel == channel && v.note == note, true);
                }
            }
            NoteEvent::AllNotesOff { channel } => {
                self.release_matching(|v| channel.is_none_or(|c| v.channel == c), false);
            }
            NoteEvent::PitchBend { channel, value } => {
                self.bend[usize::from(channel)] = value;
                let bend = self.bend_semitones(channel);
                for i in 0..self.voices.len() {
                    if !self.voices[i].is_idle() && self.voices[i].channel == channel {
                        self.voices[i].tune(bend, self.sample_rate);
                        let coefs = self.coefs_for(&self.voices[i]);
                        self.voices[i].set_coefs(coefs);
                    }
                }
            }
            NoteEvent::Sustain { channel, on } => {
                self.pedal[usize::from(channel)] = on;
                if !on {
                    self.release_matching(|v| v.sustained && v.channel == channel, false);
                }
            }
        }
    }

    /// Releases every sounding voice `matches` selects; with `keys_only`, only voices whose
    /// key is still down.
    fn release_matching(&mut self, matches: impl Fn(&Voice) -> bool, keys_only: bool) {
        for i in 0..self.voices.len() {
            let v = &self.voices[i];
            if v.is_idle() || v.is_releasing() || (keys_only && !v.key_down) || !matches(v) {
                continue;
            }
            let order = self.next_order();
            self.voices[i].release(order, &self.adsr);
        }
    }

    /// A voice for a new note: a free one, else the one whose release started first, else
    /// the oldest note, which then fades out in a fade slot.
    fn allocate(&mut self) -> usize {
        if let Some(free) = self.voices.iter().position(Voice::is_idle) {
            return free;
        }
        let released = self
            .voices
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_releasing())
            .min_by_key(|(_, v)| v.released)
            .map(|(i, _)| i);
        let victim = released.unwrap_or_else(|| {
            self.voices
                .iter()
                .enumerate()
                .min_by_key(|(_, v)| v.started)
                .map_or(0, |(i, _)| i)
        });
        self.steals += 1;
        let stolen = self.voices[victim];
        if !stolen.is_silent() {
            let slot = match self.fades.iter().position(|f| f.remaining == 0) {
                Some(free) => free,
                None => {
                    // Every slot is fading: the one closest to silence is cut.
                    self.cut_fades += 1;
                    self.fades
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, f)| f.remaining)
                        .map_or(0, |(i, _)| i)
                }
            };
            self.fades[slot].start(stolen, self.fade_samples);
        }
        victim
    }

    /// Renders `out` (one channel, already zeroed) with every sounding voice.
    fn render(&mut self, out: &mut [f32]) {
        if out.is_empty() {
            return;
        }
        if self.filter_dirty {
            self.filter_dirty = false;
            for i in 0..self.voices.len() {
                if !self.voices[i].is_idle() {
                    let coefs = self.coefs_for(&self.voices[i]);
                    self.voices[i].set_coefs(coefs);
                }
            }
        }
        let shared = Shared {
            tables: self.tables,
            wave: self.settings.wave,
            adsr: &self.adsr,
        };
        // Playing voices go four at a time, in voice order (which keeps the order of the
        // additions into each sample, hence the bits, of one voice after another).
        let mut group = [0usize; LANES];
        let mut count = 0;
        for i in 0..self.voices.len() {
            let v = &mut self.voices[i];
            if v.is_idle() {
                continue;
            }
            if !v.audible() {
                // Silent: only its envelope keeps time.
                v.render(out, &shared, 1.0, 0.0);
                continue;
            }
            group[count] = i;
            count += 1;
            if count == LANES {
                render_lanes(&mut self.voices, &group, out, &shared);
                count = 0;
            }
        }
        if count > 0 {
            render_lanes(&mut self.voices, &group[..count], out, &shared);
        }
        for f in self.fades.iter_mut() {
            f.render(out, &shared);
        }
    }
}

const P_ATTACK: usize = 3;
const P_DECAY: usize = 4;
const P_SUSTAIN: usize = 5;
const P_RELEASE: usize = 6;
const P_CUTOFF: usize = 7;
const P_RESONANCE: usize = 8;
const P_KEY_TRACK: usize = 9;
const P_VEL_TRACK: usize = 10;
const P_AMP: usize = 11;
const P_BEND_RANGE: usize = 12;

static PARAMS: &[ParamSpec] = &[
    CHANNELS,
    ParamSpec {
        name: "voices",
        doc: "voices allocated up front: the most notes that sound at once (the oldest \
              released, then the oldest, is stolen beyond)",
        kind: ParamKind::Int {
            min: 1,
            max: MAX_VOICES as i64,
            default: 16,
        },
        unit: Unit::None,
        live: false,
    },
    ParamSpec {
        name: "wave",
        doc: "oscillator waveform, band-limited",
        kind: ParamKind::Choice {
            options: Wave::NAMES,
            default: "saw",
        },
        unit: Unit::None,
        live: false,
    },
    ParamSpec {
        name: "attack",
        doc: "seconds from silence to full level",
        kind: ParamKind::Float {
            min: 0.0,
            max: 30.0,
            default: 0.002,
        },
        unit: Unit::Seconds,
        live: true,
    },
    ParamSpec {
        name: "decay",
        doc: "seconds from full level to the sustain level",
        kind: ParamKind::Float {
            min: 0.0,
            max: 30.0,
            default: 0.3,
        },
        unit: Unit::Seconds,
        live: true,
    },
    ParamSpec {
        name: "sustain",
        doc: "level held while the key is down, 0 to 1",
        kind: ParamKind::Float {
            min: 0.0,
            max: 1.0,
            default: 0.7,
        },
        unit: Unit::None,
        live: true,
    },
    ParamSpec {
        name: "release",
        doc: "seconds from the note off to silence",
        kind: ParamKind::Float {
            min: 0.0,
            max: 30.0,
            default: 0.08,
        },
        unit: Unit::Seconds,
        live: true,
    },
    ParamSpec {
        name: "cutoff",
        doc: "low-pass cutoff in Hz at middle C and full velocity",
        kind: ParamKind::Float {
            min: 20.0,
            max: 20000.0,
            default: 5000.0,
        },
        unit: Unit::Hz,
        live: true,
    },
    ParamSpec {
        name: "resonance",
        doc: "low-pass quality: 0.707 is flat, higher resonates",
        kind: ParamKind::Float {
            min: 0.5,
            max: 20.0,
            default: 0.707,
        },
        unit: Unit::None,
        live: true,
    },
    ParamSpec {
        name: "key_track",
        doc: "how far the cutoff follows the note: 0 not at all, 1 fully",
        kind: ParamKind::Float {
            min: 0.0,
            max: 1.0,
            default: 0.5,
        },
        unit: Unit::None,
        live: true,
    },
    ParamSpec {
        name: "vel_track",
        doc: "octaves the cutoff falls from full velocity to zero velocity",
        kind: ParamKind::Float {
            min: 0.0,
            max: 8.0,
            default: 1.0,
        },
        unit: Unit::Octaves,
        live: true,
    },
    ParamSpec {
        name: "amp",
        doc: "linear gain of one voice at full velocity",
        kind: ParamKind::Float {
            min: 0.0,
            max: 4.0,
            default: 0.1,
        },
        unit: Unit::None,
        live: true,
    },
    ParamSpec {
        name: "bend_range",
        doc: "semitones of a full pitch bend",
        kind: ParamKind::Float {
            min: 0.0,
            max: 48.0,
            default: 2.0,
        },
        unit: Unit::Semitones,
        live: true,
    },
    ParamSpec {
        name: "midi_channel",
        doc: "the only MIDI channel listened to, 1 to 16; 0 listens to every channel",
        kind: ParamKind::Int {
            min: 0,
            max: 16,
            default: 0,
        },
        unit: Unit::None,
        live: false,
    },
];

pub(crate) const TYPE: NodeType = NodeType {
    name: "synth",
    doc: "polyphonic synthesizer played by notes: band-limited oscillator, ADSR, \
          resonant low-pass per voice",
    params: PARAMS,
    build,
};

fn build(p: &Params, cfg: &NodeConfig) -> Result<Box<dyn Node>, ParamError> {
    let wave = Wave::from_name(p.choice("wave")).ok_or_else(|| {
        invalid(
            "wave",
            format!("got \"{}\", expected sine, saw or square", p.choice("wave")),
        )
    })?;
    let midi_channel = match p.int("midi_channel") {
        0 => None,
        c => Some((c - 1) as u8),
    };
    let settings = SynthSettings {
        voices: p.int("voices") as usize,
        wave,
        attack: p.float("attack"),
        decay: p.float("decay"),
        sustain: p.float("sustain"),
        release: p.float("release"),
        cutoff: p.float("cutoff"),
        resonance: p.float("resonance"),
        key_track: p.float("key_track"),
        vel_track: p.float("vel_track"),
        amp: p.float("amp") as f32,
        bend_range: p.float("bend_range"),
        midi_channel,
    };
    Ok(Box::new(Synth::new(
        p.int("channels") as usize,
        cfg.sample_rate,
        &settings,
    )?))
}

impl Node for Synth {
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
        let frames = output.frames();
        let mut channels = output.channels_mut();
        let Some(first) = channels.next() else {
            return;
        };
        first.fill(0.0);
        // Render up to each event's frame, apply the events there, carry on.
        let mut pos = 0;
        while let Some((frame, event)) = self.pending.next_before(frames) {
            if frame > pos {
                self.render(&mut first[pos..frame]);
                pos = frame;
            }
            self.apply(event);
        }
        self.render(&mut first[pos..]);
        self.pending.end_block(frames);
        // The output gain glides over the block so a live change does not click.
        let mut amp = self.amp;
        let step = if frames > 0 {
            (self.target_amp - amp) / frames as f32
        } else {
            0.0
        };
        for o in first.iter_mut() {
            amp += step;
            // A faint voice times a tiny gain can fall below f32's normal range, where the
            // processor's flush mode would decide the bits: 0 in either mode.
            *o = flush(*o * amp);
        }
        self.amp = self.target_amp;
        for ch in channels {
            ch.copy_from_slice(first);
        }
    }

    fn plays_notes(&self) -> bool {
        true
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn get_param(&self, index: usize) -> Option<f32> {
        let s = &self.settings;
        let v = match index {
            P_ATTACK => s.attack,
            P_DECAY => s.decay,
            P_SUSTAIN => s.sustain,
            P_RELEASE => s.release,
            P_CUTOFF => s.cutoff,
            P_RESONANCE => s.resonance,
            P_KEY_TRACK => s.key_track,
            P_VEL_TRACK => s.vel_track,
            P_AMP => f64::from(s.amp),
            P_BEND_RANGE => s.bend_range,
            _ => return None,
        };
        Some(v as f32)
    }

    fn note(&mut self, frame: usize, event: NoteEvent) -> Result<(), NoteError> {
        Synth::note(self, frame, event)
    }

    fn release_seconds(&self) -> f64 {
        Synth::release_seconds(self)
    }

    fn set_param(&mut self, index: usize, value: f32) -> bool {
        if !float_param_accepts(PARAMS, index, value) {
            return false;
        }
        let v = f64::from(value);
        let sr = self.sample_rate;
        match index {
            P_ATTACK => {
                self.settings.attack = v;
                self.adsr.set_attack(v, sr);
            }
            P_DECAY => {
                self.settings.decay = v;
                self.adsr.set_decay(v, sr);
            }
            P_SUSTAIN => {
                self.settings.sustain = v;
                self.adsr.set_sustain(value);
            }
            P_RELEASE => {
                self.settings.release = v;
                self.adsr.set_release(v, sr);
            }
            P_CUTOFF => self.settings.cutoff = v,
            P_RESONANCE => self.settings.resonance = v,
            P_KEY_TRACK => self.settings.key_track = v,
            P_VEL_TRACK => self.settings.vel_track = v,
            P_AMP => {
                self.settings.amp = value;
                self.target_amp = value;
            }
            P_BEND_RANGE => {
                self.settings.bend_range = v;
                for i in 0..self.voices.len() {
                    if !self.voices[i].is_idle() {
                        let bend = self.bend_semitones(self.voices[i].channel);
                        self.voices[i].tune(bend, sr);
                    }
                }
            }
            _ => return false,
        }
        if matches!(
            index,
            P_CUTOFF | P_RESONANCE | P_KEY_TRACK | P_VEL_TRACK | P_BEND_RANGE
        ) {
            self.filter_dirty = true;
        }
        true
    }
}
