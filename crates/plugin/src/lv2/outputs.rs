//! A plugin's control outputs (meters, a delay time, the latency port) as the node's
//! `Node::outputs`: named by their port symbols, read by the schedule after a block
//! (`Node::output_value` is a load from the port's slot) and handed to the engine's
//! watchers like parameter values, so `watcher.value("delay", "delaytime")` reads a-delay's
//! delay time. They are read-only: an event, OSC message or automation naming one is refused
//! (`ControlError::Output`).
//!
//! An LV2 output's declared range is advice the plugin need not keep (a meter may read
//! above its maximum), so the outputs are declared unbounded.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use downbeat_graph::{ParamKind, ParamSpec, Unit};

use super::node::PluginInfo;
use super::port::PortKind;

/// The output declarations of a plugin, one per control output port in port order.
/// `Node::outputs` hands out `'static` slices, so they are made once per plugin and kept
/// for the process.
pub(crate) fn output_specs(info: &PluginInfo) -> &'static [ParamSpec] {
    static SPECS: OnceLock<Mutex<HashMap<String, &'static [ParamSpec]>>> = OnceLock::new();
    let mut specs = SPECS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    specs.entry(info.uri.clone()).or_insert_with(|| {
        let list: Vec<ParamSpec> = info
            .ports
            .iter()
            .filter(|p| p.kind == PortKind::ControlOut)
            .map(|p| ParamSpec {
                name: Box::leak(p.symbol.clone().into_boxed_str()),
                doc: "a control output of the plugin (read-only)",
                kind: ParamKind::Float {
                    min: f64::NEG_INFINITY,
                    max: f64::INFINITY,
                    default: 0.0,
                },
                unit: Unit::None,
                live: false,
            })
            .collect();
        Box::leak(list.into_boxed_slice())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lv2::PortInfo;

    fn port(index: usize, kind: PortKind, symbol: &str) -> PortInfo {
        PortInfo {
            index,
            kind,
            optional: false,
            symbol: symbol.to_string(),
            classes: Vec::new(),
            control: None,
            group: None,
            side_chain: false,
        }
    }

    #[test]
    fn every_control_output_and_only_those_is_declared_in_port_order() {
        let info = PluginInfo {
            uri: "urn:downbeat:test:outputs".to_string(),
            name: "outputs".to_string(),
            ports: vec![
                port(0, PortKind::ControlOut, "level"),
                port(1, PortKind::ControlIn, "gain"),
                port(2, PortKind::AudioOut, "out"),
                port(3, PortKind::ControlOut, "gr"),
            ],
            required_features: Vec::new(),
            latency_port: None,
            wants_worker: false,
            main_input: None,
            main_output: None,
        };
        let names: Vec<&str> = output_specs(&info).iter().map(|s| s.name).collect();
        assert_eq!(names, ["level", "gr"]);
        assert!(std::ptr::eq(output_specs(&info), output_specs(&info)));
    }
}
