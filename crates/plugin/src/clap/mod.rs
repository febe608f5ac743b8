//! CLAP hosting through `clack-host`: a `.clap` file's plugin as a graph node.
//!
//! In a project file:
//!
//! ```toml
//! [nodes.verb]
//! type = "clap"
//! path = "plugins/reverb.clap"   # relative to the working directory
//! id = "com.example.reverb"      # may be left out when the file holds one plugin
//! mix = 0.3                      # any of the plugin's parameters, by name
//! state = "states/verb.clapstate" # optional: a saved state, relative to the project
//! ```
//!
//! The node's channels are the plugin's audio ports'; its parameters are the plugin's, named
//! by [`param_name`] (lower case, `_` between words), with the plugin's ranges and defaults,
//! and all of them live: controllers and automation move them, and each change reaches the
//! plugin in CLAP's input event list at its sample offset in the block (the schedule does not
//! cut a plugin's block, see [`Node::takes_param_offsets`]). An instrument (a plugin with a
//! note input port) gets the node's notes as CLAP note events, pitch bend and sustain as MIDI
//! messages. The plugin's reported latency is the node's [`Node::latency`], which the graph
//! compensates.
//!
//! **Audio ports.** Every audio port of the plugin's `clap.audio-ports` is one of the node's
//! [ports](downbeat_graph::Port), its channels the node's, port after port on each side: the
//! main port (the one flagged main, else the first) is `main`, which an edge naming no port
//! reaches; the others are named by [`port_names`] from the plugin's names for them (lower
//! case, `_` between words: a port called "Sidechain" is `sidechain`, so
//! `"kick -> comp:sidechain"`). An input port no edge reaches gets silence.
//!
//! **Transport.** Every `process` call carries the song's transport at the block's first
//! frame in `clap_process.transport` ([`transport_event`]): tempo and its change per sample
//! through the block, the position in beats and seconds, the bar, the time signature, the
//! loop, and whether it plays. It is there when the transport is stopped too.
//!
//! **Sleep.** A plugin whose `process` returns `CLAP_PROCESS_SLEEP` (or
//! `CLAP_PROCESS_CONTINUE_IF_NOT_QUIET` with quiet output) is not called again, and the node
//! outputs silence, until a block brings an event (a parameter change, a note), input that
//! is not silent, or the plugin's `request_process` (from any thread):
//! [`ClapNode::blocks_slept`] counts the blocks it slept through.
//!
//! **The main thread.** Every instance lives on one thread of the process, the CLAP main
//! thread, which makes all of its main-thread calls (load, create, activate, state,
//! deactivate, destroy: the node sends them there and waits) and serves the plugin's
//! requests every [`MAIN_THREAD_POLL`] while it runs, on every device, offline included:
//! `request_callback` gets `on_main_thread`; `request_restart` gets the plugin
//! deactivated and activated again, the node kept. For a restart the node hands its
//! processor over at its next block and plays silence until it is back (offline, it waits
//! for it, at most [`OFFLINE_RESTART_WAIT`]); the latency and parameters the plugin reports
//! after the new activation reach the graph through the node's
//! [`Revision`](downbeat_graph::Revision) at the next commit of an
//! [`Editor`](downbeat_graph::Editor) (`downbeat run` commits within a few milliseconds):
//! the new latency is compensated and a new parameter can be set by name
//! ([`ClapNode::restarts`], [`ClapNode::main_thread_callbacks`]).
//!
//! **Host extensions** offered to the plugin (details in `host.rs`):
//!
//! * `clap.log`: printed to stderr as `[downbeat] clap <plugin name>: <SEVERITY>: <message>`.
//!   A message logged from the audio thread is copied (up to 240 bytes) into one of 64 fixed
//!   slots of atomics, without allocation or system call, and printed by the next drain:
//!   every period while a [`LogDrain`] runs (`downbeat run` runs one, every 10 ms), else
//!   when the main thread looks ([`ClapNode::main_thread_tick`], [`Node::save_state`], the
//!   node's drop); when all 64 are waiting, further messages are counted
//!   ([`ClapNode::log_dropped`]) and lost, and the next drain says how many after the
//!   messages it prints.
//! * `clap.thread-check`: the main thread is the CLAP main thread; the audio thread
//!   is whichever thread is inside the node's `process` (a thread-local raised around the
//!   call, so every pool worker processing a plugin is one).
//! * `clap.latency`: `changed()` is noted; the main thread reads the plugin's latency after
//!   every activation (CLAP lets a plugin change it only in `activate`, so a running plugin
//!   asks for a restart first) and in [`ClapNode::main_thread_tick`]. The graph plans its
//!   delay compensation when it compiles: from [`Node::latency`] at first, from the node's
//!   revision after a restart.
//! * `clap.params`: `rescan` with values re-reads them ([`ClapNode::main_thread_tick`]);
//!   `clear` has nothing to clear; `request_flush` (an atomic store, safe from any thread) is
//!   served by a main-thread `flush` while the plugin is not yet active, and otherwise by the
//!   next `process`, which it wakes a sleeping plugin for.
//! * `clap.state`: `mark_dirty` is noted ([`ClapNode::state_dirty`]).
//! * `clap.audio-ports`, `clap.note-ports`: no rescan flag is supported (the graph's channels
//!   are fixed when it compiles); a rescan is logged and ignored. Note dialects: CLAP and
//!   MIDI.
//!
//! **State.** `state = "FILE"` (relative to the project file's folder) loads a state saved
//! by `downbeat run --save-state DIR` (`DIR/<node>.clapstate`, the plugin's own `clap.state`
//! stream, see [`STATE_EXTENSION`]) into the plugin before activation. The node then reads
//! its parameter values back from the plugin, so it starts from the state's values, not the
//! declared defaults; a parameter also given in the project wins over the state's value (it
//! reaches the plugin at frame 0 of the first block). A plugin without `clap.state` refuses
//! both loading and saving with an error naming it. (zam-plugins' CLAP builds have no
//! `clap.state`.)
//!
//! **Presets.** `preset = "NAME"` is refused for CLAP: no CLAP plugin packaged in Debian
//! (zam-plugins is the only package with CLAP plugins we found) offers the `preset-load`
//! extension, so there is nothing to test a loader against; use a saved state instead.
//!
//! Only the `clap` feature is needed: CLAP plugins are loaded with `dlopen`, no system
//! library is involved.
//!
//! ```no_run
//! use downbeat_graph::{NodeConfig, NodeFactory, ParamValue};
//! use downbeat_plugin::clap::ClapFactory;
//!
//! // A project file names it once the program registered it with
//! // `downbeat::register_node_type(ClapFactory)`, as the command line does at start.
//! let cfg = NodeConfig { sample_rate: 48000, max_block: 256 };
//! let node = ClapFactory.create(
//!     vec![
//!         ("path".into(), ParamValue::Text("gain.clap".into())),
//!         ("gain".into(), ParamValue::Float(0.5)),
//!     ],
//!     &cfg,
//! )?;
//! assert_eq!(node.params()[0].name, "gain");
//! # Ok::<(), downbeat_graph::ParamError>(())
//! ```
//!
//! [`Node::takes_param_offsets`]: downbeat_graph::Node::takes_param_offsets
//! [`Node::latency`]: downbeat_graph::Node::latency
//! [`Node::save_state`]: downbeat_graph::Node::save_state

mod error;
mod handover;
mod host;
mod log;
mod log_drain;
mod main_thread;
mod node;
mod thread;

/// The atomics and cell `handover` uses: std's here, loom's in its model
/// (`tests/loom_handover.rs`).
mod sync {
    pub(crate) use std::sync::atomic::{AtomicU8, Ordering};
    pub(crate) use std::sync::Arc;

    /// `std`'s cell with loom's way in, so that one text serves both.
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub(crate) fn new(v: T) -> Self {
            Self(std::cell::UnsafeCell::new(v))
        }

        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

use std::path::Path;

use downbeat_graph::{
    Node, NodeConfig, NodeFactory, ParamError, ParamKind, ParamSpec, ParamValue, Unit,
};

pub use crate::naming::{param_name, port_names};
pub use error::ClapError;
pub use log_drain::LogDrain;
pub use main_thread::POLL as MAIN_THREAD_POLL;
#[doc(hidden)]
pub use node::instances_loaded;
pub use node::{
    transport_event, ClapInfo, ClapNode, EVENT_CAPACITY, OFFLINE_RESTART_WAIT, STATE_EXTENSION,
};

/// The keys every `clap` node takes besides the plugin's parameters: declared so that the
/// project resolves `state`'s relative path against the project's folder.
static FACTORY_PARAMS: [ParamSpec; 1] = [ParamSpec {
    name: "state",
    doc: "a state file saved by `downbeat run --save-state` (`<node>.clapstate`), loaded into \
          the plugin before activation; parameters given in the project still win",
    kind: ParamKind::Path { default: "" },
    unit: Unit::None,
    live: false,
}];

/// The `clap` node type: `path = "….clap"` and `id = "…"` name the plugin, `state = "FILE"`
/// a saved state to start from, every other key one of its parameters.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClapFactory;

impl NodeFactory for ClapFactory {
    fn name(&self) -> &str {
        "clap"
    }

    fn doc(&self) -> &str {
        "a CLAP plugin (a .clap file, loaded with dlopen); channels are the plugin's audio ports"
    }

    fn params(&self) -> &[ParamSpec] {
        &FACTORY_PARAMS
    }

    fn open_params(&self) -> Option<&str> {
        Some(
            "`path = \"….clap\"` names the file (required) and `id = \"…\"` the plugin in it \
             (needed when the file holds several); `preset` is refused (no CLAP preset \
             loading: use `state`); every plugin parameter is a live parameter \
             named by its name in lower case with `_` between words, with the plugin's range \
             and default (`downbeat audit FILE` lists them)",
        )
    }

    fn create(
        &self,
        params: Vec<(String, ParamValue)>,
        cfg: &NodeConfig,
    ) -> Result<Box<dyn Node>, ParamError> {
        let mut path = None;
        let mut id = None;
        let mut state = None;
        let mut values = Vec::new();
        for (name, value) in params {
            match name.as_str() {
                "path" => path = Some(crate::keys::text(&name, value, "the .clap file's path")?),
                "id" => id = Some(crate::keys::text(&name, value, "the plugin's id")?),
                "state" => state = Some(crate::keys::text(&name, value, "the state file's path")?),
                "preset" => {
                    return Err(ParamError::Invalid {
                        name,
                        message: "CLAP nodes take no `preset`: Downbeat does not load CLAP \
                                  preset files (no CLAP plugin packaged in Debian offers the \
                                  preset-load extension); save a state with `downbeat run \
                                  --save-state DIR` and give it as `state = \"FILE\"`"
                            .into(),
                    })
                }
                _ => values.push((name, value)),
            }
        }
        let Some(path) = path else {
            return Err(ParamError::Invalid {
                name: "path".into(),
                message: "a clap node needs `path = \"….clap\"` naming the plugin file".into(),
            });
        };
        let mut node = ClapNode::load_with_state(
            Path::new(&path),
            id.as_deref(),
            cfg.sample_rate,
            cfg.max_block,
            state.as_deref().map(Path::new),
        )
        .map_err(|e| ParamError::Invalid {
            name: e.key().into(),
            message: e.to_string(),
        })?;
        crate::keys::set_params(&mut node, values)?;
        Ok(Box::new(node))
    }
}
