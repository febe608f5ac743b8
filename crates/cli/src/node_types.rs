//! The node types the `downbeat` binary adds to the built-in ones before it reads a project.

use std::sync::OnceLock;

use crate::Failure;

/// Registers the node types of the command line that the `downbeat` crate does not build
/// in: the plugin hosts this build has (`clap`, and `lv2` with the `lv2` feature) and the
/// collected-heap `echoes`, in that order (the order `downbeat nodes` lists them in, after
/// the built-in ones). Once per process; later calls return the first call's result, so
/// that the binary and every test of it can call it.
///
/// # Errors
/// [`Failure::Runtime`] when a name was taken already (a program that registered its own
/// `clap` type first, say).
pub fn register_node_types() -> Result<(), Failure> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        #[cfg(feature = "clap")]
        downbeat::register_node_type(downbeat_plugin::clap::ClapFactory)
            .map_err(|e| e.to_string())?;
        downbeat::register_node_type(downbeat_gc_nodes::ECHOES).map_err(|e| e.to_string())?;
        #[cfg(feature = "lv2")]
        downbeat::register_node_type(downbeat_plugin::lv2::Lv2Factory)
            .map_err(|e| e.to_string())?;
        Ok(())
    })
    .clone()
    .map_err(Failure::Runtime)
}
