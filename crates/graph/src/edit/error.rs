//! [`EditError`]: why an edit was refused.

use std::fmt;

use crate::error::GraphError;

/// Why an [`Editor`](crate::Editor) refused an edit. A refused edit changes nothing: a
/// single edit is refused before it joins the batch, and a refused
/// [`commit`](crate::Editor::commit) drops the whole batch, leaving the graph as it was at
/// the last commit.
#[derive(Clone, Debug, PartialEq)]
pub enum EditError {
    /// A node to add has the name of a node the graph already has.
    Exists {
        /// The name.
        name: String,
    },
    /// An edit names a node the graph does not have.
    UnknownNode {
        /// The name.
        name: String,
        /// The nodes the graph has, closest names first.
        known: Vec<String>,
    },
    /// A node name holds `:` or `@`, which edges use for ports and gains.
    ReservedCharacter {
        /// The name.
        name: String,
    },
    /// The edge to add is there already.
    EdgeExists {
        /// Source node.
        from: String,
        /// Destination node.
        to: String,
    },
    /// The edge to remove is not there.
    NoSuchEdge {
        /// Source node.
        from: String,
        /// Destination node.
        to: String,
    },
    /// The node to remove is the graph's output; set another output first.
    RemovesOutput {
        /// The output node.
        name: String,
    },
    /// The new output node's channel count differs from the running output's, which the
    /// device was opened with.
    OutputChannels {
        /// The node.
        name: String,
        /// Its output channels.
        channels: usize,
        /// The running output's.
        expected: usize,
    },
    /// The edited graph does not compile (a cycle, channel counts that differ across an
    /// edge, an edge into a source).
    Graph(GraphError),
}

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EditError::Exists { name } => write!(f, "the graph already has a node `{name}`"),
            EditError::UnknownNode { name, known } => {
                write!(f, "the graph has no node `{name}`")?;
                match known.first() {
                    Some(k) => write!(f, " (did you mean `{k}`?)"),
                    None => Ok(()),
                }
            }
            EditError::ReservedCharacter { name } => write!(
                f,
                "node name `{name}` holds `:` or `@`, which edges use for ports and gains"
            ),
            EditError::EdgeExists { from, to } => {
                write!(f, "the edge `{from} -> {to}` is there already")
            }
            EditError::NoSuchEdge { from, to } => {
                write!(f, "the graph has no edge `{from} -> {to}`")
            }
            EditError::RemovesOutput { name } => write!(
                f,
                "`{name}` is the graph's output and cannot be removed; set another output first"
            ),
            EditError::OutputChannels {
                name,
                channels,
                expected,
            } => write!(
                f,
                "`{name}` has {channels} output channels; the running output has {expected}"
            ),
            EditError::Graph(e) => write!(f, "the edited graph does not compile: {e}"),
        }
    }
}

impl std::error::Error for EditError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EditError::Graph(e) => Some(e),
            _ => None,
        }
    }
}

impl From<GraphError> for EditError {
    fn from(e: GraphError) -> Self {
        EditError::Graph(e)
    }
}
