//! [`GraphError`]: why a graph could not be compiled.

use std::fmt;

/// Why [`Graph::compile`](crate::Graph::compile) refused a graph. Every variant names the
/// nodes involved; edge variants also give the edge's index as returned by
/// [`Graph::connect`](crate::Graph::connect), so callers can point at its source.
#[derive(Clone, Debug, PartialEq)]
pub enum GraphError {
    /// Two nodes share a name.
    DuplicateName {
        /// The name used twice.
        name: String,
    },
    /// An edge names a node that does not exist.
    UnknownNode {
        /// Index of the edge.
        edge: usize,
        /// The missing name.
        name: String,
        /// Names that do exist, closest first.
        known: Vec<String>,
    },
    /// An edge refers to a node id that is not in this graph.
    DanglingEdge {
        /// Index of the edge.
        edge: usize,
        /// The id's index.
        id: usize,
    },
    /// The same edge was added twice, which would sum the signal twice.
    DuplicateEdge {
        /// Index of the second edge.
        edge: usize,
        /// Source node.
        from: String,
        /// Destination node.
        to: String,
    },
    /// An edge leads into a node without inputs (a source).
    NoInputs {
        /// Index of the edge.
        edge: usize,
        /// Source node.
        from: String,
        /// The source node that cannot take input.
        to: String,
    },
    /// The two ends of an edge have different channel counts.
    ChannelMismatch {
        /// Index of the edge.
        edge: usize,
        /// Source node.
        from: String,
        /// Its output channels.
        from_channels: usize,
        /// Destination node.
        to: String,
        /// Its input channels.
        to_channels: usize,
    },
    /// An edge names a port its node does not have.
    UnknownPort {
        /// Index of the edge.
        edge: usize,
        /// The node.
        node: String,
        /// The missing port.
        port: String,
        /// Whether it was to be an input port (the edge's destination).
        input: bool,
        /// The ports the node has on that side.
        known: Vec<String>,
    },
    /// An edge's level is outside -144 to +24 dB (or not a number).
    EdgeGain {
        /// Index of the edge.
        edge: usize,
        /// Source node.
        from: String,
        /// Destination node.
        to: String,
        /// The level.
        gain_db: f64,
    },
    /// The edges form a cycle.
    Cycle {
        /// The nodes on the cycle, in edge order; the first follows the last.
        nodes: Vec<String>,
        /// Index of one edge on the cycle.
        edge: usize,
    },
    /// No node was marked as the output.
    MissingOutput,
}

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphError::DuplicateName { name } => {
                write!(
                    f,
                    "two nodes are called `{name}`; node names must be unique"
                )
            }
            GraphError::UnknownNode { name, known, .. } => {
                write!(f, "edge refers to unknown node `{name}`")?;
                if !known.is_empty() {
                    let list: Vec<String> =
                        known.iter().take(8).map(|k| format!("`{k}`")).collect();
                    write!(f, "; known nodes: {}", list.join(", "))?;
                    if known.len() > 8 {
                        write!(f, ", ...")?;
                    }
                }
                Ok(())
            }
            GraphError::DanglingEdge { id, .. } => {
                write!(f, "edge refers to node id {id}, which is not in this graph")
            }
            GraphError::DuplicateEdge { from, to, .. } => {
                write!(f, "edge `{from}` -> `{to}` is given twice")
            }
            GraphError::NoInputs { from, to, .. } => write!(
                f,
                "edge `{from}` -> `{to}`: `{to}` is a source and takes no input"
            ),
            GraphError::ChannelMismatch {
                from,
                from_channels,
                to,
                to_channels,
                ..
            } => write!(
                f,
                "edge `{from}` -> `{to}`: `{from}` has {from_channels} output channel(s) \
                 but `{to}` has {to_channels} input channel(s)"
            ),
            GraphError::UnknownPort {
                node,
                port,
                input,
                known,
                ..
            } => {
                let side = if *input { "input" } else { "output" };
                write!(f, "node `{node}` has no {side} port `{port}`")?;
                if known.is_empty() {
                    write!(f, " (it has no {side} ports)")
                } else {
                    let list: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
                    write!(f, "; its {side} ports: {}", list.join(", "))
                }
            }
            GraphError::EdgeGain {
                from, to, gain_db, ..
            } => write!(
                f,
                "edge `{from}` -> `{to}`: a level of {gain_db} dB is outside -144 to +24 dB"
            ),
            GraphError::Cycle { nodes, .. } => {
                let mut path: Vec<String> = nodes.iter().map(|n| format!("`{n}`")).collect();
                if let Some(first) = path.first().cloned() {
                    path.push(first);
                }
                write!(f, "the graph has a cycle: {}", path.join(" -> "))
            }
            GraphError::MissingOutput => write!(f, "the graph has no output node"),
        }
    }
}

impl std::error::Error for GraphError {}

impl GraphError {
    /// The index of the edge this error is about, if it is about one.
    pub fn edge(&self) -> Option<usize> {
        match self {
            GraphError::UnknownNode { edge, .. }
            | GraphError::DanglingEdge { edge, .. }
            | GraphError::DuplicateEdge { edge, .. }
            | GraphError::NoInputs { edge, .. }
            | GraphError::ChannelMismatch { edge, .. }
            | GraphError::UnknownPort { edge, .. }
            | GraphError::EdgeGain { edge, .. }
            | GraphError::Cycle { edge, .. } => Some(*edge),
            GraphError::DuplicateName { .. } | GraphError::MissingOutput => None,
        }
    }
}
