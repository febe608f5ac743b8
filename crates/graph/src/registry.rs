//! Node types: how a project file's `type = "..."` becomes a [`Node`].

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

/// Every built-in node type.
pub fn node_types() -> &'static [NodeType] {
    crate::nodes::BUILTIN
}

/// Looks up a built-in node type by name.
pub fn node_type(name: &str) -> Option<&'static NodeType> {
    node_types().iter().find(|t| t.name == name)
}
