//! The host's CLAP extensions, against the host-probe test plugin
//! (`crates/clap-test-plugins/src/host_probe.rs`), which uses them as real plugins do:
//! latency from `deactivate` without a check (DPF), thread-check from `activate` and
//! `process`, log and `request_flush` from `process`, state, and a sidechain input.

mod clap_support;

use clap_support::{test_plugins, HOST_PROBE_ID, PROBE_LATENCY, PROBE_NAME};
use downbeat_graph::{AudioMut, AudioRef, Node, Port, ProcessContext};
use downbeat_plugin::clap::{ClapError, ClapNode, STATE_EXTENSION};

downbeat_rt::install_guard_allocator!();

const FRAMES: usize = 256;

fn probe() -> ClapNode {
    ClapNode::load(&test_plugins(), Some(HOST_PROBE_ID), 48000, FRAMES)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The probe's input channels: its stereo `main` port, then its mono `sidechain`.
const INPUTS: usize = 3;

/// One block of `input` ([`INPUTS`] channels, planar) through the node; the planar output
/// (2 channels).
fn block(node: &mut ClapNode, input: &[f32], output: &mut [f32], position: u64) {
    let ctx = ProcessContext::new(48000, FRAMES, position);
    node.process(
        &ctx,
        AudioRef::new(input, INPUTS, FRAMES, FRAMES),
        AudioMut::new(output, 2, FRAMES, FRAMES),
    );
}

/// A ramp on both main channels, and a silent sidechain.
fn ramp() -> Vec<f32> {
    let mut input: Vec<f32> = (0..2 * FRAMES).map(|i| (i as f32 / 512.0) - 0.5).collect();
    input.resize(INPUTS * FRAMES, 0.0);
    input
}

#[test]
fn the_probe_reads_its_latency_and_is_torn_down_calling_the_latency_extension() {
    // Without the host's `clap.latency` the probe's `deactivate` (like DPF's) aborts the
    // process: reaching the end of this test is the check.
    let node = probe();
    assert_eq!(node.latency(), PROBE_LATENCY);
    // Every audio port is one of the node's: the stereo main input, then the sidechain.
    assert_eq!(node.input_channels(), INPUTS);
    assert_eq!(
        node.input_ports(),
        [Port::main(2), Port::new("sidechain", 1)]
    );
    assert_eq!(node.output_channels(), 2);
    assert_eq!(node.output_ports(), [Port::main(2)]);
    drop(node);
}

#[test]
fn log_thread_check_and_flush_requests_from_process_are_real_time_safe_and_truthful() {
    let mut node = probe();
    // Processing happens on a thread other than the one that built the node, as in a run:
    // the probe outputs silence unless the host says that thread is the audio thread and
    // not the main thread.
    let (mut node, output, report) = std::thread::spawn(move || {
        let input = ramp();
        let mut output = vec![0.0f32; 2 * FRAMES];
        assert!(node.set_param_at(0, 0, 0.5));
        // The first call starts processing (the plugin's business, once).
        block(&mut node, &input, &mut output, 0);
        let report = downbeat_rt::guard::check(|| {
            for b in 1..20u64 {
                block(&mut node, &input, &mut output, b * FRAMES as u64);
            }
        });
        (node, output, report)
    })
    .join()
    .unwrap();
    report.assert_clean();
    assert_eq!(node.failed_calls(), 0);
    let expected: Vec<f32> = ramp()[..2 * FRAMES].iter().map(|x| x * 0.5).collect();
    assert_eq!(
        output, expected,
        "gain 0.5, a silent sidechain, truthful answers"
    );
    // Logged from `process` on the audio thread, printed on the main thread.
    assert_eq!(
        node.take_log(),
        (1..=3)
            .map(|n| format!("[downbeat] clap {PROBE_NAME}: INFO: process call {n}"))
            .collect::<Vec<_>>()
    );
    assert_eq!(node.log_dropped(), 0);
}

#[test]
fn the_state_saved_after_a_change_loads_into_a_new_node_with_its_parameter_values() {
    let mut node = probe();
    let input = ramp();
    let mut output = vec![0.0f32; 2 * FRAMES];
    assert!(node.set_param_at(0, 0, 0.25));
    block(&mut node, &input, &mut output, 0);
    let state = node.save_state().unwrap().expect("the probe has a state");
    assert_eq!(state.extension, STATE_EXTENSION);
    assert_eq!(&state.bytes[..8], b"DBPROBE1");
    drop(node);

    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("clap-host-state");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("probe.clapstate");
    std::fs::write(&file, &state.bytes).unwrap();
    let mut loaded = ClapNode::load_with_state(
        &test_plugins(),
        Some(HOST_PROBE_ID),
        48000,
        FRAMES,
        Some(&file),
    )
    .unwrap();
    // The node's value is the state's, not the declared default (1).
    assert_eq!(loaded.get_param(0), Some(0.25));
    let mut again = vec![0.0f32; 2 * FRAMES];
    block(&mut loaded, &input, &mut again, 0);
    assert_eq!(again, output);

    // A file that is not the probe's state: a typed error naming the key and the file.
    std::fs::write(&file, b"not a state").unwrap();
    let err = ClapNode::load_with_state(
        &test_plugins(),
        Some(HOST_PROBE_ID),
        48000,
        FRAMES,
        Some(&file),
    )
    .err()
    .unwrap();
    assert!(matches!(err, ClapError::State { .. }), "{err:?}");
    assert_eq!(err.key(), "state");
    assert!(err.to_string().contains("probe.clapstate"), "{err}");
}

/// Messages the probe's log flood logs per `process` call (`host_probe.rs`).
const FLOOD: usize = 40;
/// Slots in the host's ring of messages logged from the audio thread (`src/clap/log.rs`).
const RING_SLOTS: usize = 64;

#[test]
fn a_plugin_filling_the_log_ring_from_process_is_real_time_safe_and_the_overflow_is_counted() {
    // The probe's log flood, set through its state (magic, gain 1, flood count): every
    // process call logs FLOOD messages on top of the first three calls' own.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("clap-host-log-flood");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("flood.clapstate");
    let mut state = b"DBPROBE1".to_vec();
    state.extend_from_slice(&1f32.to_le_bytes());
    state.extend_from_slice(&(FLOOD as u32).to_le_bytes());
    std::fs::write(&file, &state).unwrap();
    let node = ClapNode::load_with_state(
        &test_plugins(),
        Some(HOST_PROBE_ID),
        48000,
        FRAMES,
        Some(&file),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let line = |m: &str| format!("[downbeat] clap {PROBE_NAME}: INFO: {m}");

    // Block 0 starts processing outside the guard and fills the ring partway (1 + FLOOD);
    // blocks 1 to 3, guarded, fill the rest of it and then find every slot taken.
    let (mut node, report) = std::thread::spawn(move || {
        let mut node = node;
        let input = ramp();
        let mut output = vec![0.0f32; 2 * FRAMES];
        block(&mut node, &input, &mut output, 0);
        let report = downbeat_rt::guard::check(|| {
            for b in 1..4u64 {
                block(&mut node, &input, &mut output, b * FRAMES as u64);
            }
        });
        (node, report)
    })
    .join()
    .unwrap();
    report.assert_clean();
    let logged = 3 + 4 * FLOOD;
    let lost = logged - RING_SLOTS;
    assert_eq!(node.log_dropped(), lost as u64);
    // The ring keeps the first 64 in the order logged; the loss is said last.
    let mut want = vec![line("process call 1")];
    want.extend((0..FLOOD).map(|_| line("log flood")));
    want.push(line("process call 2"));
    want.extend((0..RING_SLOTS - FLOOD - 2).map(|_| line("log flood")));
    want.push(format!(
        "[downbeat] clap {PROBE_NAME}: {lost} more message(s) logged from the audio thread \
         were lost: all {RING_SLOTS} slots of the node's log ring were waiting to be printed"
    ));
    assert_eq!(node.take_log(), want);

    // Drained, the ring takes messages again; the loss is told once.
    let (node, report) = std::thread::spawn(move || {
        let input = ramp();
        let mut output = vec![0.0f32; 2 * FRAMES];
        let report = downbeat_rt::guard::check(|| {
            block(&mut node, &input, &mut output, 4 * FRAMES as u64);
        });
        (node, report)
    })
    .join()
    .unwrap();
    report.assert_clean();
    let mut node = node;
    assert_eq!(node.take_log(), vec![line("log flood"); FLOOD]);
    assert_eq!(node.log_dropped(), lost as u64);
}
