//! The VST3 host on Debian's zam-plugins (DPF-built VST3 bundles in `/usr/lib/vst3`): the
//! process path with parameter changes and a moving transport under the guard, a state
//! saved and loaded, and bad input refused with errors that name the bundle.
//!
//! Built with the `lv2` feature, as the other zam-plugins tests: crates/plugin/ci.sh
//! installs the package and turns it on. A missing package fails the tests.

#![cfg(all(feature = "lv2", feature = "vst3"))]

use std::path::{Path, PathBuf};

use downbeat_graph::time::{Signature, TempoMap, TempoPoint, Transport, TransportCommand};
use downbeat_graph::{
    AudioMut, AudioRef, Node, NodeConfig, NodeFactory, ParamValue, ProcessContext,
};
use downbeat_plugin::vst3::{Vst3Error, Vst3Factory, Vst3Node};

downbeat_rt::install_guard_allocator!();

const COMP: &str = "/usr/lib/vst3/ZamComp.vst3";

fn comp() -> Vst3Node {
    assert!(
        Path::new(COMP).is_dir(),
        "{COMP} is missing: install zam-plugins (crates/plugin/ci.sh does)"
    );
    Vst3Node::load(Path::new(COMP), None, 48000, 256, None).unwrap_or_else(|e| panic!("{e}"))
}

fn index(node: &Vst3Node, name: &str) -> usize {
    node.params()
        .iter()
        .position(|s| s.name == name)
        .unwrap_or_else(|| {
            panic!(
                "no `{name}` in {:?}",
                node.params().iter().map(|s| s.name).collect::<Vec<_>>()
            )
        })
}

#[test]
fn the_hosts_process_path_with_changes_and_a_moving_transport_is_real_time_safe() {
    let mut node = comp();
    let (threshold, makeup) = (index(&node, "threshold"), index(&node, "makeup"));
    let frames = 256;
    // ZamComp: a main input and a sidechain, one channel each; one output.
    assert_eq!((node.input_channels(), node.output_channels()), (2, 1));
    // The audio thread is not the one that built the node, as in a run.
    let (node, output) = std::thread::spawn(move || {
        let input: Vec<f32> = (0..2 * frames)
            .map(|i| ((i % 64) as f32 / 64.0) - 0.5)
            .collect();
        let mut output = vec![0.0f32; frames];
        let ramp = TempoPoint {
            beat: 0.0,
            bpm: 60.0,
            ramp: 1.0,
        };
        let map = TempoMap::new(120.0, Signature::default(), &[ramp], &[], 48000).unwrap();
        let mut transport = Transport::new(map);
        transport.apply(TransportCommand::Play).unwrap();
        let mut run = |node: &mut Vst3Node, position: u64| {
            let ctx = ProcessContext {
                musical: transport.position(),
                ..ProcessContext::new(48000, transport.piece(frames), position)
            };
            transport.advance(ctx.frames);
            node.process(
                &ctx,
                AudioRef::new(&input, 2, frames, frames),
                AudioMut::new(&mut output[..ctx.frames], 1, ctx.frames, ctx.frames),
            );
        };
        // The first call starts processing (the plugin's business, once).
        run(&mut node, 0);
        let report = downbeat_rt::guard::check(|| {
            for b in 1..20u64 {
                for k in 0..8 {
                    let v = -(b as f32 + k as f32);
                    assert!(node.set_param_at(k * 30, threshold, v));
                }
                assert!(node.set_param_at(100, makeup, b as f32 * 0.5));
                run(&mut node, b * frames as u64);
            }
        });
        report.assert_clean();
        (node, output)
    })
    .join()
    .unwrap();
    assert_eq!((node.failed_calls(), node.dropped_events()), (0, 0));
    assert!(output.iter().all(|s| s.is_finite()) && output.iter().any(|&s| s != 0.0));
}

#[test]
fn a_saved_state_loads_into_a_new_node_with_its_values() {
    let mut node = comp();
    let threshold = index(&node, "threshold");
    assert!(node.set_param(threshold, -33.0));
    let (input, mut output) = (vec![0.0f32; 2 * 256], vec![0.0f32; 256]);
    node.process(
        &ProcessContext::new(48000, 256, 0),
        AudioRef::new(&input, 2, 256, 256),
        AudioMut::new(&mut output, 1, 256, 256),
    );
    let state = node.save_state().unwrap().unwrap();
    assert_eq!(state.extension, "vst3state");
    let file = std::env::temp_dir().join(format!(
        "downbeat-vst3-state-{}.vst3state",
        std::process::id()
    ));
    std::fs::write(&file, &state.bytes).unwrap();
    let again = Vst3Node::load(Path::new(COMP), None, 48000, 256, Some(&file)).unwrap();
    assert_eq!(again.get_param(threshold), Some(-33.0));
    // Another plugin's state (DPF's own format would take it), and bytes that are no
    // state, are refused naming the file.
    let eq = Vst3Node::load(
        Path::new("/usr/lib/vst3/ZamGEQ31.vst3"),
        None,
        48000,
        256,
        Some(&file),
    );
    std::fs::write(&file, b"not a state").unwrap();
    let garbage = Vst3Node::load(Path::new(COMP), None, 48000, 256, Some(&file)).err();
    std::fs::remove_file(&file).unwrap();
    for e in [eq.err(), garbage] {
        match e {
            Some(e @ Vst3Error::State { .. }) => {
                let text = e.to_string();
                assert!(text.contains("downbeat-vst3-state"), "{text}");
                assert!(
                    text.contains("another plugin") || text.contains("not a VST3 state"),
                    "{text}"
                );
            }
            other => panic!("expected a state error, got {other:?}"),
        }
    }
}

/// A scratch folder for bad bundles.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("downbeat-vst3-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn bad_bundles_and_classes_are_typed_errors_naming_the_bundle() {
    let cfg = NodeConfig {
        sample_rate: 48000,
        max_block: 256,
    };
    let make = |path: &Path, id: Option<&str>| {
        let mut p = vec![(
            "path".to_string(),
            ParamValue::Text(path.display().to_string()),
        )];
        if let Some(id) = id {
            p.push(("id".into(), ParamValue::Text(id.into())));
        }
        Vst3Factory
            .create(p, &cfg)
            .err()
            .expect("refused")
            .to_string()
    };
    let dir = scratch("bad");
    // No such bundle.
    let missing = dir.join("Nothing.vst3");
    assert!(make(&missing, None).contains("does not exist"));
    // A bundle without a library for this machine.
    let empty = dir.join("Empty.vst3");
    std::fs::create_dir_all(empty.join("Contents")).unwrap();
    let e = make(&empty, None);
    assert!(
        e.contains("is not a VST3 bundle for this machine") && e.contains("Empty.so"),
        "{e}"
    );
    // A library that is not a VST3 module.
    let fake = dir.join("Fake.vst3");
    let lib = fake.join("Contents/x86_64-linux");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(lib.join("Fake.so"), b"not an ELF file").unwrap();
    let e = make(&fake, None);
    assert!(
        e.contains("cannot be loaded") && e.contains("Fake.vst3"),
        "{e}"
    );
    // A class the bundle does not hold: the ones it holds are listed.
    let e = make(Path::new(COMP), Some("ZamNothing"));
    assert!(
        e.contains("no audio processor `ZamNothing`") && e.contains("ZamComp"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// ZamComp's read-only parameters (its meters) are the node's outputs, following what the
/// plugin reports in its output parameter changes: with the threshold far below a loud
/// input, the gain reduction rises from 0.
#[test]
fn the_plugins_meters_are_outputs_that_follow_the_plugin() {
    let mut node = comp();
    let outputs: Vec<&str> = node.outputs().iter().map(|s| s.name).collect();
    assert!(outputs.contains(&"gain_reduction"), "{outputs:?}");
    assert!(
        node.params().iter().all(|p| !outputs.contains(&p.name)),
        "a meter is not also a parameter"
    );
    let reduction = outputs.iter().position(|&n| n == "gain_reduction").unwrap();
    assert_eq!(node.output_value(reduction), 0.0);
    assert!(node.set_param(index(&node, "threshold"), -60.0));
    let input: Vec<f32> = (0..2 * 256)
        .map(|i| {
            if i < 256 {
                0.9 * ((i as f32) * 0.3).sin()
            } else {
                0.0
            }
        })
        .collect();
    let mut output = vec![0.0f32; 256];
    for b in 0..40 {
        node.process(
            &ProcessContext::new(48000, 256, b * 256),
            AudioRef::new(&input, 2, 256, 256),
            AudioMut::new(&mut output, 1, 256, 256),
        );
    }
    let db = node.output_value(reduction);
    assert!(db > 1.0, "gain reduction {db} dB");
}

/// Nodes built and dropped on many threads at once: the module is entered once and its
/// main-thread calls made one at a time (DPF's modules crashed in `getClassInfo` when two
/// threads loaded one at once, or one exited it under another).
#[test]
fn nodes_of_one_bundle_load_and_drop_on_many_threads_at_once() {
    let threads: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(|| {
                for _ in 0..25 {
                    let node = comp();
                    assert_eq!(node.output_channels(), 1);
                    drop(node);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}
