//! Controllers drive a running engine: 10,000 random events from two control threads are
//! all applied, each at its frame; a full queue is reported; a recording replays exactly.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod support;

use downbeat::control::record::read_events;
use downbeat::control::When;
use downbeat::project::Project;
use downbeat::Engine;
use downbeat_graph::{Change, ControlError};

const PROJECT: &str = r#"
block_size = 64
edges = ["a -> ga -> out", "b -> gb -> out"]
[nodes.a]
type = "sine"
freq = 0.0
phase = 0.25
amp = 1.0
channels = 1
[nodes.ga]
type = "gain"
channels = 1
[nodes.b]
type = "sine"
freq = 0.0
phase = 0.25
amp = 1.0
channels = 1
[nodes.gb]
type = "gain"
channels = 1
gain = 0.0
[nodes.out]
type = "output"
channels = 1
"#;

/// Waits for `ready`, failing the test after 30 s instead of hanging.
fn wait(mut ready: impl FnMut() -> bool, what: &str) {
    let start = std::time::Instant::now();
    while !ready() {
        assert!(start.elapsed().as_secs() < 30, "waited 30 s for {what}");
        std::thread::yield_now();
    }
}

fn engine() -> Engine {
    Engine::new(
        Project::parse(PROJECT, "control.toml")
            .unwrap()
            .build()
            .unwrap(),
    )
}

/// Two threads send 5,000 steps each, at random frames (each thread on its own gain, the
/// value encoding the event's index), while the audio thread runs. The output is
/// `ga + gb`: each gain must hold the value of its latest event at every frame.
///
/// The threads stay at most `LOOKAHEAD` frames ahead of the audio thread (so the schedule's
/// queue never fills with one thread's far future while the other's next event waits), and
/// the audio thread does not start a block before both have sent every event due in it:
/// so every event can be on time, and the test checks that each one was.
#[test]
fn ten_thousand_random_events_from_two_controllers_are_all_applied_at_their_frames() {
    const PER_THREAD: usize = 5_000;
    const FRAMES: u64 = 64 * 4_000;
    const LOOKAHEAD: u64 = 64 * 32;
    let mut engine = engine();
    let mut record = engine.record_events();
    let controllers = [engine.controller(256), engine.controller(256)];
    let sent_upto: Arc<[AtomicU64; 2]> = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let mut plans = Vec::new();
    let mut threads = Vec::new();
    for (t, mut c) in controllers.into_iter().enumerate() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ (t as u64 + 1);
        let mut frames: Vec<u64> = (0..PER_THREAD)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng % FRAMES
            })
            .collect();
        frames.sort_unstable();
        frames.dedup();
        plans.push(frames.clone());
        let sent_upto = Arc::clone(&sent_upto);
        threads.push(std::thread::spawn(move || {
            let node = if t == 0 { "ga" } else { "gb" };
            let id = c.resolve(node, "gain").unwrap();
            let mut full = 0u64;
            for (i, &f) in frames.iter().enumerate() {
                wait(
                    || f <= c.position() + LOOKAHEAD,
                    "the audio thread to advance",
                );
                let v = (i % 16) as f32 / 4.0;
                wait(
                    || match c.send(When::Frame(f), id, Change::Step(v)) {
                        Ok(()) => true,
                        Err(ControlError::QueueFull { .. }) => {
                            full += 1;
                            false
                        }
                        Err(e) => panic!("{e}"),
                    },
                    "room in the queue",
                );
                sent_upto[t].store(f + 1, Ordering::Release);
            }
            sent_upto[t].store(u64::MAX, Ordering::Release);
            full
        }));
    }
    let mut out = vec![0.0f32; FRAMES as usize];
    for (b, block) in out.chunks_mut(64).enumerate() {
        let end = (b as u64 + 1) * 64;
        // Every event before `end` has been sent when the next planned one is at or
        // after it.
        for t in 0..2 {
            let plan = &plans[t];
            let next_needed = plan.partition_point(|&f| f < end);
            let must_have = if next_needed == 0 {
                0
            } else {
                plan[next_needed - 1] + 1
            };
            wait(
                || sent_upto[t].load(Ordering::Acquire) >= must_have,
                "a controller to send",
            );
        }
        engine.process(block);
        record.read();
    }
    for t in threads {
        t.join().unwrap();
    }
    let stats = engine.schedule().event_stats();
    let sent: usize = plans.iter().map(Vec::len).sum();
    assert!(sent > 9_900, "{sent} distinct frames");
    assert_eq!(stats.applied, sent as u64, "none lost: {stats:?}");
    assert_eq!(stats.late, 0, "each on time: {stats:?}");
    assert_eq!(engine.unrecorded_events(), 0);
    assert_eq!(record.len(), sent);
    let value_at = |plan: &[u64], default: f32, n: u64| {
        let k = plan.partition_point(|&f| f <= n);
        if k == 0 {
            default
        } else {
            ((k - 1) % 16) as f32 / 4.0
        }
    };
    for (n, &x) in out.iter().enumerate() {
        let n = n as u64;
        let want = value_at(&plans[0], 1.0, n) + value_at(&plans[1], 0.0, n);
        assert_eq!(x, want, "frame {n}");
    }
}

#[test]
fn a_full_queue_is_reported_to_the_caller() {
    let mut engine = engine();
    let mut c = engine.controller(4);
    for _ in 0..4 {
        c.set("ga", "gain", 0.5).unwrap();
    }
    assert_eq!(
        c.set("ga", "gain", 0.5),
        Err(ControlError::QueueFull { capacity: 4 })
    );
    let mut block = vec![0.0f32; 64];
    engine.process(&mut block);
    assert_eq!(c.available(), 4, "drained at the block start");
}

#[test]
fn refusals_use_the_project_files_wording() {
    let mut engine = engine();
    let mut c = engine.controller(4);
    let err = c.set("ga", "gain", 20.0).unwrap_err();
    assert_eq!(
        err.message(),
        "bad value for `gain` of node `ga`: got 20, expected a number from 0 to 16"
    );
    // The same words as the project file's error for the same value.
    let bad = PROJECT.replace("gain = 0.0", "gain = 20");
    let project_err = Project::parse(&bad, "x.toml").unwrap_err();
    assert_eq!(
        project_err.message,
        "bad value for `gain` of node `gb`: got 20, expected a number from 0 to 16"
    );
    let err = c.set("ga", "channels", 1.0).unwrap_err();
    assert!(
        err.to_string().contains("cannot change while running"),
        "{err}"
    );
    let err = c.set("gx", "gain", 1.0).unwrap_err();
    assert_eq!(err.to_string(), "unknown node `gx`; did you mean `ga`?");
}

#[test]
fn a_recording_replays_to_the_same_output() {
    let dir = std::env::temp_dir().join(format!("downbeat-control-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("events.jsonl");
    let mut live = engine();
    let mut rec = live.record_events();
    let mut c = live.controller(64);
    let mut out_live = vec![0.0f32; 64 * 50];
    for (k, block) in out_live.chunks_mut(64).enumerate() {
        if k % 7 == 3 {
            c.set("ga", "gain", k as f32 / 50.0).unwrap();
            c.ramp(
                When::Now,
                "gb",
                "gain",
                downbeat_graph::Shape::Linear,
                0.3,
                0.01,
            )
            .unwrap();
        }
        live.process(block);
    }
    rec.read();
    assert!(rec.write(&file).unwrap() > 10);
    let mut replay = engine();
    let events = read_events(&file, &replay.schedule().param_table()).unwrap();
    replay.schedule_mut().set_timeline(events).unwrap();
    let mut out_replay = vec![0.0f32; 64 * 50];
    for block in out_replay.chunks_mut(100) {
        replay.process(block);
    }
    assert_eq!(out_live, out_replay);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Frames in `d` at the project's 48 kHz, rounded up: how far apart two clock reads can put
/// a frame.
fn frames_in(d: Duration) -> u64 {
    (d.as_secs_f64() * 48_000.0).ceil() as u64
}

/// `When::At`: an instant maps onto the timeline through the latest block's start (the guide,
/// "at an `Instant` mapped onto it"). The block's start time is the clock read at the top of
/// `Engine::process`, somewhere between `before` and `after`; no clock can be injected, so
/// the test bounds the frame by what it measured instead of guessing a speed: 10 ms after
/// `before` is frame 480 after the block's start, minus at most the frames between `before`
/// and that read, plus at most those `frame_at` spends between its own two clock reads.
/// Two instants 10 ms apart are 480 frames apart, up to the same clock reads.
#[test]
fn an_instant_maps_to_the_frame_of_the_latest_blocks_start_plus_its_distance() {
    let mut engine = engine();
    let control = engine.controller(4);
    let mut block = vec![0.0f32; 64];
    for _ in 0..10 {
        engine.process(&mut block);
    }
    let before = Instant::now();
    engine.process(&mut block);
    let after = Instant::now();
    assert_eq!(
        control.position(),
        640,
        "the latest block started at frame 640"
    );
    let target = before + Duration::from_millis(10);
    let call = Instant::now();
    let frame = control.frame_at(target);
    let returned = Instant::now();
    // +1: the rounding to a whole frame.
    let (low, high) = (
        640 + 480 - frames_in(after - before) - 1,
        640 + 480 + frames_in(returned - call) + 1,
    );
    assert!(
        (low..=high).contains(&frame),
        "frame_at(10 ms after the block) = {frame}, expected {low}..={high}"
    );
    let call_again = Instant::now();
    let later = control.frame_at(target + Duration::from_millis(10));
    // Each call may be late by the time between its own two clock reads, and rounds.
    let slack = frames_in(returned - call) + frames_in(call_again.elapsed()) + 1;
    assert!(
        later.abs_diff(frame + 480) <= slack,
        "10 ms later is 480 frames later: {frame} then {later}"
    );
    // `When::At` is the same mapping; with no block in between, the anchor has not moved.
    let again = control
        .timed(
            When::At(target),
            downbeat_graph::Event::transport(None, downbeat_graph::time::TransportCommand::Play),
        )
        .frame
        .unwrap();
    assert!(
        again.abs_diff(frame) <= 1 + frames_in(call.elapsed()),
        "When::At maps as frame_at does: {again}, {frame}"
    );
}

/// An OSC bundle applies all its messages at the one frame its timetag maps to (the guide,
/// OSC): two steps in one bundle, on the two gains, change the output in one frame from
/// `1` (`ga` 1, `gb` 0) to `0.75` (`ga` 0.25, `gb` 0.5); messages landing on different
/// frames would show `0.25` or `1.5` in between. The timetag is 100 ms ahead; the frame is
/// bounded as in the test above, by the time the test measured between reading the clocks
/// and the handler's return (the timetag goes through the system clock and back, so a step
/// of the system clock in between would move it too).
#[test]
fn a_bundles_messages_land_on_the_frame_of_its_timetag_together() {
    use downbeat::control::osc::{timetag, OscHandler};
    use rosc::{OscBundle, OscMessage, OscPacket, OscType};
    use std::time::SystemTime;

    let mut engine = engine();
    let mut osc = OscHandler::new(engine.controller(4));
    let mut out = vec![0.0f32; 64 * 11];
    for block in out.chunks_mut(64) {
        engine.process(block);
    }
    let before = Instant::now();
    let mut block = vec![0.0f32; 64];
    engine.process(&mut block);
    out.extend_from_slice(&block);
    assert_eq!(osc.controller().position(), 704);
    let step = |node: &str, value: f32| {
        OscPacket::Message(OscMessage {
            addr: format!("/node/{node}/gain/step"),
            args: vec![OscType::Float(value)],
        })
    };
    let bundle = OscPacket::Bundle(OscBundle {
        timetag: timetag(SystemTime::now() + Duration::from_millis(100)),
        content: vec![step("ga", 0.25), step("gb", 0.5)],
    });
    let packet = rosc::encoder::encode(&bundle).unwrap();
    assert_eq!(osc.handle(&packet), Ok(2));
    let slack = 2 * frames_in(before.elapsed()) + 2;
    let (low, high) = (704 + 4800 - slack, 704 + 4800 + slack);
    while (out.len() as u64) < high + 64 {
        engine.process(&mut block);
        out.extend_from_slice(&block);
    }
    let changed = out
        .iter()
        .position(|&x| x != 1.0)
        .expect("the bundle applied") as u64;
    assert!(
        (low..=high).contains(&changed),
        "the bundle applied at frame {changed}, expected {low}..={high}"
    );
    let after: Vec<f32> = out[changed as usize..].to_vec();
    assert!(
        after.iter().all(|&x| x == 0.75),
        "both messages from frame {changed} on: {:?}",
        &after[..8]
    );
}

downbeat_rt::install_guard_allocator!();

/// The whole event path of a callback — popping the controllers' queues, the schedule's
/// queue and sub-blocks, ramps, the recording tap — allocates, frees, locks and calls
/// nothing.
#[test]
fn the_controller_path_in_the_callback_is_real_time_safe() {
    let mut engine = engine();
    let _reader = engine.record_events();
    let mut c = engine.controller(512);
    for k in 0..100u64 {
        c.step(When::Frame(k * 37), "ga", "gain", 0.5).unwrap();
        c.ramp(
            When::Frame(k * 41 + 1),
            "gb",
            "gain",
            downbeat_graph::Shape::Exponential,
            0.5,
            0.002,
        )
        .unwrap();
        c.set("ga", "gain", 0.25).unwrap();
    }
    let mut block = vec![0.0f32; 64];
    engine.process(&mut block); // first touch of the output buffer outside the guard
    let report = downbeat_rt::guard::check(|| {
        for _ in 0..100 {
            engine.process(&mut block);
        }
    });
    report.assert_clean();
    assert_eq!(engine.schedule().event_stats().applied, 300);
}

/// The OSC server's thread runs at `SCHED_FIFO` 15 (below the recorder's writer, the pool's
/// workers and the audio thread, above every ordinary thread), so that a busy machine does
/// not starve it until its socket overflows. Needs the privilege to set it (root, or an
/// `rtprio` limit of 15): without, this fails.
#[test]
fn the_osc_server_runs_at_a_real_time_priority_below_the_audio_threads() {
    let mut engine = engine();
    let server =
        downbeat::control::osc::serve("127.0.0.1:0", engine.controller(16), |_, _| {}).unwrap();
    let found = support::thread_priority("downbeat-osc", 15);
    server.stop();
    assert_eq!(
        found,
        Some((15, libc::SCHED_FIFO)),
        "the OSC server's (priority, policy)"
    );
}
