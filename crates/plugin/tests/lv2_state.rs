//! LV2 state and presets through lilv: a preset sets the ports it names (and an unknown one
//! is an error listing the presets); a saved state, restored in another node, gives the same
//! parameters and renders bit for bit what a node given the same values renders; a state of
//! another plugin or an unreadable file is an error naming it; a plugin's own state
//! (`state:interface`, synthv1's) survives a save and a restore; and a restored node's runs
//! are real-time safe under the guard.

// Built with the `lv2` feature only (crates/plugin/ci.sh turns it on).
#![cfg(feature = "lv2")]

mod lv2_support;

use downbeat_graph::{Node, NodeConfig, NodeFactory, ParamError, ParamValue};
use downbeat_plugin::lv2::{self, ControlValue, Lv2Error, Lv2Node, Start};
use lv2_support::{render, require_plugin, signal, tmp};

downbeat_rt::install_guard_allocator!();

const COMP: &str = "urn:ardour:a-comp";
const DELAY: &str = "urn:ardour:a-delay";
const SYNTH: &str = "http://synthv1.sourceforge.net/lv2";
const RATE: u32 = 48000;
const CFG: NodeConfig = NodeConfig {
    sample_rate: RATE,
    max_block: 256,
};

/// a-comp's preset "PoppySnare" (its presets.ttl).
const POPPY: [(&str, f64); 5] = [
    ("rel", 10.0),
    ("kn", 1.0),
    ("rat", 5.0),
    ("thr", -18.0),
    ("mak", 6.0),
];

fn values(v: &[(&str, f64)]) -> Vec<(String, ControlValue)> {
    v.iter()
        .map(|(s, x)| (s.to_string(), ControlValue::Number(*x)))
        .collect()
}

fn start(preset: Option<&str>, state: Option<&std::path::Path>) -> Start {
    Start {
        preset: preset.map(str::to_string),
        state: state.map(|p| p.to_path_buf()),
    }
}

/// a-comp (mono in, sidechain in, mono out) rendered over the test signal.
fn comp_render(node: Lv2Node) -> Vec<f32> {
    let mono = signal(1, 24000, RATE);
    let input: Vec<f32> = mono.iter().flat_map(|&s| [s, 0.0]).collect();
    render(Box::new(node), 2, &input, RATE, 256)
}

#[test]
fn a_preset_sets_the_ports_it_names() {
    require_plugin(COMP);
    let preset = Lv2Node::load_with(COMP, &[], &start(Some("PoppySnare"), None), &CFG).unwrap();
    for (symbol, value) in POPPY {
        assert_eq!(preset.control(symbol), Some(value as f32), "{symbol}");
    }
    let by_uri = start(Some("urn:ardour:a-comp#preset002"), None);
    let by_uri = Lv2Node::load_with(COMP, &[], &by_uri, &CFG).unwrap();
    assert_eq!(by_uri.control("thr"), Some(-18.0), "a preset by its URI");
    let given = Lv2Node::load(COMP, &values(&POPPY), &CFG).unwrap();
    let plain = Lv2Node::load(COMP, &[], &CFG).unwrap();
    let (preset, given, plain) = (comp_render(preset), comp_render(given), comp_render(plain));
    assert_eq!(
        preset, given,
        "the preset renders as its values do, bit for bit"
    );
    assert_ne!(preset, plain, "and not as the defaults");
    // A value in the project overrides the preset's.
    let over = start(Some("PoppySnare"), None);
    let over = Lv2Node::load_with(COMP, &values(&[("thr", -6.0)]), &over, &CFG).unwrap();
    assert_eq!(
        (over.control("thr"), over.control("rat")),
        (Some(-6.0), Some(5.0))
    );
}

#[test]
fn an_unknown_preset_is_an_error_listing_the_presets() {
    require_plugin(COMP);
    let factory = lv2::Lv2Factory;
    let err = factory
        .create(
            vec![
                ("uri".into(), ParamValue::Text(COMP.into())),
                ("preset".into(), ParamValue::Text("Loud".into())),
            ],
            &CFG,
        )
        .err()
        .unwrap();
    let ParamError::Invalid { name, message } = err else {
        panic!("expected an invalid parameter, got {err:?}");
    };
    assert_eq!(name, "preset");
    assert!(
        message.contains("unknown preset `Loud`")
            && message.contains("\"PoppySnare\"")
            && message.contains("\"VocalLeveller\""),
        "{message}"
    );
}

#[test]
fn a_saved_state_restores_the_parameters_and_renders_bit_for_bit() {
    require_plugin(COMP);
    let mut node = Lv2Node::load(COMP, &[], &CFG).unwrap();
    // Changed as a controller changes them.
    for (symbol, value) in POPPY {
        let i = node.params().iter().position(|p| p.name == symbol).unwrap();
        assert!(node.set_param(i, value as f32));
    }
    let saved = node.save_state().unwrap().expect("an LV2 node has a state");
    assert_eq!(saved.extension, "ttl");
    let dir = tmp("lv2-state");
    let file = dir.join("comp.ttl");
    std::fs::write(&file, &saved.bytes).unwrap();

    let restored = Lv2Node::load_with(COMP, &[], &start(None, Some(&file)), &CFG).unwrap();
    for (i, spec) in restored.params().iter().enumerate() {
        assert_eq!(
            restored.get_param(i),
            node.get_param(i),
            "parameter {} after the restore",
            spec.name
        );
    }
    let given = Lv2Node::load(COMP, &values(&POPPY), &CFG).unwrap();
    assert_eq!(comp_render(restored), comp_render(given), "bit for bit");
}

#[test]
fn a_state_of_another_plugin_or_no_file_is_an_error_naming_it() {
    require_plugin(COMP);
    require_plugin(DELAY);
    let mut comp = Lv2Node::load(COMP, &[], &CFG).unwrap();
    let dir = tmp("lv2-state-wrong");
    let file = dir.join("comp.ttl");
    std::fs::write(&file, comp.save_state().unwrap().unwrap().bytes).unwrap();
    let err = Lv2Node::load_with(DELAY, &[], &start(None, Some(&file)), &CFG)
        .err()
        .unwrap();
    assert!(matches!(err, Lv2Error::State { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("comp.ttl") && text.contains("state of <urn:ardour:a-comp>"),
        "{text}"
    );
    let missing = dir.join("nothing.ttl");
    let err = Lv2Node::load_with(COMP, &[], &start(None, Some(&missing)), &CFG)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("cannot read the state file") && err.contains("nothing.ttl"),
        "{err}"
    );
    let junk = dir.join("junk.ttl");
    std::fs::write(&junk, "this is not turtle {").unwrap();
    let err = Lv2Node::load_with(COMP, &[], &start(None, Some(&junk)), &CFG)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("junk.ttl") && err.contains("not an LV2 state"),
        "{err}"
    );
}

#[test]
fn a_plugins_own_state_survives_a_save_and_a_restore() {
    require_plugin(SYNTH);
    // synthv1 starts a Qt application; without a display it needs the offscreen platform.
    std::env::set_var("QT_QPA_PLATFORM", "offscreen");
    let mut synth = Lv2Node::load(SYNTH, &values(&[("DCF1_CUTOFF", 0.25)]), &CFG).unwrap();
    let first = synth.save_state().unwrap().unwrap();
    let text = String::from_utf8(first.bytes.clone()).unwrap();
    assert!(text.contains("DCF1_CUTOFF"), "the port values are saved");
    let dir = tmp("lv2-state-synth");
    let file = dir.join("synth.ttl");
    std::fs::write(&file, &first.bytes).unwrap();
    let mut again = Lv2Node::load_with(SYNTH, &[], &start(None, Some(&file)), &CFG).unwrap();
    assert_eq!(again.control("DCF1_CUTOFF"), Some(0.25));
    let second = again.save_state().unwrap().unwrap();
    assert_eq!(
        String::from_utf8(second.bytes).unwrap(),
        text,
        "saving the restored plugin gives the same state"
    );
}

#[test]
fn a_restored_node_runs_without_allocating_or_locking() {
    require_plugin(COMP);
    let mut node = Lv2Node::load(COMP, &values(&POPPY), &CFG).unwrap();
    let dir = tmp("lv2-state-guard");
    let file = dir.join("comp.ttl");
    std::fs::write(&file, node.save_state().unwrap().unwrap().bytes).unwrap();
    let mut node = Lv2Node::load_with(COMP, &[], &start(None, Some(&file)), &CFG).unwrap();
    let input = signal(2, 256, RATE);
    let mut out = vec![0.0f32; 256];
    let report = downbeat_rt::guard::check(|| {
        for n in 0..20u64 {
            node.process(
                &downbeat_graph::ProcessContext::new(RATE, 256, n * 256),
                downbeat_graph::AudioRef::new(&input, 2, 256, 256),
                downbeat_graph::AudioMut::new(&mut out, 1, 256, 256),
            );
        }
    });
    report.assert_clean();
}
