//! [`start`]: audio that plays until the application stops it.

use std::thread::JoinHandle;

use crate::device::{Device, DeviceError, Run, RunLength};
use crate::engine::Stopper;
use crate::Engine;

/// Starts `engine` on `device` and returns at once: the run goes on, on a thread of its
/// own, until [`Running::stop`] (or dropping the handle) ends it at a block boundary, or
/// the device fails. Make the controllers, watchers and [`LiveEditor`](crate::edit::LiveEditor)
/// the application needs from the engine before: they reach it from any thread while it
/// runs. For a render of a known length, call [`Device::run`] with a [`RunLength`].
///
/// ```
/// use downbeat::device::Virtual;
/// use downbeat::{control::When, project::Project, start, Engine};
///
/// let p = Project::parse(
///     "edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n",
///     "x.toml",
/// ).unwrap();
/// let mut engine = Engine::new(p.build().unwrap());
/// let mut control = engine.controller(64);
/// let running = start(engine, Virtual::new(None));
/// control.set("s", "freq", 330.0).unwrap(); // while it plays
/// std::thread::sleep(std::time::Duration::from_millis(50));
/// let run = running.stop().unwrap();
/// assert!(run.report.frames > 0);
/// ```
pub fn start(engine: Engine, mut device: impl Device + Send + 'static) -> Running {
    let stopper = engine.stopper();
    let thread = std::thread::Builder::new()
        .name("downbeat-run".into())
        .spawn(move || device.run(engine, RunLength::UNTIL_STOPPED))
        .expect("spawn the thread that runs the device");
    Running {
        stopper,
        thread: Some(thread),
    }
}

/// A run [`start`] began. Dropping it stops the audio (and drops the engine).
#[derive(Debug)]
pub struct Running {
    stopper: Stopper,
    thread: Option<JoinHandle<Result<Run, DeviceError>>>,
}

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
