//! [`NodeKey`]: the name of a node that survives a hot swap.
//!
//! Events cannot address nodes by their position in processing order: a new schedule may
//! order its nodes differently, and an event would land on whatever node now has that
//! position. Every schedule compiled in a process draws its nodes' keys from one table,
//! interned from the node's name and its parameter list, so a node kept across a swap (same
//! name, same kind of node) has the same key in the old and the new schedule, and each
//! schedule maps keys to its own positions with a dense table built when it is compiled:
//! one indexed load on the audio thread.
//!
//! The table is process-wide and only grows: every distinct node (name and parameter list)
//! a process compiles takes one entry, and each schedule's map is as long as the largest
//! key among its nodes. Interning locks the table; it happens only when a schedule is
//! compiled, off the audio thread.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, OnceLock};

/// A node's key: the same for every schedule of the process in which a node has the same
/// name and the same parameter and output lists (so the same parameter index means the same
/// parameter, and the node plays notes in both or in neither). Made when a schedule is compiled;
/// [`ParamTable::node_key`](crate::ParamTable::node_key) finds it by name.
///
/// ```
/// use downbeat_graph::{CompileConfig, Graph};
/// use downbeat_nodes::{Gain, Output};
///
/// let build = || {
///     let mut g = Graph::new();
///     let gain = g.add("level", Gain::new(2, 1.0));
///     let out = g.add("out", Output::new(2));
///     g.connect(gain, out);
///     g.set_output(out);
///     g.compile(CompileConfig { sample_rate: 48000, max_block: 64 }).unwrap()
/// };
/// let (a, b) = (build(), build());
/// let key = a.param_table().node_key("level").unwrap();
/// assert_eq!(b.param_table().node_key("level"), Some(key));
/// assert_eq!(key.name(), "level");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeKey(pub(crate) u32);

/// What makes two nodes the same node across schedules.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Identity {
    name: String,
    params: Vec<&'static str>,
    /// Its outputs' names: an output's id is its index after the parameters', so two
    /// nodes with the same parameters but other outputs are not the same node.
    outputs: Vec<&'static str>,
    plays_notes: bool,
}

#[derive(Default)]
struct Table {
    keys: HashMap<Identity, u32>,
    identities: Vec<Identity>,
}

fn table() -> std::sync::MutexGuard<'static, Table> {
    static TABLE: OnceLock<Mutex<Table>> = OnceLock::new();
    // A panic while the table was held leaves it consistent (every write is one insert
    // followed by one push), so a poisoned lock is still usable.
    TABLE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl NodeKey {
    /// The key of the node named `name` with parameters `params` and outputs `outputs`
    /// (their names in order) that does or does not play notes. Locks the process-wide
    /// table: off the audio thread.
    pub(crate) fn intern(
        name: &str,
        params: &[&'static str],
        outputs: &[&'static str],
        plays_notes: bool,
    ) -> Self {
        let identity = Identity {
            name: name.to_string(),
            params: params.to_vec(),
            outputs: outputs.to_vec(),
            plays_notes,
        };
        let mut t = table();
        if let Some(&k) = t.keys.get(&identity) {
            return NodeKey(k);
        }
        let k = u32::try_from(t.identities.len()).expect("fewer than 2^32 distinct nodes");
        t.identities.push(identity.clone());
        t.keys.insert(identity, k);
        NodeKey(k)
    }

    /// The node's name. Locks the process-wide table: off the audio thread.
    pub fn name(self) -> String {
        table().identities[self.0 as usize].name.clone()
    }

    /// The name of parameter `index` of the node, if it has one. Locks the process-wide
    /// table: off the audio thread.
    pub fn param_name(self, index: usize) -> Option<&'static str> {
        table().identities[self.0 as usize]
            .params
            .get(index)
            .copied()
    }

    /// The key's number, dense from 0 in the order nodes were first compiled.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node key {}", self.0)
    }
}

/// Which node an [`Event`](crate::Event) is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// The node with this key, wherever it is in the running schedule.
    Node(NodeKey),
    /// Every node of the running schedule that plays notes, at the moment the event reaches
    /// the schedule (a note "to the whole schedule"; only note events go there).
    Instruments,
    /// The schedule's transport (only [`NodeEvent::Transport`](crate::NodeEvent::Transport)
    /// events go there).
    Transport,
}

/// A schedule's map from keys to its processing positions, built when it is compiled.
#[derive(Debug)]
pub(crate) struct KeyMap {
    /// Per position: the node's key.
    keys: Box<[NodeKey]>,
    /// Per key number: the position, or `ABSENT`.
    slots: Box<[u32]>,
}

const ABSENT: u32 = u32::MAX;

impl KeyMap {
    pub(crate) fn new(keys: Vec<NodeKey>) -> Self {
        let len = keys.iter().map(|k| k.index() + 1).max().unwrap_or(0);
        let mut slots = vec![ABSENT; len];
        for (i, k) in keys.iter().enumerate() {
            slots[k.index()] = i as u32;
        }
        Self {
            keys: keys.into_boxed_slice(),
            slots: slots.into_boxed_slice(),
        }
    }

    /// The position of the node with key `key`, if the schedule has it. Real-time safe.
    pub(crate) fn slot(&self, key: NodeKey) -> Option<usize> {
        match self.slots.get(key.index()) {
            Some(&s) if s != ABSENT => Some(s as usize),
            _ => None,
        }
    }

    /// The key of the node at position `slot`.
    pub(crate) fn key(&self, slot: usize) -> NodeKey {
        self.keys[slot]
    }
}
