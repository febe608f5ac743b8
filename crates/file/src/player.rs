//! The `player` node: plays one file, streamed from disk.
//!
//! A [`Player`] reads its file through a [`stream`]: the
//! [`Reader`] thread decodes ahead into the stream's ring and the
//! audio thread only copies out of it, resampling to the project's rate (and varispeed)
//! with a [`Resampler`] and putting the file's channels on the node's with
//! [`map_channels`].
//!
//! # Parameters (`type = "player"`)
//!
//! | name | kind | default | |
//! |---|---|---|---|
//! | `path` | path | (required) | the file; relative to the project file |
//! | `start` | seconds | 0 | where playing starts |
//! | `loop` | bool | false | loop `loop_start..loop_end` |
//! | `loop_start`, `loop_end` | seconds | 0, 0 | `loop_end = 0` is the end of the file |
//! | `gain` | live | 1 | linear gain |
//! | `speed` | live | 1 | varispeed through the resampler (0.25 to 4; 2 = an octave up) |
//! | `autoplay` | bool | true | play from the run's first frame |
//! | `cues` | list of seconds | none | seek targets cached before the run |
//! | `channels` | int | 2 | output channels (file channels mapped by [`map_channels`]) |
//! | `read_ahead` | seconds | 0.5 | decoded audio held ahead of the play position |
//! | `playing` | live | 1 if `autoplay` | the **play / stop event**: 1 plays, 0 stops (the position is kept) |
//! | `seek` | live, seconds | `start` | the **seek event**: each new value jumps there |
//!
//! # Events: play, stop, seek
//!
//! They are live parameters, so they reach the node by every path a parameter takes, at
//! their exact frame: a `Controller`'s `set` or `step` (`player.playing`, `player.seek`),
//! OSC (`/node/NAME/playing 1`, `/node/NAME/seek 12.5`, or `.../step`), `[[automation]]`
//! and recordings. The schedule cuts the node's block at the event's frame. A smoothed
//! change (`set`, a ramp) acts on its target at its first frame: a seek never plays the
//! frames in between. Giving `seek` again the value it has seeks again (to the same place).
//!
//! A seek to a frame in `cues` (`round(seconds × file rate)` equal) plays at once from the
//! cue's cache, decoded when the node was built; elsewhere the node plays silence until the
//! reader has decoded from there. Silence that should have been audio is an **underrun**,
//! counted in the node's [`monitor`](Node::monitor) (`underrun_frames`) and never waited
//! for, except offline: on the offline device ([`Node::set_offline`]) the node waits for the
//! reader, so an offline render is the same however slow the disk is.
//!
//! Damage the reader finds later in the file is printed on stderr and counted
//! (`damage_reports`); the node plays silence from there (`damaged_frames`) until a seek.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use downbeat_graph::{
    AudioMut, AudioRef, Node, NodeConfig, NodeCount, NodeMonitor, NodeType, ParamCurve, ParamError,
    ParamKind, ParamSpec, Params, ProcessContext, SharedMonitor, Unit,
};

use crate::stream::{
    self, LoopRegion, Reader, Source, SourceError, StreamConfig, StreamStatus, Tap,
};
use crate::{check, map_channels, Decoder, FileError, Resampler, MAX_SPEED};

const P_GAIN: usize = 5;
const P_SPEED: usize = 6;
const P_PLAYING: usize = 10;
const P_SEEK: usize = 11;

/// Longest position accepted, in seconds (a day).
const MAX_SECONDS: f64 = 86_400.0;

/// The `player` node type's parameters, in [`Node::set_param`] order.
pub static PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "path",
        doc: "the audio file (WAV, FLAC, Ogg Vorbis, MP3), relative to the project file",
        kind: ParamKind::Path { default: "" },
        unit: Unit::None,
        live: false,
    },
    ParamSpec {
        name: "start",
        doc: "seconds into the file where playing starts",
        kind: ParamKind::Float {
            min: 0.0,
            max: MAX_SECONDS,
            default: 0.0,
        },
        unit: Unit::Seconds,
        live: false,
    },
    ParamSpec {
        name: "loop",
        doc: "loop from loop_start to loop_end",
        kind: ParamKind::Bool { default: false },
        unit: Unit::None,
        live: false,
    },
    ParamSpec {
        name: "loop_start",
        doc: "seconds: where the loop starts again",
        kind: ParamKind::Float {
            min: 0.0,
            max: MAX_SECONDS,
            default: 0.0,
        },
        unit: Unit::Seconds,
        live: false,
    },
    ParamSpec {
        name: "loop_end",
        doc: "seconds: where the loop wraps; 0 = the end of the file",
        kind: ParamKind::Float {
            min: 0.0,
            max: MAX_SECONDS,
            default: 0.0,
        },
        unit: Unit::Seconds,
        live: false,
    },
    ParamSpec {
        name: "gain",
        doc: "linear gain",
        kind: ParamKind::Float {
            min: 0.0,
            max: 16.0,
            default: 1.0,
        },
        unit: Unit::None,
        live: true,
    },
    ParamSpec {
        name: "speed",
        doc: "varispeed (2 = twice as fast, an octave up)",
        kind: ParamKind::Float {
            min: 0.25,
            max: 4.0,
            default: 1.0,
        },
        unit: Unit::None,
        live: true,
    },
    ParamSpec {
        name: "autoplay",
        doc: "play from the run's first frame (else wait for playing = 1)",
        kind: ParamKind::Bool { default: true },
        unit: Unit::None,
        live: false,
    },
    ParamSpec {
        name: "cues",
        doc: "seconds: seek targets whose first moments are decoded before the run",
        kind: ParamKind::FloatList {
            min: 0.0,
            max: MAX_SECONDS,
            default: &[],
        },
        unit: Unit::Seconds,
        live: false,
    },
    ParamSpec {
        name: "channels",
        doc: "output channels (a mono file plays on all; more file channels are averaged)",
        kind: ParamKind::Int {
            min: 1,
            max: 32,
            default: 2,
        },
        unit: Unit::None,
        live: false,
    },
    ParamSpec {
        name: "playing",
        doc: "event: 1 plays, 0 stops (keeping the position)",
        kind: ParamKind::Float {
            min: 0.0,
            max: 1.0,
            default: 1.0,
        },
        unit: Unit::None,
        live: true,
    },
    ParamSpec {
        name: "seek",
        doc: "event: seconds into the file to jump to (each new value jumps)",
        kind: ParamKind::Float {
            min: 0.0,
            max: MAX_SECONDS,
            default: 0.0,
        },
        unit: Unit::Seconds,
        live: true,
    },
    ParamSpec {
        name: "read_ahead",
        doc: "seconds of decoded audio held ahead of the play position",
        kind: ParamKind::Float {
            min: 0.05,
            max: 30.0,
            default: 0.5,
        },
        unit: Unit::Seconds,
        live: false,
    },
];

/// The `player` node type (`type = "player"`).
pub static PLAYER: NodeType = NodeType {
    name: "player",
    doc: "plays one audio file, streamed from disk (events: playing, seek)",
    params: PARAMS,
    build: build_player,
};
fn build_player(p: &Params, cfg: &NodeConfig) -> Result<Box<dyn Node>, ParamError> {
    let settings = PlayerSettings {
        path: p.path("path").to_path_buf(),
        start: p.float("start"),
        looping: p.bool("loop"),
        loop_start: p.float("loop_start"),
        loop_end: p.float("loop_end"),
        gain: p.float("gain") as f32,
        speed: p.float("speed") as f32,
        autoplay: p.bool("autoplay"),
        cues: p.list("cues").to_vec(),
        channels: p.int("channels") as usize,
        read_ahead: p.float("read_ahead"),
    };
    let player = Player::open(&settings, cfg, Reader::shared()).map_err(|e| match e {
        PlayerError::File(e) => ParamError::Invalid {
            name: "path".into(),
            message: e.to_string(),
        },
        PlayerError::Setting { name, message } => ParamError::Invalid {
            name: name.into(),
            message,
        },
    })?;
    Ok(Box::new(player))
}

/// How a [`Player`] plays: the `player` node type's parameters as Rust values.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerSettings {
    /// The file.
    pub path: PathBuf,
    /// Seconds into the file where playing starts.
    pub start: f64,
    /// Whether it loops `loop_start..loop_end`.
    pub looping: bool,
    /// Seconds: where the loop starts again.
    pub loop_start: f64,
    /// Seconds: where the loop wraps; 0 is the end of the file.
    pub loop_end: f64,
    /// Linear gain.
    pub gain: f32,
    /// Varispeed.
    pub speed: f32,
    /// Play from the first frame.
    pub autoplay: bool,
    /// Cue points, in seconds.
    pub cues: Vec<f64>,
    /// Output channels.
    pub channels: usize,
    /// Seconds of read-ahead.
    pub read_ahead: f64,
}

impl Default for PlayerSettings {
    fn default() -> Self {
        Self {
            path: PathBuf::new(),
            start: 0.0,
            looping: false,
            loop_start: 0.0,
            loop_end: 0.0,
            gain: 1.0,
            speed: 1.0,
            autoplay: true,
            cues: Vec::new(),
            channels: 2,
            read_ahead: 0.5,
        }
    }
}

/// Why a [`Player`] could not be built.
#[derive(Debug)]
#[non_exhaustive]
pub enum PlayerError {
    /// The file cannot be played: missing, unsupported, damaged at its start or a cue, or at
    /// a rate the resampler cannot reach. The error names the file.
    File(FileError),
    /// A setting does not fit the file (a loop past its end, say).
    Setting {
        /// The parameter.
        name: &'static str,
        /// What is wrong.
        message: String,
    },
}

impl std::fmt::Display for PlayerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlayerError::File(e) => e.fmt(f),
            PlayerError::Setting { name, message } => write!(f, "parameter `{name}`: {message}"),
        }
    }
}

impl std::error::Error for PlayerError {}

impl From<FileError> for PlayerError {
    fn from(e: FileError) -> Self {
        PlayerError::File(e)
    }
}

/// A [`Decoder`] as a stream's [`Source`]: a seek past the end reads as the end, not damage.
struct DecoderSource {
    decoder: Decoder,
    past_end: bool,
}

impl Source for DecoderSource {
    fn channels(&self) -> usize {
        self.decoder.info().channels
    }

    fn read(&mut self, out: &mut [f32]) -> Result<usize, SourceError> {
        if self.past_end {
            return Ok(0);
        }
        let at = self.decoder.position();
        self.decoder.read(out).map_err(|e| SourceError::Damaged {
            frame: at,
            reason: e.to_string(),
        })
    }

    fn seek(&mut self, frame: u64) -> Result<(), SourceError> {
        match self.decoder.seek(frame) {
            Ok(()) => {
                self.past_end = false;
                Ok(())
            }
            Err(FileError::SeekOutOfRange { .. }) => {
                self.past_end = true;
                Ok(())
            }
            Err(e) => Err(SourceError::Damaged {
                frame,
                reason: e.to_string(),
            }),
        }
    }
}

/// The counts of a playing [`Player`], for a host to read from any thread: underruns
/// (silence where the file's audio should have been) and damage.
#[derive(Debug, Clone)]
pub struct PlayerMonitor(Arc<StreamStatus>);

impl PlayerMonitor {
    /// The stream's counters.
    pub fn status(&self) -> &StreamStatus {
        &self.0
    }
}

impl NodeMonitor for PlayerMonitor {
    fn counts(&self) -> Vec<NodeCount> {
        let s = &self.0;
        vec![
            NodeCount {
                name: "underrun_frames",
                value: s.underrun_frames(),
                loss: true,
            },
            NodeCount {
                name: "underruns",
                value: s.underruns(),
                loss: true,
            },
            NodeCount {
                name: "damage_reports",
                value: s.damage_reports(),
                loss: true,
            },
            NodeCount {
                name: "damaged_frames",
                value: s.damaged_frames(),
                loss: true,
            },
        ]
    }
}

/// How a live event parameter (`playing`, `seek`) takes a value: a ramp acts on its
/// target once, when it starts; the values the schedule hands while and when it ends are
/// that same change.
#[derive(Clone, Copy, Debug, Default)]
struct EventParam {
    /// The ramp being followed: its bounds and target.
    ramp: Option<(f32, f32, f32)>,
}

impl EventParam {
    /// A step to `value`: `Some(value)` to act on, `None` when it ends a ramp already acted on.
    fn set(&mut self, value: f32) -> Option<f32> {
        match self.ramp.take() {
            Some((_, _, target)) if target == value => None,
            _ => Some(value),
        }
    }

    /// A ramp: its target to act on when it is a new ramp, `None` when it goes on.
    fn follow(&mut self, curve: &ParamCurve) -> Option<f32> {
        let (lo, hi) = curve.bounds();
        let ramp = (lo, hi, curve.target());
        if self.ramp == Some(ramp) {
            return None;
        }
        self.ramp = Some(ramp);
        Some(ramp.2)
    }
}

/// Plays one file, streamed from disk; see the [module docs](self).
///
/// ```no_run
/// use downbeat_file::{stream::Reader, Player, PlayerSettings};
/// use downbeat_graph::NodeConfig;
///
/// let settings = PlayerSettings { path: "take.wav".into(), cues: vec![12.0], ..Default::default() };
/// let cfg = NodeConfig { sample_rate: 48_000, max_block: 256 };
/// let player = Player::open(&settings, &cfg, Reader::shared())?;
/// let counts = player.player_monitor(); // keep it: the node moves into a schedule
/// # Ok::<(), downbeat_file::player::PlayerError>(())
/// ```
pub struct Player {
    tap: Tap,
    file_channels: usize,
    out_channels: usize,
    file_rate: u32,
    rate: u32,
    resampler: Resampler,
    /// Whether frames go through the resampler: the rates differ, or the speed left 1
    /// (until a seek at speed 1 and equal rates).
    resampling: bool,
    gain: f32,
    gain_curve: Option<ParamCurve>,
    speed: f32,
    playing: bool,
    seek_seconds: f32,
    playing_event: EventParam,
    seek_event: EventParam,
    /// File frames read from the stream, interleaved.
    file_buf: Box<[f32]>,
    /// Resampled frames, in the file's channels.
    resampled: Box<[f32]>,
    /// Frames in the node's channels, interleaved.
    mapped: Box<[f32]>,
    status: Arc<StreamStatus>,
    ring_bytes: usize,
}

impl Player {
    /// Opens `settings.path` for a schedule of `cfg`: checks the file (header and first
    /// second), decodes its cue caches and its read-ahead from `start`, and hands the
    /// decoder to `reader`. Off the audio thread.
    ///
    /// # Errors
    /// [`PlayerError::File`] naming the file when it cannot be opened, decoded at its start
    /// or cues, or resampled to the project's rate; [`PlayerError::Setting`] for a `start`,
    /// loop or cue past the end of the file.
    pub fn open(
        settings: &PlayerSettings,
        cfg: &NodeConfig,
        reader: &Reader,
    ) -> Result<Self, PlayerError> {
        let path: &Path = &settings.path;
        check(path)?;
        let decoder = Decoder::open(path)?;
        let info = decoder.info().clone();
        let source = Box::new(DecoderSource {
            decoder,
            past_end: false,
        });
        Self::from_source(
            source,
            info.sample_rate,
            info.frames,
            path,
            settings,
            cfg,
            reader,
        )
    }

    /// Like [`open`](Player::open) over any [`Source`] at `file_rate` Hz, `frames` long when
    /// known: for tests and hosts that decode their own way. `path` only names the stream in
    /// messages.
    ///
    /// # Errors
    /// As [`open`](Player::open).
    pub fn from_source(
        source: Box<dyn Source>,
        file_rate: u32,
        frames: Option<u64>,
        path: &Path,
        settings: &PlayerSettings,
        cfg: &NodeConfig,
        reader: &Reader,
    ) -> Result<Self, PlayerError> {
        let file_channels = source.channels();
        let rate = cfg.sample_rate;
        let to_frame = |s: f64| (s * f64::from(file_rate)).round() as u64;
        let past_end = |name: &'static str, s: f64| -> Result<(), PlayerError> {
            match frames {
                Some(n) if to_frame(s) > n => Err(PlayerError::Setting {
                    name,
                    message: format!(
                        "{s} s is past the end of {} ({} s)",
                        path.display(),
                        n as f64 / f64::from(file_rate)
                    ),
                }),
                _ => Ok(()),
            }
        };
        past_end("start", settings.start)?;
        for &c in &settings.cues {
            past_end("cues", c)?;
        }
        let looping = if settings.looping {
            past_end("loop_end", settings.loop_end)?;
            let end = if settings.loop_end > 0.0 {
                to_frame(settings.loop_end)
            } else {
                frames.ok_or_else(|| PlayerError::Setting {
                    name: "loop_end",
                    message: format!(
                        "the length of {} is not in its header: give loop_end",
                        path.display()
                    ),
                })?
            };
            let start = to_frame(settings.loop_start);
            if start >= end {
                return Err(PlayerError::Setting {
                    name: "loop_start",
                    message: format!(
                        "the loop must end after it starts ({} s to {} s)",
                        settings.loop_start,
                        end as f64 / f64::from(file_rate)
                    ),
                });
            }
            Some(LoopRegion { start, end })
        } else {
            None
        };
        let resampler = Resampler::new(file_channels, file_rate, rate)
            .map_err(|e| PlayerError::File(with_path(e, path)))?;
        // A chunk of about 1/8 of the read-ahead, at least 256 frames.
        let ahead = (settings.read_ahead * f64::from(file_rate)).ceil() as usize;
        let chunk_frames = (ahead / 8).max(256);
        let config = StreamConfig {
            chunk_frames,
            chunks: ahead.div_ceil(chunk_frames).max(2),
            start: to_frame(settings.start),
            looping,
            cues: settings.cues.iter().map(|&c| to_frame(c)).collect(),
            cue_frames: ahead,
            label: format!("player ({})", path.display()),
        };
        let ring_bytes = config.ring_bytes(file_channels);
        let tap = stream::open(source, &config, reader).map_err(|e| {
            PlayerError::File(FileError::Corrupt {
                path: path.to_path_buf(),
                at_frame: match &e {
                    SourceError::Damaged { frame, .. } => Some(*frame),
                },
                detail: e.to_string(),
            })
        })?;
        // The most file frames one block can need: the block at the top speed, plus the
        // resampler's window.
        let max_in = (cfg.max_block as f64 * f64::from(file_rate) / f64::from(rate) * MAX_SPEED)
            .ceil() as usize
            + resampler.taps()
            + 8;
        let status = tap.status().clone();
        let speed = settings.speed;
        let mut player = Self {
            tap,
            file_channels,
            out_channels: settings.channels,
            file_rate,
            rate,
            resampler,
            resampling: file_rate != rate || speed != 1.0,
            gain: settings.gain,
            gain_curve: None,
            speed,
            playing: settings.autoplay,
            seek_seconds: settings.start as f32,
            playing_event: EventParam::default(),
            seek_event: EventParam::default(),
            file_buf: vec![0.0; max_in * file_channels].into_boxed_slice(),
            resampled: vec![0.0; cfg.max_block * file_channels].into_boxed_slice(),
            mapped: vec![0.0; cfg.max_block * settings.channels].into_boxed_slice(),
            status,
            ring_bytes,
        };
        player.resampler.set_speed(f64::from(speed));
        Ok(player)
    }

    /// The node's counts, as a concrete type (also handed out by [`Node::monitor`]).
    pub fn player_monitor(&self) -> PlayerMonitor {
        PlayerMonitor(self.status.clone())
    }

    /// Bytes the stream holds for its read-ahead (its ring of chunks), not counting cue
    /// caches.
    pub fn ring_bytes(&self) -> usize {
        self.ring_bytes
    }

    /// Whether it is playing (the `playing` event's state).
    pub fn is_playing(&self) -> bool {
        self.playing
    }

    fn seek_to(&mut self, seconds: f32) {
        self.seek_seconds = seconds;
        let frame = (f64::from(seconds) * f64::from(self.file_rate)).round() as u64;
        self.tap.seek(frame);
        self.resampling = self.file_rate != self.rate || self.speed != 1.0;
        self.resampler.reset();
    }

    fn set_speed(&mut self, speed: f32) {
        if speed != 1.0 && !self.resampling {
            // Leaving the exact path: the resampler starts from here with no history.
            self.resampler.reset();
            self.resampling = true;
        }
        self.speed = speed;
        self.resampler.set_speed(f64::from(speed));
    }

    fn accepts(index: usize, value: f32) -> bool {
        match PARAMS.get(index).map(|s| s.kind) {
            Some(ParamKind::Float { min, max, .. }) if PARAMS[index].live => {
                let v = f64::from(value);
                v.is_finite() && v >= min && v <= max
            }
            _ => false,
        }
    }
}

/// A path-less error (from the resampler) about `path`.
fn with_path(e: FileError, path: &Path) -> FileError {
    match e {
        FileError::Rate {
            from, to, detail, ..
        } => FileError::Rate {
            path: Some(path.to_path_buf()),
            from,
            to,
            detail,
        },
        FileError::Channels { channels, .. } => FileError::Channels {
            path: Some(path.to_path_buf()),
            channels,
        },
        other => other,
    }
}

impl Node for Player {
    fn type_name(&self) -> Option<&'static str> {
        Some(PLAYER.name)
    }

    fn input_channels(&self) -> usize {
        0
    }

    fn output_channels(&self) -> usize {
        self.out_channels
    }

    fn process(&mut self, ctx: &ProcessContext, _input: AudioRef<'_>, mut output: AudioMut<'_>) {
        let n = ctx.frames;
        if !self.playing {
            output.fill_zero();
            return;
        }
        let fch = self.file_channels;
        let och = self.out_channels;
        let frames: &[f32] = if self.resampling {
            let need = self
                .resampler
                .input_needed(n)
                .min(self.file_buf.len() / fch);
            let input = &mut self.file_buf[..need * fch];
            self.tap.read(input);
            let out = &mut self.resampled[..n * fch];
            let (_, written) = self.resampler.process(input, out);
            out[written * fch..].fill(0.0);
            out
        } else {
            let input = &mut self.file_buf[..n * fch];
            self.tap.read(input);
            input
        };
        map_channels(frames, fch, &mut self.mapped[..n * och], och);
        let mapped = &self.mapped[..n * och];
        for c in 0..och {
            let out = output.channel_mut(c);
            let samples = mapped.iter().skip(c).step_by(och);
            match &self.gain_curve {
                Some(curve) => {
                    for (k, (o, &s)) in out.iter_mut().zip(samples).enumerate() {
                        *o = s * curve.at(k);
                    }
                }
                None => {
                    let g = self.gain;
                    for (o, &s) in out.iter_mut().zip(samples) {
                        *o = s * g;
                    }
                }
            }
        }
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn get_param(&self, index: usize) -> Option<f32> {
        match index {
            P_GAIN => Some(self.gain),
            P_SPEED => Some(self.speed),
            P_PLAYING => Some(if self.playing { 1.0 } else { 0.0 }),
            P_SEEK => Some(self.seek_seconds),
            _ => None,
        }
    }

    fn set_param(&mut self, index: usize, value: f32) -> bool {
        if !Self::accepts(index, value) {
            return false;
        }
        match index {
            P_GAIN => {
                self.gain = value;
                self.gain_curve = None;
            }
            P_SPEED => self.set_speed(value),
            P_PLAYING => {
                if let Some(v) = self.playing_event.set(value) {
                    self.playing = v >= 0.5;
                }
            }
            P_SEEK => {
                if let Some(v) = self.seek_event.set(value) {
                    self.seek_to(v);
                }
            }
            _ => return false,
        }
        true
    }

    fn follow_param(&mut self, index: usize, curve: ParamCurve) -> bool {
        let (lo, hi) = curve.bounds();
        if !Self::accepts(index, lo) || !Self::accepts(index, hi) {
            return false;
        }
        match index {
            P_GAIN => self.gain_curve = Some(curve),
            P_PLAYING => {
                if let Some(v) = self.playing_event.follow(&curve) {
                    self.playing = v >= 0.5;
                }
            }
            P_SEEK => {
                if let Some(v) = self.seek_event.follow(&curve) {
                    self.seek_to(v);
                }
            }
            // The resampler's speed is updated at control rate.
            _ => return false,
        }
        true
    }

    fn set_offline(&mut self, offline: bool) {
        self.tap.set_wait(offline);
    }

    fn monitor(&self) -> Option<SharedMonitor> {
        Some(Arc::new(self.player_monitor()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_ramp_acts_once_on_its_target() {
        let mut e = EventParam::default();
        let ramp = ParamCurve::ramp(downbeat_graph::Shape::Linear, 0.0, 3.0, 240);
        assert_eq!(e.follow(&ramp), Some(3.0));
        assert_eq!(e.follow(&ramp), None); // the next sub-block of the same ramp
        assert_eq!(e.set(3.0), None); // the ramp's end
        assert_eq!(e.set(3.0), Some(3.0)); // a new step to the same value acts again
    }
}
