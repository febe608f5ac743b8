//! The host's transport for plugins that follow it (`time:Position`) and control outputs,
//! with Ardour's a-delay: synced to the tempo, its delay time (a control output, one of the
//! node's `Node::outputs`) and its echo follow the tempo the node sends (`host_bpm`), from
//! the project's value and from a live change, the delay time read through the schedule as
//! a watcher reads it; the transport's audio-thread path runs under the guard.

// Built with the `lv2` feature only (crates/plugin/ci.sh turns it on).
#![cfg(feature = "lv2")]

mod lv2_support;

use downbeat_graph::{AudioMut, AudioRef, Node, NodeConfig, ProcessContext};
use downbeat_plugin::lv2::{ControlValue, Lv2Node};
use lv2_support::{render_outputs, require_plugin};

downbeat_rt::install_guard_allocator!();

const DELAY: &str = "urn:ardour:a-delay";
const RATE: f32 = 48000.0;
const CFG: NodeConfig = NodeConfig {
    sample_rate: RATE,
    max_block: 256,
};

/// a-delay synced to the tempo, a quarter note, fully wet, no feedback; plus `extra`.
fn synced(extra: &[(&str, f64)]) -> Lv2Node {
    let mut values: Vec<(String, ControlValue)> = [
        ("sync", 1.0),
        ("div", 4.0),
        ("drywet", 100.0),
        ("feedback", 0.0),
        ("lpf", 20000.0),
    ]
    .iter()
    .chain(extra)
    .map(|(s, v)| (s.to_string(), ControlValue::Number(*v)))
    .collect();
    values.dedup_by(|a, b| a.0 == b.0);
    Lv2Node::load(DELAY, &values, &CFG).unwrap()
}

fn param(node: &Lv2Node, name: &str) -> usize {
    node.params().iter().position(|p| p.name == name).unwrap()
}

/// Where the echo of an impulse at frame 0 is loudest, and the plugin's `delaytime` output
/// after the render.
fn echo_frame(node: Lv2Node, seconds: f32) -> (usize, f32) {
    let frames = (seconds * RATE) as usize;
    let mut input = vec![0.0f32; frames];
    input[0] = 1.0;
    let (out, outputs) = render_outputs(Box::new(node), 1, &input, RATE, 256);
    let at = out
        .iter()
        .enumerate()
        .skip(1)
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
        .unwrap()
        .0;
    (at, delaytime(&outputs))
}

fn delaytime(outputs: &[(&str, f32)]) -> f32 {
    outputs
        .iter()
        .find(|(name, _)| *name == "delaytime")
        .expect("a-delay's `delaytime` is one of the node's outputs")
        .1
}

#[test]
fn a_delay_synced_to_the_tempo_takes_the_host_bpm() {
    require_plugin(DELAY);
    // The default tempo, 120 bpm: a quarter note is 500 ms.
    let node = synced(&[]);
    assert_eq!(node.bpm(), Some(120.0));
    let (at, delay) = echo_frame(node, 1.0);
    assert_eq!(delay, 500.0);
    assert!(
        (23990..24010).contains(&at),
        "echo at frame {at}, expected 24000"
    );

    // The project's tempo: 150 bpm, 400 ms.
    let node = synced(&[("host_bpm", 150.0)]);
    let (at, delay) = echo_frame(node, 1.0);
    assert_eq!(delay, 400.0);
    assert!(
        (19190..19210).contains(&at),
        "echo at frame {at}, expected 19200"
    );
    let node = synced(&[]);
    assert!(
        node.params().iter().all(|p| p.name != "delaytime"),
        "an output is not a parameter"
    );
    assert!(node.monitor().is_none(), "no worker, no counts");
}

#[test]
fn a_live_tempo_change_reaches_the_plugin_and_its_output_follows() {
    require_plugin(DELAY);
    let mut node = synced(&[]);
    let bpm = param(&node, "host_bpm");
    assert_eq!(node.get_param(bpm), Some(120.0));
    assert!(node.set_param(bpm, 90.0));
    assert_eq!(node.get_param(bpm), Some(90.0));
    let (_, outputs) = render_outputs(Box::new(node), 1, &vec![0.0; 4800], RATE, 256);
    let got = delaytime(&outputs);
    assert!(
        (got - 60_000.0 / 90.0).abs() < 1e-3,
        "{got} ms, not 60000 / 90"
    );
}

#[test]
fn unsynced_the_plugin_ignores_the_host_tempo() {
    require_plugin(DELAY);
    // The control for the test above: with sync off, the time is the `time` control's.
    let node = synced(&[("sync", 0.0), ("time", 250.0), ("host_bpm", 90.0)]);
    let (at, delay) = echo_frame(node, 0.5);
    assert_eq!(delay, 250.0);
    assert!(
        (11990..12010).contains(&at),
        "echo at frame {at}, expected 12000"
    );
}

#[test]
fn the_transport_reaches_the_plugin_without_allocating_or_locking() {
    require_plugin(DELAY);
    let mut node = synced(&[]);
    let bpm = param(&node, "host_bpm");
    let speed = param(&node, "host_speed");
    let delay = node
        .outputs()
        .iter()
        .position(|o| o.name == "delaytime")
        .unwrap();
    let mut last = 0.0;
    let input = vec![0.0f32; 256];
    let mut out = vec![0.0f32; 256];
    let ctx = |n: u64| ProcessContext::new(RATE, 256, n * 256);
    node.process(
        &ctx(0),
        AudioRef::new(&input, 1, 256, 256),
        AudioMut::new(&mut out, 1, 256, 256),
    );
    let report = downbeat_rt::guard::check(|| {
        for n in 1..40u64 {
            // A new tempo every few blocks, a stop and a start, and a jump in position:
            // each sends a position.
            if n % 5 == 0 {
                node.set_param(bpm, 60.0 + n as f32);
            }
            if n == 20 {
                node.set_param(speed, 0.0);
            }
            if n == 25 {
                node.set_param(speed, 1.0);
            }
            let at = if n >= 30 { n + 100 } else { n };
            node.process(
                &ctx(at),
                AudioRef::new(&input, 1, 256, 256),
                AudioMut::new(&mut out, 1, 256, 256),
            );
            // As the schedule reads an output after a block, for a watcher.
            last = node.output_value(delay);
        }
    });
    report.assert_clean();
    // The last tempo sent was 60 + 35 = 95 bpm.
    let want = 60_000.0 / 95.0;
    let got = last;
    assert!(
        (got - want).abs() < 1e-2,
        "delay time {got}, expected {want}"
    );
}
