//! Plugins that crash their host on purpose, one per phase of a plugin's life, for the tests
//! of `downbeat audit` (a crash is reported with its phase and signal, never fatal to the
//! audit) and of `downbeat run` (the recording made before the crash stays a valid file).
//!
//! * [`CRASH_CREATE_ID`] crashes as it is created (`init`).
//! * [`CRASH_ACTIVATE_ID`] crashes in `activate`.
//! * [`CRASH_PROCESS_ID`] passes its stereo input through for `after` blocks (a parameter,
//!   0 by default: the first `process` call crashes), then crashes in `process`.
//! * [`CRASH_DEACTIVATE_ID`] processes like a wire and crashes in `deactivate`.
//!
//! Each crash is a `SIGSEGV`, the signal a plugin dereferencing a bad pointer dies of. It is
//! raised rather than caused by a bad access (which would be undefined behaviour in Rust),
//! after putting back the signal's default action: the Rust standard library of a host
//! installs a `SIGSEGV` handler for stack overflows that returns when the fault is not one,
//! which only kills the process when the faulting instruction runs again, and a raised
//! signal has no instruction to run again.
//!
//! A crash while the library is loaded would take every plugin of this file down with it (a
//! host lists them all by loading the file), so there is none here: the tests make a library
//! that crashes when loaded on their own. Creating one plugin creates no other.

use std::ffi::{c_int, CStr};

use clack_extensions::audio_ports::{
    AudioPortInfoWriter, AudioPortType, PluginAudioPorts, PluginAudioPortsImpl,
};
use clack_extensions::params::{
    ParamDisplayWriter, ParamInfo, ParamInfoFlags, ParamInfoWriter, PluginAudioProcessorParams,
    PluginMainThreadParams, PluginParams,
};
use clack_plugin::entry::prelude::*;
use clack_plugin::events::spaces::CoreEventSpace;
use clack_plugin::prelude::*;

/// Plugin id of the plugin that crashes as it is created (in `init`).
pub const CRASH_CREATE_ID: &str = "org.downbeat.test.crash.create";
/// Plugin id of the plugin that crashes in `activate`.
pub const CRASH_ACTIVATE_ID: &str = "org.downbeat.test.crash.activate";
/// Plugin id of the plugin that crashes in `process` after `after` blocks.
pub const CRASH_PROCESS_ID: &str = "org.downbeat.test.crash.process";
/// Plugin id of the plugin that crashes in `deactivate`.
pub const CRASH_DEACTIVATE_ID: &str = "org.downbeat.test.crash.deactivate";

/// CLAP id of the `after` parameter: blocks processed before the crash.
const AFTER_PARAM: u32 = 0;
const AFTER_MAX: f64 = 1_000_000.0;

/// `SIGSEGV` on Linux and the other Unix systems the tests run on.
const SIGSEGV: c_int = 11;
/// `SIG_DFL`: the default action, as `signal(2)` takes it (a null handler).
const SIG_DFL: usize = 0;

extern "C" {
    fn signal(signum: c_int, handler: usize) -> usize;
    fn raise(sig: c_int) -> c_int;
}

/// Ends the process with `SIGSEGV`, as a plugin with a bad pointer would.
fn crash() -> ! {
    // SAFETY: `signal` and `raise` are async-signal-safe libc calls with valid arguments;
    // with the default action back, the raised signal terminates the process.
    unsafe {
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
    }
    // Not reached; in case the signal were blocked, end the process anyway.
    std::process::abort()
}

/// The phase a plugin crashes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Create,
    Activate,
    Process,
    Deactivate,
}

/// The crashing plugins' descriptors, and how to make one.
pub(crate) struct Crashing {
    descriptors: [(Phase, PluginDescriptor); 4],
}

impl Crashing {
    /// The four plugins' descriptors.
    pub(crate) fn new() -> Self {
        use clack_plugin::plugin::features::{AUDIO_EFFECT, STEREO};
        let descriptor = |id: &str, name: &str| {
            PluginDescriptor::new(id, name)
                .with_vendor("Downbeat tests")
                .with_features([AUDIO_EFFECT, STEREO])
        };
        Self {
            descriptors: [
                (
                    Phase::Create,
                    descriptor(CRASH_CREATE_ID, "Downbeat test crash in create"),
                ),
                (
                    Phase::Activate,
                    descriptor(CRASH_ACTIVATE_ID, "Downbeat test crash in activate"),
                ),
                (
                    Phase::Process,
                    descriptor(CRASH_PROCESS_ID, "Downbeat test crash in process"),
                ),
                (
                    Phase::Deactivate,
                    descriptor(CRASH_DEACTIVATE_ID, "Downbeat test crash in deactivate"),
                ),
            ],
        }
    }

    /// The descriptors, in order.
    pub(crate) fn descriptors(&self) -> impl Iterator<Item = &PluginDescriptor> {
        self.descriptors.iter().map(|(_, d)| d)
    }

    /// An instance of the crashing plugin `plugin_id`, or `None` when the id is not one.
    pub(crate) fn create<'a>(
        &'a self,
        host_info: HostInfo<'a>,
        plugin_id: &CStr,
    ) -> Option<PluginInstance<'a>> {
        let (phase, descriptor) = self
            .descriptors
            .iter()
            .find(|(_, d)| d.id() == Some(plugin_id))?;
        let phase = *phase;
        Some(PluginInstance::new::<CrashPlugin>(
            host_info,
            descriptor,
            move |_host| {
                // The shared part is made in `init`, the last step of creating a plugin.
                if phase == Phase::Create {
                    crash();
                }
                Ok(Shared { phase })
            },
            |_host, shared| Ok(MainThread { shared }),
        ))
    }
}

struct CrashPlugin;

impl Plugin for CrashPlugin {
    type AudioProcessor<'a> = Processor<'a>;
    type Shared<'a> = Shared;
    type MainThread<'a> = MainThread<'a>;

    fn declare_extensions(builder: &mut PluginExtensions<Self>, _shared: Option<&Shared>) {
        builder.register::<PluginAudioPorts>();
        builder.register::<PluginParams>();
    }
}

struct Shared {
    phase: Phase,
}

impl PluginShared<'_> for Shared {}

struct MainThread<'a> {
    shared: &'a Shared,
}

impl<'a> PluginMainThread<'a, Shared> for MainThread<'a> {}

struct Processor<'a> {
    shared: &'a Shared,
    /// Blocks to process before crashing (the `after` parameter).
    after: u64,
    /// Blocks processed so far.
    blocks: u64,
}

impl Processor<'_> {
    fn handle(&mut self, event: &UnknownEvent) {
        if let Some(CoreEventSpace::ParamValue(e)) = event.as_core_event() {
            if e.param_id() == Some(ClapId::new(AFTER_PARAM)) {
                self.after = e.value().clamp(0.0, AFTER_MAX) as u64;
            }
        }
    }
}

impl<'a> PluginAudioProcessor<'a, Shared, MainThread<'a>> for Processor<'a> {
    fn activate(
        _host: HostAudioProcessorHandle<'a>,
        _main_thread: &MainThread<'a>,
        shared: &'a Shared,
        _audio_config: PluginAudioConfiguration,
    ) -> Result<Self, PluginError> {
        if shared.phase == Phase::Activate {
            crash();
        }
        Ok(Self {
            shared,
            after: 0,
            blocks: 0,
        })
    }

    fn process(
        &mut self,
        _process: Process,
        mut audio: Audio,
        events: Events,
    ) -> Result<ProcessStatus, PluginError> {
        // Due when `after` is reached at any point of the block: a host that sweeps the
        // parameter (the audit does) passes 0 in its first block, then larger values.
        let mut due = false;
        for event in events.input {
            self.handle(event);
            due |= self.blocks >= self.after;
        }
        due |= self.blocks >= self.after;
        if self.shared.phase == Phase::Process && due {
            crash();
        }
        self.blocks += 1;
        let mut pair = audio
            .port_pair(0)
            .ok_or(PluginError::Message("no audio port"))?;
        let mut channels = pair
            .channels()?
            .into_f32()
            .ok_or(PluginError::Message("expected 32-bit float audio"))?;
        for pair in channels.iter_mut() {
            match pair {
                ChannelPair::InputOutput(i, o) => o.copy_from_slice(i),
                ChannelPair::OutputOnly(o) => o.fill(0.0),
                ChannelPair::InputOnly(_) | ChannelPair::InPlace(_) => {}
            }
        }
        Ok(ProcessStatus::Continue)
    }

    fn deactivate(self, _main_thread: &MainThread<'a>) {
        if self.shared.phase == Phase::Deactivate {
            crash();
        }
    }
}

impl PluginAudioProcessorParams for Processor<'_> {
    fn flush(&mut self, input: &InputEvents, _output: &mut OutputEvents) {
        for event in input {
            self.handle(event);
        }
    }
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
                id: ClapId::new(AFTER_PARAM),
                // Not automatable: a host's sweep of it would only move the crash.
                flags: ParamInfoFlags::IS_STEPPED,
                cookie: Default::default(),
                name: b"after",
                module: b"",
                min_value: 0.0,
                max_value: AFTER_MAX,
                default_value: 0.0,
            });
        }
    }

    fn get_value(&self, id: ClapId) -> Option<f64> {
        // The main thread does not see the processor's value; the default is what a host
        // reads before it sets one.
        (id == AFTER_PARAM && self.shared.phase == Phase::Process).then_some(0.0)
    }

    fn value_to_text(
        &self,
        id: ClapId,
        value: f64,
        writer: &mut ParamDisplayWriter,
    ) -> std::fmt::Result {
        use std::fmt::Write;
        if id == AFTER_PARAM {
            write!(writer, "{value:.0}")
        } else {
            Err(std::fmt::Error)
        }
    }

    fn text_to_value(&self, id: ClapId, text: &CStr) -> Option<f64> {
        if id == AFTER_PARAM {
            text.to_str().ok()?.trim().parse().ok()
        } else {
            None
        }
    }

    fn flush(&self, _input: &InputEvents, _output: &mut OutputEvents) {}
}
