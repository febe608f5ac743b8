//! The node types a project file can name: the built-in ones of `downbeat-nodes` and
//! `downbeat-file`, then those registered with [`register_node_type`] (plugins, user code).
//!
//! The list lives here because this is the one crate that depends on every crate that
//! makes nodes: `downbeat-graph` only defines what a type is ([`NodeFactory`]), and the
//! crates below it cannot see each other's types. So every built-in type works with no
//! registration call, and a registered type can never hide a built-in one.
//!
//! ```
//! use downbeat::lookup_node_type;
//!
//! // Built in, from `downbeat-nodes` and `downbeat-file`.
//! assert!(lookup_node_type("synth").is_some());
//! assert!(lookup_node_type("sampler").is_some());
//! assert!(lookup_node_type("no-such-type").is_none());
//! ```

use std::fmt;
use std::sync::RwLock;

use downbeat_graph::NodeFactory;

/// The built-in types, in the order the reference lists them.
fn built_in() -> impl Iterator<Item = &'static dyn NodeFactory> {
    downbeat_nodes::node_types()
        .iter()
        .map(|t| t as &'static dyn NodeFactory)
        .chain(downbeat_file::node_types().iter().copied())
}

/// Why [`register_node_type`] refused a type.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryError {
    /// A built-in or already registered type has that name.
    NameTaken {
        /// The name.
        name: String,
    },
    /// The name cannot appear as a type in a project file.
    BadName {
        /// The name.
        name: String,
    },
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistryError::NameTaken { name } => {
                write!(f, "a node type called \"{name}\" is already registered")
            }
            RegistryError::BadName { name } => write!(
                f,
                "\"{name}\" cannot name a node type: use letters, digits, `_` and `-`"
            ),
        }
    }
}

impl std::error::Error for RegistryError {}

/// Types added with [`register_node_type`]. They live as long as the process: a schedule
/// built from one may outlive anything that could have owned it.
static REGISTERED: RwLock<Vec<&'static dyn NodeFactory>> = RwLock::new(Vec::new());

/// Adds a node type that project files can then use by name, and that
/// [`all_node_types`] lists after the built-in ones. Registration is for the life of the
/// process (the factory is never dropped). Off the audio thread.
///
/// # Errors
/// [`RegistryError::NameTaken`] when a built-in or registered type already has the name;
/// [`RegistryError::BadName`] for a name that is empty or holds characters other than
/// ASCII letters, digits, `_` and `-`.
///
/// ```
/// use downbeat::graph::{Node, NodeConfig, NodeFactory, ParamError, ParamSpec, ParamValue, Params};
/// use downbeat::nodes::Gain;
/// use downbeat::{lookup_node_type, register_node_type, RegistryError};
///
/// /// A gain of 2, in user code.
/// struct Double;
///
/// impl NodeFactory for Double {
///     fn name(&self) -> &str { "double" }
///     fn doc(&self) -> &str { "doubles its input" }
///     fn params(&self) -> &[ParamSpec] { &[] }
///     fn create(
///         &self,
///         params: Vec<(String, ParamValue)>,
///         _cfg: &NodeConfig,
///     ) -> Result<Box<dyn Node>, ParamError> {
///         Params::validate(&[], params)?;
///         Ok(Box::new(Gain::new(2, 2.0)))
///     }
/// }
///
/// register_node_type(Double).unwrap();
/// let cfg = NodeConfig { sample_rate: 48000, max_block: 64 };
/// let node = lookup_node_type("double").unwrap().create(Vec::new(), &cfg).unwrap();
/// assert_eq!(node.output_channels(), 2);
/// // A name can only be taken once, and never a built-in type's.
/// assert!(matches!(register_node_type(Double), Err(RegistryError::NameTaken { .. })));
/// ```
pub fn register_node_type(factory: impl NodeFactory) -> Result<(), RegistryError> {
    let name = factory.name();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(RegistryError::BadName {
            name: name.to_string(),
        });
    }
    // A poisoned lock only means another registration panicked; the list itself is
    // always whole (a push is the only write).
    let mut registered = REGISTERED.write().unwrap_or_else(|e| e.into_inner());
    if built_in().any(|t| t.name() == name) || registered.iter().any(|t| t.name() == name) {
        return Err(RegistryError::NameTaken {
            name: name.to_string(),
        });
    }
    registered.push(Box::leak(Box::new(factory)));
    Ok(())
}

/// Looks up a node type by name, built-in or registered.
///
/// ```
/// use downbeat::lookup_node_type;
/// assert_eq!(lookup_node_type("sine").unwrap().name(), "sine");
/// assert!(lookup_node_type("no-such-type").is_none());
/// ```
pub fn lookup_node_type(name: &str) -> Option<&'static dyn NodeFactory> {
    if let Some(t) = built_in().find(|t| t.name() == name) {
        return Some(t);
    }
    let registered = REGISTERED.read().unwrap_or_else(|e| e.into_inner());
    registered.iter().copied().find(|t| t.name() == name)
}

/// Every node type: the built-in ones in their documented order, then the registered
/// ones in the order they were registered.
pub fn all_node_types() -> Vec<&'static dyn NodeFactory> {
    let registered = REGISTERED.read().unwrap_or_else(|e| e.into_inner());
    built_in().chain(registered.iter().copied()).collect()
}
