//! Watchers see parameter values (a ramp's moving value included) and node levels on the
//! offline and virtual devices, and the audio side of watching is real-time safe.

use std::time::Duration;

use downbeat::control::When;
use downbeat::device::{Device, Offline, RunLength, Virtual};
use downbeat::project::Project;
use downbeat::Engine;
use downbeat_graph::Shape;

mod support;

/// A constant 1.0 through a gain ramped by automation from 0 to 1 over `SECONDS`: the
/// gain's value at frame f is f / (SECONDS x 48000), and so is its output.
const AUTOMATION: &str = r#"gain = 0.0

[[automation]]
node = "g"
param = "gain"
points = [[SECONDS, 1.0, "linear"]]
"#;

fn engine(seconds: f64) -> Engine {
    let src = support::constant_through_gain(64)
        + &AUTOMATION.replace("SECONDS", &format!("{seconds:.1}"));
    Engine::new(Project::parse(&src, "watch.toml").unwrap().build().unwrap())
}

/// Runs `device` on a thread of its own while this one watches; checks every delivery
/// against the ramp's closed form and returns how many showed the ramp mid-way.
fn watch_a_ramp(mut device: impl Device + Send + 'static, seconds: f64) -> usize {
    let mut engine = engine(seconds);
    let mut watcher = engine.watch();
    let total = seconds * 48_000.0;
    let length = RunLength::seconds(seconds, 48_000);
    let run = std::thread::spawn(move || device.run(engine, length).unwrap());
    let mut mid_way = std::collections::BTreeSet::new();
    let mut previous = 0.0f32;
    while !run.is_finished() {
        if !watcher.wait(Duration::from_millis(50)) {
            continue;
        }
        let (frame, gain) = (watcher.frame(), watcher.value("g", "gain").unwrap());
        let want = (frame as f64 / total).min(1.0);
        assert!(
            (f64::from(gain) - want).abs() < 1e-6,
            "frame {frame}: the watcher saw {gain}, the ramp is at {want}"
        );
        // The gain's output is the gain: its peak since the previous delivery is the
        // highest value the ramp had in between.
        let peak = watcher.level("g").unwrap().peak;
        assert!(
            peak <= gain + 1e-6 && peak + 1e-6 >= previous.min(gain),
            "peak {peak} between {previous} and {gain}"
        );
        if gain > 0.0 && gain < 1.0 {
            mid_way.insert(gain.to_bits());
        }
        previous = gain;
    }
    let run = run.join().unwrap();
    watcher.wait(Duration::from_secs(1));
    assert_eq!(watcher.frame(), length.frames);
    assert_eq!(watcher.value("g", "gain"), Some(1.0));
    let levels = watcher.run_levels();
    let s = &levels.iter().find(|(n, _)| n == "s").unwrap().1;
    assert_eq!((s.peak, s.rms), (1.0, 1.0), "the constant source");
    drop(run);
    mid_way.len()
}

#[test]
fn a_watcher_sees_a_ramp_move_on_the_virtual_device() {
    let seen = watch_a_ramp(Virtual::new(None), 1.0);
    // A second at a 10 ms poll: dozens of deliveries; a loaded machine still gives a few.
    assert!(seen >= 5, "{seen} values mid-ramp");
}

#[test]
fn a_watcher_sees_a_ramp_move_on_the_offline_device() {
    // Offline runs as fast as it can: a long ramp, so that the watcher looks several times.
    let seen = watch_a_ramp(Offline::new(None), 600.0);
    assert!(seen >= 3, "{seen} values mid-ramp");
}

downbeat_rt::install_guard_allocator!();

/// The audio side of watching — taking the changed values and the levels, publishing them,
/// triggering the notifier — allocates, frees, locks and calls nothing.
#[test]
fn the_watch_tap_in_the_callback_is_real_time_safe() {
    let mut engine = engine(0.5);
    let mut watcher = engine.watch();
    let mut c = engine.controller(64);
    c.ramp("g", "gain", Shape::Exponential, 0.5, 0.01, When::Frame(100))
        .unwrap();
    let mut block = vec![0.0f32; 64];
    engine.process(&mut block); // first touch of the output buffer outside the guard
    let report = downbeat_rt::guard::check(|| {
        for _ in 0..100 {
            engine.process(&mut block);
        }
    });
    report.assert_clean();
    assert!(watcher.wait(Duration::from_secs(1)));
    assert_eq!(watcher.frame(), 101 * 64);
    let gain = watcher.value("g", "gain").unwrap();
    assert!(gain > 0.0);
    let values = watcher.values();
    let listed = values
        .iter()
        .find(|r| (r.node.as_str(), r.param) == ("g", "gain"))
        .unwrap();
    assert_eq!(listed.value, gain);
    // The sine's live parameters hold their project values.
    let amp = values
        .iter()
        .find(|r| (r.node.as_str(), r.param) == ("s", "amp"))
        .unwrap();
    assert_eq!(amp.value, 1.0);
}
