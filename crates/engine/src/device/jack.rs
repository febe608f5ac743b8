//! The JACK device: Downbeat as a client of a JACK server (or PipeWire's JACK interface).
//!
//! Built with the `jack` cargo feature (needs libjack to link: Debian `libjack-jackd2-dev`).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use jack::jack_sys;
use jack::{
    AsyncClient, AudioIn, AudioOut, Client, ClientOptions, Control, Frames, LatencyType, MidiIn,
    Port, PortFlags, ProcessScope, TransportState,
};

use super::handoff::Handoff;
use super::pacing::pace;
use super::render::{PlanarBuffers, PlanarInputs, Renderer};
use super::takes::prepare;
use super::transport::{follow, timebase_bbt, ExternalPosition, TransportRequests, TransportSync};
use super::{
    ClaimedLatency, Device, DeviceError, DeviceReport, Fallback, OnLoss, RecordTo, Run, RunLength,
};
use crate::record::{RecordOptions, WhenFull};
use crate::Engine;

/// Runs the engine in a JACK server's real-time process callback.
///
/// Registers one output port per channel (`out_1`, `out_2`, ...) and, when the engine has a
/// capture (the project has an `input` node), one input port per captured channel (`in_1`,
/// ...), whose buffers the `input` nodes hear in the same cycle: JACK is duplex, so the input
/// is sample-aligned with the output by construction. With
/// [`midi_in`](Self::midi_in) it also registers a MIDI input port (`midi_in`) whose notes
/// reach the project's instruments at the frame JACK stamped them with. It optionally connects both sides,
/// follows the server's buffer size, counts xruns, and ends cleanly if the server goes away,
/// or goes on on the virtual device with [`OnLoss::FallBackToVirtual`].
///
/// With [`transport`](Self::transport) the song follows JACK's transport, and can be its
/// timebase master (see [`TransportSync`]).
///
/// The engine lives in the process callback for the run (the callback owns its state, as
/// JACK's API wants) and comes back when the run ends, also when the server died.
#[derive(Debug)]
pub struct Jack {
    name: String,
    connect: Option<String>,
    connect_in: Option<String>,
    midi_in: Option<String>,
    record_to: RecordTo,
    on_loss: OnLoss,
    transport: TransportSync,
    requests: Option<TransportRequests>,
}

impl Jack {
    /// A JACK client called `name`; connects its outputs to the ports whose names start with
    /// `connect` (e.g. `system:playback`), in order; records to `out` when given.
    pub fn new(name: &str, connect: Option<String>, out: Option<std::path::PathBuf>) -> Self {
        Self {
            name: name.to_string(),
            connect,
            connect_in: None,
            midi_in: None,
            record_to: RecordTo {
                out,
                ..RecordTo::default()
            },
            on_loss: OnLoss::Stop,
            transport: TransportSync::Internal,
            requests: None,
        }
    }

    /// Connects the ports whose names start with `prefix` (e.g. `system:capture`), in order,
    /// to the input ports.
    pub fn connect_inputs(mut self, prefix: Option<String>) -> Self {
        self.connect_in = prefix;
        self
    }

    /// Registers a MIDI input port, `midi_in`, connected from the first MIDI output port
    /// whose name starts with `prefix` (e.g. `a2j:` or `jack_midiseq:`): its note ons and
    /// offs, sustain pedal, pitch bend and all-notes-off go to every node that plays notes,
    /// each at the frame of the cycle JACK gives it.
    pub fn midi_in(mut self, prefix: Option<String>) -> Self {
        self.midi_in = prefix;
        self
    }

    /// Also records what the input ports received to this WAV file.
    pub fn record_input(mut self, path: Option<std::path::PathBuf>) -> Self {
        self.record_to.input = path;
        self
    }

    /// How the recordings (`out`, [`record_input`](Self::record_input)) are buffered and
    /// synced.
    pub fn record_options(mut self, options: RecordOptions) -> Self {
        self.record_to.options = options;
        self
    }

    /// What to do when the server goes away mid-run.
    pub fn on_loss(mut self, on_loss: OnLoss) -> Self {
        self.on_loss = on_loss;
        self
    }

    /// Whose transport the song plays by. With [`TransportSync::Jack`] or
    /// [`JackMaster`](TransportSync::JackMaster), every process callback first reads JACK's
    /// transport (`jack_transport_query`) and makes the song's match it ([`follow`]), so the
    /// nodes see the song's musical position where JACK's transport is; with `JackMaster`
    /// the run is also JACK's timebase master (unconditionally: it takes over from another)
    /// and publishes bar, beat, tick, signature and tempo from the song's tempo map
    /// ([`timebase_bbt`]). `requests` are play, stop and locate a control thread sends to
    /// JACK's transport (taken at the start of every cycle; see [`TransportRequests`]).
    pub fn transport(mut self, sync: TransportSync, requests: Option<TransportRequests>) -> Self {
        self.transport = sync;
        self.requests = requests;
        self
    }

    /// The sample rate of the running server, so a project can be built to match it.
    ///
    /// Asks the client called `name` itself, which it opens and keeps for the
    /// [`run`](Device::run) of a `Jack` of the same name that follows (until then the client
    /// is registered with the server, without ports). A short-lived client of its own, opened
    /// and closed just before the run's, once deadlocked the run for good (issue 42): libjack
    /// closes a client by cancelling its notification thread, which holds libjack's
    /// process-wide synchronisation mutex while another client of the server registers or
    /// unregisters; cancelled at that moment, it never unlocks it, and the close then waits
    /// for that mutex forever.
    ///
    /// # Errors
    /// [`DeviceError::Unavailable`] when no server runs, or when it does not answer within
    /// ten seconds.
    pub fn server_sample_rate(name: &str) -> Result<u32, DeviceError> {
        let mut parked = PARKED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((parked_name, client)) = parked.as_ref() {
            if parked_name == name {
                return Ok(client.sample_rate());
            }
        }
        let client = open(name)?;
        let rate = client.sample_rate();
        if let Some((_, other)) = parked.replace((name.to_string(), client)) {
            close(other);
        }
        Ok(rate)
    }

    /// The client [`server_sample_rate`](Self::server_sample_rate) opened for this name, or
    /// a new one.
    fn client(&self) -> Result<Client, DeviceError> {
        let mut parked = PARKED.lock().unwrap_or_else(PoisonError::into_inner);
        match parked.take() {
            Some((name, client)) if name == self.name => Ok(client),
            other => {
                *parked = other;
                drop(parked);
                open(&self.name)
            }
        }
    }
}

/// The client [`Jack::server_sample_rate`] opened, by the name it was asked for, until a run
/// of that name takes it.
static PARKED: Mutex<Option<(String, Client)>> = Mutex::new(None);

/// How long opening the client, and then registering its ports, activating it and connecting
/// them, may each take before the start fails. Against a running server each takes
/// milliseconds.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the run waits for its client to close before it goes on without it.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// Runs `call`, which talks to the JACK server, on a thread of its own, and waits at most
/// `limit` for it; `what` says what it does, for the error.
///
/// On a thread of its own because a libjack call can sleep forever: a request waits for the
/// server's answer without a timeout (a stopped or stuck server never answers), and libjack
/// can deadlock by itself (see [`Jack::server_sample_rate`]). A call that does not return in
/// time is left asleep on its thread and the run ends with an error instead of hanging. That
/// thread may hold libjack's process-wide open and close locks, so this process cannot use
/// JACK again: the `downbeat` binary exits on the error, which ends the thread with the
/// process.
fn bounded<T: Send + 'static>(
    limit: Duration,
    what: &str,
    call: impl FnOnce() -> T + Send + 'static,
) -> Result<T, DeviceError> {
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("downbeat-jack".into())
        .spawn(move || {
            // The receiver is gone when the call came too late: its result is dropped here.
            let _ = tx.send(call());
        })
        .map_err(|e| DeviceError::Unavailable(format!("cannot start a thread for {what}: {e}")))?;
    rx.recv_timeout(limit).map_err(|e| match e {
        mpsc::RecvTimeoutError::Timeout => {
            let server =
                std::env::var("JACK_DEFAULT_SERVER").unwrap_or_else(|_| "default".to_string());
            DeviceError::Unavailable(format!(
                "JACK did not answer within {} s while {what} (server `{server}`): the server \
                 is stopped or stuck, or libjack deadlocked in this process; restart the \
                 server and try again",
                limit.as_secs()
            ))
        }
        mpsc::RecvTimeoutError::Disconnected => {
            DeviceError::Unavailable(format!("the JACK call panicked while {what}"))
        }
    })
}

/// Closes `client` (an [`AsyncClient`] is deactivated first) on a thread of its own, waiting
/// at most [`CLOSE_TIMEOUT`]: libjack's close can deadlock (see
/// [`Jack::server_sample_rate`]), and a run that is over should not hang on it. A close that
/// does not return is left asleep, as in [`bounded`].
fn close(client: impl Send + 'static) {
    let _ = bounded(CLOSE_TIMEOUT, "closing the client", move || drop(client));
}

/// Opens the client `name`, within [`START_TIMEOUT`].
fn open(name: &str) -> Result<Client, DeviceError> {
    let owned = name.to_string();
    let what = format!("opening the client `{name}`");
    let opened = bounded(START_TIMEOUT, &what, move || {
        Client::new(&owned, ClientOptions::NO_START_SERVER)
    })?;
    let (client, _) = opened.map_err(|e| {
        DeviceError::Unavailable(format!(
            "cannot connect to a JACK server ({e}); start one first, for example \
             `jackd -d alsa` on a sound card, `jackd -d dummy -r 48000 -p 256` without one, \
             or run under PipeWire with `pw-jack downbeat ...`"
        ))
    })?;
    Ok(client)
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

/// The callback's state: the renderer, shared with the control thread through a
/// [`Handoff`] so that it comes back even from a dead server.
struct Process {
    renderer: Arc<Handoff<Renderer>>,
    inputs: Vec<Port<AudioIn>>,
    outputs: Vec<Port<AudioOut>>,
    midi: Option<Port<MidiIn>>,
    status: Arc<Status>,
    /// JACK's transport, when the song follows it.
    follower: Option<Follower>,
}

/// The song following JACK's transport, in the process callback.
struct Follower {
    transport: jack::Transport,
    /// Whether this client is the timebase master: JACK's bar/beat/tick are then the song's
    /// own, and its tempo is not followed.
    master: bool,
    requests: Option<TransportRequests>,
}

impl Follower {
    /// Where JACK's transport stands for this cycle (`jack_transport_query`, real-time safe
    /// in JACK's API: it copies the cycle's position); `None` once the client is gone.
    fn query(&self) -> Option<ExternalPosition> {
        let now = self.transport.query().ok()?;
        let bpm = if self.master {
            None
        } else {
            now.pos.bbt().map(|bbt| bbt.bpm)
        };
        Some(ExternalPosition {
            rolling: now.state == TransportState::Rolling,
            frame: u64::from(now.pos.frame()),
            bpm,
        })
    }

    /// Sends the requests taken since the last cycle to JACK's transport (they take effect
    /// at a later cycle), then makes the song's transport stand where JACK's does in this
    /// one. Real-time safe: JACK's transport calls are, and [`follow`] is (the guard tests
    /// run it).
    fn step(&self, engine: &mut Engine, jack: Option<ExternalPosition>) {
        if let Some(requests) = &self.requests {
            let taken = requests.take();
            if let Some(f) = taken.locate_frame(engine.schedule().transport().map()) {
                // JACK's frames are 32-bit: about a day at 48 kHz.
                let _ = self.transport.locate(f.min(u64::from(u32::MAX)) as Frames);
            }
            match taken.rolling() {
                Some(true) => {
                    let _ = self.transport.start();
                }
                Some(false) => {
                    let _ = self.transport.stop();
                }
                None => {}
            }
        }
        if let Some(jack) = jack {
            let commands = follow(engine.schedule().transport(), &jack);
            let transport = engine.schedule_mut().transport_mut();
            for command in commands.iter() {
                // A tempo change the map has no room left for is the only refusal: the song
                // keeps its tempo.
                let _ = transport.apply(command);
            }
        }
    }
}

/// The input ports as [`PlanarInputs`] for one process cycle.
struct InPorts<'a> {
    ports: &'a [Port<AudioIn>],
    scope: &'a ProcessScope,
}

impl PlanarInputs for InPorts<'_> {
    fn channel(&self, c: usize) -> &[f32] {
        self.ports[c].as_slice(self.scope)
    }
}

/// The output ports as [`PlanarBuffers`] for one process cycle.
struct OutPorts<'a> {
    ports: &'a mut [Port<AudioOut>],
    scope: &'a ProcessScope,
}

impl PlanarBuffers for OutPorts<'_> {
    fn channel_mut(&mut self, c: usize) -> &mut [f32] {
        self.ports[c].as_mut_slice(self.scope)
    }
}

impl jack::ProcessHandler for Process {
    fn process(&mut self, _: &Client, ps: &ProcessScope) -> Control {
        let frames = ps.n_frames() as usize;
        let channels = self.outputs.len();
        let inputs = InPorts {
            ports: &self.inputs,
            scope: ps,
        };
        let mut outputs = OutPorts {
            ports: &mut self.outputs,
            scope: ps,
        };
        // Everything the renderer does here is `render_planar`, which the guard checks in
        // the tests; once the control thread has taken the renderer back, silence.
        let midi = &self.midi;
        let follower = &self.follower;
        // JACK's transport as it stands for this whole cycle.
        let jack = follower.as_ref().and_then(Follower::query);
        let played = self.renderer.with(|r| {
            if let Some(f) = follower {
                f.step(r.engine_mut(), jack);
            }
            if let Some(port) = midi {
                // The engine stamps each message with this cycle's first frame plus its
                // offset: every cycle renders exactly the frames JACK asks for.
                let engine = r.engine_mut();
                for event in port.iter(ps) {
                    engine.midi(event.time, event.bytes);
                }
            }
            r.render_planar(frames, &inputs, &mut outputs)
        });
        if played.is_none() {
            for c in 0..channels {
                outputs.channel_mut(c)[..frames].fill(0.0);
            }
        }
        self.status
            .frames
            .fetch_add(frames as u64, Ordering::Release);
        Control::Continue
    }
}

/// Why the ports asked for by `--connect`, `--connect-in` or `--midi-in` could not be
/// connected.
#[derive(Debug)]
enum ConnectError {
    /// No port of another client matches the prefix.
    NoPort {
        /// The option that asked for it.
        flag: &'static str,
        /// `audio` or `midi`.
        kind: &'static str,
        /// `input` or `output`.
        direction: &'static str,
        /// The prefix given.
        prefix: String,
    },
    /// The server refused a connection.
    Refused {
        /// The option that asked for it.
        flag: &'static str,
        /// Source and destination ports.
        from: String,
        to: String,
        /// What JACK said.
        source: Box<jack::Error>,
    },
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::NoPort {
                flag,
                kind,
                direction,
                prefix,
            } => write!(
                f,
                "{flag}: no JACK {kind} {direction} port starts with `{prefix}`; see `jack_lsp -t` for the ports there are"
            ),
            ConnectError::Refused {
                flag,
                from,
                to,
                source,
            } => write!(f, "{flag}: cannot connect {from} to {to}: {source}"),
        }
    }
}

impl std::error::Error for ConnectError {}

/// Connects `ours` in order to the ports of other clients whose names start with `prefix`
/// (`ours` are outputs when `flags` asks for their inputs, and the other way round).
fn connect_ports(
    client: &Client,
    ours: &[String],
    prefix: &str,
    (kind, flags): (&'static str, PortFlags),
    flag: &'static str,
) -> Result<(), ConnectError> {
    let theirs = client.ports(
        Some(&format!("^{}", regex_escape(prefix))),
        Some(kind),
        flags,
    );
    let theirs: Vec<String> = theirs.into_iter().filter(|p| !ours.contains(p)).collect();
    if theirs.is_empty() {
        let direction = if flags.contains(PortFlags::IS_INPUT) {
            "input"
        } else {
            "output"
        };
        return Err(ConnectError::NoPort {
            flag,
            kind,
            direction,
            prefix: prefix.to_string(),
        });
    }
    for (a, b) in ours.iter().zip(&theirs) {
        let (from, to) = if flags.contains(PortFlags::IS_INPUT) {
            (a, b)
        } else {
            (b, a)
        };
        client
            .connect_ports_by_name(from, to)
            .map_err(|source| ConnectError::Refused {
                flag,
                from: from.clone(),
                to: to.clone(),
                source: Box::new(source),
            })?;
    }
    Ok(())
}

/// Port kinds for [`connect_ports`]: a JACK type pattern and whose ports to look for.
const AUDIO_INPUTS: (&str, PortFlags) = ("audio", PortFlags::IS_INPUT);
const AUDIO_OUTPUTS: (&str, PortFlags) = ("audio", PortFlags::IS_OUTPUT);
const MIDI_OUTPUTS: (&str, PortFlags) = ("midi", PortFlags::IS_OUTPUT);

/// How long the control thread waits for a process callback to hand the renderer back.
const TAKE_TIMEOUT: Duration = Duration::from_secs(2);

/// The ports a run registers and the connections it makes, and whose transport it follows.
struct Wiring {
    outputs: usize,
    inputs: usize,
    connect: Option<String>,
    connect_in: Option<String>,
    midi_in: Option<String>,
    transport: TransportSync,
    requests: Option<TransportRequests>,
}

/// A client that runs: active, its ports connected as asked (or why they could not be, or
/// why it could not become the timebase master).
struct Started {
    active: Active,
    failed: Option<DeviceError>,
    claimed: Option<ClaimedLatency>,
}

/// The active client and what its timebase callback reads, in this order: dropping it
/// closes the client first (its callbacks end when it is deactivated), and only then frees
/// the timebase's state. A client left to the end of the process is forgotten whole.
struct Active {
    _client: AsyncClient<Notifications, Process>,
    _timebase: Option<Box<Timebase>>,
}

/// What the timebase callback reads: the renderer, whose schedule holds the song's tempo
/// map. The callback borrows it through the [`Handoff`] as the process callback does (on
/// the same JACK thread, right after it), so it never waits and finds nothing once the
/// control thread has taken the renderer back.
struct Timebase {
    renderer: Arc<Handoff<Renderer>>,
}

/// JACK's timebase callback (`JackTimebaseCallback`): fills the bar/beat/tick fields of the
/// next cycle's position from the song's tempo map at that position's frame
/// ([`timebase_bbt`]). Runs on JACK's process thread: no allocation, no lock, no panic
/// (the map's conversions are arithmetic).
unsafe extern "C" fn timebase_callback(
    _state: jack_sys::jack_transport_state_t,
    _frames: jack_sys::jack_nframes_t,
    position: *mut jack_sys::jack_position_t,
    _new_position: std::ffi::c_int,
    arg: *mut std::ffi::c_void,
) {
    // SAFETY: `arg` is the `Box<Timebase>` that `become_master` registered with this client;
    // it lives in the run's `Active` beside the client and is freed only after the client
    // is deactivated and closed (or never, for a client forgotten), and JACK calls this
    // only during the cycles of an active client. It is only read here, and `Timebase` is
    // `Sync` (an `Arc` of a `Sync` handoff).
    let timebase = unsafe { &*arg.cast::<Timebase>() };
    // SAFETY: JACK passes the position of the next cycle, which only the timebase master
    // writes, valid and unaliased for the length of this call; a null one is skipped.
    let Some(position) = (unsafe { position.as_mut() }) else {
        return;
    };
    let frame = u64::from(position.frame);
    let bbt = timebase
        .renderer
        .with(|r| timebase_bbt(r.engine().schedule().transport().map(), frame));
    match bbt {
        Some(b) => {
            position.bar = b.bar;
            position.beat = b.beat;
            position.tick = b.tick;
            position.bar_start_tick = b.bar_start_tick;
            position.beats_per_bar = b.beats_per_bar;
            position.beat_type = b.beat_type;
            position.ticks_per_beat = b.ticks_per_beat;
            position.beats_per_minute = b.beats_per_minute;
            position.valid =
                (position.valid | jack_sys::JackPositionBBT) & !jack_sys::JackBBTFrameOffset;
        }
        // The run is ending: no bar/beat/tick rather than stale ones.
        None => position.valid &= !jack_sys::JackPositionBBT,
    }
}

/// Makes `client` JACK's timebase master, unconditionally, with [`timebase_callback`]
/// reading `renderer`; the state it registers comes back to be kept with the client.
fn become_master(
    client: &Client,
    renderer: Arc<Handoff<Renderer>>,
) -> Result<Box<Timebase>, DeviceError> {
    let timebase = Box::new(Timebase { renderer });
    let arg = std::ptr::from_ref::<Timebase>(&*timebase).cast_mut().cast();
    // SAFETY: `client.raw()` is this open client; the callback has the signature libjack
    // expects, and `arg` points to the boxed state, which the caller keeps at the same
    // address (a `Box` does not move its contents) until the client is closed (see
    // `Active`). JACK only reads it through the callback, which only takes `&Timebase`.
    let code = unsafe {
        jack_sys::jack_set_timebase_callback(client.raw(), 0, Some(timebase_callback), arg)
    };
    if code != 0 {
        return Err(DeviceError::Unavailable(format!(
            "--transport jack-master: JACK refused to make this client its timebase master \
             (error {code})"
        )));
    }
    Ok(timebase)
}

/// Registers the ports of `client`, activates it with the process callback and connects the
/// ports as `wiring` asks (and, to be JACK's timebase master, registers the timebase
/// callback). On an error, the client comes back to be closed, unless activating it failed
/// (the `jack` crate then keeps it, never closed).
fn start(
    client: Client,
    wiring: Wiring,
    renderer: Arc<Handoff<Renderer>>,
    status: Arc<Status>,
    rate: u32,
) -> Result<Started, (DeviceError, Option<Client>)> {
    let Ports {
        outputs,
        inputs,
        midi,
    } = match register(&client, &wiring) {
        Ok(ports) => ports,
        Err(e) => return Err((e, Some(client))),
    };
    let out_names: Vec<String> = outputs
        .iter()
        .map(|p| p.name().unwrap_or_default())
        .collect();
    let in_names: Vec<String> = inputs
        .iter()
        .map(|p| p.name().unwrap_or_default())
        .collect();
    let midi_name = midi.as_ref().map(|p| vec![p.name().unwrap_or_default()]);
    let master = wiring.transport == TransportSync::JackMaster;
    let follower = wiring.transport.follows().then(|| Follower {
        transport: client.transport(),
        master,
        requests: wiring.requests.clone(),
    });
    let process = Process {
        renderer: Arc::clone(&renderer),
        inputs,
        outputs,
        midi,
        status: Arc::clone(&status),
        follower,
    };
    let client = client
        .activate_async(Notifications(status, rate), process)
        .map_err(|e| {
            (
                DeviceError::Unavailable(format!("cannot activate the JACK client: {e}")),
                None,
            )
        })?;
    let c = client.as_client();
    let (timebase, mut failed) = if master {
        match become_master(c, renderer) {
            Ok(t) => (Some(t), None),
            Err(e) => (None, Some(e)),
        }
    } else {
        (None, None)
    };
    let refused = |e: ConnectError| DeviceError::Config(e.to_string());
    if let (None, Some(prefix)) = (&failed, &wiring.connect) {
        failed = connect_ports(c, &out_names, prefix, AUDIO_INPUTS, "--connect")
            .err()
            .map(refused);
    }
    if let (None, Some(prefix)) = (&failed, &wiring.connect_in) {
        failed = connect_ports(c, &in_names, prefix, AUDIO_OUTPUTS, "--connect-in")
            .err()
            .map(refused);
    }
    if let (None, Some(prefix), Some(ours)) = (&failed, &wiring.midi_in, &midi_name) {
        failed = connect_ports(c, ours, prefix, MIDI_OUTPUTS, "--midi-in")
            .err()
            .map(refused);
    }
    let claimed = claimed_latency(c, &out_names, &in_names);
    Ok(Started {
        active: Active {
            _client: client,
            _timebase: timebase,
        },
        failed,
        claimed,
    })
}

/// A run's ports.
struct Ports {
    outputs: Vec<Port<AudioOut>>,
    inputs: Vec<Port<AudioIn>>,
    midi: Option<Port<MidiIn>>,
}

/// The output, input and MIDI ports of `client` that `wiring` asks for.
fn register(client: &Client, wiring: &Wiring) -> Result<Ports, DeviceError> {
    let mut outputs = Vec::new();
    for c in 1..=wiring.outputs {
        let name = format!("out_{c}");
        outputs.push(
            client
                .register_port(&name, AudioOut::default())
                .map_err(|e| port_error(&name, e))?,
        );
    }
    let mut inputs = Vec::new();
    for c in 1..=wiring.inputs {
        let name = format!("in_{c}");
        inputs.push(
            client
                .register_port(&name, AudioIn::default())
                .map_err(|e| port_error(&name, e))?,
        );
    }
    let midi = match wiring.midi_in {
        None => None,
        Some(_) => Some(
            client
                .register_port("midi_in", MidiIn::default())
                .map_err(|e| port_error("midi_in", e))?,
        ),
    };
    Ok(Ports {
        outputs,
        inputs,
        midi,
    })
}

impl Device for Jack {
    fn name(&self) -> &'static str {
        "jack"
    }

    fn run(&mut self, engine: Engine, length: RunLength) -> Result<Run, DeviceError> {
        let stopper = engine.stopper();
        let client = self.client()?;
        let rate = engine.sample_rate();
        if client.sample_rate() != rate {
            let server = client.sample_rate();
            close(client);
            return Err(DeviceError::Config(format!(
                "the JACK server runs at {server} Hz but the project at {rate} Hz"
            )));
        }
        let block = engine.block_size();
        let (renderer, recorded) =
            match prepare(engine, length, &self.record_to, None, WhenFull::CountLost) {
                Ok(prepared) => prepared,
                Err(e) => {
                    close(client);
                    return Err(e);
                }
            };
        if self.midi_in.is_some() && renderer.engine().schedule().instrument_count() == 0 {
            close(client);
            return Err(DeviceError::Config(
                "--midi-in: no node of the project plays notes (add a `synth` or a `karplus`)"
                    .into(),
            ));
        }
        if self.connect_in.is_some() && renderer.input_channels() == 0 {
            close(client);
            return Err(DeviceError::Config(
                "--connect-in: the project has no `input` node, so Downbeat has no JACK input ports"
                    .into(),
            ));
        }
        let wiring = Wiring {
            outputs: renderer.channels(),
            inputs: renderer.input_channels(),
            connect: self.connect.clone(),
            connect_in: self.connect_in.clone(),
            midi_in: self.midi_in.clone(),
            transport: self.transport,
            requests: self.requests.clone(),
        };
        let status = Arc::new(Status::new());
        let handoff = Handoff::new(renderer);
        let started = Instant::now();
        let start = {
            let (handoff, status) = (Arc::clone(&handoff), Arc::clone(&status));
            let what = format!(
                "registering the ports of the client `{}`, activating it and connecting them",
                self.name
            );
            bounded(START_TIMEOUT, &what, move || {
                start(client, wiring, handoff, status, rate)
            })
        };
        let Started {
            active,
            failed,
            claimed,
        } = match start {
            Ok(Ok(s)) => s,
            Ok(Err((e, client))) => {
                if let Some(client) = client {
                    close(client);
                }
                recorded.close()?;
                return Err(e);
            }
            Err(e) => {
                recorded.close()?;
                return Err(e);
            }
        };
        let need = length.frames;
        while failed.is_none()
            && !status.stopped.load(Ordering::Acquire)
            && status.frames.load(Ordering::Acquire) < need
            && !stopper.is_stopped()
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        let lost = status.stopped.load(Ordering::Acquire);
        // The callback hands the renderer back at its next cycle boundary (or at once when
        // the server, and its callbacks with it, are gone).
        let renderer = handoff.take(TAKE_TIMEOUT);
        if lost {
            // The server is gone and its process thread with it; closing the client would
            // talk to a dead server, so the client is left to the end of the process.
            std::mem::forget(active);
        } else {
            close(active);
        }
        let Some(renderer) = renderer else {
            recorded.close()?;
            return Err(DeviceError::Lost(format!(
                "{} (and its process callback never returned)",
                status.message()
            )));
        };
        let mut report = DeviceReport {
            frames: renderer.frames().min(need),
            wall_seconds: started.elapsed().as_secs_f64(),
            xruns: status.xruns.load(Ordering::Relaxed),
            claimed_latency: claimed,
            ..DeviceReport::default()
        };
        if let Some(e) = failed {
            recorded.close()?;
            return Err(e);
        }
        let renderer = match (lost, self.on_loss) {
            (false, _) => renderer,
            (true, OnLoss::Stop) => {
                recorded.close()?;
                return Err(DeviceError::Lost(status.message()));
            }
            (true, OnLoss::FallBackToVirtual) => {
                report.fallback = Some(Fallback {
                    at_frame: renderer.frames(),
                    reason: status.message(),
                });
                let paced = pace(renderer, block, rate);
                report.late_wakeups = paced.late;
                paced.renderer
            }
        };
        report.xruns += renderer.input_gaps();
        report.frames = renderer.frames().min(need);
        report.wall_seconds = started.elapsed().as_secs_f64();
        let (engine, files) = recorded.finish(renderer)?;
        report.recorded = files;
        Ok(Run { engine, report })
    }
}

fn port_error(name: &str, e: jack::Error) -> DeviceError {
    DeviceError::Unavailable(format!("cannot register JACK port {name}: {e}"))
}

/// What the server says the latency of our ports is (the most of each range).
fn claimed_latency(client: &Client, outs: &[String], ins: &[String]) -> Option<ClaimedLatency> {
    let most = |names: &[String], kind: LatencyType| {
        names
            .iter()
            .filter_map(|n| client.port_by_name(n))
            .map(|p| u64::from(p.get_latency_range(kind).1))
            .max()
    };
    Some(ClaimedLatency {
        output: most(outs, LatencyType::Playback)?,
        input: most(ins, LatencyType::Capture).unwrap_or(0),
    })
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
