//! Sample-accurate events on a running schedule: a change scheduled at frame k changes the
//! output exactly at sample k, ramps follow their closed form, and the result does not
//! depend on the block size or on serial versus parallel processing.
// Reference signals and measurements may use the platform's math; the engine may not.
#![allow(clippy::disallowed_methods)]

use downbeat_graph::{
    AudioMut, AudioRef, Change, CompileConfig, ControlError, Event, Graph, Node, NodeConfig,
    NodeEvent, ParamCurve, ParamId, ParamKind, ParamSpec, ProcessContext, Ramp, Schedule, Shape,
    Target, Unit, CONTROL_FRAMES,
};
use downbeat_nodes::node_types;
use downbeat_nodes::{
    Biquad, BiquadSettings, FilterMode, Gain, Karplus, KarplusSettings, Mix, MixSettings, Noise,
    NoiseSettings, Sine, SineSettings,
};
use downbeat_nodes::{CompressorSettings, Output, SpectralCompressor};
use downbeat_rt::guard;
use downbeat_rt::pool::{Pool, PoolConfig};

downbeat_rt::install_guard_allocator!();

const SR: u32 = 48000;
const BLOCKS: [usize; 3] = [64, 256, 1000];

/// 1.0 on every channel: through a gain, the output is the gain.
struct Dc(usize);

impl Node for Dc {
    fn input_channels(&self) -> usize {
        0
    }
    fn output_channels(&self) -> usize {
        self.0
    }
    fn process(&mut self, _: &ProcessContext, _: AudioRef<'_>, mut out: AudioMut<'_>) {
        out.channels_mut().for_each(|c| c.fill(1.0));
    }
}

static PROBE_PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "value",
    doc: "what the probe outputs",
    kind: ParamKind::Float {
        min: -1000.0,
        max: 1000.0,
        default: 0.0,
    },
    unit: Unit::None,
    live: true,
}];

/// Outputs its one live parameter as it sees it: per sample when it follows curves, else the
/// value of its last `set_param`.
struct Probe {
    value: f32,
    curve: Option<ParamCurve>,
    follows: bool,
}

impl Probe {
    fn new(follows: bool) -> Self {
        Self {
            value: 0.0,
            curve: None,
            follows,
        }
    }
}

impl Node for Probe {
    fn input_channels(&self) -> usize {
        0
    }
    fn output_channels(&self) -> usize {
        1
    }
    fn process(&mut self, _: &ProcessContext, _: AudioRef<'_>, mut out: AudioMut<'_>) {
        for (k, o) in out.channel_mut(0).iter_mut().enumerate() {
            *o = self.curve.map_or(self.value, |c| c.at(k));
        }
    }
    fn set_param(&mut self, index: usize, value: f32) -> bool {
        self.value = value;
        self.curve = None;
        index == 0
    }
    fn params(&self) -> &'static [ParamSpec] {
        PROBE_PARAMS
    }
    fn get_param(&self, index: usize) -> Option<f32> {
        (index == 0).then_some(self.value)
    }
    fn follow_param(&mut self, index: usize, curve: ParamCurve) -> bool {
        if self.follows && index == 0 {
            self.curve = Some(curve);
        }
        self.follows
    }
}

fn cfg(block: usize) -> CompileConfig {
    CompileConfig {
        sample_rate: SR,
        max_block: block,
    }
}

/// `dc -> gain -> out`, mono.
fn gain_graph(block: usize) -> Schedule {
    let mut g = Graph::new();
    let dc = g.add("dc", Dc(1));
    let gain = g.add("gain", Gain::new(1, 1.0));
    let out = g.add("out", Output::new(1));
    g.connect(dc, gain);
    g.connect(gain, out);
    g.set_output(out);
    g.compile(cfg(block)).unwrap()
}

/// `probe -> out`.
fn probe_graph(block: usize, follows: bool) -> Schedule {
    let mut g = Graph::new();
    let p = g.add("probe", Probe::new(follows));
    let out = g.add("out", Output::new(1));
    g.connect(p, out);
    g.set_output(out);
    g.compile(cfg(block)).unwrap()
}

fn pool() -> Pool {
    Pool::new(PoolConfig {
        workers: Some(2),
        ..PoolConfig::default()
    })
}

/// Renders `frames` frames of channel 0 in blocks of the schedule's block size, serially or
/// on `pool`; `before_block(schedule, position)` runs before each block.
fn render(
    s: &mut Schedule,
    frames: usize,
    pool: Option<&Pool>,
    mut before_block: impl FnMut(&mut Schedule, u64),
) -> Vec<f32> {
    let block = s.config().max_block;
    let mut out = Vec::with_capacity(frames);
    while out.len() < frames {
        let n = block.min(frames - out.len());
        before_block(s, out.len() as u64);
        match pool {
            Some(p) => s.process_parallel(n, p),
            None => s.process(n),
        }
        out.extend_from_slice(s.output().channel(0));
    }
    out
}

fn id(s: &Schedule, node: &str, param: &str) -> ParamId {
    s.param_table().resolve(node, param).unwrap()
}

fn linear(from: f32, to: f32, start: u64, frames: u32) -> Change {
    let _ = start;
    Change::Ramp(Ramp {
        shape: Shape::Linear,
        from: Some(from),
        to,
        frames,
    })
}

#[test]
fn a_step_at_frame_k_changes_the_output_exactly_at_sample_k() {
    let pool = pool();
    for block in BLOCKS {
        // First and last frame of a block, the very first frame, and frames across blocks.
        let frames = [
            0,
            block as u64,
            2 * block as u64 - 1,
            3 * block as u64 + 7,
            5 * block as u64 - 1,
            5 * block as u64,
        ];
        for parallel in [false, true] {
            let mut s = gain_graph(block);
            let gain = id(&s, "gain", "gain");
            for (j, &k) in frames.iter().enumerate() {
                let v = 0.1 * (j + 1) as f32;
                s.push_event(Event::param(Some(k), gain, Change::Step(v)))
                    .unwrap();
            }
            let out = render(&mut s, 6 * block, parallel.then_some(&pool), |_, _| {});
            for (n, &x) in out.iter().enumerate() {
                let last = frames.iter().rposition(|&k| k <= n as u64);
                let want = last.map_or(1.0, |j| 0.1 * (j + 1) as f32);
                assert_eq!(x, want, "block {block}, parallel {parallel}, sample {n}");
            }
            assert_eq!(s.event_stats().applied, frames.len() as u64);
            assert_eq!(s.event_stats().late, 0);
        }
    }
}

#[test]
fn a_smoothed_set_starts_at_its_frame_and_reaches_its_value_after_the_smoothing_time() {
    for block in BLOCKS {
        let mut s = gain_graph(block);
        let gain = id(&s, "gain", "gain");
        let k = block as u64 - 1;
        s.push_event(Event::param(Some(k), gain, Change::Set(0.0)))
            .unwrap();
        let out = render(&mut s, 4 * block + 300, None, |_, _| {});
        let smoothing = (0.005 * f64::from(SR)) as usize; // the default, 5 ms
        let k = k as usize;
        assert!(
            out[..=k].iter().all(|&x| x == 1.0),
            "untouched up to and at k"
        );
        for j in 0..=smoothing {
            let want = 1.0 - j as f64 / smoothing as f64;
            assert!((f64::from(out[k + j]) - want).abs() < 1e-6, "k + {j}");
        }
        assert!(out[k + smoothing..].iter().all(|&x| x == 0.0));
    }
}

/// A ramp's samples, per sample, against its closed form, for a node that follows curves
/// (the gain) and one that is a probe of what the schedule hands over.
#[test]
fn ramps_match_their_closed_form_within_1e_6() {
    let pool = pool();
    let cases: [(Shape, f32, f32, u64, u32); 3] = [
        (Shape::Linear, 0.2, 0.9, 300, 500),
        (Shape::Exponential, 0.1, 0.8, 63, 777),
        (Shape::Exponential, 4.0, 0.05, 1000, 2000),
    ];
    for block in BLOCKS {
        for parallel in [false, true] {
            for &(shape, from, to, start, frames) in &cases {
                let mut s = gain_graph(block);
                let gain = id(&s, "gain", "gain");
                let ramp = Ramp {
                    shape,
                    from: Some(from),
                    to,
                    frames,
                };
                s.push_event(Event::param(Some(start), gain, Change::Ramp(ramp)))
                    .unwrap();
                let total = (start + u64::from(frames)) as usize + 2 * block;
                let out = render(&mut s, total, parallel.then_some(&pool), |_, _| {});
                for (n, &x) in out.iter().enumerate() {
                    let n = n as u64;
                    let want = if n < start {
                        1.0
                    } else {
                        let t = ((n - start) as f64 / f64::from(frames)).min(1.0);
                        let (a, b) = (f64::from(from), f64::from(to));
                        match shape {
                            Shape::Linear => a + (b - a) * t,
                            Shape::Exponential => a * (b / a).powf(t),
                        }
                    };
                    let err = (f64::from(x) - want).abs() / want.abs().max(1.0);
                    assert!(
                        err < 1e-6,
                        "{shape:?} block {block} parallel {parallel} frame {n}: {x} vs {want}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_ramp_interrupted_by_a_new_event_starts_from_the_value_reached() {
    for block in BLOCKS {
        let mut s = probe_graph(block, true);
        let p = id(&s, "probe", "value");
        s.push_event(Event::param(Some(100), p, linear(0.0, 1.0, 100, 1000)))
            .unwrap();
        // Halfway up, a ramp down to 0 over 200 frames, from wherever the first one is.
        let down = Change::Ramp(Ramp {
            shape: Shape::Linear,
            from: None,
            to: 0.0,
            frames: 200,
        });
        s.push_event(Event::param(Some(600), p, down)).unwrap();
        let out = render(&mut s, 2000, None, |_, _| {});
        for (n, &x) in out.iter().enumerate() {
            let want = match n {
                0..=99 => 0.0,
                100..=599 => (n - 100) as f64 / 1000.0,
                600..=799 => 0.5 * (1.0 - (n - 600) as f64 / 200.0),
                _ => 0.0,
            };
            assert!(
                (f64::from(x) - want).abs() < 1e-6,
                "block {block} frame {n}: {x}"
            );
        }
    }
}

/// A node that does not follow curves holds each control period's value (aligned to
/// multiples of `CONTROL_FRAMES` on the timeline, or the ramp's start) and gets the target
/// exactly at the ramp's end, whatever the block size.
#[test]
fn nodes_that_do_not_follow_get_control_rate_values_aligned_to_the_timeline() {
    // Across the block boundaries at 1000 and 2000, which are not multiples of 32.
    let (start, frames) = (70u64, 2333u32);
    let end = start + u64::from(frames);
    let closed = |n: u64| 2.0 + 6.0 * ((n - start) as f64 / f64::from(frames)).min(1.0);
    let mut reference = None;
    for block in BLOCKS {
        let mut s = probe_graph(block, false);
        let p = id(&s, "probe", "value");
        s.push_event(Event::param(
            Some(start),
            p,
            linear(2.0, 8.0, start, frames),
        ))
        .unwrap();
        let out = render(&mut s, 3000, None, |_, _| {});
        for (n, &x) in out.iter().enumerate() {
            let n = n as u64;
            let want = if n < start {
                0.0
            } else if n >= end {
                8.0
            } else {
                closed((n - n % CONTROL_FRAMES).max(start))
            };
            assert!(
                (f64::from(x) - want).abs() < 1e-6,
                "block {block} frame {n}"
            );
        }
        match &reference {
            None => reference = Some(out),
            Some(r) => assert_eq!(r, &out, "block {block} differs from block 64"),
        }
    }
}

/// A graph of every kind of built-in node with random sets and ramps on every live
/// parameter renders bit-identically with blocks of 64, 256 and 1000 frames, serially and
/// in parallel.
#[test]
fn random_events_render_identically_for_every_block_size_serial_and_parallel() {
    let build = |block: usize| {
        let mut g = Graph::new();
        let sine = g.add(
            "sine",
            Sine::new(
                2,
                SR,
                &SineSettings {
                    freq: 220.0,
                    amp: 0.5,
                    ..SineSettings::default()
                },
            ),
        );
        let lp = g.add(
            "lp",
            Biquad::new(
                2,
                SR,
                &BiquadSettings {
                    mode: FilterMode::Lowpass,
                    freq: 1200.0,
                    q: 0.7,
                },
            )
            .unwrap(),
        );
        let noise = g.add("noise", Noise::new(2, &NoiseSettings { amp: 0.2, seed: 9 }));
        let gain = g.add("gain", Gain::new(2, 0.5));
        let string = g.add(
            "string",
            Karplus::new(2, SR, &KarplusSettings::default()).unwrap(),
        );
        let comp = g.add(
            "comp",
            SpectralCompressor::new(2, SR, &CompressorSettings::default()).unwrap(),
        );
        let bus = g.add(
            "bus",
            Mix::new(
                2,
                &MixSettings {
                    gain_db: 0.0,
                    ..MixSettings::default()
                },
            ),
        );
        let out = g.add("out", Output::new(2));
        for (a, b) in [
            (sine, lp),
            (lp, bus),
            (noise, gain),
            (gain, comp),
            (comp, bus),
        ] {
            g.connect(a, b);
        }
        g.connect(string, bus);
        g.connect(bus, out);
        g.set_output(out);
        g.compile(cfg(block)).unwrap()
    };
    let table = build(64).param_table();
    let live: Vec<ParamId> = table.live().collect();
    assert!(live.len() >= 12, "every live parameter: {}", live.len());
    // A deterministic spread of sets, steps and ramps, some overlapping.
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let mut events = Vec::new();
    for _ in 0..300 {
        let p = live[next(live.len() as u64) as usize];
        let (node, name) = table.names(p);
        let spec = node_types()
            .iter()
            .flat_map(|t| t.params)
            .find(|s| s.name == name)
            .unwrap();
        let ParamKind::Float { min, max, .. } = spec.kind else {
            unreachable!()
        };
        // Keep frequencies audible and below Nyquist, everything else in range.
        let (lo, hi) = if name == "freq" {
            (100.0, 5000.0)
        } else {
            (min, max)
        };
        let v = (lo + (hi - lo) * next(1001) as f64 / 1000.0) as f32;
        let change = match next(3) {
            0 => Change::Set(v),
            1 => Change::Step(v),
            _ => Change::Ramp(Ramp {
                shape: Shape::Linear,
                from: None,
                to: v,
                frames: next(3000) as u32,
            }),
        };
        assert!(table.check(p, &change).is_ok(), "{node}.{name}");
        events.push(Event::param(Some(next(40_000)), p, change));
    }
    let pool = pool();
    let mut reference: Option<Vec<f32>> = None;
    for block in BLOCKS {
        for parallel in [false, true] {
            let mut s = build(block);
            s.set_timeline(events.clone()).unwrap();
            let out = render(&mut s, 48_000, parallel.then_some(&pool), |_, _| {});
            assert!(out.iter().all(|x| x.is_finite()));
            match &reference {
                None => reference = Some(out),
                Some(r) => {
                    let first = r.iter().zip(&out).position(|(a, b)| a != b);
                    assert_eq!(first, None, "block {block} parallel {parallel}");
                }
            }
            assert_eq!(s.event_stats().applied, 300);
        }
    }
}

#[test]
fn the_event_path_is_real_time_safe() {
    let mut s = gain_graph(256);
    let gain = id(&s, "gain", "gain");
    s.set_recording(true);
    s.set_levels(true);
    let timeline: Vec<Event> = (0..50)
        .map(|k| Event::param(Some(k * 97), gain, Change::Set(0.01 * k as f32)))
        .collect();
    s.set_timeline(timeline).unwrap();
    let report = guard::check(|| {
        let mut seen = 0u64;
        for block in 0..40u64 {
            // Now, in this block, in a later block, a ramp across blocks, and one that
            // interrupts it.
            let at = block * 256;
            s.push_event(Event::param(None, gain, Change::Step(0.5)))
                .unwrap();
            s.push_event(Event::param(Some(at + 255), gain, Change::Set(2.0)))
                .unwrap();
            let ramp = Ramp {
                shape: Shape::Exponential,
                from: None,
                to: 0.25,
                frames: 700,
            };
            s.push_event(Event::param(Some(at + 300), gain, Change::Ramp(ramp)))
                .unwrap();
            s.process(256);
            seen += s.applied().len() as u64;
            s.take_param_changes(|_, v| seen += u64::from(v.is_finite()));
            s.take_levels(|_, l| seen += l.samples);
        }
        seen
    });
    report.assert_clean();
    assert!(s.event_stats().applied > 100);
}

#[test]
fn a_full_queue_is_reported_and_due_events_beyond_the_block_list_are_carried_not_lost() {
    let mut s = probe_graph(64, true);
    let p = id(&s, "probe", "value");
    s.set_event_capacity(8);
    for v in 0..8 {
        s.push_event(Event::param(Some(10), p, Change::Step(v as f32)))
            .unwrap();
    }
    let refused = s.push_event(Event::param(Some(10), p, Change::Step(99.0)));
    assert_eq!(refused, Err(ControlError::QueueFull { capacity: 8 }));
    // Twelve more at frame 10 on the timeline: 20 events due in the first block, 8 fit.
    let timeline = (0..12)
        .map(|v| Event::param(Some(10), p, Change::Step(100.0 + v as f32)))
        .collect();
    s.set_timeline(timeline).unwrap();
    s.set_recording(true);
    let mut applied = Vec::new();
    let mut out = Vec::new();
    for _ in 0..4 {
        s.process(64);
        applied.extend(s.applied().iter().copied());
        out.extend_from_slice(s.output().channel(0));
    }
    let stats = s.event_stats();
    assert_eq!(stats.applied, 20, "none lost");
    assert_eq!(applied.len(), 20);
    assert!(stats.carried > 0 && stats.late == 12, "{stats:?}");
    // The timeline comes first at a frame, then the queue in arrival order: the last value
    // applied is the queue's last, 7.
    let values: Vec<f32> = applied
        .iter()
        .map(|a| match a.body {
            NodeEvent::Param {
                change: Change::Step(v),
                ..
            } => v,
            other => panic!("{other:?}"),
        })
        .collect();
    let mut want: Vec<f32> = (0..12).map(|v| 100.0 + v as f32).collect();
    want.extend((0..8).map(|v| v as f32));
    assert_eq!(values, want);
    assert_eq!(applied[0].frame, 10);
    assert_eq!(applied[8].frame, 64, "carried to the next block's start");
    assert_eq!(out[10], 107.0, "the first block's last event at frame 10");
    assert_eq!(*out.last().unwrap(), 7.0);
}

#[test]
fn readback_reports_every_change_and_the_final_value_once() {
    let mut s = probe_graph(64, true);
    let p = id(&s, "probe", "value");
    s.push_event(Event::param(Some(32), p, linear(0.0, 10.0, 32, 100)))
        .unwrap();
    let mut seen = Vec::new();
    for _ in 0..5 {
        s.process(64);
        s.take_param_changes(|id, v| seen.push((id, v)));
    }
    assert!(seen.iter().all(|(id, _)| *id == p));
    let values: Vec<f32> = seen.iter().map(|&(_, v)| v).collect();
    // After blocks ending at 64 and 128 the ramp is at 3.2 and 9.6; it ends at 132.
    assert_eq!(values.len(), 3, "{values:?}");
    assert!((values[0] - 3.2).abs() < 1e-6 && (values[1] - 9.6).abs() < 1e-6);
    assert_eq!(values[2], 10.0);
    assert_eq!(s.param_value(p), Some(10.0));
}

#[test]
fn late_events_apply_at_the_next_block_start_and_are_counted() {
    let mut s = gain_graph(64);
    let gain = id(&s, "gain", "gain");
    s.set_recording(true);
    s.process(64);
    s.push_event(Event::param(Some(3), gain, Change::Step(0.5)))
        .unwrap();
    s.process(64);
    assert_eq!(s.applied()[0].frame, 64);
    assert_eq!(s.event_stats().late, 1);
    assert!(s.output().channel(0).iter().all(|&x| x == 0.5));
}

#[test]
fn events_for_parameters_that_are_not_live_here_are_refused() {
    let mut s = gain_graph(64);
    let out = s.param_table().node_key("out").unwrap();
    let out_channels = Event {
        frame: None,
        beat: None,
        target: Target::Node(out),
        body: NodeEvent::Param {
            index: 0,
            change: Change::Set(1.0),
        },
    };
    assert_eq!(s.push_event(out_channels), Err(ControlError::Stale));
    // A node of another graph, which this schedule does not have.
    let mut g = Graph::new();
    let other = g.add("a node only the other graph has", Gain::new(1, 1.0));
    let o = g.add("out", Output::new(1));
    g.connect(other, o);
    g.set_output(o);
    let elsewhere = g
        .compile(CompileConfig {
            sample_rate: 48000,
            max_block: 64,
        })
        .unwrap();
    let id = elsewhere
        .param_table()
        .resolve("a node only the other graph has", "gain")
        .unwrap();
    let beyond = Event::param(None, id, Change::Set(1.0));
    assert_eq!(s.push_event(beyond), Err(ControlError::Stale));
    assert_eq!(s.set_timeline(vec![beyond]), Err(ControlError::Stale));
}

/// Every built-in node type declares in its specs exactly the parameters it reports and
/// accepts while running.
#[test]
fn live_flags_match_what_every_node_accepts() {
    let cfg = NodeConfig {
        sample_rate: SR,
        max_block: 256,
    };
    for ty in node_types() {
        let mut node = ty.instantiate(Vec::new(), &cfg).unwrap();
        if ty.name != "input" {
            assert_eq!(node.params(), ty.params, "{}", ty.name);
        }
        for (i, spec) in ty.params.iter().enumerate() {
            let value = node.get_param(i);
            assert_eq!(
                value.is_some(),
                spec.live,
                "{}.{}: live {} but get_param {value:?}",
                ty.name,
                spec.name,
                spec.live
            );
            if let Some(v) = value {
                assert!(matches!(spec.kind, ParamKind::Float { .. }));
                assert!(node.set_param(i, v), "{}.{} = {v}", ty.name, spec.name);
            }
        }
    }
}

#[test]
fn the_param_table_resolves_names_with_the_project_files_wording() {
    let s = gain_graph(64);
    let t = s.param_table();
    let err = t.resolve("gian", "gain").unwrap_err();
    assert_eq!(err.message(), "unknown node `gian`");
    assert_eq!(err.help().as_deref(), Some("did you mean `gain`?"));
    let err = t.resolve("gain", "gane").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown parameter `gane` for node `gain` of type \"gain\"; `gain` takes `channels`, \
         `gain`"
    );
    let err = t.resolve("gain", "channels").unwrap_err();
    assert_eq!(
        err.to_string(),
        "parameter `channels` of node `gain` of type \"gain\" cannot change while running; \
         live parameters: `gain`"
    );
    let err = t.resolve("out", "channels").unwrap_err();
    assert!(
        err.to_string()
            .ends_with("this node has no live parameters"),
        "{err}"
    );
    let gain = t.resolve("gain", "gain").unwrap();
    let ramp = |shape, to| {
        Change::Ramp(Ramp {
            shape,
            from: None,
            to,
            frames: 10,
        })
    };
    assert!(matches!(
        t.check(gain, &ramp(Shape::Exponential, 0.0)),
        Err(ControlError::BadExponential { .. })
    ));
    assert!(t.check(gain, &ramp(Shape::Linear, 0.0)).is_ok());
    assert!(t.check(gain, &Change::Step(f32::NAN)).is_err());
    assert_eq!(t.ramp_frames(gain, 0.5), Ok(24_000));
    assert!(t.ramp_frames(gain, -1.0).is_err());
}
