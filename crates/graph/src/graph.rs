//! [`Graph`]: the editable description of nodes and the edges between them.

use crate::node::Node;

/// Identifies a node within the [`Graph`] that returned it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub(crate) usize);

impl NodeId {
    /// Position of the node in the order it was added.
    pub fn index(self) -> usize {
        self.0
    }
}

/// One end of an edge: a node (its `main` port) by id, a port of a node by id, or a name
/// resolved when the graph is compiled: `"comp"` for a node's `main` port, `"comp:sidechain"`
/// for another port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// A node's `main` port, by the node's id.
    Id(NodeId),
    /// A node by name, with `:PORT` after it for another port than `main`.
    Name(String),
    /// A port of a node, by the node's id and the port's name.
    Port(NodeId, String),
}

impl From<(NodeId, &str)> for Endpoint {
    fn from((id, port): (NodeId, &str)) -> Self {
        Endpoint::Port(id, port.to_string())
    }
}

impl From<NodeId> for Endpoint {
    fn from(id: NodeId) -> Self {
        Endpoint::Id(id)
    }
}

impl From<&str> for Endpoint {
    fn from(name: &str) -> Self {
        Endpoint::Name(name.to_string())
    }
}

impl From<String> for Endpoint {
    fn from(name: String) -> Self {
        Endpoint::Name(name)
    }
}

/// A directed edge: the output of `from` is summed into the input of `to`.
#[derive(Clone, Debug, PartialEq)]
pub struct Edge {
    /// The node whose output is read.
    pub from: Endpoint,
    /// The node whose input receives it.
    pub to: Endpoint,
    /// The edge's level in dB, for an edge that has one ([`Graph::connect_gain`]).
    pub gain_db: Option<f64>,
}

pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) node: Box<dyn Node>,
    /// For a stand-in an [`Editor`](crate::Editor) put here: the running node's position
    /// in the schedule it runs in.
    pub(crate) keep: Option<usize>,
}

/// An audio graph under construction: named nodes, edges, and which node is the output.
///
/// Editing a graph never touches the audio thread. [`Graph::compile`] checks it and turns
/// it into a [`Schedule`](crate::Schedule) that the audio thread runs.
///
/// ```
/// use downbeat_graph::Graph;
/// use downbeat_nodes::{Gain, Output};
///
/// let mut g = Graph::new();
/// let gain = g.add("gain", Gain::new(2, 0.5));
/// let out = g.add("out", Output::new(2));
/// g.connect(gain, out);
/// g.set_output(out);
/// assert_eq!(g.len(), 2);
/// ```
#[derive(Default)]
pub struct Graph {
    pub(crate) nodes: Vec<Entry>,
    pub(crate) edges: Vec<Edge>,
    pub(crate) output: Option<NodeId>,
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a node under `name` and returns its id. Names must be unique; a duplicate is
    /// reported by [`compile`](Graph::compile).
    pub fn add(&mut self, name: impl Into<String>, node: impl Node) -> NodeId {
        self.add_boxed(name, Box::new(node))
    }

    /// Adds an already boxed node, e.g. one built by [`NodeType::instantiate`](crate::NodeType::instantiate).
    pub fn add_boxed(&mut self, name: impl Into<String>, node: Box<dyn Node>) -> NodeId {
        self.nodes.push(Entry {
            name: name.into(),
            node,
            keep: None,
        });
        NodeId(self.nodes.len() - 1)
    }

    /// Adds an edge from the output of `from` to the input of `to`, by id or by name, each
    /// its `main` port unless the endpoint names another ([`Endpoint`]): the edge's audio is
    /// summed into that port's channels. Returns the edge's index, which
    /// [`GraphError`](crate::GraphError)s refer to.
    pub fn connect(&mut self, from: impl Into<Endpoint>, to: impl Into<Endpoint>) -> usize {
        self.edges.push(Edge {
            from: from.into(),
            to: to.into(),
            gain_db: None,
        });
        self.edges.len() - 1
    }

    /// [`connect`](Graph::connect) with a level: the edge's audio is scaled by `gain_db` dB
    /// on its way (a send: `"vox -> reverb @ -12 dB"` in a project). The level is a live
    /// parameter, `gain_db`, of a node compile puts on the edge, named after it
    /// (`"vox -> reverb"`, with the ports the edge names; see
    /// [`EdgeGain`](crate::EdgeGain)), so it moves, ramps and is automated like any
    /// parameter, sample-accurately.
    pub fn connect_gain(
        &mut self,
        from: impl Into<Endpoint>,
        to: impl Into<Endpoint>,
        gain_db: f64,
    ) -> usize {
        let k = self.connect(from, to);
        self.edges[k].gain_db = Some(gain_db);
        k
    }

    /// Marks `node` as the graph's output: its output is what the device plays.
    pub fn set_output(&mut self, node: NodeId) {
        self.output = Some(node);
    }

    /// The id of the node called `name`.
    pub fn find(&self, name: &str) -> Option<NodeId> {
        self.nodes.iter().position(|e| e.name == name).map(NodeId)
    }

    /// The name of a node.
    pub fn name(&self, id: NodeId) -> Option<&str> {
        self.nodes.get(id.0).map(|e| e.name.as_str())
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The edges, in the order they were added.
    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }
}
