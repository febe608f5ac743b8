//! [`LogDrain`]: a thread that prints what CLAP plugins log from the audio thread while the
//! run goes on.
//!
//! The audio thread only copies a message into its node's ring of 64 slots
//! ([`super::log`]); something else must print it. Without a drain the ring is emptied when
//! the node's main thread next looks (its teardown, a state save), so a plugin's messages
//! come at the end of a run, and a plugin logging more than 64 between two looks loses the
//! rest (counted, and the count printed). With a `LogDrain` running, every node built while
//! it runs is drained every period: messages appear as they are logged, and are lost only
//! when a plugin logs more than 64 in one period.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use super::log::LogSink;

/// Every node's log, as the nodes register them when they are built; a node's entry dies
/// with the node.
static SINKS: Mutex<Vec<Weak<LogSink>>> = Mutex::new(Vec::new());

/// Adds a node's log to those a [`LogDrain`] prints. Off the audio thread (it locks).
pub(crate) fn register(sink: &Arc<LogSink>) {
    let mut sinks = SINKS.lock().unwrap_or_else(|e| e.into_inner());
    sinks.retain(|s| s.strong_count() > 0);
    sinks.push(Arc::downgrade(sink));
}

/// Prints what every living node logged since the last time.
fn drain_all() {
    let live: Vec<Arc<LogSink>> = SINKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    for sink in live {
        sink.print();
    }
}

/// A thread printing the CLAP nodes' audio-thread log messages every period, from
/// [`start`](LogDrain::start) until it is dropped (which prints what is left).
///
/// ```
/// use std::time::Duration;
/// use downbeat_plugin::clap::LogDrain;
///
/// let drain = LogDrain::start(Duration::from_millis(10))?;
/// // ... build CLAP nodes and run the engine: their messages are printed as they come ...
/// drop(drain);
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct LogDrain {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl LogDrain {
    /// Starts the thread, printing every `period`.
    ///
    /// # Errors
    /// The OS error when the thread cannot be started.
    pub fn start(period: Duration) -> std::io::Result<LogDrain> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("downbeat-clap-log".into())
            .spawn(move || {
                while !flag.load(Ordering::Acquire) {
                    std::thread::sleep(period);
                    drain_all();
                }
            })?;
        Ok(LogDrain {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for LogDrain {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        drain_all();
    }
}
