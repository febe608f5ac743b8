//! CLAP hosting through `clack-host`: a `.clap` file's plugin as a graph node.
//!
//! In a project file:
//!
//! ```toml
//! [nodes.verb]
//! type = "clap"
//! path = "plugins/reverb.clap"   # relative to the working directory
//! id = "com.example.reverb"      # may be left out when the file holds one plugin
//! mix = 0.3                      # any of the plugin's parameters, by name
//! ```
//!
//! The node's channels are the plugin's audio ports'; its parameters are the plugin's, named
//! by [`param_name`] (lower case, `_` between words), with the plugin's ranges and defaults,
//! and all of them live: controllers and automation move them, and each change reaches the
//! plugin in CLAP's input event list at its sample offset in the block (the schedule does not
//! cut a plugin's block, see [`Node::takes_param_offsets`]). An instrument (a plugin with a
//! note input port) gets the node's notes as CLAP note events, pitch bend and sustain as MIDI
//! messages. The plugin's reported latency is the node's [`Node::latency`], which the graph
//! compensates.
//!
//! Only the `clap` feature is needed: CLAP plugins are loaded with `dlopen`, no system
//! library is involved.
//!
//! ```no_run
//! use downbeat_graph::{lookup_node_type, NodeConfig, ParamValue};
//!
//! downbeat_plugin::clap::register().unwrap();
//! let cfg = NodeConfig { sample_rate: 48000.0, max_block: 256 };
//! let node = lookup_node_type("clap").unwrap().create(
//!     vec![
//!         ("path".into(), ParamValue::Text("gain.clap".into())),
//!         ("gain".into(), ParamValue::Float(0.5)),
//!     ],
//!     &cfg,
//! )?;
//! assert_eq!(node.params()[0].name, "gain");
//! # Ok::<(), downbeat_graph::ParamError>(())
//! ```
//!
//! [`Node::takes_param_offsets`]: downbeat_graph::Node::takes_param_offsets
//! [`Node::latency`]: downbeat_graph::Node::latency

mod error;
mod host;
mod log;
mod node;
mod thread;

use std::path::Path;

use downbeat_graph::{
    register_node_type, Node, NodeConfig, NodeFactory, ParamError, ParamKind, ParamSpec,
    ParamValue, RegistryError,
};

pub use error::ClapError;
pub use node::{param_name, ClapInfo, ClapNode, EVENT_CAPACITY, STATE_EXTENSION};

/// The keys every `clap` node takes besides the plugin's parameters: declared so that the
/// project resolves `state`'s relative path against the project's folder.
static FACTORY_PARAMS: [ParamSpec; 1] = [ParamSpec {
    name: "state",
    doc: "a state file saved by `downbeat run --save-state` (`<node>.clapstate`), loaded into \
          the plugin before activation; parameters given in the project still win",
    kind: ParamKind::Path { default: "" },
    live: false,
}];

/// The `clap` node type: `path = "….clap"` and `id = "…"` name the plugin, `state = "FILE"`
/// a saved state to start from, every other key one of its parameters.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClapFactory;

fn text(name: &str, value: ParamValue, what: &str) -> Result<String, ParamError> {
    match value {
        ParamValue::Text(t) => Ok(t),
        _ => Err(ParamError::Invalid {
            name: name.into(),
            message: format!("expected {what} as a string"),
        }),
    }
}

impl NodeFactory for ClapFactory {
    fn name(&self) -> &str {
        "clap"
    }

    fn doc(&self) -> &str {
        "a CLAP plugin (a .clap file, loaded with dlopen); channels are the plugin's audio ports"
    }

    fn params(&self) -> &[ParamSpec] {
        &FACTORY_PARAMS
    }

    fn open_params(&self) -> Option<&str> {
        Some(
            "`path = \"….clap\"` names the file (required) and `id = \"…\"` the plugin in it \
             (needed when the file holds several); every plugin parameter is a live parameter \
             named by its name in lower case with `_` between words, with the plugin's range \
             and default (`downbeat audit FILE` lists them)",
        )
    }

    fn create(
        &self,
        params: Vec<(String, ParamValue)>,
        cfg: &NodeConfig,
    ) -> Result<Box<dyn Node>, ParamError> {
        let mut path = None;
        let mut id = None;
        let mut state = None;
        let mut values = Vec::new();
        for (name, value) in params {
            match name.as_str() {
                "path" => path = Some(text(&name, value, "the .clap file's path")?),
                "id" => id = Some(text(&name, value, "the plugin's id")?),
                "state" => state = Some(text(&name, value, "the state file's path")?),
                "preset" => {
                    return Err(ParamError::Invalid {
                        name,
                        message: "CLAP nodes take no `preset`: Downbeat does not load CLAP \
                                  preset files (no CLAP plugin packaged in Debian offers the \
                                  preset-load extension); save a state with `downbeat run \
                                  --save-state DIR` and give it as `state = \"FILE\"`"
                            .into(),
                    })
                }
                _ => values.push((name, value)),
            }
        }
        let Some(path) = path else {
            return Err(ParamError::Invalid {
                name: "path".into(),
                message: "a clap node needs `path = \"….clap\"` naming the plugin file".into(),
            });
        };
        let mut node = ClapNode::load_with_state(
            Path::new(&path),
            id.as_deref(),
            cfg.sample_rate,
            cfg.max_block,
            state.as_deref().map(Path::new),
        )
        .map_err(|e| ParamError::Invalid {
            name: e.key().into(),
            message: e.to_string(),
        })?;
        let specs = node.params();
        for (name, value) in values {
            let Some(index) = specs.iter().position(|s| s.name == name) else {
                return Err(ParamError::Unknown {
                    name,
                    valid: specs.iter().map(|s| s.name).collect(),
                });
            };
            let v = match value {
                ParamValue::Float(v) => v,
                ParamValue::Int(v) => v as f64,
                _ => {
                    return Err(ParamError::Invalid {
                        name,
                        message: format!("expected {}", specs[index].kind.describe()),
                    })
                }
            };
            // Every CLAP parameter is declared as a Float with the plugin's range.
            let (min, max) = match specs[index].kind {
                ParamKind::Float { min, max, .. } => (min, max),
                _ => (f64::NEG_INFINITY, f64::INFINITY),
            };
            if !(min..=max).contains(&v) {
                return Err(ParamError::Invalid {
                    name,
                    message: format!("{v} is out of range: expected a number from {min} to {max}"),
                });
            }
            node.set_param(index, v as f32);
        }
        Ok(Box::new(node))
    }
}

/// Registers the `clap` node type (once; later calls do nothing). The command line calls it
/// at start.
///
/// # Errors
/// [`RegistryError`] when another type already took the name `clap`.
pub fn register() -> Result<(), RegistryError> {
    static DONE: std::sync::Once = std::sync::Once::new();
    let mut result = Ok(());
    DONE.call_once(|| result = register_node_type(ClapFactory));
    result
}
