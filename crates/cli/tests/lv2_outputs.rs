//! A plugin's control output read through the engine's watcher, by its port symbol, as a
//! parameter is: Ardour's a-delay, synced to the tempo, reports its delay time (`delaytime`),
//! which follows the song's tempo when a controller changes it live; setting
//! the output is refused with an error that says it is one (issue 29).

// Built with the `lv2` feature only (crates/plugin/ci.sh turns it on).
#![cfg(feature = "lv2")]

#[path = "../../plugin/tests/lv2_support/mod.rs"]
mod lv2_support;

use std::time::Duration;

use downbeat::control::When;
use downbeat::nodes::Output;
use downbeat::Engine;
use downbeat_graph::time::TransportCommand;
use downbeat_graph::{CompileConfig, Graph, NodeConfig};
use downbeat_plugin::lv2::{ControlValue, Lv2Node};
use lv2_support::require_plugin;

const DELAY: &str = "urn:ardour:a-delay";
const RATE: u32 = 48000;
const BLOCK: usize = 256;

/// a-delay synced to the tempo (a quarter note), alone into the output, in an engine.
fn engine() -> Engine {
    let values: Vec<(String, ControlValue)> = [("sync", 1.0), ("div", 4.0), ("feedback", 0.0)]
        .iter()
        .map(|(s, v)| (s.to_string(), ControlValue::Number(*v)))
        .collect();
    let cfg = NodeConfig {
        sample_rate: RATE,
        max_block: BLOCK,
    };
    let delay = Lv2Node::load(DELAY, &values, &cfg).unwrap();
    let mut g = Graph::new();
    let d = g.add("d", delay);
    let out = g.add("out", Output::new(1));
    g.connect(d, out);
    g.set_output(out);
    let schedule = g
        .compile(CompileConfig {
            sample_rate: RATE,
            max_block: BLOCK,
        })
        .unwrap();
    Engine::new(schedule)
}

#[test]
fn a_delays_delay_time_follows_the_tempo_through_the_watcher() {
    require_plugin(DELAY);
    let mut engine = engine();
    let mut watcher = engine.watch();
    let mut control = engine.controller(16);
    let mut block = vec![0.0f32; BLOCK];
    engine.process(&mut block);
    assert!(watcher.wait(Duration::from_secs(1)));
    assert_eq!(
        watcher.value("d", "delaytime"),
        Some(500.0),
        "a quarter note at 120 bpm"
    );
    control
        .transport(
            When::Now,
            TransportCommand::Tempo {
                bpm: 150.0,
                ramp: 0.0,
            },
        )
        .unwrap();
    engine.process(&mut block);
    assert!(watcher.wait(Duration::from_secs(1)));
    assert_eq!(engine.schedule().transport().position().bpm, 150.0);
    assert_eq!(
        watcher.value("d", "delaytime"),
        Some(400.0),
        "a quarter note at 150 bpm"
    );
    let listed = watcher
        .values()
        .into_iter()
        .find(|r| (r.node.as_str(), r.param) == ("d", "delaytime"))
        .expect("the output is listed with the parameters");
    assert_eq!(listed.value, 400.0);

    let err = control.set("d", "delaytime", 250.0).unwrap_err();
    assert_eq!(
        err.message(),
        "`delaytime` of node `d` is an output, it cannot be set"
    );
    assert!(
        err.to_string().contains("live parameters: ") && err.to_string().contains("`time`"),
        "{err}"
    );
}
