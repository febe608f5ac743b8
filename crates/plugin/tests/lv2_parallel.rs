//! LV2 nodes on the worker pool: a fan of plugins (two of them reporting latency) into one
//! mix gives the same output, bit for bit, serially and in parallel, with the paths aligned
//! by the graph's latency compensation.

// Built with the `lv2` feature only (crates/plugin/ci.sh turns it on).
#![cfg(feature = "lv2")]

mod lv2_support;

use downbeat_graph::{CompileConfig, Graph, Node, NodeConfig, Schedule};
use downbeat_nodes::{Gain, Mix, MixSettings, Output};
use downbeat_plugin::lv2::{ControlValue, Lv2Node};
use downbeat_rt::pool::{Pool, PoolConfig};
use lv2_support::{require_plugin, signal, Player};

const PLUGINS: [&str; 4] = [
    "http://gareus.org/oss/lv2/darc#mono",
    "http://gareus.org/oss/lv2/fil4#mono",
    "http://gareus.org/oss/lv2/dpl#mono",
    "http://gareus.org/oss/lv2/nodelay",
];
const CFG: CompileConfig = CompileConfig {
    sample_rate: 48000,
    max_block: 128,
};

/// player -> (dry, each plugin) -> mix -> out, all mono.
fn graph() -> Graph {
    let node_cfg = NodeConfig {
        sample_rate: CFG.sample_rate,
        max_block: CFG.max_block,
    };
    let mut g = Graph::new();
    let player = g.add(
        "player",
        Player {
            channels: 1,
            data: signal(1, 48000, 48000),
        },
    );
    let mix = g.add(
        "mix",
        Mix::new(
            1,
            &MixSettings {
                gain_db: -12.0,
                ..MixSettings::default()
            },
        ),
    );
    let dry = g.add("dry", Gain::new(1, 1.0));
    g.connect(player, dry);
    g.connect(dry, mix);
    for uri in PLUGINS {
        let values: Vec<(String, ControlValue)> = if uri.ends_with("nodelay") {
            vec![
                ("delay".into(), ControlValue::Number(100.0)),
                ("report_latency".into(), ControlValue::Number(1.0)),
            ]
        } else {
            Vec::new()
        };
        let node = Lv2Node::load(uri, &values, &node_cfg).unwrap();
        let id = g.add(uri, node);
        g.connect(player, id);
        g.connect(id, mix);
    }
    let out = g.add("out", Output::new(1));
    g.connect(mix, out);
    g.set_output(out);
    g
}

fn render(mut schedule: Schedule, pool: Option<&Pool>) -> Vec<f32> {
    let mut out = Vec::new();
    for frames in [128, 1, 100, 64, 128, 77, 64].iter().cycle().take(300) {
        match pool {
            Some(p) => schedule.process_parallel(*frames, p),
            None => schedule.process(*frames),
        }
        out.extend_from_slice(schedule.output().channel(0));
    }
    out
}

#[test]
fn plugins_on_the_pool_match_serial_bit_for_bit_with_latency_compensated() {
    for uri in PLUGINS {
        require_plugin(uri);
    }
    let node_cfg = NodeConfig {
        sample_rate: CFG.sample_rate,
        max_block: CFG.max_block,
    };
    let dpl = Lv2Node::load(PLUGINS[2], &[], &node_cfg).unwrap().latency();
    let schedule = graph().compile(CFG).unwrap();
    assert_eq!(schedule.latency(), dpl.max(100), "the slowest path");
    let names = schedule.names().join(", ");
    assert!(names.contains("dry -> mix (latency"), "{names}");

    let pool = Pool::new(PoolConfig {
        workers: Some(2),
        realtime_priority: None,
        ..PoolConfig::default()
    });
    let serial = render(graph().compile(CFG).unwrap(), None);
    let parallel = render(graph().compile(CFG).unwrap(), Some(&pool));
    assert!(serial.iter().map(|s| s * s).sum::<f32>() > 1.0, "silent");
    assert!(serial == parallel, "parallel output differs from serial");
}
