//! A CLAP plugin that asks to sleep is not called until something wakes it: an event in the
//! block, input that is not silent, or its own `request_process` or `params.request_flush`
//! from another thread; the
//! sleeping blocks and the waking ones are real-time safe. The test plugins' sleeper writes
//! how many calls it has had into its output, so every block says whether it was processed.

mod clap_support;

use std::time::{Duration, Instant};

use clap_support::{test_plugins, SLEEPER_ID};
use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};
use downbeat_plugin::clap::ClapNode;

downbeat_rt::install_guard_allocator!();

const FRAMES: usize = 256;

/// Buffers made before any guarded block: the helper below must not allocate.
struct Buffers {
    input: Vec<f32>,
    output: Vec<f32>,
}

/// One block of stereo input, every sample `input`; the output's value (the call count,
/// plus the input, when the plugin was called; 0 when it slept).
fn block(node: &mut ClapNode, bufs: &mut Buffers, input: f32, at: u64) -> f32 {
    bufs.input.fill(input);
    bufs.output.fill(f32::NAN);
    node.process(
        &ProcessContext::new(48000, FRAMES, at * FRAMES as u64),
        AudioRef::new(&bufs.input, 2, FRAMES, FRAMES),
        AudioMut::new(&mut bufs.output, 2, FRAMES, FRAMES),
    );
    let first = bufs.output[0];
    assert!(
        bufs.output.iter().all(|&s| s == first),
        "block {at}: a whole block is one value"
    );
    first
}

#[test]
fn a_sleeping_plugin_is_woken_by_events_input_and_its_own_request() {
    let mut node = ClapNode::load(&test_plugins(), Some(SLEEPER_ID), 48000, FRAMES)
        .unwrap_or_else(|e| panic!("{e}"));
    // The audio thread is not the one that built the node, as in a run.
    let node = std::thread::spawn(move || {
        let bufs = &mut Buffers {
            input: vec![0.0; 2 * FRAMES],
            output: vec![0.0; 2 * FRAMES],
        };
        // The first call, then sleep: silent blocks with no event are not processed.
        assert_eq!(block(&mut node, bufs, 0.0, 0), 1.0);
        let report = downbeat_rt::guard::check(|| {
            for b in 1..5 {
                assert_eq!(block(&mut node, bufs, 0.0, b), 0.0, "block {b}");
            }
        });
        report.assert_clean();
        assert_eq!(node.blocks_slept(), 4);

        // An event wakes it for its block (under the guard too): `ping`, which also has
        // the plugin's own thread call `request_process` 20 ms later.
        let report = downbeat_rt::guard::check(|| {
            assert!(node.set_param_at(0, 0, 1.0));
            assert_eq!(block(&mut node, bufs, 0.0, 5), 2.0);
            assert_eq!(block(&mut node, bufs, 0.0, 6), 0.0);
        });
        report.assert_clean();

        // The request wakes it at the first block after it, without an event or input.
        let asked = Instant::now();
        let mut b = 7;
        let woken = loop {
            std::thread::sleep(Duration::from_millis(5));
            let v = block(&mut node, bufs, 0.0, b);
            b += 1;
            if v != 0.0 || asked.elapsed() > Duration::from_secs(10) {
                break v;
            }
        };
        assert_eq!(
            woken, 3.0,
            "request_process did not wake the plugin in 10 s"
        );
        assert_eq!(block(&mut node, bufs, 0.0, b), 0.0, "asleep again");

        // Input that is not silent wakes it, and is processed.
        assert_eq!(block(&mut node, bufs, 0.25, b + 1), 4.25);
        assert_eq!(block(&mut node, bufs, 0.0, b + 2), 0.0);

        // `ping` 2: its thread calls `params.request_flush` 20 ms later, which CLAP has the
        // host answer with a `process` (or a `flush`): it wakes the plugin too.
        assert!(node.set_param_at(0, 0, 2.0));
        assert_eq!(block(&mut node, bufs, 0.0, b + 3), 5.0);
        let asked = Instant::now();
        let mut b = b + 4;
        let woken = loop {
            std::thread::sleep(Duration::from_millis(5));
            let v = block(&mut node, bufs, 0.0, b);
            b += 1;
            if v != 0.0 || asked.elapsed() > Duration::from_secs(10) {
                break v;
            }
        };
        assert_eq!(woken, 6.0, "request_flush did not wake the plugin in 10 s");
        assert_eq!(block(&mut node, bufs, 0.0, b), 0.0, "served, asleep again");
        node
    })
    .join()
    .unwrap();
    assert_eq!(node.failed_calls(), 0);
}
