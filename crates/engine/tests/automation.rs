//! `[[automation]]` in project files: events at exact frames, the same output at every
//! block size, serial or parallel, and on every device; errors point at the line.

use std::path::Path;
use std::process::Command;

use downbeat::project::{Project, ProjectError};
use downbeat::Engine;

mod support;

/// Automation of the gain of [`support::constant_through_gain`], whose output is the gain.
const AUTOMATION: &str = r#"
[[automation]]
node = "g"
param = "gain"
points = [[0.001, 0.5], [0.002, 0.25, "linear"], [0.003, 2, "exp"], [0.0210, 1.0]]
"#;

fn render(block: usize, threads: usize, frames: usize) -> Vec<f32> {
    let src = support::constant_through_gain(block) + AUTOMATION;
    let project = Project::parse(&src, "auto.toml").unwrap();
    let mut engine = Engine::new(project.build().unwrap());
    engine.set_threads(threads);
    let mut out = vec![0.0; frames];
    for chunk in out.chunks_mut(block) {
        engine.process(chunk);
    }
    out
}

#[test]
fn automation_lands_at_its_frames_at_every_block_size_serial_and_parallel() {
    let frames = 3000;
    let reference = render(64, 1, frames);
    // 0.001 s = frame 48: the step; 48..96 the linear ramp; 96..144 the exponential one;
    // 0.021 s = frame 1008 (across a block boundary at 1000): back to 1.
    assert!(reference[..48].iter().all(|&x| x == 1.0));
    assert_eq!(reference[48], 0.5);
    for k in 0..48 {
        let lin = 0.5 + (0.25 - 0.5) * k as f64 / 48.0;
        assert!(
            (f64::from(reference[48 + k]) - lin).abs() < 1e-6,
            "linear {k}"
        );
        let exp = 0.25 * 8f64.powf(k as f64 / 48.0);
        assert!((f64::from(reference[96 + k]) - exp).abs() < 1e-6, "exp {k}");
    }
    assert!(reference[144..1008].iter().all(|&x| x == 2.0));
    assert!(reference[1008..].iter().all(|&x| x == 1.0));
    for (block, threads) in [(256, 1), (1000, 1), (64, 2), (1000, 2)] {
        let other = render(block, threads, frames);
        support::assert_bit_identical(
            &reference,
            &other,
            &format!("block {block}, {threads} thread(s) against block 64 serial"),
        );
    }
}

fn error(src: &str) -> ProjectError {
    match Project::parse(src, "bad.toml") {
        Err(e) => e,
        Ok(p) => p.build().expect_err("the project should be refused"),
    }
}

#[test]
fn automation_errors_point_at_the_line_and_column() {
    let good = support::constant_through_gain(64) + AUTOMATION;
    let cases = [
        (
            r#"node = "g""#,
            r#"node = "lp""#,
            17,
            8,
            "unknown node `lp`",
        ),
        (
            r#"param = "gain""#,
            r#"param = "channels""#,
            18,
            9,
            "cannot change while running",
        ),
        (
            r#"param = "gain""#,
            r#"param = "volume""#,
            18,
            9,
            "unknown parameter `volume`",
        ),
        (
            "[0.002, 0.25,",
            "[0.002, 25.0,",
            19,
            33,
            "got 25, expected a number from 0 to 16",
        ),
        (
            "[0.003, 2,",
            "[0.0005, 2,",
            19,
            51,
            "times must go up: 0.0005 s comes after 0.002 s",
        ),
        (r#""exp""#, r#""cubic""#, 19, 61, "unknown automation shape"),
        (
            r#"[0.003, 2, "exp"]"#,
            r#"[0.003, -2, "exp"]"#,
            19,
            58,
            "exponential",
        ),
        ("[0.001, 0.5]", "[0.001, 0.5, 7, 8]", 19, 11, "has 4 items"),
        (
            "[0.001, 0.5]",
            r#"[0.001, "half"]"#,
            19,
            19,
            "value of an automation point must be a number",
        ),
    ];
    for (from, to, line, column, message) in cases {
        assert!(good.contains(from), "{from}");
        let e = error(&good.replacen(from, to, 1));
        assert_eq!((e.line, e.column), (line, column), "{to}: {e}");
        assert!(e.message.contains(message), "{to}: {e}");
    }
}

fn run(dir: &Path, device: &str, wav: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .arg("run")
        .arg(dir.join("p.toml"))
        .args(["--device", device, "--seconds", "0.6", "--out"])
        .arg(wav)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn automation_renders_identically_on_the_offline_and_virtual_devices() {
    let dir = std::env::temp_dir().join(format!("downbeat-automation-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut project = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/projects/hello.toml"),
    )
    .unwrap();
    project.push_str(
        r#"
[[automation]]
node = "lowpass"
param = "freq"
points = [[0.05, 3000.0], [0.3, 150.0, "exp"], [0.45, 900.0, "linear"]]

[[automation]]
node = "mix"
param = "pan"
points = [[0.1, -1.0], [0.5, 1.0, "linear"]]
"#,
    );
    std::fs::write(dir.join("p.toml"), project).unwrap();
    let (offline, live) = (dir.join("offline.wav"), dir.join("virtual.wav"));
    run(&dir, "offline", &offline);
    run(&dir, "virtual", &live);
    let read = |p: &Path| -> Vec<f32> {
        hound::WavReader::open(p)
            .unwrap()
            .samples::<f32>()
            .map(Result::unwrap)
            .collect()
    };
    let (a, b) = (read(&offline), read(&live));
    assert_eq!(a.len(), 2 * 28_800);
    support::assert_bit_identical(&a, &b, "offline against virtual");
    // The automation did something: at 0.5 s the pan is hard right.
    let level = |from: usize| -> f32 {
        a[2 * 24_000 + from..2 * 28_000]
            .iter()
            .step_by(2)
            .map(|x| x.abs())
            .sum()
    };
    let (left, right) = (level(0), level(1));
    assert!(
        right > 0.0 && left < right * 1e-3,
        "hard right leaves the left channel silent: {left} against {right}"
    );
}

/// What a hot swap does to events (documented in `control`): the old schedule's queued
/// events and its automation go with it; the new schedule starts its own timeline at
/// frame 0 with its own automation; events still in a controller's queue are offered to the
/// new schedule by position.
#[test]
fn a_hot_swap_drops_the_old_schedules_queued_events_and_automation() {
    let src = (support::constant_through_gain(64) + AUTOMATION).replace(
        r#"[[0.001, 0.5], [0.002, 0.25, "linear"], [0.003, 2, "exp"], [0.0210, 1.0]]"#,
        "[[0.01, 0.5]]",
    );
    let project = Project::parse(&src, "swap.toml").unwrap();
    let mut engine = Engine::new(project.build().unwrap());
    let (mut sender, mut collector) = engine.swap_channel(2);
    let mut c = engine.controller(16);
    let mut block = vec![0.0f32; 64];
    c.step("g", "gain", 0.25, downbeat::control::When::Frame(1000))
        .unwrap();
    engine.process(&mut block); // the event moves into the schedule's queue
    assert_eq!(engine.schedule().pending_events(), 1);
    sender.send(project.build().unwrap()).unwrap();
    // Sent after the swap was asked for, before the engine took it: still in the ring.
    c.step("g", "gain", 0.125, downbeat::control::When::Frame(1100))
        .unwrap();
    let mut out = Vec::new();
    for _ in 0..20 {
        engine.process(&mut block);
        out.extend_from_slice(&block);
    }
    assert_eq!(engine.swaps(), 1);
    assert_eq!(collector.collect(), 1);
    // New timeline from 0: its automation steps to 0.5 at frame 480; the old schedule's
    // event at 1000 is gone; the ring's event lands at 1100 of the new timeline.
    assert!(out[..480].iter().all(|&x| x == 1.0));
    assert!(out[480..1100].iter().all(|&x| x == 0.5));
    assert!(out[1100..].iter().all(|&x| x == 0.125));
    assert_eq!(engine.stale_events(), 0);
}
