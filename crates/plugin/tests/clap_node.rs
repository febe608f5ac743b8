//! CLAP plugins as graph nodes, with the workspace's test plugins loaded through `dlopen`:
//! parameter events at their sample offsets, latency compensation, parallel against serial,
//! errors that name the file and the id, and a guarded run of the host's process path.

#![cfg(feature = "clap")]

mod clap_support;

use std::path::Path;

use clap_support::{
    test_plugins, ALLOC_ID, CLICK_ID, DELAY_FRAMES, DELAY_ID, GAIN_ID, HOST_PROBE_ID,
};
use downbeat_graph::time::{Signature, TempoMap, TempoPoint, Transport, TransportCommand};
use downbeat_graph::{
    AudioMut, AudioRef, Change, CompileConfig, Event, Graph, Node, NodeConfig, NodeFactory,
    NoteEvent, ParamError, ParamKind, ParamValue, ProcessContext, Schedule,
};
use downbeat_nodes::{Mix, MixSettings, Noise, NoiseSettings, Output};
use downbeat_plugin::clap::{ClapError, ClapFactory, ClapNode};
use downbeat_rt::pool::{Pool, PoolConfig};

const CFG: CompileConfig = CompileConfig {
    sample_rate: 48000,
    max_block: 256,
};

fn load(id: &str) -> ClapNode {
    ClapNode::load(&test_plugins(), Some(id), CFG.sample_rate, CFG.max_block).unwrap()
}

/// Stereo 1.0 forever.
struct Dc;

impl Node for Dc {
    fn input_channels(&self) -> usize {
        0
    }
    fn output_channels(&self) -> usize {
        2
    }
    fn process(&mut self, _ctx: &ProcessContext, _input: AudioRef<'_>, mut output: AudioMut<'_>) {
        for c in 0..2 {
            output.channel_mut(c).fill(1.0);
        }
    }
}

/// Stereo 1.0 at frame 0 of the timeline, silence after.
struct Impulse;

impl Node for Impulse {
    fn input_channels(&self) -> usize {
        0
    }
    fn output_channels(&self) -> usize {
        2
    }
    fn process(&mut self, ctx: &ProcessContext, _input: AudioRef<'_>, mut output: AudioMut<'_>) {
        for c in 0..2 {
            for (k, o) in output.channel_mut(c).iter_mut().enumerate() {
                *o = if ctx.position + k as u64 == 0 {
                    1.0
                } else {
                    0.0
                };
            }
        }
    }
}

fn left(schedule: &mut Schedule, blocks: &[usize], pool: Option<&Pool>) -> Vec<f32> {
    let mut out = Vec::new();
    for &frames in blocks {
        match pool {
            Some(p) => schedule.process_parallel(frames, p),
            None => schedule.process(frames),
        }
        out.extend_from_slice(schedule.output().channel(0));
    }
    out
}

#[test]
fn the_test_plugins_describe_themselves() {
    let gain = load(GAIN_ID);
    assert_eq!((gain.input_channels(), gain.output_channels()), (2, 2));
    assert_eq!(gain.latency(), 0);
    assert!(!gain.plays_notes());
    let p = gain.params();
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].name, "gain");
    assert!(p[0].live);
    assert_eq!(
        p[0].kind,
        ParamKind::Float {
            min: 0.0,
            max: 2.0,
            default: 1.0
        }
    );
    assert_eq!(gain.get_param(0), Some(1.0));
    let delay = load(DELAY_ID);
    assert_eq!(delay.latency(), DELAY_FRAMES);
    assert!(delay.params().is_empty());
    assert_eq!(delay.info().id, DELAY_ID);
}

#[test]
fn a_gain_event_changes_the_level_exactly_at_its_frame() {
    let mut g = Graph::new();
    let dc = g.add("dc", Dc);
    let gain = g.add("gain", load(GAIN_ID));
    let out = g.add("out", Output::new(2));
    g.connect(dc, gain);
    g.connect(gain, out);
    g.set_output(out);
    let mut schedule = g.compile(CFG).unwrap();
    let id = schedule.param_table().resolve("gain", "gain").unwrap();
    // Two changes inside the second block, one in the fourth (a block of 100).
    for (frame, value) in [(300, 0.25), (401, 0.5), (700, 2.0)] {
        schedule
            .push_event(Event::param(Some(frame), id, Change::Step(value)))
            .unwrap();
    }
    let out = left(&mut schedule, &[256, 256, 100, 256], None);
    for (k, &s) in out.iter().enumerate() {
        let want = match k {
            0..300 => 1.0,
            300..401 => 0.25,
            401..700 => 0.5,
            _ => 2.0,
        };
        assert_eq!(s, want, "frame {k}");
    }
}

/// Each `process` call's frames and the parameter changes that came before it.
type Calls = std::sync::Arc<std::sync::Mutex<Vec<(usize, Vec<(usize, f32)>)>>>;

/// Records how the schedule hands a node that takes offsets its parameter changes.
struct Recorder {
    calls: Calls,
    pending: Vec<(usize, f32)>,
}

impl Node for Recorder {
    fn input_channels(&self) -> usize {
        0
    }
    fn output_channels(&self) -> usize {
        1
    }
    fn process(&mut self, ctx: &ProcessContext, _input: AudioRef<'_>, mut output: AudioMut<'_>) {
        output.channel_mut(0).fill(0.0);
        let events = std::mem::take(&mut self.pending);
        self.calls.lock().unwrap().push((ctx.frames, events));
    }
    fn params(&self) -> &'static [downbeat_graph::ParamSpec] {
        &[downbeat_graph::ParamSpec {
            name: "x",
            doc: "",
            kind: ParamKind::Float {
                min: 0.0,
                max: 1.0,
                default: 0.0,
            },
            unit: downbeat_graph::Unit::None,
            live: true,
        }]
    }
    fn get_param(&self, _index: usize) -> Option<f32> {
        Some(0.0)
    }
    fn set_param(&mut self, index: usize, value: f32) -> bool {
        self.set_param_at(usize::MAX, index, value)
    }
    fn takes_param_offsets(&self) -> bool {
        true
    }
    fn set_param_at(&mut self, frame: usize, _index: usize, value: f32) -> bool {
        self.pending.push((frame, value));
        true
    }
}

#[test]
fn a_node_taking_offsets_gets_one_call_per_block_with_its_changes_stamped() {
    let calls = Calls::default();
    let mut g = Graph::new();
    let n = g.add(
        "rec",
        Recorder {
            calls: calls.clone(),
            pending: Vec::new(),
        },
    );
    let out = g.add("out", Output::new(1));
    g.connect(n, out);
    g.set_output(out);
    let mut schedule = g.compile(CFG).unwrap();
    let id = schedule.param_table().resolve("rec", "x").unwrap();
    schedule
        .push_event(Event::param(Some(10), id, Change::Step(0.5)))
        .unwrap();
    schedule
        .push_event(Event::param(Some(200), id, Change::Step(0.75)))
        .unwrap();
    schedule.process(256);
    assert_eq!(
        *calls.lock().unwrap(),
        vec![(256, vec![(10, 0.5), (200, 0.75)])]
    );
}

#[test]
fn a_smoothed_change_reaches_a_node_taking_offsets_as_stamped_control_rate_steps() {
    let calls = Calls::default();
    let mut g = Graph::new();
    let n = g.add(
        "rec",
        Recorder {
            calls: calls.clone(),
            pending: Vec::new(),
        },
    );
    let out = g.add("out", Output::new(1));
    g.connect(n, out);
    g.set_output(out);
    let mut schedule = g.compile(CFG).unwrap();
    let id = schedule.param_table().resolve("rec", "x").unwrap();
    // `Set` glides over the default smoothing, 5 ms = 240 frames at 48 kHz.
    schedule
        .push_event(Event::param(Some(0), id, Change::Set(1.0)))
        .unwrap();
    schedule.process(256);
    let calls = calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1, "one call for the block: {calls:?}");
    let (frames, changes) = &calls[0];
    assert_eq!(*frames, 256);
    let offsets: Vec<usize> = changes.iter().map(|c| c.0).collect();
    let step = downbeat_graph::CONTROL_FRAMES as usize;
    // A value per control period while gliding, then the target when the glide ends at 240.
    let mut want: Vec<usize> = (0..240).step_by(step).collect();
    want.push(240);
    assert_eq!(offsets, want, "{changes:?}");
    assert!(changes.windows(2).all(|w| w[0].1 < w[1].1), "{changes:?}");
    assert_eq!(changes.last().unwrap().1, 1.0);
}

/// impulse -> delay plugin -> mix, impulse -> mix (dry), mix -> out.
fn delay_graph() -> Graph {
    let mut g = Graph::new();
    let imp = g.add("imp", Impulse);
    let delay = g.add("delay", load(DELAY_ID));
    let mix = g.add(
        "mix",
        Mix::new(
            2,
            &MixSettings {
                gain_db: 0.0,
                ..MixSettings::default()
            },
        ),
    );
    let out = g.add("out", Output::new(2));
    g.connect(imp, delay);
    g.connect(delay, mix);
    g.connect(imp, mix);
    g.connect(mix, out);
    g.set_output(out);
    g
}

#[test]
fn the_delay_plugins_latency_is_compensated() {
    let mut schedule = delay_graph().compile(CFG).unwrap();
    assert_eq!(schedule.latency(), DELAY_FRAMES);
    let mut out = vec![Vec::new(), Vec::new()];
    for frames in [100, 37, 256, 1] {
        schedule.process(frames);
        for (c, o) in out.iter_mut().enumerate() {
            o.extend_from_slice(schedule.output().channel(c));
        }
    }
    for ch in &out {
        let hits: Vec<(usize, f32)> = ch
            .iter()
            .copied()
            .enumerate()
            .filter(|&(_, s)| s != 0.0)
            .collect();
        assert_eq!(hits.len(), 1, "one aligned impulse, got {hits:?}");
        assert_eq!(hits[0].0, DELAY_FRAMES, "{hits:?}");
    }
    // Both paths arrived together: the one impulse is the sum of two equal ones.
    let single = {
        let mut g = Graph::new();
        let imp = g.add("imp", Impulse);
        let mix = g.add(
            "mix",
            Mix::new(
                2,
                &MixSettings {
                    gain_db: 0.0,
                    ..MixSettings::default()
                },
            ),
        );
        let o = g.add("out", Output::new(2));
        g.connect(imp, mix);
        g.connect(mix, o);
        g.set_output(o);
        let mut s = g.compile(CFG).unwrap();
        s.process(8);
        s.output().channel(0)[0]
    };
    assert!((out[0][DELAY_FRAMES] - 2.0 * single).abs() < 1e-6);
}

/// noise -> gain plugin (automated) -> mix; noise -> delay plugin -> mix; mix -> out.
fn busy_graph() -> Schedule {
    let mut g = Graph::new();
    let noise = g.add("noise", Noise::new(2, &NoiseSettings { amp: 0.5, seed: 7 }));
    let gain = g.add("gain", load(GAIN_ID));
    let alloc = g.add("gain2", load(ALLOC_ID));
    let delay = g.add("delay", load(DELAY_ID));
    let mix = g.add(
        "mix",
        Mix::new(
            2,
            &MixSettings {
                gain_db: 0.0,
                ..MixSettings::default()
            },
        ),
    );
    let out = g.add("out", Output::new(2));
    g.connect(noise, gain);
    g.connect(noise, alloc);
    g.connect(noise, delay);
    g.connect(gain, mix);
    g.connect(alloc, mix);
    g.connect(delay, mix);
    g.connect(mix, out);
    g.set_output(out);
    let mut schedule = g.compile(CFG).unwrap();
    let id = schedule.param_table().resolve("gain", "gain").unwrap();
    let id2 = schedule.param_table().resolve("gain2", "gain").unwrap();
    let mut timeline = Vec::new();
    for k in 0..40u64 {
        let v = (k % 7) as f32 * 0.25;
        timeline.push(Event::param(Some(k * 97 + 3), id, Change::Set(v)));
        timeline.push(Event::param(Some(k * 131 + 5), id2, Change::Step(v)));
    }
    timeline.sort_by_key(|e| e.frame);
    schedule.set_timeline(timeline).unwrap();
    schedule
}

#[test]
fn parallel_output_is_bit_identical_to_serial() {
    let pool = Pool::new(PoolConfig {
        workers: Some(2),
        realtime_priority: None,
        ..PoolConfig::default()
    });
    let blocks: Vec<usize> = [256, 64, 1, 200, 256, 77].repeat(6);
    let serial = left(&mut busy_graph(), &blocks, None);
    let parallel = left(&mut busy_graph(), &blocks, Some(&pool));
    assert!(serial.iter().any(|&s| s != 0.0));
    assert!(serial == parallel, "parallel output differs from serial");
}

#[test]
fn a_missing_file_a_wrong_id_and_a_non_clap_file_are_typed_errors() {
    let missing = Path::new("/nonexistent/dir/none.clap");
    let err = ClapNode::load(missing, None, 48000, 64).err().unwrap();
    assert_eq!(
        err,
        ClapError::MissingFile {
            path: missing.into()
        }
    );
    assert!(err.to_string().contains("/nonexistent/dir/none.clap"));

    let bundle = test_plugins();
    let err = ClapNode::load(&bundle, Some("org.nope"), 48000, 64)
        .err()
        .unwrap();
    let ClapError::UnknownId { id, available, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(id, "org.nope");
    // The file holds more test plugins than these (the crashing ones, for the audit).
    assert_eq!(
        available[..5],
        [GAIN_ID, DELAY_ID, ALLOC_ID, CLICK_ID, HOST_PROBE_ID]
    );
    assert_eq!(err.key(), "id");

    let err = ClapNode::load(&bundle, None, 48000, 64).err().unwrap();
    assert!(matches!(err, ClapError::IdNeeded { .. }), "{err:?}");

    let text = std::env::temp_dir().join(format!("not-a-plugin-{}.clap", std::process::id()));
    std::fs::write(&text, "just text").unwrap();
    let err = ClapNode::load(&text, None, 48000, 64).err().unwrap();
    std::fs::remove_file(&text).unwrap();
    assert!(matches!(err, ClapError::Load { .. }), "{err:?}");
    assert!(err.to_string().contains("not-a-plugin"), "{err}");
}

#[test]
fn the_clap_node_type_takes_path_id_and_the_plugins_parameters() {
    let factory = ClapFactory;
    let cfg = NodeConfig {
        sample_rate: 48000,
        max_block: 64,
    };
    let path = ParamValue::Text(test_plugins().display().to_string());
    let make = |extra: Vec<(String, ParamValue)>| {
        let mut p = vec![
            ("path".to_string(), path.clone()),
            ("id".to_string(), ParamValue::Text(GAIN_ID.into())),
        ];
        p.extend(extra);
        factory.create(p, &cfg)
    };
    let node = make(vec![("gain".into(), ParamValue::Float(0.5))]).unwrap();
    assert_eq!(node.get_param(0), Some(0.5));

    let err = make(vec![("gain".into(), ParamValue::Float(5.0))])
        .err()
        .unwrap();
    assert!(
        matches!(&err, ParamError::Invalid { name, .. } if name == "gain"),
        "{err:?}"
    );
    let err = make(vec![("volume".into(), ParamValue::Float(0.5))])
        .err()
        .unwrap();
    assert_eq!(
        err,
        ParamError::Unknown {
            name: "volume".into(),
            valid: vec!["gain"]
        }
    );
    let err = factory
        .create(
            vec![("path".into(), ParamValue::Text("/nope.clap".into()))],
            &cfg,
        )
        .err()
        .unwrap();
    assert!(
        matches!(&err, ParamError::Invalid { name, message } if name == "path" && message.contains("/nope.clap")),
        "{err:?}"
    );
    let err = factory.create(vec![], &cfg).err().unwrap();
    assert!(matches!(&err, ParamError::Invalid { name, .. } if name == "path"));
}

downbeat_rt::install_guard_allocator!();

/// The host's side of `process` under the guard, with parameter events in every block and
/// the song's transport playing through a tempo ramp (each block's CLAP transport carries a
/// new tempo and its increment) and stopping half-way.
#[test]
fn the_hosts_process_path_is_real_time_safe() {
    let mut node = load(GAIN_ID);
    let frames = 256;
    let input = vec![0.5f32; 2 * frames];
    let mut output = vec![0.0f32; 2 * frames];
    // From 120 to 60 bpm over the first beat: the 20 blocks all lie in the ramp. The map is
    // built here, off the guard; the transport's own calls do not allocate.
    let ramp = TempoPoint {
        beat: 0.0,
        bpm: 60.0,
        ramp: 1.0,
    };
    let map = TempoMap::new(120.0, Signature::default(), &[ramp], &[], 48000).unwrap();
    let mut transport = Transport::new(map);
    let mut run = |node: &mut ClapNode, position: u64| {
        if position == 10 * frames as u64 {
            transport.apply(TransportCommand::Stop).unwrap();
        }
        let ctx = ProcessContext {
            musical: transport.position(),
            ..ProcessContext::new(48000, transport.piece(frames), position)
        };
        assert_eq!(ctx.frames, frames, "no cut inside the ramp");
        transport.advance(frames);
        node.process(
            &ctx,
            AudioRef::new(&input, 2, frames, frames),
            AudioMut::new(&mut output, 2, frames, frames),
        );
    };
    // The first call starts processing (the plugin's business, once).
    run(&mut node, 0);
    let report = downbeat_rt::guard::check(|| {
        for b in 1..20u64 {
            for k in 0..8 {
                assert!(node.set_param_at(k * 30, 0, (b + k as u64) as f32 * 0.05));
            }
            run(&mut node, b * frames as u64);
        }
    });
    report.assert_clean();
    assert_eq!(node.failed_calls(), 0);
    // The last value set (b = 19, k = 7) at frame 210 is the gain at the block's end.
    assert!((output[frames - 1] - 0.5 * 26.0 * 0.05).abs() < 1e-6);
}

#[test]
fn a_relative_path_means_the_working_directory() {
    // dlopen would search the library path for a bare file name.
    let dir = test_plugins().parent().unwrap().to_path_buf();
    std::env::set_current_dir(&dir).unwrap();
    let node = ClapNode::load(Path::new("downbeat-test.clap"), Some(GAIN_ID), 48000, 64).unwrap();
    assert_eq!(node.info().id, GAIN_ID);
}

#[test]
fn an_instrument_plays_notes_at_their_frames_as_clap_note_events() {
    let mut node = load(CLICK_ID);
    assert!(node.plays_notes());
    assert_eq!((node.input_channels(), node.output_channels()), (0, 2));
    assert!(!load(GAIN_ID).plays_notes());
    let on = |note: f32, velocity: f32| NoteEvent::On {
        channel: 0,
        note,
        velocity,
    };
    node.note(37, on(60.0, 0.5)).unwrap();
    node.note(0, on(64.0, 0.25)).unwrap();
    // Beyond the first block of 64 frames: carried over, it plays at frame 300 - 256 of the
    // fifth block.
    node.note(300, on(72.0, 1.0)).unwrap();
    // A velocity-0 note on is a note off: no click.
    node.note(10, on(61.0, 0.0)).unwrap();
    let frames = 64;
    let mut output = vec![0.0f32; 2 * frames];
    let mut left = Vec::new();
    for b in 0..6u64 {
        let ctx = ProcessContext::new(48000, frames, b * frames as u64);
        node.process(
            &ctx,
            AudioRef::new(&[], 0, frames, frames),
            AudioMut::new(&mut output, 2, frames, frames),
        );
        assert_eq!(output[..frames], output[frames..], "both channels alike");
        left.extend_from_slice(&output[..frames]);
    }
    let hits: Vec<(usize, f32)> = left
        .iter()
        .copied()
        .enumerate()
        .filter(|&(_, s)| s != 0.0)
        .collect();
    let want = [(0, 0.25 + 0.064), (37, 0.5 + 0.060), (300, 1.0 + 0.072)];
    assert_eq!(hits.len(), want.len(), "{hits:?}");
    for ((k, v), (wk, wv)) in hits.iter().zip(want) {
        assert_eq!(*k, wk, "{hits:?}");
        assert!((v - wv as f32).abs() < 1e-6, "{hits:?}");
    }
    // An effect refuses notes.
    assert_eq!(
        load(GAIN_ID).note(0, on(60.0, 1.0)),
        Err(downbeat_graph::NoteError::NotAnInstrument)
    );
}

/// Pitch bend and sustain reach an instrument as MIDI 1 messages at their frames: the bend's
/// 14-bit value centred on 8192 (-1 is 0, +1 is 16383), least significant 7 bits first, on
/// the event's channel; the sustain pedal as controller 64 at 127 or 0.
#[test]
fn pitch_bend_and_sustain_reach_an_instrument_as_midi_messages() {
    let mut node = load(CLICK_ID);
    let bend = |channel: u8, value: f32| NoteEvent::PitchBend { channel, value };
    node.note(3, bend(0, -1.0)).unwrap();
    node.note(9, bend(0, 0.0)).unwrap();
    node.note(15, bend(2, 1.0)).unwrap();
    node.note(21, bend(2, 0.5)).unwrap();
    node.note(
        30,
        NoteEvent::Sustain {
            channel: 1,
            on: true,
        },
    )
    .unwrap();
    node.note(
        40,
        NoteEvent::Sustain {
            channel: 15,
            on: false,
        },
    )
    .unwrap();
    let frames = 64;
    let mut output = vec![0.0f32; 2 * frames];
    let ctx = ProcessContext::new(48000, frames, 0);
    node.process(
        &ctx,
        AudioRef::new(&[], 0, frames, frames),
        AudioMut::new(&mut output, 2, frames, frames),
    );
    let got: Vec<(usize, [u8; 3])> = output[..frames]
        .iter()
        .enumerate()
        .filter(|&(_, &s)| s != 0.0)
        .map(|(k, &s)| {
            let bytes = (-s * 16_777_216.0) as u32;
            (k, [(bytes >> 16) as u8, (bytes >> 8) as u8, bytes as u8])
        })
        .collect();
    // 0.5 is round(1.5 * 8191.5) = 12287: 127 and 95.
    let want = vec![
        (3, [0xE0, 0, 0]),
        (9, [0xE0, 0, 64]),
        (15, [0xE2, 127, 127]),
        (21, [0xE2, 127, 95]),
        (30, [0xB1, 64, 127]),
        (40, [0xBF, 64, 0]),
    ];
    assert_eq!(got, want);
}

#[test]
fn the_hosts_note_path_is_real_time_safe() {
    let mut node = load(CLICK_ID);
    let frames = 128;
    let mut output = vec![0.0f32; 2 * frames];
    let mut run = |node: &mut ClapNode, position: u64| {
        let ctx = ProcessContext::new(48000, frames, position);
        node.process(
            &ctx,
            AudioRef::new(&[], 0, frames, frames),
            AudioMut::new(&mut output, 2, frames, frames),
        );
    };
    run(&mut node, 0);
    let report = downbeat_rt::guard::check(|| {
        for b in 1..20u64 {
            for k in 0..6 {
                let event = NoteEvent::On {
                    channel: (k % 16) as u8,
                    note: 40.0 + k as f32,
                    velocity: 0.5,
                };
                node.note(k * 50, event).unwrap();
                node.note(
                    k * 50 + 7,
                    NoteEvent::Off {
                        channel: (k % 16) as u8,
                        note: 40.0 + k as f32,
                    },
                )
                .unwrap();
            }
            node.note(
                3,
                NoteEvent::PitchBend {
                    channel: 1,
                    value: -0.5,
                },
            )
            .unwrap();
            node.note(
                4,
                NoteEvent::Sustain {
                    channel: 1,
                    on: true,
                },
            )
            .unwrap();
            node.note(5, NoteEvent::AllNotesOff { channel: None })
                .unwrap();
            run(&mut node, b * frames as u64);
        }
    });
    report.assert_clean();
    assert_eq!(node.failed_calls(), 0);
}
