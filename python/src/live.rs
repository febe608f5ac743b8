//! `downbeat.start`: a project playing on a device while Python controls it. Every control
//! goes through the engine's wait-free controller queue, and every reading comes from a
//! watcher the audio thread publishes to: nothing here takes a lock the audio thread takes.

use std::path::PathBuf;
use std::sync::mpsc;
use std::thread::JoinHandle;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use downbeat::control::{Controller, When};
use downbeat::device::{self, DeviceKind, DeviceSpec, Run, RunLength};
use downbeat::graph::Shape;
use downbeat::watch::Watcher;
use downbeat::{Engine, Stopper};

use crate::errors::{project_error, DeviceError, ParameterError, RenderError};
use crate::exclusive::Exclusive;
use crate::project::project_of;
use crate::values::apply_overrides;

/// Events the controller's queue holds before the audio thread takes them (it takes them
/// every block): far more than a Python loop sends in one.
const QUEUE: usize = 4096;

/// What a running project holds.
struct Inner {
    /// Ends the run at its next block boundary.
    stopper: Stopper,
    /// The thread the device runs on (opened there: a sound card's streams may not move
    /// between threads), which hands back what the run came to.
    thread: JoinHandle<Result<Run, String>>,
    controller: Controller,
    watcher: Watcher,
    device: &'static str,
    sample_rate: u32,
}

/// A project playing on a device (see `downbeat.start`). Use it in a `with` block, or call
/// `stop()`.
#[pyclass(module = "downbeat")]
pub(crate) struct Live {
    inner: Exclusive<Option<Inner>>,
}

fn device_kind(name: &str) -> PyResult<DeviceKind> {
    Ok(match name {
        "virtual" => DeviceKind::Virtual,
        "system" => DeviceKind::System,
        "jack" => DeviceKind::Jack,
        "offline" => {
            return Err(ParameterError::new_err(
                "device \"offline\": a live run plays in real time; render offline with \
                 downbeat.render",
            ))
        }
        other => {
            return Err(ParameterError::new_err(format!(
                "device {other:?}: give \"virtual\" (real time, plays nowhere), \"system\" (the \
                 sound card) or \"jack\""
            )))
        }
    })
}

/// Starts `project` on `device` and returns at once; see the package's docs.
#[pyfunction]
#[pyo3(signature = (project, device="virtual", *, params=None, out=None, threads=None))]
pub(crate) fn start(
    py: Python<'_>,
    project: &Bound<'_, PyAny>,
    device: &str,
    params: Option<&Bound<'_, PyDict>>,
    out: Option<PathBuf>,
    threads: Option<usize>,
) -> PyResult<Live> {
    let kind = device_kind(device)?;
    let mut project = project_of(py, project)?;
    if let Some(params) = params {
        apply_overrides(&mut project, params)?;
    }
    if let Some(n) = project.nodes.iter().find(|n| n.kind == "input") {
        return Err(ParameterError::new_err(format!(
            "`{}` reads an input (node `{}`), which downbeat.start does not feed yet: run it \
             with the `downbeat` command, or leave the `input` node out",
            project.file, n.name
        )));
    }
    if threads == Some(0) {
        return Err(ParameterError::new_err("threads: at least 1"));
    }
    let mut spec = DeviceSpec::new(kind);
    spec.record_to.out = out;
    spec.client_name = "downbeat-python".into();
    let rate = spec
        .sample_rate(project.sample_rate, false)
        .map_err(|e| DeviceError::new_err(e.to_string()))?;
    project.sample_rate = rate;
    let schedule = project.build().map_err(|e| project_error(py, &e))?;
    let mut engine = Engine::new(schedule);
    let watcher = engine.watch();
    let controller = engine.controller(QUEUE);
    let threads = threads.unwrap_or_else(downbeat_rt::pool::available_cores);
    let _ = engine.set_threads(threads);
    let stopper = engine.stopper();
    let (opened_tx, opened) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("downbeat-live".into())
        .spawn(move || {
            let mut device = match device::open(&spec) {
                Ok(d) => d,
                Err(e) => {
                    let _ = opened_tx.send(Err(e.to_string()));
                    return Err(e.to_string());
                }
            };
            let _ = opened_tx.send(Ok(device.name()));
            device
                .run(engine, RunLength { frames: u64::MAX })
                .map_err(|e| e.to_string())
        })
        .map_err(|e| RenderError::new_err(format!("cannot start the run's thread: {e}")))?;
    let name = py
        .detach(move || opened.recv())
        .map_err(|_| DeviceError::new_err("the device's thread ended before opening it"))?
        .map_err(DeviceError::new_err)?;
    Ok(Live {
        inner: Exclusive(Some(Inner {
            stopper,
            thread,
            controller,
            watcher,
            device: name,
            sample_rate: rate,
        })),
    })
}

impl Live {
    fn inner(&mut self) -> PyResult<&mut Inner> {
        self.inner
            .get_mut()
            .as_mut()
            .ok_or_else(|| RenderError::new_err("the run has stopped"))
    }
}

/// `"node.param"` as its two names.
fn split(key: &str) -> PyResult<(&str, &str)> {
    key.split_once('.')
        .ok_or_else(|| ParameterError::new_err(format!("`{key}` is not \"node.param\"")))
}

fn control_error(e: downbeat::graph::ControlError) -> PyErr {
    ParameterError::new_err(e.message())
}

#[pymethods]
impl Live {
    /// Moves `key` (`"node.param"`) to `value` at the next block, smoothed.
    fn set(&mut self, key: &str, value: f32) -> PyResult<()> {
        let (node, param) = split(key)?;
        self.inner()?
            .controller
            .set(node, param, value)
            .map_err(control_error)
    }

    /// Ramps `key` to `target` over `seconds`, in a straight line (`shape="linear"`) or a
    /// constant ratio per frame (`"exponential"`).
    #[pyo3(signature = (key, target, seconds, shape="linear"))]
    fn ramp(&mut self, key: &str, target: f32, seconds: f64, shape: &str) -> PyResult<()> {
        let (node, param) = split(key)?;
        let shape = match shape {
            "linear" => Shape::Linear,
            "exponential" => Shape::Exponential,
            other => {
                return Err(ParameterError::new_err(format!(
                    "shape {other:?}: give \"linear\" or \"exponential\""
                )))
            }
        };
        self.inner()?
            .controller
            .ramp(When::Now, node, param, shape, target, seconds)
            .map_err(control_error)
    }

    /// Starts note `note` (0 to 127, fractions are microtones) with `velocity` (0 to 1) on
    /// MIDI channel `channel` in every node that plays notes.
    #[pyo3(signature = (note, velocity=0.8, channel=0))]
    fn note_on(&mut self, note: f32, velocity: f32, channel: u8) -> PyResult<()> {
        self.inner()?
            .controller
            .note_on(When::Now, channel, note, velocity)
            .map_err(control_error)
    }

    /// Releases note `note` on `channel`.
    #[pyo3(signature = (note, channel=0))]
    fn note_off(&mut self, note: f32, channel: u8) -> PyResult<()> {
        self.inner()?
            .controller
            .note_off(When::Now, channel, note)
            .map_err(control_error)
    }

    /// What the audio thread published last, after waiting up to `timeout` seconds for a
    /// new delivery: `{"frame", "values": {"node.param": value}, "levels": {node: (peak
    /// dBFS, RMS dBFS)}, "peak", "load"}`.
    #[pyo3(signature = (timeout=0.1))]
    fn watch<'py>(&mut self, py: Python<'py>, timeout: f64) -> PyResult<Bound<'py, PyDict>> {
        let inner = self.inner()?;
        let wait = std::time::Duration::from_secs_f64(timeout.clamp(0.0, 60.0));
        let watcher = &mut inner.watcher;
        py.detach(|| watcher.wait(wait));
        let w = &inner.watcher;
        let d = PyDict::new(py);
        d.set_item("frame", w.frame())?;
        let values = PyDict::new(py);
        for r in w.values() {
            values.set_item(format!("{}.{}", r.node, r.param), r.value)?;
        }
        d.set_item("values", values)?;
        let levels = PyDict::new(py);
        for (node, l) in w.levels() {
            levels.set_item(node, (l.peak_dbfs(), l.rms_dbfs()))?;
        }
        d.set_item("levels", levels)?;
        let out = w.output();
        d.set_item("peak", out.peak)?;
        d.set_item("load", out.load)?;
        Ok(d)
    }

    /// The device playing: `"virtual"`, `"system"` or `"jack"`.
    #[getter]
    fn device(&mut self) -> PyResult<&'static str> {
        Ok(self.inner()?.device)
    }

    /// The sample rate it plays at (the device's, when it has one).
    #[getter]
    fn sample_rate(&mut self) -> PyResult<u32> {
        Ok(self.inner()?.sample_rate)
    }

    /// Stops at the next block boundary and returns what the device reports: `{"frames",
    /// "xruns", "late_wakeups"}`. Stopping twice is an error.
    fn stop<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let inner = self
            .inner
            .get_mut()
            .take()
            .ok_or_else(|| RenderError::new_err("the run has stopped already"))?;
        let Inner {
            stopper, thread, ..
        } = inner;
        stopper.stop();
        let run = py
            .detach(|| thread.join())
            .map_err(|_| RenderError::new_err("the run's thread panicked"))?
            .map_err(DeviceError::new_err)?;
        let d = PyDict::new(py);
        d.set_item("frames", run.report.frames)?;
        d.set_item("xruns", run.report.xruns)?;
        d.set_item("late_wakeups", run.report.late_wakeups)?;
        Ok(d)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(
        &mut self,
        py: Python<'_>,
        _args: &Bound<'_, pyo3::types::PyTuple>,
    ) -> PyResult<bool> {
        if self.inner.get_mut().is_some() {
            self.stop(py)?;
        }
        Ok(false)
    }
}
