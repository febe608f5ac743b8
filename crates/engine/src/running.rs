//! [`start`]: audio that plays until the application stops it.

use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::thread::JoinHandle;

use crate::control::Controller;
use crate::device::{Device, DeviceError, Run, RunLength};
use crate::engine::Stopper;
use crate::Engine;

/// Controllers [`start`] makes and keeps ready for [`Running::controller`]: a controller's
/// queue is registered with the engine before its audio thread starts, never while it
/// runs (that would take memory on the audio thread), so a running handle can only hand
/// out controllers made beforehand.
pub const SPARE_CONTROLLERS: usize = 4;

/// Events each of the [spare controllers](SPARE_CONTROLLERS) holds before the engine takes
/// them (it takes them every block).
pub const SPARE_CAPACITY: usize = 1024;

/// Starts `engine` on `device` and returns at once: the run goes on, on a thread of its
/// own, until [`Running::stop`] (or dropping the handle) ends it at a block boundary, or
/// the device fails. Controllers come from the handle ([`Running::controller`], up to
/// [`SPARE_CONTROLLERS`]) or from the engine before; watchers and the
/// [`LiveEditor`](crate::edit::LiveEditor) from the engine before: they all reach it from
/// any thread while it runs. For a render of a known length, call [`Device::run`] with a
/// [`RunLength`].
///
/// ```
/// use downbeat::device::Virtual;
/// use downbeat::{control::When, project::Project, start, Engine};
///
/// let p = Project::parse(
///     "edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n",
///     "x.toml",
/// ).unwrap();
/// let running = start(Engine::new(p.build().unwrap()), Virtual::new(None));
/// let mut control = running.controller().unwrap();
/// control.set("s", "freq", 330.0).unwrap(); // while it plays
/// std::thread::sleep(std::time::Duration::from_millis(50));
/// let run = running.stop().unwrap();
/// assert!(run.report.frames > 0);
/// ```
pub fn start(mut engine: Engine, mut device: impl Device + Send + 'static) -> Running {
    let stopper = engine.stopper();
    let spares: Vec<Controller> = (0..SPARE_CONTROLLERS.min(engine.controller_room()))
        .map(|_| engine.controller(SPARE_CAPACITY))
        .collect();
    let made = spares.len();
    let thread = std::thread::Builder::new()
        .name("downbeat-run".into())
        .spawn(move || device.run(engine, RunLength::UNTIL_STOPPED))
        .expect("spawn the thread that runs the device");
    Running {
        stopper,
        thread: Some(thread),
        spares: Mutex::new(spares),
        made,
    }
}

/// A run [`start`] began. Dropping it stops the audio (and drops the engine).
#[derive(Debug)]
pub struct Running {
    stopper: Stopper,
    thread: Option<JoinHandle<Result<Run, DeviceError>>>,
    /// The controllers not handed out yet.
    spares: Mutex<Vec<Controller>>,
    made: usize,
}

/// Why [`Running::controller`] has no controller to give.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoSpareController {
    /// How many the handle had (fewer than [`SPARE_CONTROLLERS`] when the engine already
    /// held nearly [`MAX_CONTROLLERS`](crate::control::MAX_CONTROLLERS)).
    pub made: usize,
}

impl fmt::Display for NoSpareController {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the running engine's {} spare controllers are all handed out; make more with \
             Engine::controller before start",
            self.made
        )
    }
}

impl std::error::Error for NoSpareController {}

impl Running {
    /// Ends the run at its next block boundary and hands the engine back with the device's
    /// report (what it played, xruns, recordings).
    ///
    /// # Errors
    /// What the device failed with: it could not start, or it was lost during the run (a
    /// JACK server that quit, a sound card unplugged), when it was not told to fall back.
    pub fn stop(mut self) -> Result<Run, DeviceError> {
        self.stopper.stop();
        self.join()
    }

    /// Whether the run has ended without being stopped: the device failed.
    /// [`stop`](Running::stop) then returns its error at once.
    pub fn has_ended(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// A controller of the running engine, for a thread that comes along while it plays (a
    /// UI opened mid-run). It names nodes as the engine's graph did at [`start`]; after a
    /// live edit, give it the editor's names with
    /// [`set_table`](Controller::set_table)`(live.table())`. Its queue holds
    /// [`SPARE_CAPACITY`] events.
    ///
    /// # Errors
    /// When the handle's [`SPARE_CONTROLLERS`] are all handed out (a dropped one does not
    /// come back).
    pub fn controller(&self) -> Result<Controller, NoSpareController> {
        self.spares
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()
            .ok_or(NoSpareController { made: self.made })
    }

    /// A [`Stopper`] for another thread (a signal handler's, a UI's).
    pub fn stopper(&self) -> Stopper {
        self.stopper.clone()
    }

    fn join(&mut self) -> Result<Run, DeviceError> {
        let thread = self.thread.take().expect("joined once");
        thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.stopper.stop();
            // The run's result goes with the handle; a panic in it is not raised twice
            // while this thread may be unwinding.
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
        }
    }
}
