//! `metronome`: a click on every beat of the song, an accent on every bar line.

use crate::CHANNELS;
use downbeat_graph::{
    denormal::flush, float_param_accepts, math, AudioMut, AudioRef, Node, NodeConfig, NodeType,
    ParamError, ParamKind, ParamSpec, Params, ProcessContext, Unit,
};

/// The click's pitch on a bar line, and on the other beats, in Hz.
const ACCENT_HZ: f64 = 1760.0;
const BEAT_HZ: f64 = 880.0;
/// The other beats' level, relative to the accent's.
const BEAT_LEVEL: f64 = 0.6;
/// The click's decay time constant: at 150 ms it is e^-10 below its start (-87 dB).
const DECAY_SECONDS: f64 = 0.015;
/// A click ends here, whatever is left of it.
const CLICK_SECONDS: f64 = 0.15;

/// A click on every beat of the time signature, louder and higher on the first of each
/// bar, silent while the transport is stopped: the audible proof of the engine's musical
/// time.
///
/// Each click is a cosine at full level from its beat's exact frame (its first sample is
/// the click's peak, no attack), decaying exponentially (e^-10 at 150 ms, where it is cut).
/// The frames come from the block's [`MusicalPosition`](downbeat_graph::time::MusicalPosition), so
/// clicks land where the tempo map puts the beats, through tempo ramps, locates and loop
/// wraps, whatever the block size.
///
/// ```
/// use downbeat_nodes::Metronome;
/// use downbeat_graph::time::{MusicalPosition, TempoMap};
/// use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};
///
/// let map = TempoMap::constant(120.0, 48000).unwrap(); // a beat every 24,000 frames
/// let mut m = Metronome::new(1, 0.5);
/// let mut ctx = ProcessContext::new(48000, 64, 0);
/// ctx.musical = MusicalPosition::of(&map, 23_990, true, None); // 10 frames before beat 1
/// let mut out = vec![0.0f32; 64];
/// m.process(&ctx, AudioRef::new(&[], 0, 64, 64), AudioMut::new(&mut out, 1, 64, 64));
/// assert!(out[..10].iter().all(|&x| x == 0.0));
/// assert_eq!(out[10], 0.5 * 0.6, "beat 1 of the bar: not the accent");
/// ```
#[derive(Debug)]
pub struct Metronome {
    channels: usize,
    gain: f32,
    /// The sounding click: cos(phase) · level · envelope.
    level: f64,
    envelope: f64,
    phase: f64,
    step: f64,
    /// Samples the click has left.
    left: u32,
    /// The beat and song frame of the latest click: a line on a tempo segment's boundary
    /// is seen from both segments, and must click once.
    last: Option<(f64, u64)>,
    /// Per-sample envelope factor and click length, for the sample rate.
    decay: f64,
    length: u32,
    sample_rate: f64,
}

impl Metronome {
    /// A metronome on `channels` channels (all the same) whose accent peaks at `gain`.
    pub fn new(channels: usize, gain: f32) -> Self {
        Self {
            channels,
            gain,
            level: 0.0,
            envelope: 0.0,
            phase: 0.0,
            step: 0.0,
            left: 0,
            last: None,
            decay: 0.0,
            length: 0,
            sample_rate: 0.0,
        }
    }

    fn prepare(&mut self, sample_rate: f64) {
        if sample_rate != self.sample_rate {
            self.sample_rate = sample_rate;
            self.decay = math::exp(-1.0 / (DECAY_SECONDS * sample_rate));
            self.length = (CLICK_SECONDS * sample_rate).round() as u32;
        }
    }

    fn start(&mut self, accent: bool) {
        let (level, hz) = if accent {
            (1.0, ACCENT_HZ)
        } else {
            (BEAT_LEVEL, BEAT_HZ)
        };
        self.level = level * f64::from(self.gain);
        self.envelope = 1.0;
        self.phase = 0.0;
        self.step = std::f64::consts::TAU * hz / self.sample_rate;
        self.left = self.length;
    }

    /// The click's next `out.len()` samples into `out` (zeros once it has ended).
    fn render(&mut self, out: &mut [f32]) {
        for o in out {
            if self.left == 0 {
                *o = 0.0;
                continue;
            }
            *o = flush((math::cos(self.phase) * self.level * self.envelope) as f32);
            self.phase += self.step;
            self.envelope *= self.decay;
            self.left -= 1;
        }
    }
}

const P_GAIN: usize = 1;

static PARAMS: &[ParamSpec] = &[
    CHANNELS,
    ParamSpec {
        name: "gain",
        doc: "linear peak of the accent (the other beats peak at 0.6 times it)",
        kind: ParamKind::Float {
            min: 0.0,
            max: 1.0,
            default: 0.5,
        },
        unit: Unit::None,
        live: true,
    },
];

pub(crate) const TYPE: NodeType = NodeType {
    name: "metronome",
    doc:
        "a click on every beat of the song's transport, accented on bar lines; silent while stopped",
    params: PARAMS,
    build,
};

fn build(p: &Params, _cfg: &NodeConfig) -> Result<Box<dyn Node>, ParamError> {
    Ok(Box::new(Metronome::new(
        p.int("channels") as usize,
        p.float("gain") as f32,
    )))
}

impl Node for Metronome {
    fn type_name(&self) -> Option<&'static str> {
        Some(TYPE.name)
    }

    fn input_channels(&self) -> usize {
        0
    }

    fn output_channels(&self) -> usize {
        self.channels
    }

    fn process(&mut self, ctx: &ProcessContext, _input: AudioRef<'_>, mut output: AudioMut<'_>) {
        self.prepare(f64::from(ctx.sample_rate));
        let frames = ctx.frames;
        let musical = &ctx.musical;
        let mut channels = output.channels_mut();
        let Some(first) = channels.next() else {
            return;
        };
        let mut done = 0;
        if musical.playing {
            let end = musical.song_frame + frames as u64;
            for line in musical.beat_lines() {
                if musical.song_frame_of(line.beat) >= end {
                    break;
                }
                let Some(at) = musical.offset_of(line.beat, frames) else {
                    continue;
                };
                let frame = musical.song_frame + at as u64;
                if self
                    .last
                    .is_some_and(|(b, f)| b == line.beat && f.abs_diff(frame) <= 1)
                {
                    continue;
                }
                self.last = Some((line.beat, frame));
                self.render(&mut first[done..at]);
                self.start(line.index == 0);
                done = at;
            }
        }
        self.render(&mut first[done..frames]);
        for ch in channels {
            ch[..frames].copy_from_slice(&first[..frames]);
        }
    }

    fn set_param(&mut self, index: usize, value: f32) -> bool {
        match index {
            P_GAIN if float_param_accepts(PARAMS, index, value) => {
                self.gain = value;
                true
            }
            _ => false,
        }
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn get_param(&self, index: usize) -> Option<f32> {
        (index == P_GAIN).then_some(self.gain)
    }
}
