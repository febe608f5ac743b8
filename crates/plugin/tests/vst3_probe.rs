//! The VST3 host on a plugin of ours (`crates/vst3-test-plugins`' probe, a stereo gain that
//! writes a click at each note on's frame): notes reach it through `IEventList` at their
//! frames, gain changes through `IParameterChanges` at their offsets, and the host's side of
//! every block, notes and changes included, runs under the guard; the bundle's classes are
//! listed by name when the one asked for is not there.

mod vst3_support;

use downbeat_graph::{AudioMut, AudioRef, Node, NoteEvent, ProcessContext};
use downbeat_plugin::vst3::{Vst3Error, Vst3Node};
use vst3_support::{test_bundle, CRASH_CREATE, PROBE};

downbeat_rt::install_guard_allocator!();

const FRAMES: usize = 256;

#[test]
fn notes_and_gain_changes_arrive_at_their_frames_without_allocating_or_locking() {
    let mut node = Vst3Node::load(&test_bundle(), Some(PROBE), 48000, FRAMES, None)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(node.plays_notes(), "an event input makes an instrument");
    assert_eq!(node.params()[0].name, "gain");
    let out = std::thread::spawn(move || {
        let input = vec![0.25f32; 2 * FRAMES];
        let mut output = vec![0.0f32; 2 * FRAMES];
        let block = |node: &mut Vst3Node, at: u64, output: &mut Vec<f32>| {
            node.process(
                &ProcessContext::new(48000, FRAMES, at * FRAMES as u64),
                AudioRef::new(&input, 2, FRAMES, FRAMES),
                AudioMut::new(output, 2, FRAMES, FRAMES),
            );
        };
        block(&mut node, 0, &mut output);
        let report = downbeat_rt::guard::check(|| {
            for b in 1..8u64 {
                assert!(node.set_param_at(100, 0, 1.5));
                let on = NoteEvent::On {
                    channel: 0,
                    note: 60.0,
                    velocity: 0.5,
                };
                node.note(37, on).unwrap();
                // A note for the next block, past this one's end.
                node.note(FRAMES + 5, on).unwrap();
                block(&mut node, b, &mut output);
                assert!(node.set_param_at(0, 0, 1.0));
            }
        });
        report.assert_clean();
        output
    })
    .join()
    .unwrap();
    // The last block: gain 1 until frame 100, 1.5 from there; clicks at 5 (carried over)
    // and 37.
    for (c, ch) in out.chunks(FRAMES).enumerate() {
        for (f, &s) in ch.iter().enumerate() {
            let gain = if f < 100 { 1.0 } else { 1.5 };
            let click = if f == 5 || f == 37 { 0.5 + 0.06 } else { 0.0 };
            assert!(
                (s - (0.25 * gain + click)).abs() < 1e-6,
                "channel {c} frame {f}: {s}"
            );
        }
    }
}

#[test]
fn a_class_the_bundle_lacks_is_refused_with_the_classes_it_has() {
    match Vst3Node::load(&test_bundle(), Some("Nothing"), 48000, FRAMES, None) {
        Err(Vst3Error::UnknownClass { available, .. }) => {
            assert!(
                available.iter().any(|a| a == PROBE) && available.iter().any(|a| a == CRASH_CREATE)
            );
        }
        other => panic!("expected UnknownClass, got {:?}", other.err()),
    }
    match Vst3Node::load(&test_bundle(), None, 48000, FRAMES, None) {
        Err(e @ Vst3Error::ClassNeeded { .. }) => assert!(e.to_string().contains(PROBE), "{e}"),
        other => panic!("expected ClassNeeded, got {:?}", other.err()),
    }
}

/// The probe's `latency` parameter makes it ask for a restart
/// (`restartComponent(kLatencyChanged)`): the host's restart thread deactivates and
/// activates it while the schedule plays on (every block under the guard, the node's
/// hand-over included), and the editor's next commit compensates the new latency, the node
/// kept.
#[test]
fn a_latency_change_restarts_the_plugin_and_reaches_the_next_compile() {
    use downbeat_graph::{Change, CompileConfig, Editor, Event, Graph};
    use downbeat_nodes::{Noise, NoiseSettings, Output};
    use std::time::{Duration, Instant};

    let probe = Vst3Node::load(&test_bundle(), Some(PROBE), 48000, FRAMES, None)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(probe.latency(), 0);
    let mut g = Graph::new();
    g.add("noise", Noise::new(2, &NoiseSettings { amp: 0.5, seed: 3 }));
    g.add("p", probe);
    let out = g.add("out", Output::new(2));
    g.connect("noise", "p");
    g.connect("p", out);
    g.set_output(out);
    let cfg = CompileConfig {
        sample_rate: 48000,
        max_block: FRAMES,
    };
    let (mut editor, mut running) = Editor::new(g, cfg).unwrap();
    let block = |s: &mut downbeat_graph::Schedule| {
        downbeat_rt::guard::check(|| s.process(FRAMES)).assert_clean();
    };
    block(&mut running);
    let latency = running.param_table().resolve("p", "latency").unwrap();
    running
        .push_event(Event::param(None, latency, Change::Set(64.0)))
        .unwrap();
    let asked = Instant::now();
    while !editor.revise() {
        assert!(
            asked.elapsed() < Duration::from_secs(10),
            "no new latency published in 10 s"
        );
        std::thread::sleep(Duration::from_millis(2));
        block(&mut running);
    }
    let mut next = editor.commit().unwrap();
    assert_eq!(next.latency(), 64);
    assert_eq!(next.kept_nodes(), 3, "the plugin's node is kept");
    next.take_over(&mut running);
    std::mem::swap(&mut running, &mut next);
    drop(next);
    for _ in 0..4 {
        block(&mut running);
    }
    let out = running.output();
    assert!(
        out.channel(0).iter().any(|&s| s != 0.0),
        "the plugin plays again"
    );
}
