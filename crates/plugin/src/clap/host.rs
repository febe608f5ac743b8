//! The host side of a CLAP instance: the extensions Downbeat offers a plugin, and what it does
//! when the plugin calls them.
//!
//! | extension | what the host does |
//! |---|---|
//! | core | `request_callback` (from any thread): the CLAP main thread (`super::main_thread`) calls the plugin's `on_main_thread` within a few milliseconds, while the node runs; `request_restart`: the node hands its processor over at its next block and the main thread deactivates and activates the plugin, re-reads its latency and parameters and hands a new processor back, the node kept; `request_process` (like `params.request_flush`) wakes a sleeping plugin (one whose last `process` returned `CLAP_PROCESS_SLEEP`, or `CONTINUE_IF_NOT_QUIET` with quiet output) from the next block |
//! | `clap.log` | prints `[downbeat] clap <plugin name>: <SEVERITY>: <message>` to stderr; from the audio thread the message waits in a fixed ring (`super::log`) until a drain prints it: the [`super::LogDrain`] thread while one runs, else the node on its main thread |
//! | `clap.thread-check` | main thread: the CLAP main thread, which made the instance and makes every main-thread call; audio thread: whichever thread is inside the node's `process` (see [`super::thread`]) |
//! | `clap.latency` | `changed()` raises a flag; the main thread re-reads the latency after the call that changed it (an activation: CLAP allows a change only then) and publishes it for the graph's next compile |
//! | `clap.params` | `rescan` with `VALUES` re-reads the values on the main thread; a new parameter list (`ALL`, allowed while the plugin is inactive) is read at every activation and published for the graph's next compile; `clear` has nothing to clear (the host keeps no automation or modulation of its own per parameter); `request_flush` raises a flag, served by a main-thread `flush` while the plugin is inactive, and by the next `process` otherwise (which it wakes a sleeping plugin for) |
//! | `clap.state` | `mark_dirty` raises a flag ([`HostFlags::dirty`]) |
//! | `clap.audio-ports` | no rescan flag is supported (the graph's channels are fixed when it compiles); a `rescan` is logged as ignored |
//! | `clap.note-ports` | CLAP and MIDI dialects; a `rescan` is logged as ignored |
//!
//! Every callback is allocation-free on the audio thread; the ones CLAP restricts to the main
//! thread run there.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use clack_extensions::audio_ports::{AudioPortRescanFlags, HostAudioPorts, HostAudioPortsImpl};
use clack_extensions::latency::{HostLatency, HostLatencyImpl};
use clack_extensions::log::{HostLog, HostLogImpl, LogSeverity};
use clack_extensions::note_ports::{
    HostNotePorts, HostNotePortsImpl, NoteDialects, NotePortRescanFlags,
};
use clack_extensions::params::{
    HostParams, HostParamsImplMainThread, HostParamsImplShared, ParamClearFlags, ParamRescanFlags,
};
use clack_extensions::state::{HostState, HostStateImpl};
use clack_extensions::thread_check::{HostThreadCheck, HostThreadCheckImpl};
use clack_host::prelude::*;

use super::log::{log_line, LogSink};
use super::thread::{in_audio_thread, ThreadMark};

/// The host handlers' type.
pub(crate) struct Host;

/// Requests the plugin made that the node acts on later, on the main thread.
#[derive(Default)]
pub(crate) struct HostFlags {
    /// `latency.changed()` was called.
    pub(crate) latency_changed: AtomicBool,
    /// `params.rescan(VALUES…)` was called.
    pub(crate) values_changed: AtomicBool,
    /// `params.request_flush()` was called.
    pub(crate) flush_requested: AtomicBool,
    /// `state.mark_dirty()` was called.
    pub(crate) dirty: AtomicBool,
    /// `request_process()` was called (from any thread): a sleeping plugin is processed
    /// again from the next block.
    pub(crate) process_requested: AtomicBool,
    /// Calls of any `rescan` the host could not follow (audio or note ports).
    pub(crate) ignored_rescans: AtomicU32,
    /// `request_callback()` was called (from any thread): the main thread calls
    /// `on_main_thread`.
    pub(crate) callback_requested: AtomicBool,
    /// `request_restart()` was called (from any thread): the main thread deactivates and
    /// activates the plugin.
    pub(crate) restart_requested: AtomicBool,
    /// `on_main_thread` calls the main thread made.
    pub(crate) callbacks: AtomicU64,
    /// Restarts completed (deactivated and activated again, the new processor handed to
    /// the node).
    pub(crate) restarts: AtomicU64,
}

/// What every thread of the instance sees.
pub(crate) struct HostShared {
    /// The thread that built the host.
    main: ThreadMark,
    /// What the plugin logs from the audio thread; shared with the drain thread
    /// ([`super::LogDrain`]) when one runs.
    pub(crate) log: Arc<LogSink>,
    /// Shared with the node, which reads them without going through the instance.
    pub(crate) flags: Arc<HostFlags>,
}

impl HostShared {
    /// Made on the thread that will be the instance's main thread.
    pub(crate) fn new(name: String) -> Self {
        Self {
            log: Arc::new(LogSink::new(name)),
            main: ThreadMark::current(),
            flags: Arc::default(),
        }
    }

    fn is_main(&self) -> bool {
        ThreadMark::current() == self.main
    }
}

impl<'a> SharedHandler<'a> for HostShared {
    // Any thread, the audio thread included: atomic stores, which the main thread and the
    // node look at.
    fn request_restart(&self) {
        self.flags.restart_requested.store(true, Ordering::Release);
    }
    fn request_process(&self) {
        self.flags.process_requested.store(true, Ordering::Release);
    }
    fn request_callback(&self) {
        self.flags.callback_requested.store(true, Ordering::Release);
    }
}

impl HostLogImpl for HostShared {
    fn log(&self, severity: LogSeverity, message: &str) {
        if in_audio_thread() {
            // No formatting, no write(2) here: another thread prints it later.
            self.log.ring.push(severity.to_raw() as u8, message);
        } else {
            eprintln!(
                "{}",
                log_line(&self.log.name, &severity.to_string(), message)
            );
        }
    }
}

impl HostThreadCheckImpl for HostShared {
    fn is_main_thread(&self) -> bool {
        self.is_main()
    }

    fn is_audio_thread(&self) -> bool {
        in_audio_thread()
    }
}

impl HostParamsImplShared for HostShared {
    fn request_flush(&self) {
        self.flags.flush_requested.store(true, Ordering::Release);
    }
}

/// The main-thread side: a view of the shared part (CLAP's main-thread callbacks only raise
/// flags the node reads after its own main-thread calls).
pub(crate) struct HostMain<'a> {
    shared: &'a HostShared,
}

impl<'a> HostMain<'a> {
    pub(crate) fn new(shared: &'a HostShared) -> Self {
        Self { shared }
    }
}

impl<'a> MainThreadHandler<'a> for HostMain<'a> {}

impl HostLatencyImpl for HostMain<'_> {
    fn changed(&self) {
        self.shared
            .flags
            .latency_changed
            .store(true, Ordering::Release);
    }
}

impl HostParamsImplMainThread for HostMain<'_> {
    fn rescan(&self, flags: ParamRescanFlags) {
        if flags.intersects(ParamRescanFlags::VALUES | ParamRescanFlags::ALL) {
            self.shared
                .flags
                .values_changed
                .store(true, Ordering::Release);
        }
    }

    fn clear(&self, _param_id: ClapId, _flags: ParamClearFlags) {}
}

impl HostStateImpl for HostMain<'_> {
    fn mark_dirty(&self) {
        self.shared.flags.dirty.store(true, Ordering::Release);
    }
}

impl HostMain<'_> {
    fn ignored_rescan(&self, what: &str) {
        self.shared
            .flags
            .ignored_rescans
            .fetch_add(1, Ordering::Relaxed);
        eprintln!(
            "[downbeat] clap {}: asked for a rescan of its {what}, which the host cannot \
             follow while the graph is built; ignored",
            self.shared.log.name
        );
    }
}

impl HostAudioPortsImpl for HostMain<'_> {
    fn is_rescan_flag_supported(&self, _flag: AudioPortRescanFlags) -> bool {
        false
    }

    fn rescan(&self, _flags: AudioPortRescanFlags) {
        self.ignored_rescan("audio ports");
    }
}

impl HostNotePortsImpl for HostMain<'_> {
    fn supported_dialects(&self) -> NoteDialects {
        NoteDialects::CLAP | NoteDialects::MIDI
    }

    fn rescan(&self, _flags: NotePortRescanFlags) {
        self.ignored_rescan("note ports");
    }
}

impl HostHandlers for Host {
    type Shared<'a> = HostShared;
    type MainThread<'a> = HostMain<'a>;
    type AudioProcessor<'a> = ();

    fn declare_extensions(builder: &mut HostExtensions<Self>, _shared: &Self::Shared<'_>) {
        builder
            .register::<HostLog>()
            .register::<HostThreadCheck>()
            .register::<HostLatency>()
            .register::<HostParams>()
            .register::<HostState>()
            .register::<HostAudioPorts>()
            .register::<HostNotePorts>();
    }
}
