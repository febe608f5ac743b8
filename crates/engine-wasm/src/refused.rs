//! The node types the browser engine has: the built-in ones that need nothing from the
//! operating system, the `sampler` (its files handed over as bytes), and stand-ins for the
//! types that do need it, so that a project naming one parses and is refused with a message
//! naming the node.

use downbeat::{lookup_node_type, register_node_type};
use downbeat_graph::{Node, NodeConfig, NodeFactory, ParamError, ParamSpec, ParamValue};

/// Node types that cannot run in a browser, and why. The ones that are not built in
/// (`clap`, `echoes`, `lv2`, `vst3`) come in the order the `downbeat` command registers them, so
/// that the list of valid types in an error message is the CLI's.
pub const REFUSED: &[(&str, &str)] = &[
    ("player", "streams a file from disk on a reader thread"),
    ("input", "reads a sound card's or a file's input"),
    ("clap", "loads a native CLAP plugin"),
    ("echoes", "runs a collector thread for its heap"),
    ("lv2", "loads a native LV2 plugin"),
    ("vst3", "loads a native VST3 plugin"),
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

/// Registers the stand-ins for the refused types that are not built in (once; later calls
/// do nothing). A name already known (built in, like `player`, or natively registered
/// first, like the real `clap`) is left as it is.
pub fn register() {
    static DONE: std::sync::Once = std::sync::Once::new();
    DONE.call_once(|| {
        for (name, _) in REFUSED {
            if lookup_node_type(name).is_none() {
                // Only a name taken between the look-up and here can refuse it, and then
                // the real type is there, which is as good.
                let _ = register_node_type(Refused { name });
            }
        }
    });
}
