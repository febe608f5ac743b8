//! The host's transport for plugins that follow it (`time:Position`) and control outputs,
//! with Ardour's a-delay: synced to the tempo, its delay time (a control output) and its
//! echo follow the tempo the node sends (`host_bpm`), from the project's value, from a live
//! change, and read through the node's monitor; the transport's audio-thread path runs under
//! the guard.

// Built with the `lv2` feature only (crates/plugin/ci.sh turns it on).
#![cfg(feature = "lv2")]

mod lv2_support;

use downbeat_graph::{AudioMut, AudioRef, Node, NodeConfig, ProcessContext};
use downbeat_plugin::lv2::{ControlValue, Lv2Node};
use lv2_support::{have_plugin, render};

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

/// Where the echo of an impulse at frame 0 is loudest.
fn echo_frame(node: Lv2Node, seconds: f32) -> usize {
    let frames = (seconds * RATE) as usize;
    let mut input = vec![0.0f32; frames];
    input[0] = 1.0;
    let out = render(Box::new(node), 1, &input, RATE, 256);
    out.iter()
        .enumerate()
        .skip(1)
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
        .unwrap()
        .0
}

#[test]
fn a_delay_synced_to_the_tempo_takes_the_host_bpm() {
    if !have_plugin(DELAY) {
        return;
    }
    // The default tempo, 120 bpm: a quarter note is 500 ms.
    let node = synced(&[]);
    assert_eq!(node.bpm(), Some(120.0));
    let outputs = node.outputs();
    let at = echo_frame(node, 1.0);
    assert_eq!(outputs.get("delaytime"), Some(500.0));
    assert!(
        (23990..24010).contains(&at),
        "echo at frame {at}, expected 24000"
    );

    // The project's tempo: 150 bpm, 400 ms.
    let node = synced(&[("host_bpm", 150.0)]);
    let outputs = node.outputs();
    let at = echo_frame(node, 1.0);
    assert_eq!(outputs.get("delaytime"), Some(400.0));
    assert!(
        (19190..19210).contains(&at),
        "echo at frame {at}, expected 19200"
    );
    let monitor = synced(&[])
        .monitor()
        .expect("a plugin with control outputs has a monitor");
    assert_eq!(monitor.counts()[0].name, "delaytime_milli");
}

#[test]
fn a_live_tempo_change_reaches_the_plugin_and_its_output_is_read_through_the_monitor() {
    if !have_plugin(DELAY) {
        return;
    }
    let mut node = synced(&[]);
    let bpm = param(&node, "host_bpm");
    assert_eq!(node.get_param(bpm), Some(120.0));
    assert!(node.set_param(bpm, 90.0));
    assert_eq!(node.get_param(bpm), Some(90.0));
    let monitor = node.monitor().unwrap();
    let _ = render(Box::new(node), 1, &vec![0.0; 4800], RATE, 256);
    let delaytime = monitor
        .counts()
        .into_iter()
        .find(|c| c.name == "delaytime_milli")
        .unwrap();
    assert_eq!(delaytime.value, 666_667, "60000 / 90 ms, in thousandths");
}

#[test]
fn unsynced_the_plugin_ignores_the_host_tempo() {
    if !have_plugin(DELAY) {
        return;
    }
    // The control for the test above: with sync off, the time is the `time` control's.
    let node = synced(&[("sync", 0.0), ("time", 250.0), ("host_bpm", 90.0)]);
    let outputs = node.outputs();
    let at = echo_frame(node, 0.5);
    assert_eq!(outputs.get("delaytime"), Some(250.0));
    assert!(
        (11990..12010).contains(&at),
        "echo at frame {at}, expected 12000"
    );
}

#[test]
fn the_transport_reaches_the_plugin_without_allocating_or_locking() {
    if !have_plugin(DELAY) {
        return;
    }
    let mut node = synced(&[]);
    let bpm = param(&node, "host_bpm");
    let speed = param(&node, "host_speed");
    let outputs = node.outputs();
    let input = vec![0.0f32; 256];
    let mut out = vec![0.0f32; 256];
    let ctx = |n: u64| ProcessContext {
        sample_rate: RATE,
        frames: 256,
        position: n * 256,
    };
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
        }
    });
    report.assert_clean();
    // The last tempo sent was 60 + 35 = 95 bpm.
    let want = 60_000.0 / 95.0;
    let got = outputs.get("delaytime").unwrap();
    assert!(
        (got - want).abs() < 1e-2,
        "delay time {got}, expected {want}"
    );
}
