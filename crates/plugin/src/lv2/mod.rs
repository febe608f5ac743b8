//! LV2 hosting through lilv: `type = "lv2"` nodes.
//!
//! ```toml
//! [nodes.drive]
//! type = "lv2"
//! uri = "http://drobilla.net/plugins/mda/Overdrive"
//! drive = 0.6      # a control input, by its symbol
//! ```
//!
//! A plugin's audio inputs and outputs become the node's input and output channels in port
//! order (a mono plugin makes a one-channel node; there is no `channels` key), its control
//! inputs become live parameters named by their symbols with the plugin's ranges and
//! defaults, and a MIDI (atom sequence) input receives the node's notes at their frames.
//! Port properties are honoured as the LV2 specification says (see [`port`]), and a plugin
//! requiring a feature Downbeat does not provide is refused at load time with the list of
//! what is missing ([`Lv2Error::MissingFeatures`]).
//!
//! Plugins are found and instantiated off the audio thread, when the project is built;
//! [`Node::process`] connects the graph's buffers and calls
//! the plugin's `run`, and the host side of that does not allocate, lock or make system
//! calls (what the plugin's own code does is its business, which `downbeat audit`
//! reports).

pub mod atom;
mod error;
pub mod features;
mod node;
pub mod port;
mod urid_table;

/// The atomics `urid_table` uses: std's here, loom's in its model (`tests/loom_urid.rs`).
mod sync {
    pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
}

use downbeat_graph::{
    register_node_type, Node, NodeConfig, NodeFactory, ParamError, ParamSpec, ParamValue,
    RegistryError,
};

pub use error::Lv2Error;
pub use node::{ControlValue, Lv2Node, PluginInfo, PortInfo};

/// The `lv2` node type: `uri = "…"` names the plugin, every other key a control input.
#[derive(Clone, Copy, Debug, Default)]
pub struct Lv2Factory;

impl NodeFactory for Lv2Factory {
    fn name(&self) -> &str {
        "lv2"
    }

    fn doc(&self) -> &str {
        "an LV2 plugin (through lilv); channels are the plugin's audio ports"
    }

    fn params(&self) -> &[ParamSpec] {
        &[]
    }

    fn open_params(&self) -> Option<&str> {
        Some(
            "`uri = \"…\"` names the plugin (required; `lv2ls` lists them); every control \
             input port is a live parameter named by its symbol, with the plugin's range and \
             default (`lv2info URI` shows them)",
        )
    }

    fn create(
        &self,
        params: Vec<(String, ParamValue)>,
        cfg: &NodeConfig,
    ) -> Result<Box<dyn Node>, ParamError> {
        let mut uri = None;
        let mut values = Vec::new();
        for (name, value) in params {
            let value = match value {
                ParamValue::Text(t) if name == "uri" => {
                    uri = Some(t);
                    continue;
                }
                _ if name == "uri" => {
                    return Err(ParamError::Invalid {
                        name,
                        message: "expected the plugin's URI as a string".into(),
                    })
                }
                ParamValue::Float(v) => ControlValue::Number(v),
                ParamValue::Int(v) => ControlValue::Number(v as f64),
                ParamValue::Bool(b) => ControlValue::Bool(b),
                ParamValue::Text(t) => ControlValue::Label(t),
                ParamValue::List(_) | ParamValue::Map(_) => {
                    return Err(ParamError::Invalid {
                        name,
                        message: "a control port takes one number, not a list or table".into(),
                    })
                }
            };
            values.push((name, value));
        }
        let Some(uri) = uri else {
            return Err(ParamError::Invalid {
                name: "uri".into(),
                message: "an lv2 node needs `uri = \"…\"` naming the plugin (`lv2ls` lists \
                          the installed ones)"
                    .into(),
            });
        };
        match Lv2Node::load(&uri, &values, cfg) {
            Ok(node) => Ok(Box::new(node)),
            Err(Lv2Error::UnknownControl { symbol, valid }) => Err(ParamError::Invalid {
                message: Lv2Error::UnknownControl {
                    symbol: symbol.clone(),
                    valid,
                }
                .to_string(),
                name: symbol,
            }),
            Err(Lv2Error::BadValue { symbol, message }) => Err(ParamError::Invalid {
                name: symbol,
                message,
            }),
            Err(e) => Err(ParamError::Invalid {
                name: "uri".into(),
                message: e.to_string(),
            }),
        }
    }
}

/// Registers the `lv2` node type (once; later calls do nothing). The command line calls it
/// when built with the `lv2` feature.
///
/// # Errors
/// [`RegistryError`] when another type already took the name `lv2`.
pub fn register() -> Result<(), RegistryError> {
    static DONE: std::sync::Once = std::sync::Once::new();
    let mut result = Ok(());
    DONE.call_once(|| result = register_node_type(Lv2Factory));
    result
}
