//! [`Restarter`]: the restart a VST3 plugin asks for when its latency changes
//! (`restartComponent(kLatencyChanged)`), done off the audio thread with the node kept.
//!
//! The SDK has the host deactivate and activate the component and read the latency again.
//! `setActive` is a main-thread call, which must not overlap `process`, so the work is
//! split between the node and one thread of the process (started with the first VST3 node and
//! ended with the last, looking every [`POLL`]):
//!
//! ```text
//! plugin: restartComponent(kLatencyChanged)   (an atomic flag, from any thread)
//! restart thread: sees the flag               IDLE -> WANTED
//! node, next block: setProcessing(false)      WANTED -> AWAY   (plays silence; offline, waits)
//! restart thread: setActive(false), setActive(true), getLatencySamples, publishes the
//!                 latency for the next compile   AWAY -> BUSY -> DONE
//! node, next block: takes the latency         DONE -> IDLE     (setProcessing(true), processes)
//! ```
//!
//! Each state has one side that may leave it, and the plugin is touched only by the side
//! whose turn it is; the node's side is atomics only. A node being dropped closes its
//! restarter first (waiting out a restart under way), so the thread never touches a plugin
//! that is going.

use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use vst3::ComPtr;
use vst3::Steinberg::Vst::{
    IAudioProcessor, IAudioProcessorTrait, IComponent, IComponentTrait, RestartFlags_,
};

use downbeat_graph::{ParamSpec, SharedRevision};

use super::module::{main_calls, Module};
use crate::crash::{self, Label, Phase};

/// How often the restart thread looks for requests.
pub const POLL: Duration = Duration::from_millis(5);

const IDLE: u8 = 0;
const WANTED: u8 = 1;
const AWAY: u8 = 2;
const BUSY: u8 = 3;
const DONE: u8 = 4;
const CLOSED: u8 = 5;

/// One node's restart state, shared by the node and the restart thread.
pub(crate) struct Restarter {
    state: AtomicU8,
    /// The component handler's `restartComponent` flags.
    flags: Arc<AtomicI32>,
    // Released in `drop`, under the main-thread lock (the node's own references go first,
    // so these are the plugin's last), the processor's before the component's (DPF counts
    // them apart and warns of a component released while its processor lives).
    processor: ManuallyDrop<ComPtr<IAudioProcessor>>,
    component: ManuallyDrop<ComPtr<IComponent>>,
    latency: AtomicUsize,
    /// Restarts done.
    restarts: AtomicU64,
    revision: SharedRevision,
    params: &'static [ParamSpec],
    label: Label,
    /// Keeps the library loaded while the restart thread may still hold this (and release
    /// the plugin's objects) after the node is gone.
    _module: Arc<Module>,
}

// SAFETY: the COM pointers are used by the restart thread only in the BUSY state, which it
// enters from AWAY, which only the node's own thread sets after its last `process` call and
// before its next: the plugin is never called from two threads at once. Everything else is
// atomics or immutable.
unsafe impl Send for Restarter {}
// SAFETY: as for Send.
unsafe impl Sync for Restarter {}

/// What the node does with its block.
pub(crate) enum Turn {
    /// Process: the plugin is here (with its new latency, when a restart just ended).
    Process(Option<usize>),
    /// Play silence: the plugin is restarting.
    Away,
}

impl Restarter {
    /// A restarter for the node's plugin, starting from the latency and parameters in
    /// `revision`, registered with the restart thread.
    pub(crate) fn new(
        flags: Arc<AtomicI32>,
        component: ComPtr<IComponent>,
        processor: ComPtr<IAudioProcessor>,
        revision: SharedRevision,
        label: Label,
        module: Arc<Module>,
    ) -> Arc<Self> {
        let (latency, params) = (revision.latency(), revision.params());
        let r = Arc::new(Self {
            state: AtomicU8::new(IDLE),
            flags,
            processor: ManuallyDrop::new(processor),
            component: ManuallyDrop::new(component),
            latency: AtomicUsize::new(latency),
            restarts: AtomicU64::new(0),
            revision,
            params,
            label,
            _module: module,
        });
        register(&r);
        r
    }

    /// The node's side, at the start of a block, `processing` saying whether the plugin was
    /// told it processes (the node makes `setProcessing(false)` before it hands the plugin
    /// over). Atomics only, but offline it waits for the restart (at most `wait`).
    pub(crate) fn turn(&self, processing: &mut bool, offline: bool, wait: Duration) -> Turn {
        let mut state = self.state.load(Ordering::Acquire);
        if state == WANTED {
            if *processing {
                // SAFETY: an audio-thread call of the SDK, before the plugin is handed over.
                unsafe { self.processor.setProcessing(0) };
                *processing = false;
            }
            self.state.store(AWAY, Ordering::Release);
            state = AWAY;
        }
        if offline && matches!(state, AWAY | BUSY) {
            let began = Instant::now();
            while matches!(state, AWAY | BUSY) && began.elapsed() < wait {
                std::thread::yield_now();
                state = self.state.load(Ordering::Acquire);
            }
        }
        match state {
            AWAY | BUSY => Turn::Away,
            DONE => {
                let latency = self.latency.load(Ordering::Relaxed);
                self.state.store(IDLE, Ordering::Release);
                Turn::Process(Some(latency))
            }
            _ => Turn::Process(None),
        }
    }

    /// Restarts done.
    pub(crate) fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }

    /// Ends the restarter's part before the node tears the plugin down: waits out a restart
    /// under way. Off the audio thread.
    pub(crate) fn close(&self) {
        loop {
            let s = self.state.load(Ordering::Acquire);
            if s == BUSY {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            if self
                .state
                .compare_exchange(s, CLOSED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return;
            }
        }
    }

    /// The restart thread's look at this plugin.
    fn serve(&self) {
        let latency_changed = RestartFlags_::kLatencyChanged;
        if self.state.load(Ordering::Acquire) == IDLE
            && self.flags.swap(0, Ordering::AcqRel) & latency_changed != 0
        {
            let _ = self
                .state
                .compare_exchange(IDLE, WANTED, Ordering::AcqRel, Ordering::Acquire);
        }
        if self
            .state
            .compare_exchange(AWAY, BUSY, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        let main = main_calls();
        // SAFETY: the plugin is this thread's in BUSY (see the Send argument); the SDK's
        // restart sequence.
        let latency = unsafe {
            {
                let _inside = crash::enter_unannounced(self.label, Phase::Deactivate);
                self.component.setActive(0);
            }
            let _inside = crash::enter_unannounced(self.label, Phase::Activate);
            self.component.setActive(1);
            self.processor.getLatencySamples() as usize
        };
        drop(main);
        if latency != self.revision.latency() {
            self.revision.publish(latency, self.params);
        }
        self.latency.store(latency, Ordering::Relaxed);
        self.restarts.fetch_add(1, Ordering::Relaxed);
        self.state.store(DONE, Ordering::Release);
    }
}

impl Drop for Restarter {
    fn drop(&mut self) {
        let _main = main_calls();
        // SAFETY: each dropped once, here, and not used after.
        unsafe {
            ManuallyDrop::drop(&mut self.processor);
            ManuallyDrop::drop(&mut self.component);
        }
    }
}

/// The restarters of the live nodes, which the restart thread serves, and whether that
/// thread runs: it ends when the last node is gone (no wake-ups for nothing) and starts
/// again with the next one.
struct Registry {
    live: Vec<Weak<Restarter>>,
    serving: bool,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    live: Vec::new(),
    serving: false,
});

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

fn register(r: &Arc<Restarter>) {
    let mut reg = registry();
    reg.live.push(Arc::downgrade(r));
    if reg.serving {
        return;
    }
    // Without the thread no restart is served; the nodes play on regardless.
    reg.serving = std::thread::Builder::new()
        .name("vst3-restart".into())
        .spawn(serve_while_nodes_live)
        .is_ok();
}

/// The restart thread: every [`POLL`], each live node's restarter; gone with the last node.
fn serve_while_nodes_live() {
    loop {
        std::thread::sleep(POLL);
        let live: Vec<Arc<Restarter>> = {
            let mut reg = registry();
            reg.live.retain(|w| w.strong_count() > 0);
            if reg.live.is_empty() {
                // Under the lock: a node registered from here on starts a new thread.
                reg.serving = false;
                return;
            }
            reg.live.iter().filter_map(Weak::upgrade).collect()
        };
        for r in &live {
            if r.state.load(Ordering::Acquire) != CLOSED {
                r.serve();
            }
        }
    }
}
