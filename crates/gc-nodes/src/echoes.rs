//! `echoes`: every onset in the input becomes a tap, an object in the collected heap with a
//! delay line of its own, that repeats what followed the onset with a decaying gain, and is
//! unlinked (garbage for the collector) once it has faded below -60 dB.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use downbeat_gc::{gc_struct, AccessError, Atomic, Block, Collector, Config, GcError, Mutator};
use downbeat_graph::{
    AudioMut, AudioRef, Node, NodeConfig, NodeCount, NodeMonitor, NodeType, ParamError, ParamKind,
    ParamSpec, ParamValue, Params, ProcessContext, SharedMonitor, Unit,
};
use downbeat_nodes::CHANNELS;

use crate::plan::HeapPlan;

/// Most taps one node may keep alive at once (the upper end of `max_taps`).
pub const MAX_TAPS: usize = 64;

/// A tap ends when the gain of its next pass would fall below this (-60 dB).
pub const DEATH_LEVEL: f32 = 0.001;

/// Release time of the onset detector's peak envelope, in seconds.
pub const RELEASE_SECONDS: f32 = 0.010;

/// The onset detector re-arms once its envelope falls below this fraction of `threshold`
/// (6 dB under it): after a sound at 10 times the threshold, three release times (30 ms).
pub const REARM: f32 = 0.5;

/// How often the collector takes a full snapshot even when nothing was allocated: the
/// longest a faded tap waits to be collected while no onset comes.
pub const FULL_SNAPSHOT_EVERY: Duration = Duration::from_millis(250);

gc_struct! {
    /// One tap: its delay line, the next tap of the node's list, and where it is.
    struct Tap {
        refs {
            /// Its delay line: `line_samples` samples of each channel, channel after channel.
            line / set_line: Atomic,
            /// The next tap in the list that root slot 0 holds.
            next / set_next: Tap,
        }
        data {
            /// Position in the line of the next sample.
            pos / set_pos: usize,
            /// Gain of the pass being played, relative to the captured input.
            level / set_level: f32,
            /// Gain from one pass to the next (the node's `feedback` at the onset).
            decay / set_decay: f32,
            /// Still in its first pass, recording the input into the line.
            capturing / set_capturing: bool,
            /// Frame of the current block at which the tap starts (its onset), 0 afterwards.
            start / set_start: usize,
        }
    }
}

/// Words of one tap object: its header, references and data words.
pub(crate) const TAP_WORDS: usize = 1 + Tap::REFS + Tap::DATA;

/// What the `echoes` node type's parameters say, for [`Echoes::new`].
///
/// ```
/// let s = downbeat_gc_nodes::EchoesSettings::default();
/// assert_eq!((s.delay, s.max_taps), (0.25, 16));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EchoesSettings {
    /// Seconds between an onset and its first echo, and between echoes (0.001 to 2). Sizes
    /// every tap's line, so it cannot change while playing.
    pub delay: f64,
    /// Gain of each echo relative to the one before (0 to 0.99). A tap keeps the value it
    /// had at its onset.
    pub feedback: f32,
    /// Input peak level (linear, 0.001 to 1) that makes an onset.
    pub threshold: f32,
    /// Taps alive at once (1 to [`MAX_TAPS`]); an onset beyond them is dropped and counted.
    pub max_taps: usize,
    /// 0 passes the input only, 1 the echoes only; `(1 - mix) * input + mix * echoes`.
    pub mix: f32,
}

impl Default for EchoesSettings {
    /// The defaults of the `echoes` node type.
    fn default() -> Self {
        Self {
            delay: 0.25,
            feedback: 0.6,
            threshold: 0.1,
            max_taps: 16,
            mix: 0.5,
        }
    }
}

/// The tap counters of one node, written by the audio thread and readable from any other
/// through an [`EchoesMonitor`].
#[derive(Debug, Default)]
struct Counters {
    started: AtomicU64,
    ended: AtomicU64,
    dropped_full: AtomicU64,
    dropped_heap: AtomicU64,
    errors: AtomicU64,
    live: AtomicU64,
}

impl Counters {
    fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

impl Counters {
    fn read(&self) -> TapCounts {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        TapCounts {
            started: get(&self.started),
            ended: get(&self.ended),
            dropped_full: get(&self.dropped_full),
            dropped_heap: get(&self.dropped_heap),
            errors: get(&self.errors),
            live: get(&self.live),
        }
    }
}

impl NodeMonitor for Counters {
    fn counts(&self) -> Vec<NodeCount> {
        let c = self.read();
        let count = |name, value, loss| NodeCount { name, value, loss };
        vec![
            count("started", c.started, false),
            count("ended", c.ended, false),
            count("live", c.live, false),
            count("dropped_full", c.dropped_full, true),
            count("dropped_heap", c.dropped_heap, true),
            count("errors", c.errors, true),
        ]
    }
}

/// What happened to a node's onsets and taps so far: a copy of its counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TapCounts {
    /// Taps started (onsets that got a tap).
    pub started: u64,
    /// Taps that faded and were unlinked from the list (garbage for the collector).
    pub ended: u64,
    /// Onsets dropped because `max_taps` taps were alive when their block began.
    pub dropped_full: u64,
    /// Onsets dropped because the collected heap had no room (the collector was more than
    /// [`SLACK_SECONDS`](crate::SLACK_SECONDS) behind): `GcError::OutOfMemory` or
    /// `OutOfSlots` from an allocation, counted here instead of a panic.
    pub dropped_heap: u64,
    /// Accesses the heap refused (`AccessError`): a bug in this node if ever non-zero. The
    /// block's remaining taps are skipped (silent for that block), nothing panics.
    pub errors: u64,
    /// Taps alive at the end of the last block.
    pub live: u64,
}

/// Reads a node's [`TapCounts`] from any thread while the node plays (the node itself moves
/// into a schedule). Cheap to clone.
///
/// ```
/// use downbeat_gc_nodes::{Echoes, EchoesSettings};
/// let node = Echoes::new(1, 48_000, &EchoesSettings::default()).unwrap();
/// let monitor = node.monitor();
/// assert_eq!(monitor.counts().started, 0);
/// ```
#[derive(Clone, Debug)]
pub struct EchoesMonitor(Arc<Counters>);

impl EchoesMonitor {
    /// The counters now.
    pub fn counts(&self) -> TapCounts {
        self.0.read()
    }
}

/// The collected heap of one node, as its mutator and collector count it: for tests and
/// reports, read off the audio thread (it takes `&Echoes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeapStats {
    /// Tap objects allocated and not yet returned by the collector (live and garbage).
    pub live_objects: u64,
    /// Delay lines allocated and not yet returned.
    pub live_lines: u64,
    /// Tap objects the collector returned.
    pub objects_freed: u64,
    /// Delay lines the collector returned.
    pub lines_freed: u64,
    /// Collections completed.
    pub collections: u64,
}

/// Why a tap could not be made, rendered or unlinked (all counted, none panics).
enum Fault {
    /// An allocation failed: no room in the heap.
    Heap,
    /// The heap refused an access, or a tap's fields are inconsistent.
    Access,
}

impl From<GcError> for Fault {
    fn from(_: GcError) -> Self {
        Fault::Heap
    }
}

impl From<AccessError> for Fault {
    fn from(_: AccessError) -> Self {
        Fault::Access
    }
}

/// The `echoes` node: onset-triggered taps whose state lives in the collected heap of
/// `downbeat-gc`, one collector per node.
///
/// Each onset of the input (its peak envelope, with a 10 ms release, rising through
/// `threshold` after it had fallen 6 dB below it) allocates a tap
/// and a delay line of `delay` seconds of every channel, and links the tap at the head of a
/// list that root slot 0 holds. The tap spends its first `delay` recording the input from
/// the onset, then plays it back again and again, each pass `feedback` times the one before:
/// echo `k` (from 1) of the onset sounds `k * delay` after it at gain `feedback^k`. When the
/// next pass would be below [`DEATH_LEVEL`] the tap is unlinked; nothing refers to it any
/// more, and the collector returns its object and line to the heaps. So the heap grows with
/// onsets and shrinks as they fade.
///
/// [`process`](Node::process) runs one collector block ([`Mutator::begin_block`] and its
/// end), allocates at most `max_taps` taps, and touches each live tap once: no allocation,
/// lock or system call while the collector keeps up (see the crate docs for when it does
/// not).
///
/// ```
/// use downbeat_gc_nodes::{Echoes, EchoesSettings};
/// use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};
///
/// let settings = EchoesSettings { delay: 0.001, feedback: 0.5, mix: 1.0, ..Default::default() };
/// let mut node = Echoes::new(1, 48_000, &settings).unwrap(); // 48-sample delay
/// let mut input = vec![0.0f32; 256];
/// input[0] = 1.0; // an impulse: one onset
/// let mut out = vec![0.0f32; 256];
/// let ctx = ProcessContext::new(48_000, 256, 0);
/// node.process(&ctx, AudioRef::new(&input, 1, 256, 256), AudioMut::new(&mut out, 1, 256, 256));
/// assert_eq!((out[0], out[48], out[96], out[144]), (0.0, 0.5, 0.25, 0.125));
/// assert_eq!(node.monitor().counts().started, 1);
/// ```
pub struct Echoes {
    // Declared first, so dropped first: the collector's threads stop before the heaps go.
    collector: Collector,
    mutator: Mutator,
    state: State,
}

/// Everything but the heap, so that a block of the heap and the node's own state can be
/// borrowed at once.
struct State {
    channels: usize,
    plan: HeapPlan,
    max_taps: usize,
    feedback: f32,
    threshold: f32,
    mix: f32,
    /// Per-sample factor of the envelope's decay.
    release: f32,
    envelope: f32,
    armed: bool,
    /// Onset frames of the current block.
    onsets: [usize; MAX_TAPS],
    onsets_len: usize,
    /// Taps in the list.
    live: usize,
    counters: Arc<Counters>,
}

/// The machine's copy rate p(M), measured once per process (about 0.1 s, 128 MiB for a
/// moment) rather than once per node.
fn copy_rate() -> f64 {
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(|| downbeat_gc::measure_copy_rate(64 << 20, 8))
}

fn invalid(name: &str, message: String) -> ParamError {
    ParamError::Invalid {
        name: name.into(),
        message,
    }
}

impl Echoes {
    /// A node on `channels` channels at `sample_rate` Hz: sizes its heaps ([`HeapPlan`])
    /// and starts its collector's two threads. Off the audio thread.
    ///
    /// # Errors
    /// [`ParamError::Invalid`] naming the setting out of range (`channels` 1 to 32, and the
    /// ranges of [`EchoesSettings`]), `max_taps` when the heaps would be too large
    /// ([`MAX_ATOMIC_BYTES`](crate::MAX_ATOMIC_BYTES)), or when the collector cannot start.
    pub fn new(
        channels: usize,
        sample_rate: u32,
        settings: &EchoesSettings,
    ) -> Result<Self, ParamError> {
        let s = settings;
        if !(1..=32).contains(&channels) {
            return Err(invalid(
                "channels",
                format!("got {channels}, expected an integer from 1 to 32"),
            ));
        }
        if sample_rate == 0 {
            return Err(invalid(
                "sample_rate",
                "got 0, expected a positive number of Hz".to_string(),
            ));
        }
        let checks: [(&str, f64, f64, f64); 4] = [
            ("delay", s.delay, 0.001, 2.0),
            ("feedback", f64::from(s.feedback), 0.0, 0.99),
            ("threshold", f64::from(s.threshold), 0.001, 1.0),
            ("mix", f64::from(s.mix), 0.0, 1.0),
        ];
        for (name, v, min, max) in checks {
            if !(v.is_finite() && (min..=max).contains(&v)) {
                return Err(invalid(
                    name,
                    format!("got {v}, expected a number from {min} to {max}"),
                ));
            }
        }
        if !(1..=MAX_TAPS).contains(&s.max_taps) {
            return Err(invalid(
                "max_taps",
                format!(
                    "got {}, expected an integer from 1 to {MAX_TAPS}",
                    s.max_taps
                ),
            ));
        }
        let rate = f64::from(sample_rate);
        let line_samples = (s.delay * rate).round().max(1.0) as usize;
        let plan = HeapPlan::new(channels, line_samples, s.max_taps, sample_rate)?;
        let config = Config {
            full_snapshot_every: FULL_SNAPSHOT_EVERY,
            copy_rate: Some(copy_rate()),
            ..plan.config()
        };
        let (mutator, collector) = downbeat_gc::start(config).map_err(|e| {
            invalid(
                "max_taps",
                format!("the collected heap for these taps cannot start: {e}"),
            )
        })?;
        Ok(Self {
            collector,
            mutator,
            state: State {
                channels,
                plan,
                max_taps: s.max_taps,
                feedback: s.feedback,
                threshold: s.threshold,
                mix: s.mix,
                release: (-1.0 / (RELEASE_SECONDS * sample_rate as f32)).exp(),
                envelope: 0.0,
                armed: true,
                onsets: [0; MAX_TAPS],
                onsets_len: 0,
                live: 0,
                counters: Arc::default(),
            },
        })
    }

    /// The node a project file's `[nodes.NAME]` table with `type = "echoes"` makes, as its
    /// concrete type (so that its [`monitor`](Echoes::monitor) can be kept); `params` are
    /// the table's keys other than `type`.
    ///
    /// ```
    /// use downbeat_gc_nodes::Echoes;
    /// use downbeat_graph::{NodeConfig, ParamValue};
    ///
    /// let cfg = NodeConfig { sample_rate: 48_000, max_block: 256 };
    /// let node = Echoes::from_params(vec![("mix".into(), ParamValue::Float(1.0))], &cfg).unwrap();
    /// assert_eq!(node.plan().line_samples, 12_000); // the default delay, 0.25 s
    /// ```
    ///
    /// # Errors
    /// [`ParamError::Unknown`] for a key the type does not take, [`ParamError::Invalid`]
    /// as for [`Echoes::new`].
    pub fn from_params(
        params: Vec<(String, ParamValue)>,
        cfg: &NodeConfig,
    ) -> Result<Self, ParamError> {
        Self::from_validated(&Params::validate(PARAMS, params)?, cfg)
    }

    fn from_validated(p: &Params, cfg: &NodeConfig) -> Result<Self, ParamError> {
        let settings = EchoesSettings {
            delay: p.float("delay"),
            feedback: p.float("feedback") as f32,
            threshold: p.float("threshold") as f32,
            max_taps: p.int("max_taps") as usize,
            mix: p.float("mix") as f32,
        };
        Self::new(p.int("channels") as usize, cfg.sample_rate, &settings)
    }

    /// A handle to read the tap counters from another thread while the node plays.
    pub fn monitor(&self) -> EchoesMonitor {
        EchoesMonitor(self.state.counters.clone())
    }

    /// The sizes this node's heaps were given.
    pub fn plan(&self) -> HeapPlan {
        self.state.plan
    }

    /// The collected heap as its mutator and collector count it now.
    pub fn heap(&self) -> HeapStats {
        let (live_objects, live_lines) = self.mutator.live();
        let m = self.mutator.stats();
        HeapStats {
            live_objects,
            live_lines,
            objects_freed: m.objects_freed,
            lines_freed: m.atomic_freed,
            collections: self.collector.stats().cycles,
        }
    }

    /// Whether a snapshot is requested and not copied yet: the next
    /// [`process`](Node::process) would wait for it (spinning, and after 2 ms yielding).
    pub fn snapshot_pending(&self) -> bool {
        self.mutator.snapshot_pending()
    }

    /// Whether the collector has nothing in progress.
    pub fn collector_idle(&self) -> bool {
        self.collector.is_idle()
    }
}

impl State {
    /// Finds the onsets of `frames` frames of `input`: where the peak envelope rises through
    /// the threshold, having fallen below [`REARM`] times it since the last onset.
    fn detect(&mut self, input: &AudioRef<'_>, channels: usize, frames: usize) {
        self.onsets_len = 0;
        for k in 0..frames {
            let mut peak = 0.0f32;
            for c in 0..channels {
                peak = peak.max(input.channel(c)[k].abs());
            }
            self.envelope = peak.max(self.envelope * self.release);
            if self.envelope < REARM * self.threshold {
                // Hysteresis: a sound decaying through the threshold, wobbling as it goes,
                // makes one onset, not one per wobble.
                self.armed = true;
            } else if self.armed && self.envelope >= self.threshold {
                self.armed = false;
                if self.onsets_len < MAX_TAPS {
                    self.onsets[self.onsets_len] = k;
                    self.onsets_len += 1;
                } else {
                    // More onsets in one block than any node may have taps.
                    Counters::bump(&self.counters.dropped_full);
                }
            }
        }
    }

    /// Makes a tap starting at frame `at` and links it at the head of the list.
    fn spawn(&mut self, b: &mut Block<'_>, at: usize) -> Result<(), Fault> {
        let tap = Tap::alloc(b)?;
        // Not zeroed: the tap writes every sample of its line before it reads one.
        let line = b.alloc_atomic(self.plan.line_bytes)?;
        let head = b.root(0)?.map(Tap::from_gc);
        tap.set_line(b, Some(line))?;
        tap.set_next(b, head)?;
        tap.set_level(b, 1.0)?;
        tap.set_decay(b, self.feedback)?;
        tap.set_capturing(b, true)?;
        tap.set_start(b, at)?;
        b.set_root(0, Some(tap.gc()))?;
        Ok(())
    }

    /// Renders every tap into `output` and unlinks the ones that ended.
    fn walk(
        &mut self,
        b: &mut Block<'_>,
        input: &AudioRef<'_>,
        output: &mut AudioMut<'_>,
        channels: usize,
        frames: usize,
    ) -> Result<(), Fault> {
        let mut prev: Option<Tap> = None;
        let mut cur = b.root(0)?.map(Tap::from_gc);
        // Counted before the walk: `self.live` drops as taps end on the way.
        let in_list = self.live;
        let mut visited = 0;
        while let Some(tap) = cur {
            visited += 1;
            if visited > in_list {
                // The list is longer than the taps made: never, unless the node has a bug.
                return Err(Fault::Access);
            }
            let next = tap.next(b)?;
            if self.render(b, tap, input, output, channels, frames)? {
                prev = Some(tap);
            } else {
                match prev {
                    Some(p) => p.set_next(b, next)?,
                    None => b.set_root(0, next.map(Tap::gc))?,
                }
                self.live -= 1;
                Counters::bump(&self.counters.ended);
            }
            cur = next;
        }
        Ok(())
    }

    /// Adds one block of `tap` to `output`; returns whether it goes on.
    fn render(
        &mut self,
        b: &mut Block<'_>,
        tap: Tap,
        input: &AudioRef<'_>,
        output: &mut AudioMut<'_>,
        channels: usize,
        frames: usize,
    ) -> Result<bool, Fault> {
        let line: Atomic = tap.line(b)?.ok_or(Fault::Access)?;
        let (pos, level, decay) = (tap.pos(b)?, tap.level(b)?, tap.decay(b)?);
        let (capturing, start) = (tap.capturing(b)?, tap.start(b)?.min(frames));
        let d = self.plan.line_samples;
        let mix = self.mix;
        let buf = b.samples(line).ok_or(Fault::Access)?;
        if pos >= d || buf.len() < d * channels {
            return Err(Fault::Access);
        }
        // Every channel goes through the same passes; the last one's state is kept.
        let mut end = (pos, level, capturing, false);
        for c in 0..channels {
            let seg = &mut buf[c * d..(c + 1) * d];
            let (x, y) = (input.channel(c), output.channel_mut(c));
            let (mut p, mut lv, mut cap, mut dead) = (pos, level, capturing, false);
            for k in start..frames {
                if cap {
                    seg[p] = x[k];
                } else {
                    let v = decay * seg[p];
                    seg[p] = v;
                    y[k] += mix * v;
                }
                p += 1;
                if p == d {
                    p = 0;
                    lv = if cap { decay } else { lv * decay };
                    cap = false;
                    if lv < DEATH_LEVEL {
                        dead = true;
                        break;
                    }
                }
            }
            end = (p, lv, cap, dead);
        }
        let (p, lv, cap, dead) = end;
        tap.set_pos(b, p)?;
        tap.set_level(b, lv)?;
        tap.set_capturing(b, cap)?;
        tap.set_start(b, 0)?;
        Ok(!dead)
    }

    /// One block: new taps for the onsets, then every tap rendered.
    fn run(
        &mut self,
        b: &mut Block<'_>,
        input: &AudioRef<'_>,
        output: &mut AudioMut<'_>,
        channels: usize,
        frames: usize,
    ) {
        for i in 0..self.onsets_len {
            if self.live >= self.max_taps {
                Counters::bump(&self.counters.dropped_full);
                continue;
            }
            match self.spawn(b, self.onsets[i]) {
                Ok(()) => {
                    self.live += 1;
                    Counters::bump(&self.counters.started);
                }
                Err(Fault::Heap) => Counters::bump(&self.counters.dropped_heap),
                Err(Fault::Access) => Counters::bump(&self.counters.errors),
            }
        }
        if self.walk(b, input, output, channels, frames).is_err() {
            Counters::bump(&self.counters.errors);
        }
        self.counters
            .live
            .store(self.live as u64, Ordering::Relaxed);
    }
}

const P_FEEDBACK: usize = 2;
const P_THRESHOLD: usize = 3;
const P_MIX: usize = 5;

static PARAMS: &[ParamSpec] = &[
    CHANNELS,
    ParamSpec {
        name: "delay",
        doc: "seconds from an onset to its first echo and between echoes; sizes each tap's \
              delay line",
        kind: ParamKind::Float {
            min: 0.001,
            max: 2.0,
            default: 0.25,
        },
        unit: Unit::Seconds,
        live: false,
    },
    ParamSpec {
        name: "feedback",
        doc: "gain of each echo relative to the previous one; a tap keeps the value of its \
              onset and is collected once below -60 dB",
        kind: ParamKind::Float {
            min: 0.0,
            max: 0.99,
            default: 0.6,
        },
        unit: Unit::None,
        live: true,
    },
    ParamSpec {
        name: "threshold",
        doc: "input peak level (linear) whose crossing starts a tap; the next onset needs \
              the level to fall 6 dB below it first",
        kind: ParamKind::Float {
            min: 0.001,
            max: 1.0,
            default: 0.1,
        },
        unit: Unit::None,
        live: true,
    },
    ParamSpec {
        name: "max_taps",
        doc: "taps alive at once; onsets beyond them are dropped and counted",
        kind: ParamKind::Int {
            min: 1,
            max: MAX_TAPS as i64,
            default: 16,
        },
        unit: Unit::None,
        live: false,
    },
    ParamSpec {
        name: "mix",
        doc: "0 passes the input only, 1 the echoes only",
        kind: ParamKind::Float {
            min: 0.0,
            max: 1.0,
            default: 0.5,
        },
        unit: Unit::None,
        live: true,
    },
];

/// The `echoes` node type, for `downbeat::register_node_type`.
pub const ECHOES: NodeType = NodeType {
    name: "echoes",
    doc: "onset-triggered echoes whose taps live in a collected heap (downbeat-gc): born on \
          onsets, collected when they fade",
    params: PARAMS,
    build,
};

fn build(p: &Params, cfg: &NodeConfig) -> Result<Box<dyn Node>, ParamError> {
    Ok(Box::new(Echoes::from_validated(p, cfg)?))
}

/// Whether `value` is in the range of the float parameter at `index`.
fn accepts(index: usize, value: f32) -> bool {
    match PARAMS.get(index).map(|s| s.kind) {
        Some(ParamKind::Float { min, max, .. }) => {
            let v = f64::from(value);
            v.is_finite() && v >= min && v <= max
        }
        _ => false,
    }
}

impl Node for Echoes {
    fn input_channels(&self) -> usize {
        self.state.channels
    }

    /// The tap counters, for hosts that only see a `Box<dyn Node>` (the `downbeat` CLI
    /// prints them after a run): [`TapCounts`]' fields by name, the drops and errors
    /// marked as losses.
    fn monitor(&self) -> Option<SharedMonitor> {
        Some(self.state.counters.clone())
    }

    fn output_channels(&self) -> usize {
        self.state.channels
    }

    fn process(&mut self, _ctx: &ProcessContext, input: AudioRef<'_>, mut output: AudioMut<'_>) {
        let s = &mut self.state;
        let channels = s.channels.min(input.channels()).min(output.channels());
        let frames = output.frames().min(input.frames());
        let dry = 1.0 - s.mix;
        for c in 0..channels {
            let x = input.channel(c);
            for (y, x) in output.channel_mut(c)[..frames].iter_mut().zip(x) {
                *y = dry * x;
            }
        }
        for c in channels..output.channels() {
            output.channel_mut(c).fill(0.0);
        }
        s.detect(&input, channels, frames);
        let mut block = self.mutator.begin_block();
        self.state
            .run(&mut block, &input, &mut output, channels, frames);
        // Dropping the block ends it: the collector decides whether to take a snapshot.
    }

    fn set_param(&mut self, index: usize, value: f32) -> bool {
        if !accepts(index, value) {
            return false;
        }
        let s = &mut self.state;
        match index {
            P_FEEDBACK => s.feedback = value,
            P_THRESHOLD => s.threshold = value,
            P_MIX => s.mix = value,
            _ => return false,
        }
        true
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn get_param(&self, index: usize) -> Option<f32> {
        let s = &self.state;
        match index {
            P_FEEDBACK => Some(s.feedback),
            P_THRESHOLD => Some(s.threshold),
            P_MIX => Some(s.mix),
            _ => None,
        }
    }
}
