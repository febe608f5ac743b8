//! Downbeat's audio graph: nodes, edges, compilation to an immutable [`Schedule`], and the
//! executors that run it. The built-in node types live in `downbeat-nodes`.
//!
//! A [`Graph`] is edited freely off the audio thread. [`Graph::compile`] checks it (cycles,
//! dangling edges, channel mismatches, a missing output) and turns it into a [`Schedule`]:
//! nodes in topological order, every buffer allocated, the summing of multiple inputs
//! planned. [`Schedule::process`] then runs one block without allocating.
#![warn(missing_docs)]

mod buffer;
mod compile;
pub mod denormal;
mod edge_gain;
mod edit;
mod error;
mod event;
mod factory;
mod graph;
mod key;
pub mod math;
mod monitor;
mod node;
mod note;
mod parallel;
mod param;
mod profile;
mod revision;
mod schedule;
mod smooth;
mod song_timeline;
mod state;
mod sum_group;
pub mod time;
mod waiting;

pub use buffer::{prefaulted, AudioMut, AudioRef};
pub use compile::CompileConfig;
pub use edge_gain::{EdgeGain, EDGE_GAIN_FLOOR_DB};
pub use edit::{EditError, Editor};
pub use error::GraphError;
pub use event::{
    Applied, Change, ControlError, Event, EventStats, NodeEvent, OnBeat, ParamId, ParamTable, Ramp,
};
pub use factory::{BuildFn, NodeConfig, NodeFactory, NodeType};
pub use graph::{Edge, Endpoint, Graph, NodeId};
pub use key::{NodeKey, Target};
pub use monitor::{NodeCount, NodeMonitor, SharedMonitor, MEMORY_BYTES};
pub use node::{Node, Port, ProcessContext};
pub use note::{note_to_hz, NoteError, NoteEvent, MAX_CHANNEL, MAX_NOTE};
pub use param::{
    curve_accepts, float_param_accepts, ParamError, ParamKind, ParamSpec, ParamValue, Params, Unit,
};
pub use profile::NodeSample;
pub use revision::{Revision, SharedRevision};
pub use schedule::{
    NodeLevel, NodeRunner, Schedule, CONTROL_FRAMES, DEFAULT_EVENT_CAPACITY, DEFAULT_SMOOTHING,
};
pub use smooth::{ParamCurve, Shape};
pub use state::{NodeState, StateError};
pub use sum_group::{sum_groups, SUM_GROUP};
