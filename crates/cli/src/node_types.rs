//! The node types the `downbeat` binary adds to the built-in ones before it reads a project.

use std::sync::OnceLock;

use downbeat::graph::NodeFactory;

use crate::Failure;

/// Registers the node types of the command line that the `downbeat` crate does not build
/// in: the plugin hosts this build has and the collected-heap `echoes`, in the order
/// `downbeat nodes` lists them after the built-in ones: `clap`, `echoes`, `lv2` (with the
/// `lv2` feature), `vst3`. Once per process; later calls return the first call's result, so
/// that the binary and every test of it can call it.
///
/// # Errors
/// [`Failure::Runtime`] when a name was taken already (a program that registered its own
/// `clap` type first, say).
pub fn register_node_types() -> Result<(), Failure> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    fn register(factory: impl NodeFactory) -> Result<(), String> {
        downbeat::register_node_type(factory).map_err(|e| e.to_string())
    }
    DONE.get_or_init(|| {
        #[cfg(feature = "clap")]
        register(downbeat_plugin::clap::ClapFactory)?;
        register(downbeat_gc_nodes::ECHOES)?;
        #[cfg(feature = "lv2")]
        register(downbeat_plugin::lv2::Lv2Factory)?;
        // Last: it came last, and the listing keeps the order the others had.
        #[cfg(feature = "vst3")]
        register(downbeat_plugin::vst3::Vst3Factory)?;
        Ok(())
    })
    .clone()
    .map_err(Failure::Runtime)
}
