//! The node types the browser engine has: the built-in ones that need nothing from the
//! operating system, the `sampler` (its files handed over as bytes), and stand-ins for the
//! types that do need it, so that a project naming one parses and is refused with a message
//! naming the node.

use downbeat_graph::ParamValue;
use downbeat_graph::{register_node_type, Node, NodeConfig, NodeFactory, ParamError, ParamSpec};

/// Node types that cannot run in a browser, and why, in the order `downbeat` registers them
/// (so that the list of valid types in an error message is the CLI's; `lv2`, which a default
/// CLI build leaves out, comes last). `input` is built in.
pub const REFUSED: &[(&str, &str)] = &[
    ("clap", "loads a native CLAP plugin"),
    ("player", "streams a file from disk on a reader thread"),
    ("echoes", "runs a collector thread for its heap"),
    ("lv2", "loads a native LV2 plugin"),
    ("input", "reads a sound card's or a file's input"),
];

/// Why node type `kind` cannot run in a browser, if it cannot.
pub fn refusal(kind: &str) -> Option<&'static str> {
    REFUSED
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, why)| *why)
}

/// The message for node `name` of refused type `kind`.
pub fn message(name: &str, kind: &str, why: &str) -> String {
    format!(
        "node `{name}` is of type \"{kind}\", which {why} and is not supported in the \
         browser; run this project with the native `downbeat run`"
    )
}

/// A stand-in for a refused type: it takes any parameters, so that the project parses up
/// to the point where the engine refuses the node by name.
struct Refused {
    name: &'static str,
}

impl NodeFactory for Refused {
    fn name(&self) -> &str {
        self.name
    }

    fn doc(&self) -> &str {
        "not supported in the browser"
    }

    fn params(&self) -> &[ParamSpec] {
        &[]
    }

    fn open_params(&self) -> Option<&str> {
        Some("those of the native node type")
    }

    fn create(
        &self,
        _params: Vec<(String, ParamValue)>,
        _cfg: &NodeConfig,
    ) -> Result<Box<dyn Node>, ParamError> {
        Err(ParamError::Invalid {
            name: "type".into(),
            message: "not supported in the browser".into(),
        })
    }
}

/// Registers the `sampler` and the stand-ins (once; later calls do nothing). A name another
/// crate registered first (natively, the real `player`) is left as it is.
pub fn register() {
    static DONE: std::sync::Once = std::sync::Once::new();
    DONE.call_once(|| {
        // Errors are names taken already: the real type is there, which is as good.
        for (name, _) in REFUSED {
            if downbeat_graph::lookup_node_type(name).is_none() {
                let _ = register_node_type(Refused { name });
            }
            // The CLI registers `sampler` right after `player` (`downbeat_file::register`).
            if *name == "player" {
                let _ = downbeat_file::sampler::register();
            }
        }
    });
}
