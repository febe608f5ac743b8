//! LV2 hosting through lilv: `type = "lv2"` nodes.
//!
//! ```toml
//! [nodes.drive]
//! type = "lv2"
//! uri = "http://drobilla.net/plugins/mda/Overdrive"
//! drive = 0.6      # a control input, by its symbol
//! ```
//!
//! Besides its control inputs a node takes `preset = "NAME"` (one of the plugin's presets,
//! by label or URI; an unknown name is an error listing them) and `state = "FILE"` (a state
//! `downbeat run --save-state DIR` wrote, `DIR/<node>.ttl`, relative to the project), applied
//! in that order before the first run, the control values given in the project overriding
//! both ([`state`] through lilv). A plugin that follows the host's transport
//! (`time:Position`, see [`time`]) is sent the song's position, tempo and signature from the
//! engine's transport (the project's `[tempo]` and `[transport]`, `/transport/*` over OSC).
//! A plugin asking for the LV2 worker gets one
//! ([`worker`]); its control outputs are the node's outputs ([`Node::outputs`]), read
//! through the engine's watchers by their symbols and never set.
//!
//! A plugin's audio inputs and outputs become the node's input and output channels in port
//! order (a mono plugin makes a one-channel node; there is no `channels` key), grouped in
//! named ports by the plugin's port groups ([`groups`]): `main`, and a side chain by its
//! group's or port's symbol (`"kick -> comp:sidechain_in"`), its control
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
pub mod groups;
mod node;
mod outputs;
pub mod port;
pub mod state;
pub mod time;
mod urid_table;
pub mod worker;

/// The atomics `urid_table` uses: std's here, loom's in its model (`tests/loom_urid.rs`).
mod sync {
    pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
}

use downbeat_graph::{Node, NodeConfig, NodeFactory, ParamError, ParamSpec, ParamValue, Unit};

pub use error::Lv2Error;
#[doc(hidden)]
pub use node::instances_loaded;
pub use node::{ControlValue, Lv2Node, PluginInfo, PortInfo, Start};
pub use state::presets;

/// The parameters every `lv2` node declares (the others are the plugin's): `state`, a path
/// the project resolves relative to itself.
static FACTORY_PARAMS: [ParamSpec; 1] = [ParamSpec {
    name: "state",
    doc: "a state file to start from (`downbeat run --save-state DIR` writes DIR/<node>.ttl)",
    kind: downbeat_graph::ParamKind::Path { default: "" },
    unit: Unit::None,
    live: false,
}];

/// The `lv2` node type: `uri = "…"` names the plugin, `preset` and `state` where it starts,
/// every other key a control input.
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
        &FACTORY_PARAMS
    }

    fn open_params(&self) -> Option<&str> {
        Some(
            "`uri = \"…\"` names the plugin (required; `lv2ls` lists them); every control \
             input port is a live parameter named by its symbol, with the plugin's range and \
             default (`lv2info URI` shows them); `preset = \"NAME\"` starts from one of the \
             plugin's presets; a plugin following the transport (`time:Position`) gets the \
             song's tempo, signature and position from the project's `[tempo]` and \
             `[transport]`",
        )
    }

    fn create(
        &self,
        params: Vec<(String, ParamValue)>,
        cfg: &NodeConfig,
    ) -> Result<Box<dyn Node>, ParamError> {
        let mut uri = None;
        let mut start = Start::default();
        let mut values = Vec::new();
        for (name, value) in params {
            let value = match value {
                ParamValue::Text(t) if name == "uri" => {
                    uri = Some(t);
                    continue;
                }
                ParamValue::Text(t) if name == "preset" => {
                    start.preset = Some(t);
                    continue;
                }
                ParamValue::Text(t) if name == "state" => {
                    start.state = Some(t.into());
                    continue;
                }
                _ if name == "preset" || name == "state" => {
                    return Err(ParamError::Invalid {
                        name,
                        message: "expected a string".into(),
                    })
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
        match Lv2Node::load_with(&uri, &values, &start, cfg) {
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
            Err(e @ Lv2Error::UnknownPreset { .. }) => Err(ParamError::Invalid {
                name: "preset".into(),
                message: e.to_string(),
            }),
            Err(e @ Lv2Error::State { .. }) if start.state.is_some() => Err(ParamError::Invalid {
                name: "state".into(),
                message: e.to_string(),
            }),
            Err(e) => Err(ParamError::Invalid {
                name: "uri".into(),
                message: e.to_string(),
            }),
        }
    }
}
