//! The JACK device: Downbeat as a client of a JACK server (or PipeWire's JACK interface).
//!
//! Built with the `jack` cargo feature (needs libjack to link: Debian `libjack-jackd2-dev`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jack::{AudioOut, Client, ClientOptions, Control, Frames, Port, ProcessScope};

use super::render::{PlanarBuffers, Recording, Renderer};
use super::{Device, DeviceError, DeviceReport, RunLength};
use crate::Engine;

/// Runs the engine in a JACK server's real-time process callback.
///
/// Registers one output port per channel (`out_1`, `out_2`, ...), optionally connects them,
/// follows the server's buffer size, counts xruns, and ends cleanly if the server goes away.
#[derive(Debug)]
pub struct Jack {
    name: String,
    xruns: u64,
    connect: Option<String>,
    out: Option<PathBuf>,
}

impl Jack {
    /// A JACK client called `name`; connects its outputs to the ports whose names start with
    /// `connect` (e.g. `system:playback`), in order; records to `out` when given.
    pub fn new(name: &str, connect: Option<String>, out: Option<PathBuf>) -> Self {
        Self {
            name: name.to_string(),
            xruns: 0,
            connect,
            out,
        }
    }

    /// The sample rate of the running server, so a project can be built to match it.
    ///
    /// # Errors
    /// [`DeviceError::Unavailable`] when no server runs.
    pub fn server_sample_rate(name: &str) -> Result<u32, DeviceError> {
        let (client, _) = open(&format!("{name}-probe"))?;
        Ok(client.sample_rate())
    }
}

fn open(name: &str) -> Result<(Client, jack::ClientStatus), DeviceError> {
    Client::new(name, ClientOptions::NO_START_SERVER).map_err(|e| {
        DeviceError::Unavailable(format!(
            "cannot connect to a JACK server ({e}); start one first, for example \
             `jackd -d alsa` on a sound card, `jackd -d dummy -r 48000 -p 256` without one, \
             or run under PipeWire with `pw-jack downbeat ...`"
        ))
    })
}

/// Longest shutdown reason kept from JACK, in bytes.
const REASON_BYTES: usize = 256;

/// What JACK's threads tell the control thread: counters and flags only, so the callbacks
/// never allocate; the control thread turns them into a message after the run.
struct Status {
    xruns: AtomicU64,
    frames: AtomicU64,
    stopped: AtomicBool,
    /// The rate the server switched to, 0 when it did not.
    new_rate: AtomicU32,
    /// JACK's shutdown reason, copied byte by byte into room allocated up front.
    reason: [AtomicU8; REASON_BYTES],
    reason_len: AtomicUsize,
}

impl Status {
    fn new() -> Self {
        Self {
            xruns: AtomicU64::new(0),
            frames: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            new_rate: AtomicU32::new(0),
            reason: std::array::from_fn(|_| AtomicU8::new(0)),
            reason_len: AtomicUsize::new(0),
        }
    }

    /// Why the run stopped, formatted on the control thread.
    fn message(&self) -> String {
        let rate = self.new_rate.load(Ordering::Acquire);
        if rate != 0 {
            return format!("the JACK server changed its sample rate to {rate} Hz during the run");
        }
        let len = self.reason_len.load(Ordering::Acquire);
        let bytes: Vec<u8> = self.reason[..len]
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        let reason = String::from_utf8_lossy(&bytes);
        let reason = reason.trim();
        if reason.is_empty() {
            "the JACK server stopped during the run".to_string()
        } else {
            format!("the JACK server stopped during the run: {reason}")
        }
    }
}

/// Server events, and the sample rate the engine was built for.
struct Notifications(Arc<Status>, u32);

impl jack::NotificationHandler for Notifications {
    unsafe fn shutdown(&mut self, _status: jack::ClientStatus, reason: &str) {
        // A byte-wise copy (cut at a character boundary) into preallocated atomics: no
        // allocation on JACK's thread.
        let mut len = reason.len().min(REASON_BYTES);
        while !reason.is_char_boundary(len) {
            len -= 1;
        }
        for (slot, b) in self.0.reason.iter().zip(&reason.as_bytes()[..len]) {
            slot.store(*b, Ordering::Relaxed);
        }
        self.0.reason_len.store(len, Ordering::Release);
        self.0.stopped.store(true, Ordering::Release);
    }

    fn xrun(&mut self, _: &Client) -> Control {
        self.0.xruns.fetch_add(1, Ordering::Relaxed);
        Control::Continue
    }

    fn sample_rate(&mut self, _: &Client, rate: Frames) -> Control {
        // JACK also calls this once at activation with the current rate.
        if rate == self.1 {
            return Control::Continue;
        }
        self.0.new_rate.store(rate.max(1), Ordering::Release);
        self.0.stopped.store(true, Ordering::Release);
        Control::Quit
    }
}

/// The engine, reached from JACK's thread for the duration of [`Jack::run`] only.
struct EnginePtr(*mut Engine);

// SAFETY: `run` holds `&mut Engine` from before activation until after deactivation and
// does not touch the engine in between, so the process callback has exclusive use of it.
unsafe impl Send for EnginePtr {}

struct Process {
    engine: EnginePtr,
    renderer: Renderer,
    ports: Vec<Port<AudioOut>>,
    status: Arc<Status>,
}

/// The output ports as [`PlanarBuffers`] for one process cycle.
struct Ports<'a> {
    ports: &'a mut [Port<AudioOut>],
    scope: &'a ProcessScope,
}

impl PlanarBuffers for Ports<'_> {
    fn channel_mut(&mut self, c: usize) -> &mut [f32] {
        self.ports[c].as_mut_slice(self.scope)
    }
}

impl jack::ProcessHandler for Process {
    fn process(&mut self, _: &Client, ps: &ProcessScope) -> Control {
        // SAFETY: see `EnginePtr`.
        let engine = unsafe { &mut *self.engine.0 };
        let frames = ps.n_frames() as usize;
        let mut ports = Ports {
            ports: &mut self.ports,
            scope: ps,
        };
        // Everything from here on is `render_planar`, which the guard checks in the tests.
        self.renderer.render_planar(engine, frames, &mut ports);
        self.status
            .frames
            .fetch_add(frames as u64, Ordering::Release);
        if self.renderer.done() {
            Control::Quit
        } else {
            Control::Continue
        }
    }
}

impl Device for Jack {
    fn name(&self) -> &'static str {
        "jack"
    }

    fn xruns(&self) -> u64 {
        self.xruns
    }

    fn run(&mut self, engine: &mut Engine, length: RunLength) -> Result<DeviceReport, DeviceError> {
        let (client, _) = open(&self.name)?;
        if client.sample_rate() != engine.sample_rate() {
            return Err(DeviceError::Config(format!(
                "the JACK server runs at {} Hz but the project at {} Hz",
                client.sample_rate(),
                engine.sample_rate()
            )));
        }
        let ch = engine.channels();
        let mut ports = Vec::with_capacity(ch);
        for c in 0..ch {
            let port = client
                .register_port(&format!("out_{}", c + 1), AudioOut::default())
                .map_err(|e| {
                    DeviceError::Unavailable(format!(
                        "cannot register JACK port out_{}: {e}",
                        c + 1
                    ))
                })?;
            ports.push(port);
        }
        let full_names: Vec<String> = ports.iter().map(|p| p.name().unwrap_or_default()).collect();
        let recording = self
            .out
            .as_ref()
            .map(|_| Recording::new(length.frames as usize, ch));
        let renderer = Renderer::new(ch, length.frames, recording.clone());
        let status = Arc::new(Status::new());
        let rate = engine.sample_rate();
        let process = Process {
            engine: EnginePtr(engine as *mut Engine),
            renderer,
            ports,
            status: Arc::clone(&status),
        };
        let started = Instant::now();
        let active = client
            .activate_async(Notifications(Arc::clone(&status), rate), process)
            .map_err(|e| {
                DeviceError::Unavailable(format!("cannot activate the JACK client: {e}"))
            })?;

        let mut connect_error = None;
        if let Some(prefix) = &self.connect {
            let targets = active.as_client().ports(
                Some(&format!("^{}", regex_escape(prefix))),
                Some("audio"),
                jack::PortFlags::IS_INPUT,
            );
            if targets.is_empty() {
                connect_error = Some(format!(
                    "--connect: no JACK input port starts with `{prefix}`; see `jack_lsp -t` for the ports there are"
                ));
            }
            for (from, to) in full_names.iter().zip(&targets) {
                if let Err(e) = active.as_client().connect_ports_by_name(from, to) {
                    connect_error = Some(format!("--connect: cannot connect {from} to {to}: {e}"));
                    break;
                }
            }
        }

        let need = length.frames;
        while connect_error.is_none()
            && !status.stopped.load(Ordering::Acquire)
            && status.frames.load(Ordering::Acquire) < need
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        let wall_seconds = started.elapsed().as_secs_f64();
        self.xruns = status.xruns.load(Ordering::Relaxed);
        let stopped = status.stopped.load(Ordering::Acquire);
        if stopped {
            // The server is gone and its process thread with it; closing the client would
            // talk to a dead server, so the client is left to the end of the process.
            std::mem::forget(active);
        } else {
            let _ = active.deactivate();
        }
        // From here on the callback no longer runs; the engine is ours again.
        if let (Some(path), Some(rec)) = (&self.out, &recording) {
            rec.write_wav(path, engine.sample_rate())?;
        }
        if let Some(e) = connect_error {
            return Err(DeviceError::Config(e));
        }
        if stopped {
            return Err(DeviceError::Unavailable(status.message()));
        }
        Ok(DeviceReport {
            frames: status.frames.load(Ordering::Acquire).min(need),
            wall_seconds,
            late_wakeups: 0,
        })
    }
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}
