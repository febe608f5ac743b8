//! Downbeat: a real-time audio runtime. This crate holds the [`Engine`], the devices that
//! drive it, project files and live control; the `downbeat` command-line tool is the
//! `downbeat-cli` crate.
//!
//! On `wasm32` (the engine in a browser, `downbeat-engine-wasm`) the crate holds the engine,
//! project files, MIDI files and control; the devices, recording and watchers, which need
//! threads, files or the operating system's clocks, are native only, and the engine runs
//! serially and does not measure its load (the target has no clock).
#![warn(missing_docs)]

mod catalog;
mod clock;
pub mod control;
#[cfg(not(target_arch = "wasm32"))]
pub mod device;
pub mod edit;
pub mod engine;
pub mod load;
pub mod midi;
pub mod project;
#[cfg(not(target_arch = "wasm32"))]
pub mod record;
#[cfg(not(target_arch = "wasm32"))]
pub mod revise;
#[cfg(not(target_arch = "wasm32"))]
mod running;
pub mod swap;
#[cfg(not(target_arch = "wasm32"))]
pub mod watch;

/// The graph crate, `downbeat-graph`: [`Graph`](graph::Graph), the
/// [`Schedule`](graph::Schedule) a graph compiles to, the [`Node`](graph::Node) trait, events
/// and musical time. Re-exported, like [`nodes`] and [`file`](mod@file), so that one dependency,
/// `downbeat`, is enough.
pub use downbeat_graph as graph;

/// The built-in node types, `downbeat-nodes`: [`Sine`](nodes::Sine),
/// [`Synth`](nodes::Synth), [`Sampler`](nodes::Sampler) and the rest, with the DSP kernels
/// they share.
pub use downbeat_nodes as nodes;

/// Audio files, `downbeat-file`: decoding, streaming from disk, and the
/// [`Player`](file::Player) node.
pub use downbeat_file as file;

pub use catalog::{all_node_types, lookup_node_type, register_node_type, RegistryError};

pub use engine::{Engine, Stopper};
pub use load::{LoadMeter, LoadSummary};
#[cfg(not(target_arch = "wasm32"))]
pub use running::{start, NoSpareController, Running, SPARE_CAPACITY, SPARE_CONTROLLERS};
