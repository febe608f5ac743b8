//! The host's CLAP extensions, against the host-probe test plugin
//! (`crates/clap-test-plugins/src/host_probe.rs`), which uses them as real plugins do:
//! latency from `deactivate` without a check (DPF), thread-check from `activate` and
//! `process`, log and `request_flush` from `process`, state, and a sidechain input.

mod clap_support;

use clap_support::{test_plugins, HOST_PROBE_ID, PROBE_LATENCY, PROBE_NAME};
use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};
use downbeat_plugin::clap::{ClapError, ClapNode, STATE_EXTENSION};

downbeat_rt::install_guard_allocator!();

const FRAMES: usize = 256;

fn probe() -> ClapNode {
    ClapNode::load(&test_plugins(), Some(HOST_PROBE_ID), 48000.0, FRAMES)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// One block of `input` (2 channels, planar) through the node; the planar output.
fn block(node: &mut ClapNode, input: &[f32], output: &mut [f32], position: u64) {
    let ctx = ProcessContext {
        sample_rate: 48000.0,
        frames: FRAMES,
        position,
    };
    node.process(
        &ctx,
        AudioRef::new(input, 2, FRAMES, FRAMES),
        AudioMut::new(output, 2, FRAMES, FRAMES),
    );
}

fn ramp() -> Vec<f32> {
    (0..2 * FRAMES).map(|i| (i as f32 / 512.0) - 0.5).collect()
}

#[test]
fn the_probe_reads_its_latency_and_is_torn_down_calling_the_latency_extension() {
    // Without the host's `clap.latency` the probe's `deactivate` (like DPF's) aborts the
    // process: reaching the end of this test is the check.
    let node = probe();
    assert_eq!(node.latency(), PROBE_LATENCY);
    // The sidechain port is not one of the node's inputs: it gets silence.
    assert_eq!(node.input_channels(), 2);
    assert_eq!(node.output_channels(), 2);
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
    let expected: Vec<f32> = ramp().iter().map(|x| x * 0.5).collect();
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
        48000.0,
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
        48000.0,
        FRAMES,
        Some(&file),
    )
    .err()
    .unwrap();
    assert!(matches!(err, ClapError::State { .. }), "{err:?}");
    assert_eq!(err.key(), "state");
    assert!(err.to_string().contains("probe.clapstate"), "{err}");
}
