//! `downbeat.Project` (a project file, loaded or parsed, with the CLI's errors) and
//! `downbeat.render`.

use std::path::PathBuf;

use numpy::PyArray2;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use downbeat::project::Project as LibProject;

use crate::arrays::audio_out;
use crate::errors::{project_error, AudioFormatError, MidiFileError, RenderError};
use crate::render::{self as rendering, Failure, Job};
use crate::values::apply_overrides;

/// A project: loaded from a file (`Project.load`) or parsed from text (`Project.parse`),
/// checked as `downbeat check` checks it.
#[pyclass(module = "downbeat", frozen)]
#[derive(Clone)]
pub(crate) struct Project {
    inner: LibProject,
}

#[pymethods]
impl Project {
    /// Reads and parses the project file at `path`; relative paths inside it are resolved
    /// against its folder.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        LibProject::load(&path)
            .map(|inner| Self { inner })
            .map_err(|e| project_error(py, &e))
    }

    /// Parses project text; `name` stands for the file in error messages.
    #[staticmethod]
    #[pyo3(signature = (text, name="<string>"))]
    fn parse(py: Python<'_>, text: &str, name: &str) -> PyResult<Self> {
        LibProject::parse(text, name)
            .map(|inner| Self { inner })
            .map_err(|e| project_error(py, &e))
    }

    /// Where it came from.
    #[getter]
    fn file(&self) -> &str {
        &self.inner.file
    }

    /// Sample rate in Hz.
    #[getter]
    fn sample_rate(&self) -> u32 {
        self.inner.sample_rate
    }

    /// Frames per block.
    #[getter]
    fn block_size(&self) -> usize {
        self.inner.block_size
    }

    /// `{node name: node type}`, in file order.
    #[getter]
    fn nodes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for n in &self.inner.nodes {
            d.set_item(&n.name, &n.kind)?;
        }
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "<downbeat.Project {} ({} nodes, {} Hz)>",
            self.inner.file,
            self.inner.nodes.len(),
            self.inner.sample_rate
        )
    }
}

/// `project` as a project: a `Project`, a path, or (a `str` with a line break) its text.
pub(crate) fn project_of(py: Python<'_>, project: &Bound<'_, PyAny>) -> PyResult<LibProject> {
    if let Ok(p) = project.cast::<Project>() {
        return Ok(p.get().inner.clone());
    }
    if let Ok(s) = project.cast::<PyString>() {
        let s: String = s.extract()?;
        if s.contains('\n') {
            return LibProject::parse(&s, "<string>").map_err(|e| project_error(py, &e));
        }
    }
    let path: PathBuf = project.extract().map_err(|_| {
        crate::errors::ProjectError::new_err(
            "project: give a downbeat.Project, the path of a project file, or its text",
        )
    })?;
    LibProject::load(&path).map_err(|e| project_error(py, &e))
}

/// Renders `project` offline and returns its output as a `float32` array shaped
/// `(channels, frames)`: the samples `downbeat run PROJECT --device offline --out FILE`
/// writes, bit for bit.
///
/// `seconds` (default 10, or with `midi` the file's length plus the longest release),
/// `midi` a Standard MIDI file played into every node that plays notes, `params`
/// `{"node.param": value}` set as if the file said so, `threads` the threads processing the
/// graph (default: every core; the output is the same for any number).
#[pyfunction]
#[pyo3(signature = (project, *, seconds=None, midi=None, params=None, threads=None))]
pub(crate) fn render<'py>(
    py: Python<'py>,
    project: &Bound<'py, PyAny>,
    seconds: Option<f64>,
    midi: Option<PathBuf>,
    params: Option<&Bound<'py, PyDict>>,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let mut project = project_of(py, project)?;
    if let Some(params) = params {
        apply_overrides(&mut project, params)?;
    }
    if let Some(s) = seconds {
        if !(s.is_finite() && s > 0.0) {
            return Err(AudioFormatError::new_err(format!(
                "seconds {s}: give a positive number of seconds"
            )));
        }
    }
    if threads == Some(0) {
        return Err(crate::errors::ParameterError::new_err(
            "threads: at least 1",
        ));
    }
    let job = Job {
        project,
        seconds,
        midi,
        threads,
    };
    let rendered = py.detach(|| rendering::render(job));
    match rendered {
        Ok(r) => {
            if !r.notes.is_empty() {
                let warnings = py.import("warnings")?;
                for note in &r.notes {
                    warnings.call_method1(
                        "warn",
                        (
                            note.as_str(),
                            py.get_type::<pyo3::exceptions::PyRuntimeWarning>(),
                        ),
                    )?;
                }
            }
            Ok(audio_out(py, r.samples, r.channels, r.frames))
        }
        Err(Failure::Project(e)) => Err(project_error(py, &e)),
        Err(Failure::Midi(m)) => Err(MidiFileError::new_err(m)),
        Err(Failure::Input(m)) => Err(AudioFormatError::new_err(m)),
        Err(Failure::Runtime(m)) => Err(RenderError::new_err(m)),
    }
}

/// The node types this build knows, `{name: one-line description}`.
#[pyfunction]
pub(crate) fn node_types(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for t in downbeat::all_node_types() {
        let doc = t.doc().lines().next().unwrap_or_default();
        d.set_item(t.name(), doc)?;
    }
    Ok(d)
}
