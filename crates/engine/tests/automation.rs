//! `[[automation]]` in project files: events at exact frames, the same output at every
//! block size, serial or parallel; errors point at the line. (The same output on every
//! device: `crates/cli/tests/automation_cli.rs`.)

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

/// What a hot swap does to events (documented in `control`): the timeline goes on; the
/// old schedule's queued events move to the same node of the new one; the new schedule's
/// automation starts at the frame it was swapped in at; events still in a controller's
/// queue reach the new schedule by node key.
#[test]
fn a_hot_swap_keeps_queued_events_and_starts_the_new_automation_at_the_swap() {
    let src = (support::constant_through_gain(64) + AUTOMATION).replace(
        r#"[[0.001, 0.5], [0.002, 0.25, "linear"], [0.003, 2, "exp"], [0.0210, 1.0]]"#,
        "[[0.01, 0.5]]",
    );
    let project = Project::parse(&src, "swap.toml").unwrap();
    let mut engine = Engine::new(project.build().unwrap());
    let (mut sender, mut collector) = engine.swap_channel(2);
    let mut c = engine.controller(16);
    let mut block = vec![0.0f32; 64];
    c.step(downbeat::control::When::Frame(1000), "g", "gain", 0.25)
        .unwrap();
    engine.process(&mut block); // the event moves into the schedule's queue
    assert_eq!(engine.schedule().pending_events(), 1);
    sender.send(project.build().unwrap()).unwrap();
    // Sent after the swap was asked for, before the engine took it: still in the ring.
    c.step(downbeat::control::When::Frame(1100), "g", "gain", 0.125)
        .unwrap();
    let mut out = Vec::new();
    for _ in 0..20 {
        engine.process(&mut block);
        out.extend_from_slice(&block);
    }
    assert_eq!(engine.swaps(), 1);
    assert_eq!(collector.collect(), 1);
    // `out` starts at frame 64, where the swap happened. The new automation steps to 0.5
    // 480 frames after the swap (frame 544); the old schedule's event at 1000 moved with
    // the swap; the ring's event lands at 1100.
    let at = |frame: usize| frame - 64;
    assert!(out[..at(544)].iter().all(|&x| x == 1.0));
    assert!(out[at(544)..at(1000)].iter().all(|&x| x == 0.5));
    assert!(out[at(1000)..at(1100)].iter().all(|&x| x == 0.25));
    assert!(out[at(1100)..].iter().all(|&x| x == 0.125));
    assert_eq!(engine.schedule().position(), 64 * 21);
    assert_eq!(engine.stale_events(), 0);
}
