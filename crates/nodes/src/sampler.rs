//! `sampler`: plays samples held in memory on notes, a drum kit or one sample pitched
//! across the keyboard.
//!
//! This is the audio-thread half: it is built from buffers ([`Sample`], [`SampleSet`]) and
//! never touches a file, so that the same node runs wherever buffers can be handed over
//! (the Web build, say). The `sampler` node type of project files, which decodes the
//! files at load and builds this node, is in `downbeat-file`.

mod interp;
mod samples;
mod voice;

use super::note_queue::NoteQueue;
use std::sync::{
    atomic::{AtomicU64, Ordering},
    Arc,
};

use crate::CHANNELS;
use downbeat_graph::{
    denormal::flush, float_param_accepts, math, AudioMut, AudioRef, Node, NodeCount, NodeMonitor,
    NoteError, NoteEvent, ParamKind, ParamSpec, ProcessContext, SharedMonitor, Unit, MEMORY_BYTES,
};

pub use samples::{note_name, parse_note, Sample, SampleSet, SamplerError, MAX_SAMPLE_CHANNELS};
use voice::Voice;

/// Most voices a sampler may have.
pub const SAMPLER_MAX_VOICES: usize = 1024;

/// Note events a sampler holds between two blocks; beyond it [`Sampler::note`] refuses
/// with [`NoteError::Full`].
pub const SAMPLER_PENDING: usize = 1024;

/// Seconds over which a stolen voice fades out while its slot starts the new note (as
/// [`STEAL_FADE`](super::STEAL_FADE) in `synth`).
pub const SAMPLER_STEAL_FADE: f64 = 0.003;

/// What a note off does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PlayMode {
    /// The sample plays to its end whatever the key does: note offs and all-notes-off
    /// are ignored (drums).
    #[default]
    OneShot,
    /// The sample plays while the key is down; the note off (or all-notes-off) fades it
    /// out over the release. It also ends at the sample's end.
    Gated,
}

impl PlayMode {
    /// The names project files use, in the order of the variants.
    pub const NAMES: &'static [&'static str] = &["oneshot", "gated"];

    /// The mode named `name` (one of [`NAMES`](PlayMode::NAMES)).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "oneshot" => Some(PlayMode::OneShot),
            "gated" => Some(PlayMode::Gated),
            _ => None,
        }
    }
}

/// Everything about a [`Sampler`] but its samples, channels and sample rate.
#[derive(Clone, Debug, PartialEq)]
pub struct SamplerSettings {
    /// Voices, allocated when the sampler is built: the most samples that sound at once.
    pub voices: usize,
    /// What a note off does.
    pub mode: PlayMode,
    /// Seconds from a note off to silence in [`PlayMode::Gated`]: a straight line from the
    /// level at the note off.
    pub release: f64,
    /// Linear output gain (live).
    pub gain: f32,
}

impl Default for SamplerSettings {
    /// The defaults of the `sampler` node type: 32 voices, one-shot, 50 ms release, gain 1.
    fn default() -> Self {
        Self {
            voices: 32,
            mode: PlayMode::OneShot,
            release: 0.05,
            gain: 1.0,
        }
    }
}

/// What a sampler tells a host while it plays; see [`Sampler::monitor`](Node::monitor).
#[derive(Debug)]
struct Counters {
    memory: u64,
    steals: AtomicU64,
    unmapped: AtomicU64,
}

impl NodeMonitor for Counters {
    fn counts(&self) -> Vec<NodeCount> {
        vec![
            NodeCount {
                name: MEMORY_BYTES,
                value: self.memory,
                loss: false,
            },
            NodeCount {
                name: "steals",
                value: self.steals.load(Ordering::Relaxed),
                loss: false,
            },
            NodeCount {
                name: "unmapped_notes",
                value: self.unmapped.load(Ordering::Relaxed),
                loss: false,
            },
        ]
    }
}

/// Plays samples held in memory on notes.
///
/// * **Which sample**: a [`SampleSet`]: a kit (a sample per note, each as recorded; other
///   notes are counted as `unmapped_notes` and play nothing) or one sample across the
///   keyboard, pitched by `2^((note - root) / 12)`. A note plays its sample from the
///   note's exact frame; at its root and at the sample's own rate it plays the sample's
///   values bit for bit (times the gains below). Pitched, the sample is read with
///   six-point Lagrange interpolation (a 1 kHz sine a fifth up: everything else below
///   -120 dB; see `tests/sampler.rs`). A sample recorded at another rate than the sampler
///   plays at its recorded pitch.
/// * **Velocity to gain**: `velocity²` (MIDI velocity 127 is 0 dB, 64 is -12 dB, 16 is
///   -36 dB), the curve most samplers default to.
/// * **Mode**: [`PlayMode::OneShot`] or [`PlayMode::Gated`] with a linear release.
///   Pitch bend and the sustain pedal are accepted and ignored.
/// * **Voices** are allocated up front; when all are busy a new note takes, as in
///   `synth`, the voice whose release started first, else the oldest note, which fades out
///   over [`SAMPLER_STEAL_FADE`] in a fade slot while the new note starts on time.
/// * **Channels**: a mono sample plays on every output channel; otherwise a sample has the
///   sampler's channel count.
/// * **`gain`** is live and glides over a block.
///
/// Nothing is allocated after [`Sampler::new`]; memory held is reported by the monitor
/// as `memory_bytes`.
///
/// ```
/// use downbeat_nodes::{PlayMode, Sample, SampleSet, Sampler, SamplerSettings};
/// use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};
///
/// let hit = Sample::from_interleaved(&[1.0, 0.5, 0.25], 1, 48000).unwrap();
/// let kit = SampleSet::kit([(36, hit)]).unwrap();
/// let mut sampler = Sampler::new(1, 48000, kit, &SamplerSettings::default()).unwrap();
/// sampler.note_on(10, 36.0, 1.0).unwrap(); // from frame 10 of the next block
/// let ctx = ProcessContext::new(48000, 16, 0);
/// let mut out = [0.0f32; 16];
/// sampler.process(&ctx, AudioRef::new(&[], 0, 16, 16), AudioMut::new(&mut out, 1, 16, 16));
/// assert_eq!(out[9..14], [0.0, 1.0, 0.5, 0.25, 0.0]);
/// ```
pub struct Sampler {
    channels: usize,
    sample_rate: f64,
    set: SampleSet,
    settings: SamplerSettings,
    release_samples: u32,
    fade_samples: u32,
    voices: Box<[Voice]>,
    fades: Box<[Voice]>,
    pending: NoteQueue,
    order: u64,
    cut_fades: u64,
    amp: f32,
    target_amp: f32,
    counters: Arc<Counters>,
}

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampler")
            .field("channels", &self.channels)
            .field("sample_rate", &self.sample_rate)
            .field("settings", &self.settings)
            .field("zones", &self.set.zones.len())
            .field("active_voices", &self.active_voices())
            .finish_non_exhaustive()
    }
}

const P_GAIN: usize = 7;

const SAMPLE: ParamSpec = ParamSpec {
    name: "sample",
    doc: "one sample played across the keyboard, pitched from `root` (or give `samples`)",
    kind: ParamKind::Path { default: "" },
    unit: Unit::None,
    live: false,
};
const ROOT: ParamSpec = ParamSpec {
    name: "root",
    doc: "the note at which `sample` sounds as recorded (60 is middle C)",
    kind: ParamKind::Float {
        min: 0.0,
        max: 127.0,
        default: 60.0,
    },
    unit: Unit::Note,
    live: false,
};
const SAMPLES: ParamSpec = ParamSpec {
    name: "samples",
    doc: "a kit: note numbers or names to files, e.g. { 36 = \"kick.wav\", D2 = \
          \"snare.wav\" } (or give `sample`)",
    kind: ParamKind::PathMap,
    unit: Unit::None,
    live: false,
};
const MODE: ParamSpec = ParamSpec {
    name: "mode",
    doc: "oneshot: a sample plays to its end; gated: until its note off, then the release",
    kind: ParamKind::Choice {
        options: PlayMode::NAMES,
        default: "oneshot",
    },
    unit: Unit::None,
    live: false,
};
const RELEASE: ParamSpec = ParamSpec {
    name: "release",
    doc: "seconds from a note off to silence (gated mode), a straight line",
    kind: ParamKind::Float {
        min: 0.0,
        max: 30.0,
        default: 0.05,
    },
    unit: Unit::Seconds,
    live: false,
};
const VOICES: ParamSpec = ParamSpec {
    name: "voices",
    doc: "voices allocated up front: the most samples that sound at once (the oldest \
          released, then the oldest, is stolen beyond)",
    kind: ParamKind::Int {
        min: 1,
        max: SAMPLER_MAX_VOICES as i64,
        default: 32,
    },
    unit: Unit::None,
    live: false,
};
const GAIN: ParamSpec = ParamSpec {
    name: "gain",
    doc: "linear output gain",
    kind: ParamKind::Float {
        min: 0.0,
        max: 4.0,
        default: 1.0,
    },
    unit: Unit::None,
    live: true,
};

impl Sampler {
    /// The parameters of the `sampler` node type, in [`Node::set_param`] order: `channels`,
    /// `sample`, `root`, `samples`, `mode`, `release`, `voices`, `gain` (the only live one).
    pub const PARAMS: &'static [ParamSpec] =
        &[CHANNELS, SAMPLE, ROOT, SAMPLES, MODE, RELEASE, VOICES, GAIN];

    /// [`PARAMS`](Sampler::PARAMS) for one sample across the keyboard: without `samples`,
    /// so that `sample` is required.
    pub const KEYBOARD_PARAMS: &'static [ParamSpec] =
        &[CHANNELS, SAMPLE, ROOT, MODE, RELEASE, VOICES, GAIN];

    /// [`PARAMS`](Sampler::PARAMS) for a kit: without `sample` and `root`.
    pub const KIT_PARAMS: &'static [ParamSpec] = &[CHANNELS, SAMPLES, MODE, RELEASE, VOICES, GAIN];

    /// A sampler on `channels` channels at `sample_rate` playing `set`.
    ///
    /// # Errors
    /// [`SamplerError::Setting`] for channels outside `1..=32`, voices outside
    /// `1..=1024`, a negative or non-finite release or gain;
    /// [`SamplerError::ChannelMismatch`] for a sample with neither 1 channel nor
    /// `channels`.
    pub fn new(
        channels: usize,
        sample_rate: u32,
        set: SampleSet,
        settings: &SamplerSettings,
    ) -> Result<Self, SamplerError> {
        let setting = |name, value: f64, expected| SamplerError::Setting {
            name,
            value,
            expected,
        };
        if !(1..=MAX_SAMPLE_CHANNELS).contains(&channels) {
            return Err(setting("channels", channels as f64, "1 to 32"));
        }
        if !(1..=SAMPLER_MAX_VOICES).contains(&settings.voices) {
            return Err(setting("voices", settings.voices as f64, "1 to 1024"));
        }
        if !(settings.release.is_finite() && settings.release >= 0.0) {
            return Err(setting("release", settings.release, "seconds, 0 or more"));
        }
        if !(settings.gain.is_finite() && settings.gain >= 0.0) {
            return Err(setting("gain", f64::from(settings.gain), "0 or more"));
        }
        if sample_rate == 0 {
            return Err(SamplerError::Rate(sample_rate));
        }
        for z in &set.zones {
            let got = z.sample.channels();
            if got != 1 && got != channels {
                return Err(SamplerError::ChannelMismatch {
                    note: z.root.round() as u8,
                    got,
                    expected: channels,
                });
            }
        }
        let sr = f64::from(sample_rate);
        let voices = vec![Voice::IDLE; settings.voices].into_boxed_slice();
        let fades = vec![Voice::IDLE; settings.voices].into_boxed_slice();
        let pending = NoteQueue::new(SAMPLER_PENDING);
        let memory = set.bytes()
            + std::mem::size_of_val(&*voices)
            + std::mem::size_of_val(&*fades)
            + pending.bytes();
        Ok(Self {
            channels,
            sample_rate: sr,
            release_samples: (settings.release * sr).round() as u32,
            fade_samples: ((SAMPLER_STEAL_FADE * sr).round() as u32).max(1),
            set,
            voices,
            fades,
            pending,
            order: 0,
            cut_fades: 0,
            amp: settings.gain,
            target_amp: settings.gain,
            counters: Arc::new(Counters {
                memory: memory as u64,
                steals: AtomicU64::new(0),
                unmapped: AtomicU64::new(0),
            }),
            settings: settings.clone(),
        })
    }

    /// The settings, with live changes.
    pub fn settings(&self) -> &SamplerSettings {
        &self.settings
    }

    /// Bytes the sampler holds: its samples, voices and event list (what the monitor
    /// reports as `memory_bytes`).
    pub fn memory_bytes(&self) -> u64 {
        self.counters.memory
    }

    /// Voices sounding now, fading stolen voices not counted.
    pub fn active_voices(&self) -> usize {
        self.voices.iter().filter(|v| v.active).count()
    }

    /// Voices stolen since the sampler was built.
    pub fn steals(&self) -> u64 {
        self.counters.steals.load(Ordering::Relaxed)
    }

    /// Stolen voices cut instead of faded because every fade slot was busy.
    pub fn cut_fades(&self) -> u64 {
        self.cut_fades
    }

    /// Note ons for a note no sample is mapped to, since the sampler was built.
    pub fn unmapped_notes(&self) -> u64 {
        self.counters.unmapped.load(Ordering::Relaxed)
    }

    /// Queues `event` for `frame`, counted from the first frame of the next block; later
    /// frames carry over. Events at the same frame apply in the order given. Real-time
    /// safe.
    ///
    /// # Errors
    /// [`NoteError`] for a field out of range, or when [`SAMPLER_PENDING`] events are
    /// already waiting; the event is then not taken.
    pub fn note(&mut self, frame: usize, event: NoteEvent) -> Result<(), NoteError> {
        event.validate()?;
        self.pending.push(frame, event)
    }

    /// Note on, MIDI channel 1, at `frame` of the next block. See [`Sampler::note`].
    ///
    /// # Errors
    /// As [`Sampler::note`].
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

    /// Note off, MIDI channel 1, at `frame` of the next block. See [`Sampler::note`].
    ///
    /// # Errors
    /// As [`Sampler::note`].
    pub fn note_off(&mut self, frame: usize, note: f32) -> Result<(), NoteError> {
        self.note(frame, NoteEvent::Off { channel: 0, note })
    }

    fn next_order(&mut self) -> u64 {
        self.order += 1;
        self.order
    }

    fn apply(&mut self, event: NoteEvent) {
        let gated = self.settings.mode == PlayMode::Gated;
        match event.normalized() {
            NoteEvent::On {
                channel,
                note,
                velocity,
            } => {
                let Some(zone) = self.set.zone_for(note) else {
                    self.counters.unmapped.fetch_add(1, Ordering::Relaxed);
                    return;
                };
                if gated {
                    // The same key struck again: the old note releases.
                    self.release_matching(|v| v.key_down && v.channel == channel && v.note == note);
                }
                let slot = self.allocate();
                let z = &self.set.zones[zone];
                let inc = math::exp2(f64::from(note - z.root) / 12.0) * f64::from(z.sample.rate())
                    / self.sample_rate;
                let order = self.next_order();
                self.voices[slot] =
                    Voice::start(zone as u16, channel, note, velocity * velocity, inc, order);
            }
            NoteEvent::Off { channel, note } if gated => {
                self.release_matching(|v| v.key_down && v.channel == channel && v.note == note);
            }
            NoteEvent::AllNotesOff { channel } if gated => {
                self.release_matching(|v| channel.is_none_or(|c| v.channel == c));
            }
            _ => {}
        }
    }

    fn release_matching(&mut self, matches: impl Fn(&Voice) -> bool) {
        for i in 0..self.voices.len() {
            if self.voices[i].active && !self.voices[i].is_releasing() && matches(&self.voices[i]) {
                let order = self.next_order();
                self.voices[i].release(self.release_samples, order);
            }
        }
    }

    /// A voice for a new note: a free one, else the one whose release started first, else
    /// the oldest note, which then fades out in a fade slot.
    fn allocate(&mut self) -> usize {
        if let Some(free) = self.voices.iter().position(|v| !v.active) {
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
        self.counters.steals.fetch_add(1, Ordering::Relaxed);
        let mut stolen = self.voices[victim];
        if !stolen.is_silent() {
            let slot = match self.fades.iter().position(|f| !f.active) {
                Some(free) => free,
                None => {
                    self.cut_fades += 1;
                    self.fades
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, f)| f.started)
                        .map_or(0, |(i, _)| i)
                }
            };
            let order = self.next_order();
            stolen.release(self.fade_samples, order);
            self.fades[slot] = stolen;
        }
        victim
    }
}

/// Adds every active voice of `voices` into frames `from..to` of every channel of `out`.
fn render(voices: &mut [Voice], set: &SampleSet, out: &mut AudioMut<'_>, from: usize, to: usize) {
    if from == to {
        return;
    }
    for v in voices.iter_mut().filter(|v| v.active) {
        let sample = &set.zones[usize::from(v.zone)].sample;
        let mono = sample.channels() == 1;
        let mut after = *v;
        for c in 0..out.channels() {
            let src = sample.padded(if mono { 0 } else { c });
            after = v.render(src, sample.frames(), &mut out.channel_mut(c)[from..to]);
        }
        *v = after;
    }
}

impl Node for Sampler {
    fn type_name(&self) -> Option<&'static str> {
        Some("sampler")
    }

    fn input_channels(&self) -> usize {
        0
    }

    fn output_channels(&self) -> usize {
        self.channels
    }

    fn process(&mut self, _ctx: &ProcessContext, _input: AudioRef<'_>, mut output: AudioMut<'_>) {
        let frames = output.frames();
        output.fill_zero();
        let mut pos = 0;
        while let Some((frame, event)) = self.pending.next_before(frames) {
            if frame > pos {
                render(&mut self.voices, &self.set, &mut output, pos, frame);
                render(&mut self.fades, &self.set, &mut output, pos, frame);
                pos = frame;
            }
            self.apply(event);
        }
        render(&mut self.voices, &self.set, &mut output, pos, frames);
        render(&mut self.fades, &self.set, &mut output, pos, frames);
        self.pending.end_block(frames);
        // The gain glides over the block so that a live change does not click; unchanged,
        // it multiplies by the same value throughout.
        let step = if frames > 0 {
            (self.target_amp - self.amp) / frames as f32
        } else {
            0.0
        };
        for c in 0..output.channels() {
            let mut amp = self.amp;
            for o in output.channel_mut(c).iter_mut() {
                if step != 0.0 {
                    amp += step;
                }
                // Below `TINY`, 0 whatever the processor's flush mode.
                *o = flush(*o * amp);
            }
        }
        self.amp = self.target_amp;
    }

    fn params(&self) -> &'static [ParamSpec] {
        Self::PARAMS
    }

    fn get_param(&self, index: usize) -> Option<f32> {
        (index == P_GAIN).then_some(self.settings.gain)
    }

    fn set_param(&mut self, index: usize, value: f32) -> bool {
        if index != P_GAIN || !float_param_accepts(Self::PARAMS, index, value) {
            return false;
        }
        self.settings.gain = value;
        self.target_amp = value;
        true
    }

    fn plays_notes(&self) -> bool {
        true
    }

    fn note(&mut self, frame: usize, event: NoteEvent) -> Result<(), NoteError> {
        Sampler::note(self, frame, event)
    }

    /// Gated: the release. One-shot: the longest sample at its recorded pitch (a note
    /// off does not end it).
    fn release_seconds(&self) -> f64 {
        match self.settings.mode {
            PlayMode::Gated => f64::from(self.release_samples) / self.sample_rate,
            PlayMode::OneShot => self
                .set
                .zones
                .iter()
                .map(|z| z.sample.frames() as f64 / f64::from(z.sample.rate()))
                .fold(0.0, |longest, s| if s > longest { s } else { longest }),
        }
    }

    fn monitor(&self) -> Option<SharedMonitor> {
        Some(self.counters.clone())
    }
}
