//! [`NodeMonitor`]: counters a node keeps while it plays, readable from any thread.

use std::sync::Arc;

/// One counter of a [`NodeMonitor`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeCount {
    /// What is counted, as a snake_case key (`dropped_full`): stable, used in JSON.
    pub name: &'static str,
    /// The count now.
    pub value: u64,
    /// True for a count of something lost (input dropped, work skipped): a host warns when
    /// it is not zero, so that nothing is dropped silently.
    pub loss: bool,
}

/// The name of the count in which a node reports the bytes of memory it holds (sample
/// data, tables), allocated when it was built: `downbeat check` prints it for every node
/// that has one. Not a loss.
pub const MEMORY_BYTES: &str = "memory_bytes";

/// A thread-safe view of a playing node's counters.
///
/// A node moves into a [`Schedule`](crate::Schedule) and from there onto the audio thread,
/// so nobody can ask it anything while it runs. A node with something to tell keeps atomic
/// counters behind an `Arc` and hands out the other end through
/// [`Node::monitor`](crate::Node::monitor); [`Schedule::monitors`](crate::Schedule::monitors)
/// collects them when the graph is compiled.
///
/// [`counts`](NodeMonitor::counts) runs off the audio thread and may allocate; what it
/// reads must be written by the node without locks (relaxed atomics are enough for counts).
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use downbeat_graph::{NodeCount, NodeMonitor};
///
/// /// Counts blocks a node had to skip.
/// struct Skips(AtomicU64);
///
/// impl NodeMonitor for Skips {
///     fn counts(&self) -> Vec<NodeCount> {
///         let value = self.0.load(Ordering::Relaxed);
///         vec![NodeCount { name: "skipped_blocks", value, loss: true }]
///     }
/// }
///
/// let skips = Arc::new(Skips(AtomicU64::new(0)));
/// skips.0.fetch_add(1, Ordering::Relaxed); // what the node does on the audio thread
/// assert_eq!(skips.counts()[0].value, 1);
/// ```
pub trait NodeMonitor: Send + Sync + 'static {
    /// The counters now, in a fixed order.
    fn counts(&self) -> Vec<NodeCount>;
}

/// A monitor as the schedule hands it out: shared with the node that counts.
pub type SharedMonitor = Arc<dyn NodeMonitor>;
