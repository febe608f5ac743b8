//! Live edits of a running engine (`LiveEditor`) and audio started and stopped on demand
//! (`start`, `Running`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use downbeat::device::{Device, DeviceError, Run, RunLength, Virtual};
use downbeat::edit::CommitError;
use downbeat::nodes::{Gain, Mix, MixSettings, Output, Sine, SineSettings};
use downbeat::{start, Engine};
use downbeat_graph::{AudioMut, AudioRef, CompileConfig, Editor, Graph, Node, ProcessContext};
use downbeat_rt::guard;

downbeat_rt::install_guard_allocator!();

mod support;

const CFG: CompileConfig = CompileConfig {
    sample_rate: 48_000,
    max_block: 64,
};

/// Eight sines into a mix, into the output.
fn graph() -> Graph {
    let mut g = Graph::new();
    let mix = g.add(
        "mix",
        Mix::new(
            2,
            &MixSettings {
                gain_db: -12.0,
                ..MixSettings::default()
            },
        ),
    );
    for k in 0..8 {
        let s = g.add(
            format!("s{k}"),
            Sine::new(
                2,
                48_000,
                &SineSettings {
                    freq: 110.0 * (k + 1) as f64,
                    amp: 0.2,
                    ..SineSettings::default()
                },
            ),
        );
        g.connect(s, mix);
    }
    let out = g.add("out", Output::new(2));
    g.connect(mix, out);
    g.set_output(out);
    g
}

/// The audio thread's side of 300 edits (each adds a sine and removes the one added
/// before): the take-over of every kept node, the event move, the retirement of the old
/// schedule, the preloaded timeline carried over; no allocation, free, lock or system call,
/// no block lost or silent.
#[test]
fn the_audio_thread_side_of_an_edit_is_clean_under_the_guard() {
    let (editor, schedule) = Editor::new(graph(), CFG).unwrap();
    let mut engine = Engine::new(schedule);
    let mut live = engine.live_editor(editor);
    // A preloaded timeline with a level step at every block, which each edit carries over.
    const STEPS: u64 = 100_000;
    let level = engine
        .schedule()
        .param_table()
        .resolve("mix", "gain_db")
        .unwrap();
    let steps = (0..STEPS)
        .map(|k| {
            let db = if k % 2 == 0 { -12.0 } else { -12.5 };
            downbeat_graph::Event::param(Some(k * 64), level, downbeat_graph::Change::Step(db))
        })
        .collect();
    engine.schedule_mut().set_timeline(steps).unwrap();
    let mut block = vec![0.0f32; 64 * 2];
    engine.process(&mut block);
    const EDITS: u64 = 300;
    let done = AtomicBool::new(false);
    let (blocks, report) = std::thread::scope(|scope| {
        let done = &done;
        scope.spawn(move || {
            for k in 0..EDITS {
                live.add(
                    format!("x{k}"),
                    Sine::new(
                        2,
                        48_000,
                        &SineSettings {
                            freq: 55.0,
                            amp: 0.1,
                            ..SineSettings::default()
                        },
                    ),
                )
                .unwrap();
                live.connect(&format!("x{k}"), "mix").unwrap();
                if k > 0 {
                    live.remove(&format!("x{}", k - 1)).unwrap();
                }
                loop {
                    match live.commit() {
                        Ok(()) => break,
                        Err(CommitError::Busy) => std::thread::sleep(Duration::from_micros(100)),
                        Err(e) => panic!("{e}"),
                    }
                }
            }
            while !done.load(Ordering::Acquire) {
                live.reclaim();
                std::thread::sleep(Duration::from_millis(1));
            }
            live.reclaim();
        });
        let r = guard::check_with(&guard::Options::new(), || {
            let mut blocks = 0u64;
            let mut silent = 0u64;
            while engine.swaps() < EDITS {
                engine.process(&mut block);
                blocks += 1;
                silent += u64::from(block.iter().all(|&s| s == 0.0));
                assert!(blocks < 50_000_000, "edits stalled at {}", engine.swaps());
            }
            (blocks, silent)
        });
        done.store(true, Ordering::Release);
        r
    });
    support::assert_complete(&report);
    report.assert_clean();
    let (blocks, silent) = blocks;
    assert_eq!(engine.swaps(), EDITS);
    assert_eq!(engine.summary().blocks, blocks + 1);
    assert_eq!(silent, 0, "an edit produced a silent block");
    assert_eq!(
        engine.schedule().event_stats().applied,
        (blocks + 1).min(STEPS),
        "one timeline step applied per block across the edits"
    );
    assert_eq!(
        engine.schedule().len(),
        8 + 3,
        "8 sines, the mix, the output, x299"
    );
}

/// A pass-through that records the thread it was dropped on.
struct DropsOn(Arc<Mutex<Option<ThreadId>>>);

impl Node for DropsOn {
    fn input_channels(&self) -> usize {
        2
    }
    fn output_channels(&self) -> usize {
        2
    }
    fn process(&mut self, _: &ProcessContext, input: AudioRef<'_>, mut out: AudioMut<'_>) {
        for c in 0..2 {
            out.channel_mut(c).copy_from_slice(input.channel(c));
        }
    }
}

impl Drop for DropsOn {
    fn drop(&mut self) {
        *self.0.lock().unwrap() = Some(std::thread::current().id());
    }
}

/// A node an edit removes is dropped on the control thread that reclaims the old schedule,
/// never on the audio thread, and only after the engine has swapped the edit in.
#[test]
fn a_removed_node_is_dropped_off_the_audio_thread() {
    let dropped = Arc::new(Mutex::new(None));
    let mut g = graph();
    g.add("doomed", DropsOn(dropped.clone()));
    g.connect("s0", "doomed");
    let (editor, schedule) = Editor::new(g, CFG).unwrap();
    let mut engine = Engine::new(schedule);
    let mut live = engine.live_editor(editor);
    live.remove("doomed").unwrap();
    live.commit().unwrap();
    let audio = std::thread::spawn(move || {
        let mut block = vec![0.0f32; 64 * 2];
        for _ in 0..10 {
            engine.process(&mut block);
        }
        (engine.swaps(), std::thread::current().id())
    });
    let (swaps, audio_thread) = audio.join().unwrap();
    assert_eq!(swaps, 1);
    assert_eq!(*dropped.lock().unwrap(), None, "dropped before the reclaim");
    assert_eq!(live.reclaim(), 1);
    let on = dropped.lock().unwrap().expect("dropped by the reclaim");
    assert_eq!(on, std::thread::current().id());
    assert_ne!(on, audio_thread);
}

/// A batch that does not compile is refused with a message, and the running graph goes on
/// as it was; the next good batch lands.
#[test]
fn a_refused_commit_leaves_the_running_graph_unchanged() {
    let (editor, schedule) = Editor::new(graph(), CFG).unwrap();
    let mut engine = Engine::new(schedule);
    let mut live = engine.live_editor(editor);
    let mut block = vec![0.0f32; 64 * 2];
    engine.process(&mut block);
    live.add("loop", Gain::new(2, 1.0)).unwrap();
    live.connect("mix", "loop").unwrap();
    live.connect("loop", "mix").unwrap();
    let err = live.commit().unwrap_err();
    assert!(err.to_string().contains("cycle"), "{err}");
    engine.process(&mut block);
    assert_eq!(engine.swaps(), 0);
    assert!(engine.schedule().names().iter().all(|n| n != "loop"));
    live.remove("s7").unwrap();
    live.commit().unwrap();
    engine.process(&mut block);
    assert_eq!(engine.swaps(), 1);
    assert!(engine.schedule().names().iter().all(|n| n != "s7"));
}

/// `start` plays until `stop`, edits land while it plays, and `stop` hands the engine back
/// with what was played.
#[test]
fn start_plays_until_stop_and_takes_edits_while_it_runs() {
    let (editor, schedule) = Editor::new(graph(), CFG).unwrap();
    let mut engine = Engine::new(schedule);
    let mut live = engine.live_editor(editor);
    let running = start(engine, Virtual::new(None));
    std::thread::sleep(Duration::from_millis(100));
    // A controller made while it plays, from the handle: its step lands.
    let mut control = running.controller().unwrap();
    let level = control.resolve("mix", "gain_db").unwrap();
    control
        .send(
            downbeat::control::When::Now,
            level,
            downbeat_graph::Change::Step(-3.0),
        )
        .unwrap();
    live.remove("s0").unwrap();
    live.commit().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    // The virtual device plays in real time: wait (generously) for the edit to be taken.
    while live.reclaim() == 0 {
        assert!(
            Instant::now() < deadline,
            "the running engine never took the edit"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(!running.has_ended());
    let stopped_at = Instant::now();
    let run = running.stop().unwrap();
    assert!(
        stopped_at.elapsed() < Duration::from_secs(5),
        "stop took {:?}",
        stopped_at.elapsed()
    );
    assert!(
        run.report.frames >= 4800,
        "{} frames played",
        run.report.frames
    );
    assert_eq!(run.engine.swaps(), 1);
    assert!(run.engine.schedule().names().iter().all(|n| n != "s0"));
    let id = run
        .engine
        .schedule()
        .param_table()
        .resolve("mix", "gain_db")
        .unwrap();
    assert_eq!(run.engine.schedule().param_value(id), Some(-3.0));
}

/// The handle gives out its spare controllers, then says why there are no more.
#[test]
fn the_running_handle_hands_out_its_spare_controllers_then_refuses() {
    let running = start(
        Engine::new(graph().compile(CFG).unwrap()),
        Virtual::new(None),
    );
    let spares: Vec<_> = (0..downbeat::SPARE_CONTROLLERS)
        .map(|_| running.controller().unwrap())
        .collect();
    let err = running.controller().unwrap_err();
    assert_eq!(err.made, downbeat::SPARE_CONTROLLERS);
    assert!(
        err.to_string().contains("Engine::controller before start"),
        "{err}"
    );
    drop(spares);
    running.stop().unwrap();
}

/// Dropping the handle stops the audio too; a stopper made before the run ends it before
/// its first block.
#[test]
fn dropping_the_handle_stops_and_a_stop_before_the_run_plays_nothing() {
    let engine = Engine::new(graph().compile(CFG).unwrap());
    let stopper = engine.stopper();
    let running = start(engine, Virtual::new(None));
    let watcher = running.stopper();
    drop(running);
    assert!(stopper.is_stopped() && watcher.is_stopped());

    let engine = Engine::new(graph().compile(CFG).unwrap());
    engine.stopper().stop();
    let run = start(engine, Virtual::new(None)).stop().unwrap();
    assert_eq!(run.report.frames, 0);
}

/// A device that fails.
struct Broken;

impl Device for Broken {
    fn name(&self) -> &'static str {
        "broken"
    }
    fn run(&mut self, _: Engine, _: RunLength) -> Result<Run, DeviceError> {
        Err(DeviceError::Lost("the card was unplugged".into()))
    }
}

/// A run whose device fails ends by itself, and `stop` returns the device's error.
#[test]
fn a_failed_device_ends_the_run_and_stop_says_why() {
    let running = start(Engine::new(graph().compile(CFG).unwrap()), Broken);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !running.has_ended() {
        assert!(Instant::now() < deadline, "the failed run never ended");
        std::thread::sleep(Duration::from_millis(1));
    }
    let err = running.stop().unwrap_err();
    assert_eq!(err.to_string(), "the card was unplugged");
}

/// Splits its two input channels into two one-channel ports, so edges into them are routed
/// channel by channel.
struct TwoPorts;

impl Node for TwoPorts {
    fn input_channels(&self) -> usize {
        2
    }
    fn output_channels(&self) -> usize {
        2
    }
    fn input_ports(&self) -> Vec<downbeat_graph::Port> {
        vec![
            downbeat_graph::Port::main(1),
            downbeat_graph::Port::new("side", 1),
        ]
    }
    fn process(&mut self, _: &ProcessContext, input: AudioRef<'_>, mut out: AudioMut<'_>) {
        for c in 0..2 {
            out.channel_mut(c).copy_from_slice(input.channel(c));
        }
    }
}

/// The port sums (edges routed channel by channel) and an edge level following a ramp run
/// on the audio thread without allocating, freeing, locking or calling the system.
#[test]
fn port_sums_and_ramped_edge_levels_are_clean_under_the_guard() {
    let mut g = Graph::new();
    g.add(
        "a",
        Sine::new(
            1,
            48_000,
            &SineSettings {
                freq: 220.0,
                amp: 0.3,
                ..SineSettings::default()
            },
        ),
    );
    g.add(
        "b",
        Sine::new(
            1,
            48_000,
            &SineSettings {
                freq: 330.0,
                amp: 0.3,
                ..SineSettings::default()
            },
        ),
    );
    g.add("ports", TwoPorts);
    let out = g.add("out", Output::new(2));
    g.connect_gain("a", "ports", -6.0);
    g.connect("b", "ports:side");
    g.connect("a", "ports:side");
    g.connect("ports", out);
    g.set_output(out);
    let mut s = g.compile(CFG).unwrap();
    let id = s.param_table().resolve("a -> ports", "gain_db").unwrap();
    let ramp = downbeat_graph::Ramp {
        shape: downbeat_graph::Shape::Linear,
        from: None,
        to: -40.0,
        frames: 4000,
    };
    s.push_event(downbeat_graph::Event::param(
        Some(128),
        id,
        downbeat_graph::Change::Ramp(ramp),
    ))
    .unwrap();
    s.process(64);
    let report = guard::check(|| {
        for _ in 0..100 {
            s.process(64);
        }
    });
    support::assert_complete(&report);
    report.assert_clean();
    assert!(s.output().channel(1).iter().any(|&x| x != 0.0));
}

/// A project's automation (the schedule's preloaded timeline) goes on after a live edit:
/// the level steps it makes after the edit land as in a run without the edit, sample for
/// sample, on the branch the edit did not touch.
#[test]
fn automation_goes_on_across_a_live_edit() {
    const PROJECT: &str = r#"
sample_rate = 48000
block_size = 64
edges = ["tone -> level", "level -> out", "other -> out"]

[nodes.tone]
type = "sine"
freq = 220.0
amp = 0.5

[nodes.level]
type = "gain"
gain = 1.0

[nodes.other]
type = "sine"
freq = 330.0
amp = 0.0

[nodes.out]
type = "output"

[[automation]]
node = "level"
param = "gain"
points = [[0.05, 0.5], [0.1, 0.25], [0.15, 0.125, "linear"]]
"#;
    let project = downbeat::project::Project::parse(PROJECT, "automation.toml").unwrap();
    let render = |edit: bool| {
        let (editor, schedule) = project.editor().unwrap();
        let mut engine = Engine::new(schedule);
        let mut live = engine.live_editor(editor);
        let mut block = vec![0.0f32; 64 * 2];
        let mut out = Vec::new();
        for b in 0..200 {
            if edit && b == 40 {
                live.remove("other").unwrap();
                live.add(
                    "other2",
                    Sine::new(
                        2,
                        48_000,
                        &SineSettings {
                            freq: 440.0,
                            amp: 0.0,
                            ..SineSettings::default()
                        },
                    ),
                )
                .unwrap();
                live.connect("other2", "out").unwrap();
                live.commit().unwrap();
            }
            engine.process(&mut block);
            out.extend(block.iter().map(|x| x.to_bits()));
        }
        (out, engine.swaps())
    };
    let (plain, _) = render(false);
    let (edited, swaps) = render(true);
    assert_eq!(swaps, 1, "the edit landed");
    // The steps after the edit (block 40 is frame 2560; the steps are at 4800 and later)
    // are in the output (interleaved stereo: frame k is at 2k).
    let level = |k: usize| f32::from_bits(plain[2 * k]).abs();
    let peak = |r: std::ops::Range<usize>| r.map(level).fold(0.0f32, f32::max);
    assert!(
        peak(5000..7000) < 0.6 * peak(3000..4700),
        "the automation lowers the level after the edit"
    );
    let first = plain.iter().zip(&edited).position(|(a, b)| a != b);
    assert_eq!(first, None, "the outputs part at sample {first:?}");
}
