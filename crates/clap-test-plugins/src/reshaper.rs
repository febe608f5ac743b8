//! [`RESHAPER_ID`]: a plugin that changes its latency and its parameter list while it runs,
//! the way CLAP lets a plugin do it: it asks for a main-thread callback from `process`, asks
//! for a restart from that callback, and takes its new shape in the `activate` that follows.
//!
//! * Stereo in, stereo out: the input delayed by the plugin's latency, plus `offset` once it
//!   has that parameter.
//! * As loaded: latency 0 and one parameter, `go` (0 to 1, default 0). A `go` of 1 in a
//!   `process` call makes that call ask for the host's `request_callback` (from the audio
//!   thread, which CLAP allows); the `on_main_thread` that answers calls `request_restart`.
//! * At the activation after that restart: a latency of [`RESHAPED_LATENCY`] frames, said
//!   with `latency.changed()` in `activate` (the one place CLAP allows a change), and a
//!   second parameter, `offset` (-1 to 1, default 0), said with `params.rescan(ALL)` there
//!   (CLAP allows that only while the plugin is not active).

use std::cell::Cell;
use std::ffi::CStr;
use std::sync::atomic::{AtomicU32, Ordering};

use clack_extensions::audio_ports::{
    AudioPortInfoWriter, AudioPortType, PluginAudioPorts, PluginAudioPortsImpl,
};
use clack_extensions::latency::{HostLatency, PluginLatency, PluginLatencyImpl};
use clack_extensions::params::{
    HostParams, ParamDisplayWriter, ParamInfo, ParamInfoFlags, ParamInfoWriter, ParamRescanFlags,
    PluginAudioProcessorParams, PluginMainThreadParams, PluginParams,
};
use clack_plugin::entry::prelude::*;
use clack_plugin::events::spaces::CoreEventSpace;
use clack_plugin::prelude::*;

/// Plugin id of the reshaper.
pub const RESHAPER_ID: &str = "org.downbeat.test.reshaper";

/// The latency, in frames, the reshaper reports (and delays its audio by) after its restart.
pub const RESHAPED_LATENCY: u32 = 48;

const GO: u32 = 0;
const OFFSET: u32 = 1;

/// The plugin type.
pub(crate) struct Reshaper;

impl Plugin for Reshaper {
    type AudioProcessor<'a> = Processor<'a>;
    type Shared<'a> = Shared;
    type MainThread<'a> = MainThread<'a>;

    fn declare_extensions(builder: &mut PluginExtensions<Self>, _shared: Option<&Shared>) {
        builder
            .register::<PluginAudioPorts>()
            .register::<PluginLatency>()
            .register::<PluginParams>();
    }
}

/// Creates an instance (for the crate's factory).
pub(crate) fn create<'a>(
    host_info: HostInfo<'a>,
    descriptor: &'a PluginDescriptor,
) -> PluginInstance<'a> {
    PluginInstance::new::<Reshaper>(
        host_info,
        descriptor,
        |_host| Ok(Shared::default()),
        |host, shared| {
            Ok(MainThread {
                host,
                shared,
                restart_asked: Cell::new(false),
            })
        },
    )
}

/// The shape (0 as loaded, 1 after the restart) and the offset, which both threads see.
#[derive(Default)]
pub(crate) struct Shared {
    shape: AtomicU32,
    offset: AtomicU32,
}

impl PluginShared<'_> for Shared {}

pub(crate) struct MainThread<'a> {
    host: HostMainThreadHandle<'a>,
    shared: &'a Shared,
    /// `on_main_thread` asked for the restart: the next activation takes the new shape.
    restart_asked: Cell<bool>,
}

impl<'a> PluginMainThread<'a, Shared> for MainThread<'a> {
    fn on_main_thread(&self) {
        if !self.restart_asked.replace(true) {
            self.host.request_restart();
        }
    }
}

pub(crate) struct Processor<'a> {
    host: HostAudioProcessorHandle<'a>,
    shared: &'a Shared,
    /// Per channel, the last `latency` input samples, oldest at `at`.
    delay: [Vec<f32>; 2],
    at: usize,
    called_back: bool,
}

impl<'a> PluginAudioProcessor<'a, Shared, MainThread<'a>> for Processor<'a> {
    fn activate(
        host: HostAudioProcessorHandle<'a>,
        main_thread: &MainThread<'a>,
        shared: &'a Shared,
        _audio_config: PluginAudioConfiguration,
    ) -> Result<Self, PluginError> {
        if main_thread.restart_asked.get() && shared.shape.swap(1, Ordering::AcqRel) == 0 {
            if let Some(latency) = main_thread.host.get_extension::<HostLatency>() {
                latency.changed(&main_thread.host);
            }
            if let Some(params) = main_thread.host.get_extension::<HostParams>() {
                params.rescan(&main_thread.host, ParamRescanFlags::ALL);
            }
        }
        let frames = latency(shared) as usize;
        Ok(Self {
            host,
            shared,
            delay: [vec![0.0; frames], vec![0.0; frames]],
            at: 0,
            called_back: false,
        })
    }

    fn process(
        &mut self,
        _process: Process,
        mut audio: Audio,
        events: Events,
    ) -> Result<ProcessStatus, PluginError> {
        for event in events.input {
            if let Some(CoreEventSpace::ParamValue(e)) = event.as_core_event() {
                if e.param_id() == Some(ClapId::new(GO)) && e.value() >= 0.5 && !self.called_back {
                    self.called_back = true;
                    self.host.request_callback();
                }
                if e.param_id() == Some(ClapId::new(OFFSET)) {
                    let v = e.value().clamp(-1.0, 1.0) as f32;
                    self.shared.offset.store(v.to_bits(), Ordering::Relaxed);
                }
            }
        }
        let offset = f32::from_bits(self.shared.offset.load(Ordering::Relaxed));
        let mut pair = audio
            .port_pair(0)
            .ok_or(PluginError::Message("no audio port"))?;
        let mut channels = pair
            .channels()?
            .into_f32()
            .ok_or(PluginError::Message("expected 32-bit float audio"))?;
        // Both channels start at the same place in their lines and move as far.
        let (start, mut end) = (self.at, self.at);
        for (c, pair) in channels.iter_mut().enumerate().take(2) {
            let line = &mut self.delay[c];
            let mut at = start;
            let mut step = |x: f32| {
                let y = match line.get_mut(at) {
                    Some(old) => std::mem::replace(old, x),
                    None => x,
                };
                if !line.is_empty() {
                    at = (at + 1) % line.len();
                }
                y + offset
            };
            match pair {
                ChannelPair::InPlace(b) => b.iter_mut().for_each(|s| *s = step(*s)),
                ChannelPair::InputOutput(i, o) => {
                    for (o, i) in o.iter_mut().zip(i.iter()) {
                        *o = step(*i);
                    }
                }
                ChannelPair::InputOnly(_) | ChannelPair::OutputOnly(_) => {}
            }
            end = at;
        }
        self.at = end;
        Ok(ProcessStatus::Continue)
    }
}

/// The latency of the plugin's current shape.
fn latency(shared: &Shared) -> u32 {
    if shared.shape.load(Ordering::Acquire) == 0 {
        0
    } else {
        RESHAPED_LATENCY
    }
}

impl PluginAudioProcessorParams for Processor<'_> {
    fn flush(&mut self, _input: &InputEvents, _output: &mut OutputEvents) {}
}

impl PluginAudioPortsImpl for MainThread<'_> {
    fn count(&self, _is_input: bool) -> u32 {
        1
    }

    fn get(&self, index: u32, _is_input: bool, writer: &mut AudioPortInfoWriter) {
        if index == 0 {
            writer.set(&crate::main_port(2, Some(AudioPortType::STEREO)));
        }
    }
}

impl MainThread<'_> {
    /// Whether the plugin has taken its new shape.
    fn reshaped(&self) -> bool {
        self.shared.shape.load(Ordering::Acquire) == 1
    }
}

impl PluginLatencyImpl for MainThread<'_> {
    fn get(&self) -> u32 {
        latency(self.shared)
    }
}

impl PluginMainThreadParams for MainThread<'_> {
    fn count(&self) -> u32 {
        1 + self.shared.shape.load(Ordering::Acquire)
    }

    fn get_info(&self, index: u32, info: &mut ParamInfoWriter) {
        let (id, name, min, default): (u32, &[u8], f64, f64) = match index {
            0 => (GO, b"go", 0.0, 0.0),
            1 if self.reshaped() => (OFFSET, b"offset", -1.0, 0.0),
            _ => return,
        };
        info.set(&ParamInfo {
            id: ClapId::new(id),
            flags: ParamInfoFlags::IS_AUTOMATABLE,
            cookie: Default::default(),
            name,
            module: b"",
            min_value: min,
            max_value: 1.0,
            default_value: default,
        });
    }

    fn get_value(&self, id: ClapId) -> Option<f64> {
        match u32::from(id) {
            GO => Some(0.0),
            OFFSET if self.reshaped() => Some(f64::from(f32::from_bits(
                self.shared.offset.load(Ordering::Relaxed),
            ))),
            _ => None,
        }
    }

    fn value_to_text(
        &self,
        _id: ClapId,
        value: f64,
        writer: &mut ParamDisplayWriter,
    ) -> std::fmt::Result {
        use std::fmt::Write;
        write!(writer, "{value}")
    }

    fn text_to_value(&self, _id: ClapId, text: &CStr) -> Option<f64> {
        text.to_str().ok()?.trim().parse().ok()
    }

    fn flush(&self, _input: &InputEvents, _output: &mut OutputEvents) {}
}
