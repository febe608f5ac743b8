//! The native module of the `downbeat` Python package (`downbeat._native`): projects
//! rendered into numpy arrays, and numpy arrays processed through chains of nodes and
//! plugins. The package's Python half (`python/downbeat/`) re-exports it and adds the
//! batch renders.
//!
//! Every call that computes audio releases the GIL while it does, so other Python threads
//! run meanwhile; it holds no lock the audio computation shares with anything.

mod arrays;
mod chain;
mod errors;
mod exclusive;
mod live;
mod project;
mod render;
mod values;

use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::prelude::*;

/// The module: its functions, classes and exceptions, and the plugin node types
/// (`clap`, `vst3`, `lv2` when built with it) registered as the `downbeat` command does.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    downbeat_cli::register_node_types()
        .map_err(|e| errors::DownbeatError::new_err(e.to_string()))?;
    m.add("DownbeatError", py.get_type::<errors::DownbeatError>())?;
    m.add("ProjectError", py.get_type::<errors::ProjectError>())?;
    m.add("MidiFileError", py.get_type::<errors::MidiFileError>())?;
    m.add("ParameterError", py.get_type::<errors::ParameterError>())?;
    m.add("PluginError", py.get_type::<errors::PluginError>())?;
    m.add(
        "AudioFormatError",
        py.get_type::<errors::AudioFormatError>(),
    )?;
    m.add("RenderError", py.get_type::<errors::RenderError>())?;
    m.add("DeviceError", py.get_type::<errors::DeviceError>())?;
    m.add_class::<live::Live>()?;
    m.add_function(wrap_pyfunction!(live::start, m)?)?;
    m.add_class::<project::Project>()?;
    m.add_class::<chain::Chain>()?;
    m.add_class::<chain::Stage>()?;
    m.add_class::<chain::Mix>()?;
    m.add_function(wrap_pyfunction!(project::render, m)?)?;
    m.add_function(wrap_pyfunction!(chain::node, m)?)?;
    m.add_function(wrap_pyfunction!(chain::plugin, m)?)?;
    m.add_function(wrap_pyfunction!(project::node_types, m)?)?;
    m.add_function(wrap_pyfunction!(install_crash_report, m)?)?;
    Ok(())
}

/// Whether batch workers' announcements are on (see [`install_crash_report`]).
pub(crate) static ANNOUNCE: AtomicBool = AtomicBool::new(false);

/// The prefix of an announcement line on stderr, which the batch's parent reads.
pub(crate) const ANNOUNCEMENT: &str = "downbeat-phase: ";

/// Writes one announcement line with one write, so that it cannot interleave with another
/// thread's; a failed write only loses the announcement.
pub(crate) fn announce(what: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{ANNOUNCEMENT}{what}\n").as_bytes());
}

/// For batch workers (`downbeat._worker`): a fatal signal inside a plugin call prints which
/// plugin crashed, in which phase and with which signal on stderr before the process dies
/// of it (see `downbeat_plugin::crash`), and every plugin phase but `process` is announced
/// on stderr as it starts, as is the start of a render's blocks, so that the parent can
/// name the plugin and phase of a crash that bypasses the handler.
#[pyfunction(name = "_install_crash_report")]
fn install_crash_report() -> PyResult<()> {
    downbeat_plugin::crash::observe(|label, phase| {
        announce(&format!("{} {}", phase.name(), label.as_str()));
    });
    ANNOUNCE.store(true, Ordering::Relaxed);
    downbeat_plugin::crash::install()
        .map_err(|e| errors::RenderError::new_err(format!("cannot install the crash report: {e}")))
}
