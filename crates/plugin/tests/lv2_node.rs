//! LV2 plugins as nodes: channels from audio ports, control ports as live parameters with
//! the plugin's ranges and port properties, refused features and values, latency, and a
//! guarded run.

// Built with the `lv2` feature only (crates/plugin/ci.sh turns it on).
#![cfg(feature = "lv2")]

mod lv2_support;

use downbeat_graph::{Node, NodeConfig, NodeFactory, ParamError, ParamKind, ParamValue};
use downbeat_plugin::lv2::{self, ControlValue, Lv2Error, Lv2Node};
use lv2_support::{render, require_plugin};

downbeat_rt::install_guard_allocator!();

const OVERDRIVE: &str = "http://drobilla.net/plugins/mda/Overdrive";
const NODELAY: &str = "http://gareus.org/oss/lv2/nodelay";
const COMBO: &str = "http://drobilla.net/plugins/mda/Combo";
const DARC: &str = "http://gareus.org/oss/lv2/darc#mono";
/// Requires the worker feature.
const ZEROCONVOLV: &str = "http://gareus.org/oss/lv2/zeroconvolv#Mono";

const CFG: NodeConfig = NodeConfig {
    sample_rate: 48000,
    max_block: 256,
};

fn num(s: &str, v: f64) -> (String, ControlValue) {
    (s.to_string(), ControlValue::Number(v))
}

#[test]
fn channels_are_the_audio_ports_and_controls_are_live_parameters() {
    require_plugin(OVERDRIVE);
    require_plugin(NODELAY);
    let od = Lv2Node::load(OVERDRIVE, &[], &CFG).unwrap();
    assert_eq!((od.input_channels(), od.output_channels()), (2, 2));
    let names: Vec<_> = od.params().iter().map(|p| p.name).collect();
    assert_eq!(names, ["drive", "muffle", "output"]);
    assert!(od.params().iter().all(|p| p.live));
    assert_eq!(
        od.params()[2].kind,
        ParamKind::Float {
            min: 0.0,
            max: 1.0,
            default: 0.5
        }
    );
    assert_eq!(od.get_param(2), Some(0.5));
    assert!(!od.plays_notes());

    // A mono plugin is a one-channel node: there is no `channels` key.
    let nd = Lv2Node::load(NODELAY, &[], &CFG).unwrap();
    assert_eq!((nd.input_channels(), nd.output_channels()), (1, 1));
    let delay = nd.params().iter().find(|p| p.name == "delay").unwrap();
    assert_eq!(
        delay.kind,
        ParamKind::Float {
            min: 0.0,
            max: 192000.0,
            default: 0.0
        }
    );
}

#[test]
fn port_properties_decide_what_a_value_means() {
    require_plugin(COMBO);
    require_plugin(NODELAY);
    require_plugin(DARC);
    // lv2:enumeration: only the scale points, by value or label.
    let err = Lv2Node::load(COMBO, &[num("model", 0.4)], &CFG)
        .err()
        .unwrap();
    let msg = err.to_string();
    assert!(
        matches!(&err, Lv2Error::BadValue { symbol, .. } if symbol == "model"),
        "{msg}"
    );
    assert!(msg.contains("is not one of"), "{msg}");
    let combo = Lv2Node::load(COMBO, &[num("model", 1.0)], &CFG).unwrap();
    assert_eq!(combo.control("model"), Some(1.0));
    let info = combo
        .info()
        .controls()
        .find(|c| c.symbol == "model")
        .unwrap();
    let (value, label) = info.points[0].clone();
    let by_label = [("model".to_string(), ControlValue::Label(label))];
    let combo = Lv2Node::load(COMBO, &by_label, &CFG).unwrap();
    assert_eq!(combo.control("model"), Some(value));

    // lv2:integer: fractions are refused when given, rounded when live.
    let err = Lv2Node::load(NODELAY, &[num("delay", 2.5)], &CFG)
        .err()
        .unwrap();
    assert!(err.to_string().contains("not a whole number"), "{err}");
    let mut nd = Lv2Node::load(NODELAY, &[num("delay", 3.0)], &CFG).unwrap();
    let delay = nd.params().iter().position(|p| p.name == "delay").unwrap();
    assert!(nd.set_param(delay, 7.6));
    assert_eq!(nd.get_param(delay), Some(8.0));

    // lv2:toggled: 0 or 1 (or a boolean); a live value above 0 is on.
    let err = Lv2Node::load(DARC, &[num("enable", 0.5)], &CFG)
        .err()
        .unwrap();
    assert!(err.to_string().contains("0 or 1"), "{err}");
    let off = [("enable".to_string(), ControlValue::Bool(false))];
    let mut darc = Lv2Node::load(DARC, &off, &CFG).unwrap();
    assert_eq!(darc.control("enable"), Some(0.0));
    let enable = darc
        .params()
        .iter()
        .position(|p| p.name == "enable")
        .unwrap();
    darc.set_param(enable, 0.3);
    assert_eq!(darc.get_param(enable), Some(1.0));

    // Out of range.
    let err = Lv2Node::load(DARC, &[num("threshold", 0.0)], &CFG)
        .err()
        .unwrap();
    assert!(err.to_string().contains("outside -50 to -10"), "{err}");
}

#[test]
fn a_plugin_requiring_the_worker_loads_and_counts_its_requests() {
    // zeroconvolv was refused before Downbeat had the worker (the refusal of a feature
    // nobody provides is tested in lv2_worker.rs, with a plugin made to need one).
    require_plugin(ZEROCONVOLV);
    let node = Lv2Node::load(ZEROCONVOLV, &[], &CFG).unwrap();
    let monitor = node.monitor().expect("a worker plugin has a monitor");
    let names: Vec<_> = monitor.counts().iter().map(|c| c.name).collect();
    assert!(names.contains(&"worker_requests"), "{names:?}");
    assert!(names.contains(&"worker_no_space"), "{names:?}");
}

#[test]
fn bad_uris_and_keys_are_errors_naming_them() {
    let factory = lv2::Lv2Factory;
    let err = factory
        .create(
            vec![("uri".into(), ParamValue::Text("urn:no:such:plugin".into()))],
            &CFG,
        )
        .err()
        .unwrap();
    assert!(
        matches!(&err, ParamError::Invalid { name, message } if name == "uri" && message.contains("urn:no:such:plugin")),
        "{err}"
    );
    let err = factory.create(Vec::new(), &CFG).err().unwrap();
    assert!(err.to_string().contains("uri"), "{err}");
    require_plugin(OVERDRIVE);
    let err = factory
        .create(
            vec![
                ("uri".into(), ParamValue::Text(OVERDRIVE.into())),
                ("channels".into(), ParamValue::Int(2)),
            ],
            &CFG,
        )
        .err()
        .unwrap();
    let msg = err.to_string();
    assert!(
        msg.contains("channels") && msg.contains("drive, muffle, output"),
        "{msg}"
    );
    let node = factory
        .create(
            vec![
                ("uri".into(), ParamValue::Text(OVERDRIVE.into())),
                ("drive".into(), ParamValue::Float(0.8)),
            ],
            &CFG,
        )
        .unwrap();
    assert_eq!(node.get_param(0), Some(0.8));
}

#[test]
fn reported_latency_is_the_nodes_and_the_audio_agrees() {
    require_plugin(NODELAY);
    // report_latency 1: delay and report it.
    let values = [num("delay", 100.0), num("report_latency", 1.0)];
    let node = Lv2Node::load(NODELAY, &values, &CFG).unwrap();
    assert_eq!(node.latency(), 100);
    // nodelay fades to its delay over its first block (as it does under lv2apply): the
    // impulse comes after that.
    let mut impulse = vec![0.0; 3000];
    impulse[2000] = 1.0;
    let out = render(Box::new(node), 1, &impulse, 48000, 64);
    let heard: Vec<usize> = (1000..3000).filter(|&k| out[k] != 0.0).collect();
    assert_eq!(heard, [2100]);
    // report_latency 3: no delay, no report.
    let values = [num("delay", 100.0), num("report_latency", 3.0)];
    assert_eq!(Lv2Node::load(NODELAY, &values, &CFG).unwrap().latency(), 0);
}

#[test]
fn a_live_parameter_changes_the_sound() {
    require_plugin(OVERDRIVE);
    let input = lv2_support::signal(2, 2048, 48000);
    let quiet = render(
        Box::new(Lv2Node::load(OVERDRIVE, &[num("output", 0.1)], &CFG).unwrap()),
        2,
        &input,
        48000,
        256,
    );
    let mut node = Lv2Node::load(OVERDRIVE, &[num("output", 0.1)], &CFG).unwrap();
    assert!(node.set_param(2, 0.9));
    let loud = render(Box::new(node), 2, &input, 48000, 256);
    let rms = |v: &[f32]| (v.iter().map(|s| s * s).sum::<f32>() / v.len() as f32).sqrt();
    assert!(
        rms(&loud) > 2.0 * rms(&quiet),
        "{} {}",
        rms(&loud),
        rms(&quiet)
    );
}

#[test]
fn running_a_clean_plugin_does_not_allocate_lock_or_call_the_system() {
    require_plugin(OVERDRIVE);
    use downbeat_graph::{CompileConfig, Graph};
    use downbeat_nodes::Output;
    let mut g = Graph::new();
    let player = g.add(
        "player",
        lv2_support::Player {
            channels: 2,
            data: lv2_support::signal(2, 48000, 48000),
        },
    );
    let od = Lv2Node::load(OVERDRIVE, &[num("drive", 0.7)], &CFG).unwrap();
    let fx = g.add("fx", od);
    let out = g.add("out", Output::new(2));
    g.connect(player, fx);
    g.connect(fx, out);
    g.set_output(out);
    let mut schedule = g
        .compile(CompileConfig {
            sample_rate: 48000,
            max_block: 256,
        })
        .unwrap();
    schedule.process(256);
    let report = downbeat_rt::guard::check(|| {
        for frames in [256, 1, 77, 256, 128] {
            schedule.process(frames);
        }
    });
    report.assert_clean();
    assert!(schedule.output().channel(0).iter().any(|&s| s != 0.0));
}
