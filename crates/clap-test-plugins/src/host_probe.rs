//! [`HOST_PROBE_ID`]: a plugin that leans on the host's extensions the way real plugins do,
//! so that the host's side of each can be tested.
//!
//! * **latency**, as DPF-built plugins use it: it reports [`PROBE_LATENCY`] frames once
//!   active and says `changed()` in `activate`; in `deactivate` it fetches the host's
//!   `clap.latency` and calls it **without a check**: a host that does not offer it takes
//!   the process down (here an abort, in DPF a null call).
//! * **thread-check**: `activate` fails unless the host says it runs on the main thread and
//!   not the audio thread; `process` outputs silence unless the host says the calling thread
//!   is the audio thread, and the main thread exactly when it is the thread that ran
//!   `activate` (an offline render may process on the main thread). So correct output means
//!   truthful answers.
//! * **log**: `process` logs `process call N` (N = 1, 2, 3) for its first three calls, from
//!   the audio thread.
//! * **params**: one parameter, `gain` (0 to 2, default 1), applied at its sample offset;
//!   every `process` also calls `request_flush` (the host must take it on the audio thread
//!   without allocating).
//! * **state**: the gain, as [`STATE_MAGIC`] then the gain's `f32` in little-endian bytes;
//!   then, only when it is not 0, the flood count below as a little-endian `u32`.
//! * **log flood** (a test mode, set through the state, so that the probe's parameters and
//!   the audit stay as they are): with a flood count N, every `process` call also logs N
//!   messages [`FLOOD_MESSAGE`], to fill the host's ring of audio-thread messages and
//!   overflow it.
//! * **audio ports**: a stereo main input and output, and a mono sidechain input whose
//!   samples are added to both outputs: output equals input times gain only when the host
//!   feeds the sidechain silence.

use std::cell::Cell;
use std::ffi::CStr;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU32, Ordering};

use clack_extensions::audio_ports::{
    AudioPortFlags, AudioPortInfo, AudioPortInfoWriter, AudioPortType, PluginAudioPorts,
    PluginAudioPortsImpl,
};
use clack_extensions::latency::{HostLatency, PluginLatency, PluginLatencyImpl};
use clack_extensions::log::{HostLog, LogSeverity};
use clack_extensions::params::{
    HostParams, ParamDisplayWriter, ParamInfo, ParamInfoFlags, ParamInfoWriter,
    PluginAudioProcessorParams, PluginMainThreadParams, PluginParams,
};
use clack_extensions::state::{PluginState, PluginStateImpl};
use clack_extensions::thread_check::HostThreadCheck;
use clack_plugin::entry::prelude::*;
use clack_plugin::events::spaces::CoreEventSpace;
use clack_plugin::prelude::*;
use clack_plugin::stream::{InputStream, OutputStream};

/// Plugin id of the host probe.
pub const HOST_PROBE_ID: &str = "org.downbeat.test.host-probe";
/// The latency the probe reports once active, in frames.
pub const PROBE_LATENCY: u32 = 32;
/// The first bytes of the probe's state.
pub const STATE_MAGIC: &[u8; 8] = b"DBPROBE1";

/// What the log flood logs, N times per `process` call.
pub const FLOOD_MESSAGE: &str = "log flood";
static FLOOD: &CStr = c"log flood";

const GAIN: u32 = 0;
/// How many `process` calls log a message.
const LOGGED_CALLS: u32 = 3;
static MESSAGES: [&CStr; LOGGED_CALLS as usize] =
    [c"process call 1", c"process call 2", c"process call 3"];

/// The plugin type.
pub(crate) struct HostProbe;

impl Plugin for HostProbe {
    type AudioProcessor<'a> = Processor<'a>;
    type Shared<'a> = Shared;
    type MainThread<'a> = MainThread<'a>;

    fn declare_extensions(builder: &mut PluginExtensions<Self>, _shared: Option<&Shared>) {
        builder
            .register::<PluginAudioPorts>()
            .register::<PluginLatency>()
            .register::<PluginParams>()
            .register::<PluginState>();
    }
}

/// Creates an instance (for the crate's factory).
pub(crate) fn create<'a>(
    host_info: HostInfo<'a>,
    descriptor: &'a PluginDescriptor,
) -> PluginInstance<'a> {
    PluginInstance::new::<HostProbe>(
        host_info,
        descriptor,
        |_host| Ok(Shared::default()),
        |host, shared| {
            Ok(MainThread {
                host,
                shared,
                latency: Cell::new(0),
            })
        },
    )
}

/// The gain and the flood count, which both threads and the state see.
pub(crate) struct Shared {
    gain: AtomicU32,
    /// Messages every `process` call logs besides the first calls' own (the log flood).
    flood: AtomicU32,
}

impl Default for Shared {
    fn default() -> Self {
        Self {
            gain: AtomicU32::new(1f32.to_bits()),
            flood: AtomicU32::new(0),
        }
    }
}

impl Shared {
    fn gain(&self) -> f32 {
        f32::from_bits(self.gain.load(Ordering::Relaxed))
    }

    fn set_gain(&self, g: f64) -> f32 {
        let g = g.clamp(0.0, 2.0) as f32;
        self.gain.store(g.to_bits(), Ordering::Relaxed);
        g
    }

    fn handle(&self, event: &UnknownEvent) -> Option<f32> {
        match event.as_core_event() {
            Some(CoreEventSpace::ParamValue(e)) if e.param_id() == Some(ClapId::new(GAIN)) => {
                Some(self.set_gain(e.value()))
            }
            _ => None,
        }
    }
}

impl PluginShared<'_> for Shared {}

pub(crate) struct MainThread<'a> {
    host: HostMainThreadHandle<'a>,
    shared: &'a Shared,
    latency: Cell<u32>,
}

impl<'a> PluginMainThread<'a, Shared> for MainThread<'a> {}

extern "C" {
    fn pthread_self() -> usize;
}

/// The calling thread, without touching this library's own `std` thread data (a thread the
/// host spawned has none here, and making it would allocate on the audio thread).
fn thread_id() -> usize {
    // SAFETY: `pthread_self` has no preconditions, always succeeds, and only reads the
    // thread pointer; `pthread_t` is an unsigned long on Linux, which `usize` matches.
    unsafe { pthread_self() }
}

/// The host's answers, or `None` when it does not offer thread-check.
fn threads(host: &HostSharedHandle) -> Option<(bool, bool)> {
    let check = host.get_extension::<HostThreadCheck>()?;
    Some((check.is_main_thread(host)?, check.is_audio_thread(host)?))
}

pub(crate) struct Processor<'a> {
    host: HostAudioProcessorHandle<'a>,
    shared: &'a Shared,
    gain: f32,
    calls: u32,
    /// The thread `activate` ran on.
    main_thread: usize,
    log: Option<HostLog>,
    params: Option<HostParams>,
}

impl<'a> PluginAudioProcessor<'a, Shared, MainThread<'a>> for Processor<'a> {
    fn activate(
        host: HostAudioProcessorHandle<'a>,
        main_thread: &MainThread<'a>,
        shared: &'a Shared,
        _audio_config: PluginAudioConfiguration,
    ) -> Result<Self, PluginError> {
        if threads(&main_thread.host) != Some((true, false)) {
            return Err(PluginError::Message(
                "thread-check: activate is not on the main thread, or the host cannot tell",
            ));
        }
        main_thread.latency.set(PROBE_LATENCY);
        if let Some(latency) = main_thread.host.get_extension::<HostLatency>() {
            latency.changed(&main_thread.host);
        }
        Ok(Self {
            log: host.get_extension::<HostLog>(),
            params: host.get_extension::<HostParams>(),
            host,
            shared,
            gain: shared.gain(),
            calls: 0,
            main_thread: thread_id(),
        })
    }

    fn deactivate(self, main_thread: &MainThread<'a>) {
        // What DPF does: no check that the host offers the extension.
        let Some(latency) = main_thread.host.get_extension::<HostLatency>() else {
            std::process::abort();
        };
        latency.changed(&main_thread.host);
    }

    fn process(
        &mut self,
        _process: Process,
        mut audio: Audio,
        events: Events,
    ) -> Result<ProcessStatus, PluginError> {
        if let Some(log) = &self.log {
            if self.calls < LOGGED_CALLS {
                log.log(&self.host, LogSeverity::Info, MESSAGES[self.calls as usize]);
            }
            for _ in 0..self.shared.flood.load(Ordering::Relaxed) {
                log.log(&self.host, LogSeverity::Info, FLOOD);
            }
        }
        self.calls = self.calls.saturating_add(1);
        if let Some(params) = &self.params {
            params.request_flush(&self.host);
        }
        // The main thread is the one that activated the probe: it may also be the audio
        // thread (an offline render on the main thread), and then the host must say both.
        let here_is_main = thread_id() == self.main_thread;
        let truthful = threads(&self.host) == Some((here_is_main, true));
        // The sidechain's first samples, added to the output below (at most a block's).
        let mut side = [0.0f32; 4096];
        if let Some(port) = audio.input_port(1) {
            if let Some(ch) = port.channels()?.into_f32() {
                if let Some(c) = ch.channel(0) {
                    let n = c.len().min(side.len());
                    side[..n].copy_from_slice(&c[..n]);
                }
            }
        }
        let mut pair = audio
            .port_pair(0)
            .ok_or(PluginError::Message("no audio port"))?;
        let mut channels = pair
            .channels()?
            .into_f32()
            .ok_or(PluginError::Message("expected 32-bit float audio"))?;
        let mut bufs: [Option<&mut [f32]>; 2] = [None, None];
        for (pair, buf) in channels.iter_mut().zip(&mut bufs) {
            *buf = match pair {
                ChannelPair::InputOnly(_) | ChannelPair::OutputOnly(_) => None,
                ChannelPair::InPlace(b) => Some(b),
                ChannelPair::InputOutput(i, o) => {
                    o.copy_from_slice(i);
                    Some(o)
                }
            };
        }
        for batch in events.input.batch() {
            for event in batch.events() {
                if let Some(g) = self.shared.handle(event) {
                    self.gain = g;
                }
            }
            let start = match batch.sample_bounds().0 {
                std::ops::Bound::Included(s) => s,
                std::ops::Bound::Excluded(s) => s + 1,
                std::ops::Bound::Unbounded => 0,
            };
            for buf in bufs.iter_mut().flatten() {
                for (k, s) in buf[batch.sample_bounds()].iter_mut().enumerate() {
                    let at = start + k;
                    *s = *s * self.gain + side.get(at).copied().unwrap_or(0.0);
                }
            }
        }
        if !truthful {
            for buf in bufs.iter_mut().flatten() {
                buf.fill(0.0);
            }
        }
        Ok(ProcessStatus::Continue)
    }
}

impl PluginAudioProcessorParams for Processor<'_> {
    fn flush(&mut self, input: &InputEvents, _output: &mut OutputEvents) {
        for event in input {
            if let Some(g) = self.shared.handle(event) {
                self.gain = g;
            }
        }
    }
}

impl PluginAudioPortsImpl for MainThread<'_> {
    fn count(&self, is_input: bool) -> u32 {
        if is_input {
            2
        } else {
            1
        }
    }

    fn get(&self, index: u32, is_input: bool, writer: &mut AudioPortInfoWriter) {
        match (index, is_input) {
            (0, _) => writer.set(&crate::main_port(2, Some(AudioPortType::STEREO))),
            (1, true) => writer.set(&AudioPortInfo {
                id: ClapId::new(1),
                name: b"sidechain",
                channel_count: 1,
                flags: AudioPortFlags::empty(),
                port_type: Some(AudioPortType::MONO),
                in_place_pair: None,
            }),
            _ => {}
        }
    }
}

impl PluginLatencyImpl for MainThread<'_> {
    fn get(&self) -> u32 {
        self.latency.get()
    }
}

impl PluginMainThreadParams for MainThread<'_> {
    fn count(&self) -> u32 {
        1
    }

    fn get_info(&self, index: u32, info: &mut ParamInfoWriter) {
        if index == 0 {
            info.set(&ParamInfo {
                id: ClapId::new(GAIN),
                flags: ParamInfoFlags::IS_AUTOMATABLE,
                cookie: Default::default(),
                name: b"gain",
                module: b"",
                min_value: 0.0,
                max_value: 2.0,
                default_value: 1.0,
            });
        }
    }

    fn get_value(&self, id: ClapId) -> Option<f64> {
        (id == GAIN).then(|| f64::from(self.shared.gain()))
    }

    fn value_to_text(
        &self,
        id: ClapId,
        value: f64,
        writer: &mut ParamDisplayWriter,
    ) -> std::fmt::Result {
        use std::fmt::Write;
        if id == GAIN {
            write!(writer, "{value:.3}")
        } else {
            Err(std::fmt::Error)
        }
    }

    fn text_to_value(&self, id: ClapId, text: &CStr) -> Option<f64> {
        (id == GAIN).then(|| text.to_str().ok()?.trim().parse().ok())?
    }

    fn flush(&self, input: &InputEvents, _output: &mut OutputEvents) {
        for event in input {
            self.shared.handle(event);
        }
    }
}

impl PluginStateImpl for MainThread<'_> {
    fn save(&self, output: &mut OutputStream) -> Result<(), PluginError> {
        output.write_all(STATE_MAGIC)?;
        output.write_all(&self.shared.gain().to_le_bytes())?;
        let flood = self.shared.flood.load(Ordering::Relaxed);
        if flood != 0 {
            output.write_all(&flood.to_le_bytes())?;
        }
        Ok(())
    }

    fn load(&self, input: &mut InputStream) -> Result<(), PluginError> {
        let mut bytes = Vec::new();
        input.read_to_end(&mut bytes)?;
        let flood = match bytes.len() {
            12 => 0,
            16 => u32::from_le_bytes(bytes[12..].try_into().expect("four bytes")),
            _ => return Err(PluginError::Message("not a host-probe state")),
        };
        if &bytes[..8] != STATE_MAGIC {
            return Err(PluginError::Message("not a host-probe state"));
        }
        let gain = f32::from_le_bytes(bytes[8..12].try_into().expect("four bytes"));
        self.shared.set_gain(f64::from(gain));
        self.shared.flood.store(flood, Ordering::Relaxed);
        Ok(())
    }
}
