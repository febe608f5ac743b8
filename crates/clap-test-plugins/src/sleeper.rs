//! [`SLEEPER_ID`]: a plugin that asks to sleep after every `process` call, so that a test can
//! see which blocks a host processes.
//!
//! * Each call writes, into both outputs, its input plus the number of calls so far (1 in
//!   the first): a block the host did not process reads as the host's silence, one it did
//!   as the count, so the count says how many calls the host made.
//! * Each call returns `CLAP_PROCESS_SLEEP`: the host may stop calling until an event
//!   arrives, the input is not silent, or the plugin calls `request_process`.
//! * One parameter, `ping` (0, 1 or 2, default 0). Set to 1, the plugin's own thread
//!   (started in `activate`, the kind a plugin with external input has) calls the host's
//!   `request_process` once, 20 ms after the call that saw it; set to 2, its
//!   `params.request_flush` (a plugin whose parameters changed off the audio thread).

use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use clack_extensions::audio_ports::{
    AudioPortInfoWriter, AudioPortType, PluginAudioPorts, PluginAudioPortsImpl,
};
use clack_extensions::params::{
    HostParams, ParamDisplayWriter, ParamInfo, ParamInfoFlags, ParamInfoWriter,
    PluginAudioProcessorParams, PluginMainThreadParams, PluginParams,
};
use clack_plugin::entry::prelude::*;
use clack_plugin::events::spaces::CoreEventSpace;
use clack_plugin::prelude::*;

/// Plugin id of the sleeper.
pub const SLEEPER_ID: &str = "org.downbeat.test.sleeper";

const PING: u32 = 0;

/// The plugin type.
pub(crate) struct Sleeper;

impl Plugin for Sleeper {
    type AudioProcessor<'a> = Processor;
    type Shared<'a> = Shared<'a>;
    type MainThread<'a> = MainThread<'a>;

    fn declare_extensions(builder: &mut PluginExtensions<Self>, _shared: Option<&Shared<'_>>) {
        builder
            .register::<PluginAudioPorts>()
            .register::<PluginParams>();
    }
}

/// Creates an instance (for the crate's factory).
pub(crate) fn create<'a>(
    host_info: HostInfo<'a>,
    descriptor: &'a PluginDescriptor,
) -> PluginInstance<'a> {
    PluginInstance::new::<Sleeper>(
        host_info,
        descriptor,
        |host| {
            Ok(Shared {
                host,
                ping: Arc::new(AtomicU32::new(0)),
            })
        },
        |_host, shared| Ok(MainThread { _shared: shared }),
    )
}

pub(crate) struct Shared<'a> {
    host: HostSharedHandle<'a>,
    /// Set by `process` to the `ping` it saw (1 or 2); the pinger takes it.
    ping: Arc<AtomicU32>,
}

impl<'a> PluginShared<'a> for Shared<'a> {}

pub(crate) struct MainThread<'a> {
    _shared: &'a Shared<'a>,
}

impl<'a> PluginMainThread<'a, Shared<'a>> for MainThread<'a> {}

/// The thread that calls `request_process` when asked, until the plugin is deactivated.
struct Pinger {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Pinger {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

pub(crate) struct Processor {
    /// Calls so far (only `process` touches it).
    calls: u32,
    _pinger: Pinger,
    ping: Arc<AtomicU32>,
}

impl<'a> PluginAudioProcessor<'a, Shared<'a>, MainThread<'a>> for Processor {
    fn activate(
        _host: HostAudioProcessorHandle<'a>,
        _main_thread: &MainThread<'a>,
        shared: &'a Shared<'a>,
        _audio_config: PluginAudioConfiguration,
    ) -> Result<Self, PluginError> {
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, ping) = (Arc::clone(&stop), Arc::clone(&shared.ping));
        // SAFETY: the handle is used by the pinger thread only, which the processor's drop
        // (at deactivation, before the instance and its host can go) stops and joins.
        let host: HostSharedHandle<'static> = unsafe { shared.host.with_arbitrary_lifetime() };
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(20));
                // CLAP lets any thread call both requests.
                match ping.swap(0, Ordering::AcqRel) {
                    1 => host.request_process(),
                    2 => {
                        if let Some(params) = host.get_extension::<HostParams>() {
                            params.request_flush(&host);
                        }
                    }
                    _ => {}
                }
            }
        });
        Ok(Self {
            calls: 0,
            _pinger: Pinger {
                stop,
                thread: Some(thread),
            },
            ping: Arc::clone(&shared.ping),
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
                if e.param_id() == Some(ClapId::new(PING)) && e.value() >= 0.5 {
                    self.ping.store(e.value().round() as u32, Ordering::Release);
                }
            }
        }
        self.calls += 1;
        let count = self.calls;
        let mut pair = audio
            .port_pair(0)
            .ok_or(PluginError::Message("no audio port"))?;
        let mut channels = pair
            .channels()?
            .into_f32()
            .ok_or(PluginError::Message("expected 32-bit float audio"))?;
        for pair in channels.iter_mut() {
            match pair {
                ChannelPair::InPlace(b) => b.iter_mut().for_each(|s| *s += count as f32),
                ChannelPair::InputOutput(i, o) => {
                    for (o, i) in o.iter_mut().zip(i.iter()) {
                        *o = *i + count as f32;
                    }
                }
                ChannelPair::InputOnly(_) | ChannelPair::OutputOnly(_) => {}
            }
        }
        Ok(ProcessStatus::Sleep)
    }
}

impl PluginAudioProcessorParams for Processor {
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

impl PluginMainThreadParams for MainThread<'_> {
    fn count(&self) -> u32 {
        1
    }

    fn get_info(&self, index: u32, info: &mut ParamInfoWriter) {
        if index == 0 {
            info.set(&ParamInfo {
                id: ClapId::new(PING),
                flags: ParamInfoFlags::IS_AUTOMATABLE | ParamInfoFlags::IS_STEPPED,
                cookie: Default::default(),
                name: b"ping",
                module: b"",
                min_value: 0.0,
                max_value: 2.0,
                default_value: 0.0,
            });
        }
    }

    fn get_value(&self, id: ClapId) -> Option<f64> {
        (id == PING).then_some(0.0)
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
