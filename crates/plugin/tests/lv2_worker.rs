//! The LV2 worker with a plugin made to observe it (tests/lv2_worker_plugin, C, compiled
//! here with `cc` into a bundle of its own, which `LV2_PATH` points lilv at; a missing `cc`
//! fails the test): a request made in `instantiate` and the ones made in `run()` are worked
//! on the worker thread and answered at the start of a later run, offline at the very next
//! one; a request made on the main thread (while a state is restored) is worked there at
//! once and answered at the first run; a full ring refuses and is counted; a feature nobody provides is refused by name;
//! and the whole audio-thread path (scheduling,
//! delivering, `end_run`, a refusal) runs under the guard.

// Built with the `lv2` feature only (crates/plugin/ci.sh turns it on).
#![cfg(feature = "lv2")]

mod c_bundle;

use std::path::Path;
use std::sync::Once;
use std::time::Duration;

use downbeat_graph::{AudioMut, AudioRef, Node, NodeConfig, ProcessContext};
use downbeat_plugin::lv2::{ControlValue, Lv2Error, Lv2Node, Start};

downbeat_rt::install_guard_allocator!();

const URI: &str = "urn:downbeat:test:worker-echo";
const BLOCK: usize = 64;
const CFG: NodeConfig = NodeConfig {
    sample_rate: 48000,
    max_block: BLOCK,
};

/// Builds the plugin's bundle and points lilv at it, once, before lilv's world exists.
fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        std::env::set_var(
            "LV2_PATH",
            c_bundle::build("lv2_worker_plugin", "worker_echo"),
        )
    });
}

fn load(values: &[(&str, f64)]) -> Lv2Node {
    setup();
    let values: Vec<(String, ControlValue)> = values
        .iter()
        .map(|(s, v)| (s.to_string(), ControlValue::Number(*v)))
        .collect();
    Lv2Node::load(URI, &values, &CFG).unwrap()
}

/// Runs one block; returns the output's first sample (the plugin writes one value).
fn block(node: &mut Lv2Node, n: u64, out: &mut [f32]) -> f32 {
    let ctx = ProcessContext::new(48000, BLOCK, n * BLOCK as u64);
    node.process(
        &ctx,
        AudioRef::new(&[], 0, BLOCK, BLOCK),
        AudioMut::new(out, 1, BLOCK, BLOCK),
    );
    out[0]
}

fn count(node: &Lv2Node, name: &str) -> u64 {
    let monitor = node.monitor().expect("a worker plugin has a monitor");
    monitor
        .counts()
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no count {name}"))
        .value
}

#[test]
fn offline_every_answer_arrives_at_the_next_run_however_slow_the_worker() {
    // work() takes 5 ms, far longer than the blocks take to run: without the offline wait
    // the answers would come blocks late, at times that depend on the machine.
    let mut node = load(&[("slow", 5.0)]);
    node.set_offline(true);
    let mut out = vec![0.0f32; BLOCK];
    let seen: Vec<f32> = (0..12).map(|n| block(&mut node, n, &mut out)).collect();
    // Block 0 hears the request made in instantiate (1000 -> 2001); block n the one run
    // n - 1 made (n - 1 -> 2n - 1).
    let want: Vec<f32> = std::iter::once(2001.0)
        .chain((1..12).map(|n| (2 * n - 1) as f32))
        .collect();
    assert_eq!(seen, want);
    assert_eq!(node.control("responses"), Some(12.0));
    assert_eq!(node.control("ended"), Some(11.0), "end_run after every run");
    assert_eq!(
        count(&node, "worker_requests"),
        13,
        "instantiate's and 12 runs'"
    );
    assert_eq!(count(&node, "worker_no_space"), 0);
    assert_eq!(count(&node, "worker_late"), 0);
}

#[test]
fn the_worker_path_on_the_audio_thread_is_real_time_safe() {
    let mut node = load(&[]);
    let mut out = vec![0.0f32; BLOCK];
    // The first run outside the guard; then, in real time (no waiting), rounds of runs
    // that make requests and take whatever answers the worker has ready, under the guard,
    // with pauses between the rounds (outside it) for the worker to answer.
    block(&mut node, 0, &mut out);
    for round in 0..10u64 {
        let report = downbeat_rt::guard::check(|| {
            for n in 1..=20 {
                block(&mut node, round * 20 + n, &mut out);
            }
        });
        assert!(report.is_complete(), "{report}");
        report.assert_clean();
        std::thread::sleep(Duration::from_millis(5));
    }
    let responses = node.control("responses").unwrap();
    assert!(
        responses > 1.0,
        "answers were delivered under the guard: {responses}"
    );
    assert_eq!(
        node.control("ended"),
        Some(200.0),
        "end_run after every run"
    );
}

#[test]
fn a_full_ring_refuses_and_counts_under_the_guard() {
    // 100 requests of 1 KiB in one run: more than the 64 KiB ring, and work() takes 20 ms
    // each, so the worker cannot drain it meanwhile.
    let mut node = load(&[("burst", 100.0), ("size", 1024.0), ("slow", 20.0)]);
    let mut out = vec![0.0f32; BLOCK];
    let report = downbeat_rt::guard::check(|| block(&mut node, 0, &mut out));
    report.assert_clean();
    let refused = node.control("refused").unwrap();
    assert!(refused >= 30.0, "the plugin heard NO_SPACE: {refused}");
    assert_eq!(
        count(&node, "worker_no_space"),
        refused as u64,
        "every refusal is counted by the host"
    );
    let monitor = node.monitor().unwrap();
    let lost = monitor.counts();
    let no_space = lost.iter().find(|c| c.name == "worker_no_space").unwrap();
    assert!(
        no_space.loss,
        "a refusal is a loss the run's summary warns about"
    );
}

#[test]
fn unprovided_required_features_are_listed_at_load_time() {
    setup();
    let err = Lv2Node::load("urn:downbeat:test:needs-nothing-known", &[], &CFG)
        .err()
        .unwrap();
    match &err {
        Lv2Error::MissingFeatures { missing, .. } => {
            // The worker is provided: only the unknown feature is missing.
            assert_eq!(missing, &["urn:downbeat:test:no-such-feature"]);
        }
        other => panic!("expected missing features, got {other}"),
    }
    assert!(err.to_string().contains("no-such-feature"), "{err}");
}

#[test]
fn a_request_from_instantiate_waits_in_the_ring_for_the_worker_thread() {
    // The plugin's worker interface is unknown inside `instantiate`, so its request cannot
    // be worked there; nor is it to be worked later on the loading thread, which would
    // make loading wait for the plugin's work.
    let mut node = load(&[]);
    node.set_offline(true);
    let mut out = vec![0.0f32; BLOCK];
    assert_eq!(
        block(&mut node, 0, &mut out),
        2001.0,
        "answered at the first run"
    );
    assert_eq!(
        node.control("inline"),
        Some(0.0),
        "worked on the thread that instantiated the plugin"
    );
}

#[test]
fn a_request_from_the_main_thread_is_worked_at_once_and_answered_at_the_first_run() {
    let mut saved = load(&[]);
    let state = saved.save_state().unwrap().unwrap();
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("worker-echo-state.ttl");
    std::fs::write(&file, &state.bytes).unwrap();
    // Restoring the state makes the plugin schedule work (5000) outside run(), on this
    // thread: done before the node is even returned.
    let start = Start {
        preset: None,
        state: Some(file),
    };
    let mut node = Lv2Node::load_with(URI, &[], &start, &CFG).unwrap();
    let worker = node.worker_counts().unwrap();
    assert_eq!(
        worker.requests.load(std::sync::atomic::Ordering::Relaxed),
        2,
        "instantiate's (through the ring) and restore's (at once)"
    );
    node.set_offline(true);
    let mut out = vec![0.0f32; BLOCK];
    block(&mut node, 0, &mut out);
    assert_eq!(
        node.control("responses"),
        Some(2.0),
        "both answered at the first run"
    );
    assert_eq!(
        node.control("inline"),
        Some(1.0),
        "the restore's request, and only it, was worked on the loading thread"
    );
    let restored_answer = block(&mut node, 1, &mut out);
    assert_eq!(restored_answer, 1.0, "then run 0's answer");
}

#[test]
fn a_worker_thread_that_cannot_start_is_an_error_at_load_naming_the_plugin() {
    // Without its thread a worker plugin's requests are never worked: offline, every block
    // would wait out the worker's patience (two minutes) for an answer that never comes.
    setup();
    downbeat_plugin::lv2::worker::fail_next_spawn();
    let err = Lv2Node::load(URI, &[], &CFG)
        .err()
        .expect("a plugin whose worker thread did not start was loaded");
    match &err {
        Lv2Error::WorkerThread { uri, .. } => assert_eq!(uri, URI),
        other => panic!("expected Lv2Error::WorkerThread, got {other:?}"),
    }
    let message = err.to_string();
    assert!(
        message.contains(URI) && message.contains("worker thread"),
        "{message}"
    );
    // The hook is used up: the next load starts its worker.
    let mut node = load(&[]);
    node.set_offline(true);
    let mut out = vec![0.0f32; BLOCK];
    block(&mut node, 0, &mut out);
    assert_eq!(count(&node, "worker_late"), 0);
}
