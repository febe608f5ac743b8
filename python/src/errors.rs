//! The exceptions the package raises: one base, [`DownbeatError`], and a subclass per kind of
//! failure, each made from the library's typed error with the library's message.

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::{create_exception, PyErr};

use downbeat::project::ProjectError as LibProjectError;

create_exception!(
    downbeat,
    DownbeatError,
    PyException,
    "Base of every error Downbeat raises."
);
create_exception!(
    downbeat,
    ProjectError,
    DownbeatError,
    "A project that cannot be read, parsed or built. `file`, `line` and `column` say where."
);
create_exception!(
    downbeat,
    MidiFileError,
    DownbeatError,
    "A MIDI file that cannot be read or played: the message names the file and the byte."
);
create_exception!(
    downbeat,
    ParameterError,
    DownbeatError,
    "An unknown node or parameter, or a value a parameter does not take."
);
create_exception!(
    downbeat,
    PluginError,
    DownbeatError,
    "A plugin that is missing, is no plugin, or refuses to load."
);
create_exception!(
    downbeat,
    AudioFormatError,
    DownbeatError,
    "Audio handed over in a form Downbeat does not take: dtype, shape, layout, sample rate, length."
);
create_exception!(
    downbeat,
    DeviceError,
    DownbeatError,
    "A device that cannot be opened (not built in, no server, no sound card) or was lost."
);
create_exception!(
    downbeat,
    RenderError,
    DownbeatError,
    "A render that failed while it ran (a thread that could not start, a node that failed)."
);

/// A [`ProjectError`] carrying where the library's error points.
pub(crate) fn project_error(py: Python<'_>, e: &LibProjectError) -> PyErr {
    let err = ProjectError::new_err(e.to_string());
    let value = err.value(py);
    // Setting attributes on a fresh exception object cannot fail but for memory.
    let _ = value.setattr("file", e.file.clone());
    let _ = value.setattr("line", e.line);
    let _ = value.setattr("column", e.column);
    err
}
