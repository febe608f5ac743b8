//! Node types: how a project file's `type = "..."` becomes a [`Node`].
//!
//! A [`NodeFactory`] builds nodes of one type by name from parameters. Most are
//! [`NodeType`]s, plain tables of a name, parameters and a constructor (every built-in
//! type of `downbeat-nodes` is one); a factory can also take parameters that are only known
//! once the node is built (a plugin's control ports, say, which the factory learns from the
//! plugin named in the project file). This crate only defines the interface: the list of
//! types a project file can name, built-in and registered, is the `downbeat` crate's
//! (`downbeat::lookup_node_type`), the one layer that sees every crate that makes nodes.

use crate::node::Node;
use crate::param::{ParamError, ParamSpec, ParamValue, Params};

/// What a node constructor knows about the schedule it will run in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NodeConfig {
    /// Sample rate in Hz.
    pub sample_rate: u32,
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
    /// use downbeat_graph::{NodeConfig, ParamValue};
    /// let cfg = NodeConfig { sample_rate: 48000, max_block: 256 };
    /// let gain = downbeat_nodes::node_type("gain").unwrap();
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

/// A node type, built-in or defined in another crate: what `downbeat::register_node_type`
/// takes and `downbeat::lookup_node_type` returns.
///
/// A factory declares the parameters every node of its type takes ([`params`]), and may
/// accept more whose names depend on the node ([`open_params`]): a plugin host declares
/// the key naming the plugin, and takes the plugin's own parameters by name, checking them
/// when it has loaded the plugin in [`create`].
///
/// ```
/// use downbeat_graph::{Node, NodeConfig, NodeFactory, ParamError, ParamSpec, ParamValue, Params};
/// use downbeat_nodes::Gain;
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
/// let cfg = NodeConfig { sample_rate: 48000, max_block: 64 };
/// let node = Double.create(Vec::new(), &cfg).unwrap();
/// assert_eq!(node.output_channels(), 2);
/// // An unknown parameter is refused by name.
/// let unknown = vec![("gain".to_string(), ParamValue::Float(1.0))];
/// assert!(Double.create(unknown, &cfg).is_err());
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
