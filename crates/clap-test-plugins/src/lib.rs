//! Small CLAP plugins for Downbeat's plugin-hosting tests, all in one `.clap` file:
//!
//! * [`GAIN_ID`]: a stereo gain with one parameter, `gain` (0 to 2, default 1). Parameter
//!   events are applied at their sample offset inside the block, so a host that sends an
//!   event at frame 37 sees the level change at frame 37 exactly.
//! * [`DELAY_ID`]: a stereo delay of [`DELAY_FRAMES`] samples that reports that latency through
//!   the CLAP latency extension, so a host can compensate it.
//! * [`ALLOC_ID`]: the gain, except that every `process` call allocates and frees a buffer of
//!   [`ALLOC_BYTES`] bytes: what a real-time audit must catch.
//! * [`CLICK_ID`]: an instrument (one note input port, a stereo output) that writes one
//!   sample per note on, at the event's frame: `velocity + key / 1000`, silence elsewhere, so a
//!   test can read where and which notes arrived; and one per MIDI 1 message (pitch bend,
//!   sustain): minus its three bytes as a 24-bit number over 2^24, exact in an `f32`.
//! * [`TRANSPORT_ID`]: a recorder of the transport each `process` call is given
//!   (`clap_process.transport`), written exactly into its [`TRANSPORT_CHANNELS`] output
//!   channels, for a host's test to [`decode`]: see `transport.rs`.
//! * [`HOST_PROBE_ID`]: a stereo gain that uses the host's extensions as real plugins do
//!   (latency from `deactivate` without a check, as DPF does; log and thread-check from
//!   `process`; state; a sidechain input; a log flood, set through its state, that fills
//!   the host's log ring): see `host_probe.rs`.
//! * [`SLEEPER_ID`]: a plugin that asks to sleep after every call and writes how many calls
//!   it had, to see which blocks a host processes, and that calls `request_process` from a
//!   thread of its own when asked: see `sleeper.rs`.
//! * [`RESHAPER_ID`]: a plugin that asks for a main-thread callback from `process`, a
//!   restart from that callback, and comes back from the restart with a latency of
//!   [`RESHAPED_LATENCY`] frames and a second parameter: see `reshaper.rs`.
//! * [`CRASH_CREATE_ID`], [`CRASH_ACTIVATE_ID`], [`CRASH_PROCESS_ID`],
//!   [`CRASH_DEACTIVATE_ID`]: plugins that crash the host with `SIGSEGV` in that phase, on
//!   purpose (`crashing.rs`).
//!
//! The crate builds as a `cdylib`; on Linux a `.clap` file is that shared library renamed
//! (`libdownbeat_clap_test_plugins.so` → `downbeat-test.clap`).
//!
//! Everything the processors need is allocated in `activate`, off the audio thread; only the
//! allocating plugin allocates in `process`, on purpose.

mod crashing;
pub use crashing::{CRASH_ACTIVATE_ID, CRASH_CREATE_ID, CRASH_DEACTIVATE_ID, CRASH_PROCESS_ID};

use std::ffi::CStr;
use std::sync::atomic::{AtomicU32, Ordering};

mod host_probe;
pub use host_probe::{FLOOD_MESSAGE, HOST_PROBE_ID, PROBE_LATENCY, STATE_MAGIC};

mod reshaper;
pub use reshaper::{RESHAPED_LATENCY, RESHAPER_ID};

mod sleeper;
pub use sleeper::SLEEPER_ID;

mod transport;
pub use transport::{decode, TransportField, TRANSPORT_CHANNELS, TRANSPORT_FIELDS, TRANSPORT_ID};

use clack_extensions::audio_ports::{
    AudioPortFlags, AudioPortInfo, AudioPortInfoWriter, AudioPortType, PluginAudioPorts,
    PluginAudioPortsImpl,
};
use clack_extensions::latency::{PluginLatency, PluginLatencyImpl};
use clack_extensions::note_ports::{
    NoteDialect, NoteDialects, NotePortInfo, NotePortInfoWriter, PluginNotePorts,
    PluginNotePortsImpl,
};
use clack_extensions::params::{
    ParamDisplayWriter, ParamInfo, ParamInfoFlags, ParamInfoWriter, PluginAudioProcessorParams,
    PluginMainThreadParams, PluginParams,
};
use clack_plugin::entry::prelude::*;
use clack_plugin::events::spaces::CoreEventSpace;
use clack_plugin::events::Match;
use clack_plugin::prelude::*;

/// Plugin id of the gain.
pub const GAIN_ID: &str = "org.downbeat.test.gain";
/// Plugin id of the fixed-latency delay.
pub const DELAY_ID: &str = "org.downbeat.test.delay";
/// Plugin id of the plugin that allocates in `process`.
pub const ALLOC_ID: &str = "org.downbeat.test.alloc";
/// The delay's length, which it reports as its latency, in frames.
pub const DELAY_FRAMES: usize = 64;
/// Plugin id of the instrument that clicks on note ons.
pub const CLICK_ID: &str = "org.downbeat.test.click";
/// Bytes the allocating plugin allocates (and frees) in every `process` call.
pub const ALLOC_BYTES: usize = 4096;

/// CLAP id of the `gain` parameter.
const GAIN_PARAM: u32 = 0;
const GAIN_MIN: f64 = 0.0;
const GAIN_MAX: f64 = 2.0;
const GAIN_DEFAULT: f64 = 1.0;
const CHANNELS: u32 = 2;

/// Which of the plugins an instance is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Gain,
    Delay,
    Alloc,
    Click,
    /// The transport recorder (`transport.rs`).
    Transport,
}

/// The plugin type; its instances' behaviour is chosen by [`Kind`].
struct TestPlugin;

impl Plugin for TestPlugin {
    type AudioProcessor<'a> = Processor<'a>;
    type Shared<'a> = Shared;
    type MainThread<'a> = MainThread<'a>;

    fn declare_extensions(builder: &mut PluginExtensions<Self>, shared: Option<&Shared>) {
        builder.register::<PluginAudioPorts>();
        match shared.map(|s| s.kind) {
            Some(Kind::Delay) => {
                builder.register::<PluginLatency>();
            }
            Some(Kind::Gain | Kind::Alloc) => {
                builder.register::<PluginParams>();
            }
            Some(Kind::Click) => {
                builder.register::<PluginNotePorts>();
            }
            Some(Kind::Transport) | None => {}
        }
    }
}

/// State both threads see: the kind and the gain's current value (for `get_value`).
struct Shared {
    kind: Kind,
    gain: AtomicU32,
}

impl Shared {
    fn new(kind: Kind) -> Self {
        Self {
            kind,
            gain: AtomicU32::new((GAIN_DEFAULT as f32).to_bits()),
        }
    }

    fn gain(&self) -> f32 {
        f32::from_bits(self.gain.load(Ordering::Relaxed))
    }

    /// Applies a parameter event; returns the new gain when it was one.
    fn handle(&self, event: &UnknownEvent) -> Option<f32> {
        if let Some(CoreEventSpace::ParamValue(e)) = event.as_core_event() {
            if e.param_id() == Some(ClapId::new(GAIN_PARAM)) {
                let g = e.value().clamp(GAIN_MIN, GAIN_MAX) as f32;
                self.gain.store(g.to_bits(), Ordering::Relaxed);
                return Some(g);
            }
        }
        None
    }
}

impl PluginShared<'_> for Shared {}

struct MainThread<'a> {
    shared: &'a Shared,
}

impl<'a> PluginMainThread<'a, Shared> for MainThread<'a> {}

struct Processor<'a> {
    shared: &'a Shared,
    gain: f32,
    /// One ring of `DELAY_FRAMES` per channel (delay only), allocated in `activate`.
    rings: Vec<Vec<f32>>,
    pos: usize,
}

impl<'a> PluginAudioProcessor<'a, Shared, MainThread<'a>> for Processor<'a> {
    fn activate(
        _host: HostAudioProcessorHandle<'a>,
        _main_thread: &MainThread<'a>,
        shared: &'a Shared,
        _audio_config: PluginAudioConfiguration,
    ) -> Result<Self, PluginError> {
        let rings = if shared.kind == Kind::Delay {
            vec![vec![0.0; DELAY_FRAMES]; CHANNELS as usize]
        } else {
            Vec::new()
        };
        Ok(Self {
            shared,
            gain: shared.gain(),
            rings,
            pos: 0,
        })
    }

    fn process(
        &mut self,
        process: Process,
        mut audio: Audio,
        events: Events,
    ) -> Result<ProcessStatus, PluginError> {
        if self.shared.kind == Kind::Transport {
            transport::process(&process, &mut audio, &events)?;
            return Ok(ProcessStatus::Continue);
        }
        if self.shared.kind == Kind::Click {
            let mut port = audio
                .output_port(0)
                .ok_or(PluginError::Message("no audio output"))?;
            let mut channels = port
                .channels()?
                .into_f32()
                .ok_or(PluginError::Message("expected 32-bit float audio"))?;
            for ch in channels.iter_mut() {
                ch.fill(0.0);
            }
            for event in events.input {
                let (t, value) = match event.as_core_event() {
                    Some(CoreEventSpace::NoteOn(e)) => {
                        let key = match e.pckn().key {
                            Match::Specific(k) => f64::from(k),
                            Match::All => -1000.0,
                        };
                        (e.header().time(), (e.velocity() + key / 1000.0) as f32)
                    }
                    Some(CoreEventSpace::Midi(e)) => {
                        let [status, a, b] = e.data();
                        let bytes = u32::from(status) << 16 | u32::from(a) << 8 | u32::from(b);
                        (e.header().time(), -(bytes as f32) / 16_777_216.0)
                    }
                    _ => continue,
                };
                for ch in channels.iter_mut() {
                    if let Some(s) = ch.get_mut(t as usize) {
                        *s = value;
                    }
                }
            }
            return Ok(ProcessStatus::Continue);
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
        match self.shared.kind {
            Kind::Gain | Kind::Alloc => {
                if self.shared.kind == Kind::Alloc {
                    // The point of this plugin: an allocation and a free on the audio thread.
                    let scratch = std::hint::black_box(vec![0u8; ALLOC_BYTES]);
                    drop(scratch);
                }
                // Each batch runs from one event's frame to the next one's: the gain changes
                // at the event's sample offset, not at the block's start.
                for batch in events.input.batch() {
                    for event in batch.events() {
                        if let Some(g) = self.shared.handle(event) {
                            self.gain = g;
                        }
                    }
                    for buf in bufs.iter_mut().flatten() {
                        for s in &mut buf[batch.sample_bounds()] {
                            *s *= self.gain;
                        }
                    }
                }
            }
            Kind::Click | Kind::Transport => {}
            Kind::Delay => {
                let start = self.pos;
                for (buf, ring) in bufs.iter_mut().zip(&mut self.rings) {
                    let Some(buf) = buf else { continue };
                    let mut p = start;
                    for s in buf.iter_mut() {
                        std::mem::swap(&mut ring[p], s);
                        p = (p + 1) % DELAY_FRAMES;
                    }
                }
                self.pos = (start + audio.frames_count() as usize) % DELAY_FRAMES;
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

/// Port 0 of a side, named `main` and flagged main, with `channels` channels: how every
/// plugin here declares its main port.
pub(crate) fn main_port(
    channels: u32,
    port_type: Option<AudioPortType<'static>>,
) -> AudioPortInfo<'static> {
    AudioPortInfo {
        id: ClapId::new(0),
        name: b"main",
        channel_count: channels,
        flags: AudioPortFlags::IS_MAIN,
        port_type,
        in_place_pair: None,
    }
}

impl PluginAudioPortsImpl for MainThread<'_> {
    fn count(&self, is_input: bool) -> u32 {
        // The instrument and the transport recorder have no audio input.
        let generator = matches!(self.shared.kind, Kind::Click | Kind::Transport);
        u32::from(!(is_input && generator))
    }

    fn get(&self, index: u32, _is_input: bool, writer: &mut AudioPortInfoWriter) {
        if index == 0 {
            let (channel_count, port_type) = match self.shared.kind {
                Kind::Transport => (TRANSPORT_CHANNELS as u32, None),
                _ => (CHANNELS, Some(AudioPortType::STEREO)),
            };
            writer.set(&main_port(channel_count, port_type));
        }
    }
}

impl PluginNotePortsImpl for MainThread<'_> {
    fn count(&self, is_input: bool) -> u32 {
        u32::from(is_input)
    }

    fn get(&self, index: u32, is_input: bool, writer: &mut NotePortInfoWriter) {
        if index == 0 && is_input {
            writer.set(&NotePortInfo {
                id: ClapId::new(0),
                name: b"notes",
                supported_dialects: NoteDialects::CLAP,
                preferred_dialect: Some(NoteDialect::Clap),
            });
        }
    }
}

impl PluginLatencyImpl for MainThread<'_> {
    fn get(&self) -> u32 {
        DELAY_FRAMES as u32
    }
}

impl PluginMainThreadParams for MainThread<'_> {
    fn count(&self) -> u32 {
        1
    }

    fn get_info(&self, index: u32, info: &mut ParamInfoWriter) {
        if index == 0 {
            info.set(&ParamInfo {
                id: ClapId::new(GAIN_PARAM),
                flags: ParamInfoFlags::IS_AUTOMATABLE,
                cookie: Default::default(),
                name: b"gain",
                module: b"",
                min_value: GAIN_MIN,
                max_value: GAIN_MAX,
                default_value: GAIN_DEFAULT,
            });
        }
    }

    fn get_value(&self, id: ClapId) -> Option<f64> {
        (id == GAIN_PARAM).then(|| f64::from(self.shared.gain()))
    }

    fn value_to_text(
        &self,
        id: ClapId,
        value: f64,
        writer: &mut ParamDisplayWriter,
    ) -> std::fmt::Result {
        use std::fmt::Write;
        if id == GAIN_PARAM {
            write!(writer, "{value:.3}")
        } else {
            Err(std::fmt::Error)
        }
    }

    fn text_to_value(&self, id: ClapId, text: &CStr) -> Option<f64> {
        if id == GAIN_PARAM {
            text.to_str().ok()?.trim().parse().ok()
        } else {
            None
        }
    }

    fn flush(&self, input: &InputEvents, _output: &mut OutputEvents) {
        for event in input {
            self.shared.handle(event);
        }
    }
}

/// The factory listing the plugins.
struct Factory {
    descriptors: [(Kind, PluginDescriptor); 4],
    /// The host-extension probe (`host_probe.rs`), a plugin type of its own.
    probe: PluginDescriptor,
    /// The plugins that crash on purpose (`crashing.rs`), listed after the others.
    crashing: crashing::Crashing,
    /// The transport recorder: it came after the others, whose places in the list tests
    /// and audits rely on.
    transport: PluginDescriptor,
    /// The sleeper (`sleeper.rs`), listed after those for the same reason.
    sleeper: PluginDescriptor,
    /// The reshaper (`reshaper.rs`), listed last for the same reason.
    reshaper: PluginDescriptor,
}

impl PluginFactoryImpl for Factory {
    fn plugin_count(&self) -> u32 {
        (self.descriptors.len() + 4 + self.crashing.descriptors().count()) as u32
    }

    fn plugin_descriptor(&self, index: u32) -> Option<&PluginDescriptor> {
        let all = self.descriptors.iter().map(|(_, d)| d);
        all.chain(std::iter::once(&self.probe))
            .chain(self.crashing.descriptors())
            .chain(std::iter::once(&self.transport))
            .chain(std::iter::once(&self.sleeper))
            .chain(std::iter::once(&self.reshaper))
            .nth(index as usize)
    }

    fn create_plugin<'a>(
        &'a self,
        host_info: HostInfo<'a>,
        plugin_id: &CStr,
    ) -> Option<PluginInstance<'a>> {
        if self.probe.id() == Some(plugin_id) {
            return Some(host_probe::create(host_info, &self.probe));
        }
        if self.sleeper.id() == Some(plugin_id) {
            return Some(sleeper::create(host_info, &self.sleeper));
        }
        if self.reshaper.id() == Some(plugin_id) {
            return Some(reshaper::create(host_info, &self.reshaper));
        }
        if let Some(instance) = self.crashing.create(host_info, plugin_id) {
            return Some(instance);
        }
        let (kind, descriptor) = self
            .descriptors
            .iter()
            .map(|(k, d)| (*k, d))
            .chain(std::iter::once((Kind::Transport, &self.transport)))
            .find(|(_, d)| d.id() == Some(plugin_id))?;
        Some(PluginInstance::new::<TestPlugin>(
            host_info,
            descriptor,
            move |_host| Ok(Shared::new(kind)),
            |_host, shared| Ok(MainThread { shared }),
        ))
    }
}

/// The library's CLAP entry.
struct TestEntry {
    factory: PluginFactoryWrapper<Factory>,
}

impl Entry for TestEntry {
    fn new(_bundle_path: Option<&CStr>) -> Result<Self, EntryLoadError> {
        use clack_plugin::plugin::features::{AUDIO_EFFECT, STEREO};
        let descriptor = |id: &str, name: &str| {
            PluginDescriptor::new(id, name)
                .with_vendor("Downbeat tests")
                .with_features([AUDIO_EFFECT, STEREO])
        };
        Ok(Self {
            factory: PluginFactoryWrapper::new(Factory {
                descriptors: [
                    (Kind::Gain, descriptor(GAIN_ID, "Downbeat test gain")),
                    (Kind::Delay, descriptor(DELAY_ID, "Downbeat test delay")),
                    (
                        Kind::Alloc,
                        descriptor(ALLOC_ID, "Downbeat test gain that allocates"),
                    ),
                    (
                        Kind::Click,
                        descriptor(CLICK_ID, "Downbeat test click instrument"),
                    ),
                ],
                probe: descriptor(HOST_PROBE_ID, "Downbeat host probe"),
                crashing: crashing::Crashing::new(),
                transport: descriptor(TRANSPORT_ID, "Downbeat test transport recorder"),
                sleeper: descriptor(SLEEPER_ID, "Downbeat test sleeper"),
                reshaper: descriptor(RESHAPER_ID, "Downbeat test reshaper"),
            }),
        })
    }

    fn declare_factories<'a>(&'a self, builder: &mut EntryFactories<'a>) {
        builder.register_factory(&self.factory);
    }
}

clack_export_entry!(TestEntry);
