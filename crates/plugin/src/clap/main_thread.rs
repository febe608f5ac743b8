//! The CLAP main thread: one thread per process that creates every CLAP plugin instance,
//! keeps it, makes every main-thread call to it, and serves what the plugins ask of their
//! main thread while their nodes run.
//!
//! CLAP splits a plugin's calls between a main thread (create, activate, state, parameter
//! info, `on_main_thread`) and an audio thread (`process`). A node runs on the audio thread,
//! and the thread that built it is busy with other things (on the virtual and offline
//! devices it renders), so a plugin's requests would wait until the run ends. Here the
//! instances stay on a thread of their own, which every few milliseconds
//! ([`POLL`]) looks at what each plugin asked for from any thread and answers:
//!
//! * `request_callback`: it calls the plugin's `on_main_thread`;
//! * `request_restart`: it asks the node for the plugin's processor ([`super::handover`]);
//!   the node stops processing and hands it over at its next block (and plays silence until
//!   it is back), this thread deactivates the plugin, activates it again with the same
//!   configuration, reads its latency and parameter list anew, publishes them for the
//!   graph's next compile ([`Revision`]) and hands the new processor and parameters back,
//!   which the node takes at its next block. The node, its edges and its place in the graph
//!   stay.
//!
//! Everything else that must run on the main thread (loading, a saved state, a tick, the
//! deactivation and destruction when a node is dropped) is sent here as a job by
//! [`call`], which waits for the answer: never on the audio thread.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use clack_host::prelude::*;
use downbeat_graph::{ParamSpec, SharedRevision};

use super::handover::MainSide;
use super::host::{Host, HostFlags};
use super::log::LogSink;
use super::node::{self, Restart};
use super::thread::AudioScope;
use crate::crash::{self, Label, Phase};

/// How often the thread looks at the plugins' requests while any instance lives.
pub const POLL: Duration = Duration::from_millis(2);

type Job = Box<dyn FnOnce(&mut Instances) + Send>;

/// The CLAP main thread has stopped: a job panicked there, or it could not be started.
#[derive(Debug)]
pub(crate) struct Gone;

thread_local! {
    /// True on the CLAP main thread.
    static HERE: Cell<bool> = const { Cell::new(false) };
    /// The instances, on the CLAP main thread.
    static INSTANCES: RefCell<Instances> = RefCell::new(Instances::default());
}

static JOBS: OnceLock<Mutex<Option<Sender<Job>>>> = OnceLock::new();

/// One plugin instance and what its main thread needs to serve it.
pub(crate) struct Entry {
    pub(crate) instance: PluginInstance<Host>,
    pub(crate) label: Label,
    pub(crate) config: PluginAudioConfiguration,
    pub(crate) flags: Arc<HostFlags>,
    pub(crate) log: Arc<LogSink>,
    pub(crate) restart: MainSide<Restart>,
    pub(crate) revision: SharedRevision,
}

/// Every live instance, by key.
#[derive(Default)]
pub(crate) struct Instances {
    entries: Vec<(u64, Entry)>,
    next: u64,
}

impl Instances {
    /// Keeps `entry`; its key.
    pub(crate) fn insert(&mut self, entry: Entry) -> u64 {
        self.next += 1;
        self.entries.push((self.next, entry));
        self.next
    }

    /// The instance under `key`.
    pub(crate) fn get(&mut self, key: u64) -> Option<&mut Entry> {
        self.entries
            .iter_mut()
            .find(|(k, _)| *k == key)
            .map(|(_, e)| e)
    }

    /// Takes the instance under `key` out, to be destroyed.
    pub(crate) fn remove(&mut self, key: u64) -> Option<Entry> {
        let at = self.entries.iter().position(|(k, _)| *k == key)?;
        Some(self.entries.remove(at).1)
    }

    /// Answers every request the plugins made since the last look.
    fn serve(&mut self) {
        for (_, e) in &mut self.entries {
            if e.flags.callback_requested.swap(false, Ordering::AcqRel) {
                e.instance.call_on_main_thread_callback();
                e.flags.callbacks.fetch_add(1, Ordering::Relaxed);
            }
            if e.flags.restart_requested.load(Ordering::Acquire)
                && e.instance.is_active()
                && e.restart.ask()
            {
                e.flags.restart_requested.store(false, Ordering::Release);
            }
            if let Some(given) = e.restart.take() {
                eprintln!(
                    "note: the CLAP plugin `{}` asked for a restart: it is deactivated and \
                     activated again, and its node plays silence until it is back",
                    e.log.name
                );
                let back = restart(e, given);
                e.restart.give_back(back);
                e.flags.restarts.fetch_add(1, Ordering::Relaxed);
            }
            // What the node replaced (the old parameter lists): freed here, not there.
            drop(e.restart.take_spent());
        }
    }
}

/// Deactivates and activates the plugin whose stopped processor `given` holds, and returns
/// what the node needs to go on: the new processor (none if the activation failed, and the
/// node plays silence), latency and parameters, which are also published for the graph.
fn restart(e: &mut Entry, mut given: Restart) -> Restart {
    if let Some(processor) = given.processor.take() {
        let _inside = crash::enter_unannounced(e.label, Phase::Deactivate);
        let stopped = {
            // Stopped by the node on the audio thread already; this is a formality.
            let _audio = AudioScope::enter();
            processor.into_stopped()
        };
        e.instance.deactivate(stopped);
    }
    node::flush_if_requested(&mut e.instance);
    let activating = crash::enter_unannounced(e.label, Phase::Activate);
    let activated = e.instance.activate(|_, _| (), e.config);
    drop(activating);
    let mut back = Restart::read(&mut e.instance, &e.flags);
    match activated {
        Ok(p) => back.processor = Some(p.into()),
        Err(err) => eprintln!(
            "error: the CLAP plugin `{}` failed to activate again after it asked for a \
             restart ({err}): it plays silence from now on",
            e.log.name
        ),
    }
    if back.latency != e.revision.latency() || !same_params(back.specs(), e.revision.params()) {
        e.revision.publish(back.latency, back.specs());
    }
    e.log.print();
    back
}

/// Whether two parameter lists name the same parameters with the same ranges.
fn same_params(a: &[ParamSpec], b: &[ParamSpec]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.name == y.name && x.kind == y.kind)
}

/// Deactivates (if active) and destroys the instance under `key`, given what the node held:
/// its processor, if it had it, and its end of the restart hand-over.
pub(crate) fn destroy(
    instances: &mut Instances,
    key: u64,
    processor: Option<clack_host::process::PluginAudioProcessor<Host>>,
    audio: super::handover::AudioSide<Restart>,
) {
    let Some(mut e) = instances.remove(key) else {
        return;
    };
    let _inside = crash::enter(e.label, Phase::Deactivate);
    let in_flight = e.restart.close(audio).and_then(|r| r.processor);
    if let Some(processor) = processor.or(in_flight) {
        // `stop_processing` is an audio-thread call: this thread plays that part.
        let stopped = {
            let _audio = AudioScope::enter();
            processor.into_stopped()
        };
        e.instance.deactivate(stopped);
    }
    e.log.print();
}

/// Runs `job` on the CLAP main thread with the instances, and returns what it returns. On
/// that thread itself it runs at once. Blocks until the job is done: off the audio thread.
///
/// # Errors
/// [`Gone`] when the thread has stopped (a job panicked there) or cannot start.
pub(crate) fn call<R, F>(job: F) -> Result<R, Gone>
where
    R: Send + 'static,
    F: FnOnce(&mut Instances) -> R + Send + 'static,
{
    if HERE.get() {
        return INSTANCES.with(|i| {
            let mut i = i
                .try_borrow_mut()
                .expect("a CLAP main-thread job does not call the main thread again");
            Ok(job(&mut i))
        });
    }
    let (reply, answer) = mpsc::sync_channel(1);
    let job: Job = Box::new(move |instances| {
        let _ = reply.send(job(instances));
    });
    let jobs = JOBS.get_or_init(|| Mutex::new(start()));
    let sent = jobs
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .ok_or(Gone)?
        .send(job);
    sent.map_err(|_| Gone)?;
    answer.recv().map_err(|_| Gone)
}

/// Starts the thread; `None` when it cannot.
fn start() -> Option<Sender<Job>> {
    let (jobs, inbox) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("clap-main".into())
        .spawn(move || {
            HERE.set(true);
            loop {
                let idle = INSTANCES.with(|i| i.borrow().entries.is_empty());
                let job = if idle {
                    inbox.recv().map_err(|_| RecvTimeoutError::Disconnected)
                } else {
                    inbox.recv_timeout(POLL)
                };
                match job {
                    Ok(job) => {
                        let ran = INSTANCES.with(|i| {
                            let mut i = i.borrow_mut();
                            catch_unwind(AssertUnwindSafe(|| job(&mut i)))
                        });
                        if let Err(panic) = ran {
                            eprintln!(
                                "error: the CLAP main thread stopped: {}",
                                panic_message(&panic)
                            );
                            return;
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                }
                INSTANCES.with(|i| i.borrow_mut().serve());
            }
        })
        .ok()?;
    Some(jobs)
}

fn panic_message(panic: &Box<dyn Any + Send>) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic")
}
