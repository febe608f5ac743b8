//! Node types: how a project file's `type = "..."` becomes a [`Node`].
//!
//! The registry is open. The built-in types ([`node_types`]) are [`NodeType`]s, plain
//! tables of a name, parameters and a constructor. Any crate can add more with
//! [`register_node_type`]: anything implementing [`NodeFactory`], including types whose
//! parameters are only known once the node is built (a plugin's control ports, say, which
//! the factory learns from the plugin named in the project file). Project files and
//! `downbeat nodes` look types up with [`lookup_node_type`] and [`all_node_types`], which
//! see both.

use std::fmt;
use std::sync::RwLock;

use crate::node::Node;
use crate::param::{ParamError, ParamSpec, ParamValue, Params};

/// What a node constructor knows about the schedule it will run in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NodeConfig {
    /// Sample rate in Hz.
    pub sample_rate: f32,
    /// Largest block the node will be asked to process.
    pub max_block: usize,
}

/// Builds a node from validated parameters; see [`NodeType::build`].
pub type BuildFn = fn(&Params, &NodeConfig) -> Result<Box<dyn Node>, ParamError>;

/// A kind of node that can be built by name, with declared parameters.
#[derive(Clone, Copy, Debug)]
pub struct NodeType {
    /// Name used as `type = "..."` in project files.
    pub name: &'static str,
    /// One line for the reference documentation.
    pub doc: &'static str,
    /// Declared parameters, in the order [`Node::set_param`] indexes them.
    pub params: &'static [ParamSpec],
    /// Builds the node from validated parameters. Runs off the audio thread. May refuse a
    /// combination of parameters with [`ParamError::Invalid`].
    pub build: BuildFn,
}

impl NodeType {
    /// Validates `params` and builds a node.
    ///
    /// ```
    /// use downbeat_graph::{node_type, NodeConfig, ParamValue};
    /// let cfg = NodeConfig { sample_rate: 48000.0, max_block: 256 };
    /// let gain = node_type("gain").unwrap();
    /// let node = gain.instantiate(vec![("gain".into(), ParamValue::Float(0.5))], &cfg).unwrap();
    /// assert_eq!(node.output_channels(), 2);
    /// ```
    pub fn instantiate(
        &self,
        params: impl IntoIterator<Item = (String, ParamValue)>,
        cfg: &NodeConfig,
    ) -> Result<Box<dyn Node>, ParamError> {
        let params = Params::validate(self.params, params)?;
        (self.build)(&params, cfg)
    }
}

/// A node type, built-in or defined in another crate: what [`register_node_type`] takes
/// and [`lookup_node_type`] returns.
///
/// A factory declares the parameters every node of its type takes ([`params`]), and may
/// accept more whose names depend on the node ([`open_params`]): a plugin host declares
/// the key naming the plugin, and takes the plugin's own parameters by name, checking them
/// when it has loaded the plugin in [`create`].
///
/// ```
/// use downbeat_graph::{
///     nodes::Gain, register_node_type, lookup_node_type, Node, NodeConfig, NodeFactory,
///     ParamError, ParamKind, ParamSpec, ParamValue, Params,
/// };
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
/// let cfg = NodeConfig { sample_rate: 48000.0, max_block: 64 };
/// let node = lookup_node_type("double").unwrap().create(Vec::new(), &cfg).unwrap();
/// assert_eq!(node.output_channels(), 2);
/// // A name can only be taken once.
/// assert!(register_node_type(Double).is_err());
/// ```
///
/// [`params`]: NodeFactory::params
/// [`open_params`]: NodeFactory::open_params
/// [`create`]: NodeFactory::create
pub trait NodeFactory: Send + Sync + 'static {
    /// Name used as `type = "..."` in project files.
    fn name(&self) -> &str;

    /// One line for the reference documentation.
    fn doc(&self) -> &str;

    /// The parameters every node of this type takes.
    fn params(&self) -> &[ParamSpec];

    /// `Some(description)` when the type also takes parameters not in
    /// [`params`](NodeFactory::params), whose names and ranges depend on the node (checked
    /// by [`create`](NodeFactory::create)); the description says what they are, for the
    /// reference documentation and for error messages. `None` (the default) when
    /// [`params`](NodeFactory::params) is the whole list.
    fn open_params(&self) -> Option<&str> {
        None
    }

    /// Checks `params` and builds a node. Runs off the audio thread, and may take its time
    /// (loading a plugin, say). Refuses an unknown parameter with [`ParamError::Unknown`]
    /// and a bad value, or a node that cannot be built from it, with
    /// [`ParamError::Invalid`] naming the parameter to fix.
    fn create(
        &self,
        params: Vec<(String, ParamValue)>,
        cfg: &NodeConfig,
    ) -> Result<Box<dyn Node>, ParamError>;
}

impl NodeFactory for NodeType {
    fn name(&self) -> &str {
        self.name
    }

    fn doc(&self) -> &str {
        self.doc
    }

    fn params(&self) -> &[ParamSpec] {
        self.params
    }

    fn create(
        &self,
        params: Vec<(String, ParamValue)>,
        cfg: &NodeConfig,
    ) -> Result<Box<dyn Node>, ParamError> {
        self.instantiate(params, cfg)
    }
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
    if node_type(name).is_some() || registered.iter().any(|t| t.name() == name) {
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
/// use downbeat_graph::lookup_node_type;
/// assert_eq!(lookup_node_type("sine").unwrap().name(), "sine");
/// assert!(lookup_node_type("no-such-type").is_none());
/// ```
pub fn lookup_node_type(name: &str) -> Option<&'static dyn NodeFactory> {
    if let Some(t) = node_type(name) {
        return Some(t);
    }
    let registered = REGISTERED.read().unwrap_or_else(|e| e.into_inner());
    registered.iter().copied().find(|t| t.name() == name)
}

/// Every node type: the built-in ones in their documented order, then the registered
/// ones in the order they were registered.
pub fn all_node_types() -> Vec<&'static dyn NodeFactory> {
    let registered = REGISTERED.read().unwrap_or_else(|e| e.into_inner());
    node_types()
        .iter()
        .map(|t| t as &'static dyn NodeFactory)
        .chain(registered.iter().copied())
        .collect()
}

/// Every built-in node type.
pub fn node_types() -> &'static [NodeType] {
    crate::nodes::BUILTIN
}

/// Looks up a built-in node type by name.
pub fn node_type(name: &str) -> Option<&'static NodeType> {
    node_types().iter().find(|t| t.name == name)
}
