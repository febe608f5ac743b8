//! [`NodeState`]: what a node saves of itself (a plugin's state) so that a later run can
//! start where this one ended.

use std::fmt;

/// A node's saved state: bytes in a format the node type defines, and the file-name
/// extension a host gives them when it writes them to disk (`downbeat run --save-state
/// DIR` writes `DIR/<node>.<extension>`). The same node type reads the file back through
/// its own parameter (a plugin node's `state = "FILE"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeState {
    /// The state, as the node type writes it (a CLAP state stream, an LV2 state in Turtle).
    pub bytes: Vec<u8>,
    /// The file-name extension for it, without the dot (`clapstate`, `ttl`).
    pub extension: &'static str,
}

/// A node could not save its state: what went wrong, in the node's words (a plugin that
/// refused, a state too large).
///
/// ```
/// use downbeat_graph::StateError;
///
/// let e = StateError::new("the plugin refused to save its state");
/// assert_eq!(e.to_string(), "the plugin refused to save its state");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateError {
    message: String,
}

impl StateError {
    /// An error with this message (a sentence without the node's name: the host adds it).
    pub fn new(message: impl Into<String>) -> Self {
        StateError {
            message: message.into(),
        }
    }
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StateError {}
