//! [`Reviser`]: a thread that recompiles a running graph when one of its nodes changes its
//! latency or its parameter list (a plugin after a restart, see
//! [`Revision`](crate::graph::Revision)).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::edit::{CommitError, LiveEditor};

/// How often a [`Reviser`] looks, by default: an atomic load per node that can change.
pub const REVISE_PERIOD: Duration = Duration::from_millis(5);

/// Looks every period at the nodes of the graph `editor` runs; when one published a new
/// latency or parameter list, commits, so that the engine's next block runs a schedule
/// that compensates the new latency and knows the new parameters by name (the nodes are
/// kept: see [`Editor::revise`](crate::graph::Editor::revise)). A commit refused because
/// the engine has not taken earlier edits yet is tried again at the next look; one that
/// does not compile is reported on stderr. Stops when dropped.
///
/// ```no_run
/// use std::sync::{Arc, Mutex};
/// use downbeat::project::Project;
/// use downbeat::revise::{Reviser, REVISE_PERIOD};
/// use downbeat::Engine;
///
/// let (editor, schedule) = Project::load(std::path::Path::new("song.toml"))?.editor()?;
/// let mut engine = Engine::new(schedule);
/// let editor = Arc::new(Mutex::new(engine.live_editor(editor)));
/// let _reviser = Reviser::spawn(editor.clone(), REVISE_PERIOD)?;
/// // ...run the engine: a plugin's new latency is compensated within a few milliseconds.
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Reviser {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Reviser {
    /// Starts the thread.
    ///
    /// # Errors
    /// When the thread cannot be started.
    pub fn spawn(editor: Arc<Mutex<LiveEditor>>, period: Duration) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("downbeat-revise".into())
            .spawn(move || {
                let mut due = false;
                while !flag.load(Ordering::Acquire) {
                    std::thread::sleep(period);
                    let mut live = editor.lock().unwrap_or_else(PoisonError::into_inner);
                    due |= live.revise();
                    if !due {
                        continue;
                    }
                    match live.commit() {
                        Ok(()) => {
                            due = false;
                            eprintln!(
                                "note: a node changed its latency or its parameters while it \
                                 ran (a plugin's restart): the graph is recompiled to follow"
                            );
                        }
                        Err(CommitError::Busy) => {}
                        Err(e) => {
                            due = false;
                            eprintln!(
                                "error: a node changed its latency or its parameters, and the \
                                 graph does not compile with them: {e}"
                            );
                        }
                    }
                }
            })?;
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Reviser {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
