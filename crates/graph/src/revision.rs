//! [`Revision`]: how a running node tells the next compile that its latency or its
//! parameter list changed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::param::ParamSpec;

/// A node's latency and parameter list as they are now, for a node that can change them
/// while it runs (a plugin that reports a new latency or a new set of parameters after a
/// restart).
///
/// A compile reads [`Node::latency`](crate::Node::latency) and
/// [`Node::params`](crate::Node::params) once, when the node is added; after that the node
/// is on the audio thread and nobody can ask it again. A node that may change them hands
/// out a `Revision` through [`Node::revision`](crate::Node::revision), and whoever changes
/// them (off the audio thread: a plugin host's main thread) [`publish`](Revision::publish)es
/// the new ones. An [`Editor`](crate::Editor) picks them up at its next
/// [`commit`](crate::Editor::commit) (and says whether there is anything to pick up in
/// [`revise`](crate::Editor::revise)): the new schedule compensates the new latency and
/// resolves the new parameters by name. Parameters keep their running values by position,
/// so a node whose list grows should add new parameters at the end.
///
/// The audio thread never touches a `Revision`: it is guarded by a lock, taken by the
/// publisher and by the editor's thread only.
///
/// ```
/// use std::sync::Arc;
/// use downbeat_graph::Revision;
///
/// let revision = Arc::new(Revision::new(0, &[]));
/// let seen = revision.generation();
/// revision.publish(64, &[]); // the plugin's main thread, after a restart
/// assert!(revision.generation() > seen);
/// assert_eq!(revision.latency(), 64);
/// ```
#[derive(Debug)]
pub struct Revision {
    generation: AtomicU64,
    shape: Mutex<(usize, &'static [ParamSpec])>,
}

impl Revision {
    /// The latency and parameters the node starts with (what its `latency` and `params`
    /// say when it is added).
    pub fn new(latency: usize, params: &'static [ParamSpec]) -> Self {
        Self {
            generation: AtomicU64::new(0),
            shape: Mutex::new((latency, params)),
        }
    }

    /// Replaces the latency and the parameter list: the next commit of an editor holding
    /// the node uses these. Off the audio thread (it locks).
    pub fn publish(&self, latency: usize, params: &'static [ParamSpec]) {
        *self.shape.lock().unwrap_or_else(PoisonError::into_inner) = (latency, params);
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// How many times [`publish`](Revision::publish) was called: a cheap check for news.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The latency last published, in frames.
    pub fn latency(&self) -> usize {
        self.current().1
    }

    /// The parameter list last published.
    pub fn params(&self) -> &'static [ParamSpec] {
        self.current().2
    }

    /// The generation, latency and parameters, read together.
    pub(crate) fn current(&self) -> (u64, usize, &'static [ParamSpec]) {
        let shape = self.shape.lock().unwrap_or_else(PoisonError::into_inner);
        (self.generation(), shape.0, shape.1)
    }
}

/// A revision as a node hands it out: shared with whoever publishes.
pub type SharedRevision = Arc<Revision>;
