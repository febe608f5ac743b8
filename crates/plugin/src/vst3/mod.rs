//! VST3 hosting through the `vst3` crate's bindings: a `.vst3` bundle's audio processor as a
//! graph node.
//!
//! In a project file:
//!
//! ```toml
//! [nodes.comp]
//! type = "vst3"
//! path = "/usr/lib/vst3/ZamComp.vst3"   # the bundle (or the library inside it)
//! id = "ZamComp"                        # the class, by name or 32-digit id; may be left
//!                                       # out when the bundle holds one
//! threshold = -20.0                     # any of the plugin's parameters, by title
//! state = "states/comp.vst3state"       # optional: a state saved by --save-state
//! ```
//!
//! **The plugin.** The bundle's library (`Contents/x86_64-linux/NAME.so`) is loaded with
//! `dlopen` and entered (`ModuleEntry`); the class's component is created and initialized
//! with the host's context (`IHostApplication`), and so is its controller (the component
//! itself when it is one, else the class it names), the two connected through their
//! `IConnectionPoint`s as the SDK says, the controller given an `IComponentHandler` and the
//! component's state. Every audio bus is activated, and so is the first event input bus of an
//! instrument; then `setupProcessing` (32-bit float, the graph's block size and rate) and
//! `setActive`. Dropping the node tears it down in the reverse order.
//!
//! **Channels and ports.** The node's channels are the plugin's audio buses', bus after bus
//! (ZamEQ2: mono in, mono out); each bus is a [port](downbeat_graph::Port), the first (the
//! main bus) `main`, the others by their names
//! ([`port_names`](crate::naming::port_names): ZamComp's "Sidechain Input" is
//! `sidechain_input`, so `"kick -> comp:sidechain_input"`).
//!
//! **Meters.** The controller's read-only parameters (ZamComp's `gain_reduction`) are the
//! node's [outputs](downbeat_graph::Node::outputs), read like parameters by a watcher and
//! following what the plugin reports in its output parameter changes each block.
//!
//! **Parameters** are the controller's others (not hidden or a program change), named by
//! their titles ([`param_name`](crate::naming::param_name)), in plain
//! units (the doc of each says the plugin's unit) with the plugin's ranges and defaults,
//! all live. Each change reaches the plugin in `IParameterChanges` at its sample offset in
//! the block, as the normalized value the plugin's own mapping gives (sampled at 257 points
//! when the node is built; a straight line is used as one). Notes reach an instrument in
//! `IEventList` (note on and off; pitch bend and sustain have no VST3 event).
//!
//! **Transport.** Every `process` call carries the song's transport at the block's first
//! frame in `ProcessContext`: tempo, the position in quarter notes and samples, the bar's
//! start, the time signature, the loop (as the cycle) and whether it plays.
//!
//! **Latency** is the plugin's `getLatencySamples` after activation, which the graph
//! compensates. When the plugin says it changed (`restartComponent(kLatencyChanged)`, from
//! any thread), a thread of the host's deactivates and activates it off the audio thread
//! (the node hands it over at its next block and plays silence meanwhile; offline it waits),
//! reads the latency again and publishes it in the node's
//! [`Revision`](downbeat_graph::Revision): an [`Editor`](downbeat_graph::Editor)'s next
//! commit compensates it (`downbeat run` commits within a few milliseconds). The node is
//! kept. **State**: `state = "FILE"` (relative to the project) loads a state saved by
//! `downbeat run --save-state DIR` (`DIR/<node>.vst3state`: the component's and the
//! controller's streams, see [`STATE_EXTENSION`]) before activation.
//!
//! Only the `vst3` feature is needed (in the default build): no system library is involved.
//!
//! ```no_run
//! use downbeat_graph::{NodeConfig, NodeFactory, ParamValue};
//! use downbeat_plugin::vst3::Vst3Factory;
//!
//! let cfg = NodeConfig { sample_rate: 48000, max_block: 256 };
//! let node = Vst3Factory.create(
//!     vec![("path".into(), ParamValue::Text("/usr/lib/vst3/ZamEQ2.vst3".into()))],
//!     &cfg,
//! )?;
//! assert_eq!((node.input_channels(), node.output_channels()), (1, 1));
//! # Ok::<(), downbeat_graph::ParamError>(())
//! ```

mod com;
mod error;
mod module;
mod node;
mod restart;

use std::path::Path;

use downbeat_graph::{
    Node, NodeConfig, NodeFactory, ParamError, ParamKind, ParamSpec, ParamValue, Unit,
};

pub use error::Vst3Error;
pub use node::{Vst3Info, Vst3Node, EVENT_CAPACITY, OFFLINE_RESTART_WAIT, STATE_EXTENSION};
pub use restart::POLL as RESTART_POLL;

/// The keys every `vst3` node takes besides the plugin's parameters: declared so that the
/// project resolves `state`'s relative path against the project's folder.
static FACTORY_PARAMS: [ParamSpec; 1] = [ParamSpec {
    name: "state",
    doc: "a state file saved by `downbeat run --save-state` (`<node>.vst3state`), loaded into \
          the plugin before activation; parameters given in the project still win",
    kind: ParamKind::Path { default: "" },
    unit: Unit::None,
    live: false,
}];

/// The `vst3` node type: `path = "….vst3"` and `id = "…"` name the plugin, `state = "FILE"`
/// a saved state to start from, every other key one of its parameters.
#[derive(Clone, Copy, Debug, Default)]
pub struct Vst3Factory;

impl NodeFactory for Vst3Factory {
    fn name(&self) -> &str {
        "vst3"
    }

    fn doc(&self) -> &str {
        "a VST3 plugin (a .vst3 bundle, loaded with dlopen); channels are the plugin's audio buses"
    }

    fn params(&self) -> &[ParamSpec] {
        &FACTORY_PARAMS
    }

    fn open_params(&self) -> Option<&str> {
        Some(
            "`path = \"….vst3\"` names the bundle (required) and `id = \"…\"` the audio \
             processor in it, by name or 32-digit id (needed when it holds several); every \
             automatable plugin parameter is a live parameter named by its title in lower case \
             with `_` between words, in the plugin's plain units, range and default",
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
                "path" => path = Some(crate::keys::text(&name, value, "the .vst3 bundle's path")?),
                "id" => {
                    id = Some(crate::keys::text(
                        &name,
                        value,
                        "the plugin's class name or id",
                    )?)
                }
                "state" => state = Some(crate::keys::text(&name, value, "the state file's path")?),
                _ => values.push((name, value)),
            }
        }
        let Some(path) = path else {
            return Err(ParamError::Invalid {
                name: "path".into(),
                message: "a vst3 node needs `path = \"….vst3\"` naming the plugin bundle".into(),
            });
        };
        let mut node = Vst3Node::load(
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
