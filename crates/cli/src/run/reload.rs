//! `--watch`: a control thread that reloads the project when its file changes and applies
//! the difference to the running graph ([`downbeat::project::diff`]).
//!
//! The file is polled by path, not watched by inode: an editor that saves by writing a new
//! file and renaming it over the old one leaves an inode watch on the old file, which no
//! longer changes. Polling costs one `stat` every [`POLL`], and needs no dependency.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use downbeat::control::Controller;
use downbeat::edit::LiveEditor;
use downbeat::nodes::Capture;
use downbeat::project::diff::{diff, ApplyError};
use downbeat::project::Project;
use downbeat::Engine;
use downbeat_graph::NodeConfig;

use super::Edits;

/// How often the file is looked at. A save is applied once the file has not changed for one
/// poll (so a file written in several pieces is read whole): 100 to 200 ms after it.
const POLL: Duration = Duration::from_millis(100);

/// Parameter events a reload can queue at once: far more than a project has parameters.
const QUEUE: usize = 1024;

/// A version of the file: when any part changes, the file did. A save in place changes
/// the modification time (and usually the length); a save by rename changes the inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    modified: Option<SystemTime>,
    inode: u64,
    len: u64,
}

/// The file's stamp now; `None` while it cannot be read (between an editor's delete and
/// create, say).
pub(crate) fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    Some(Stamp {
        modified: m.modified().ok(),
        inode: inode(&m),
        len: m.len(),
    })
}

#[cfg(unix)]
fn inode(m: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(m)
}

#[cfg(not(unix))]
fn inode(_: &std::fs::Metadata) -> u64 {
    0
}

/// The reloading thread of a run; [`stop`](Reloader::stop) ends it.
pub(crate) struct Reloader {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Reloader {
    /// Starts watching `path`, whose version `running` (as the file has it, stamped
    /// `stamp`) runs in the graph `edits` edits.
    pub(crate) fn spawn(
        path: &Path,
        running: Project,
        stamp: Option<Stamp>,
        edits: &Edits,
        engine: &mut Engine,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let mut watch = Watch {
            path: path.to_path_buf(),
            running,
            editor: Arc::clone(&edits.editor),
            controller: engine.controller(QUEUE),
            config: edits.config,
            capture: edits.capture.clone(),
        };
        eprintln!("watch: reloading `{}` whenever it changes", path.display());
        let stopping = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("downbeat-watch".into())
            .spawn(move || watch.run(stamp, &stopping))
            .expect("spawn the thread that watches the project file");
        Self { stop, thread }
    }

    /// Stops watching (a reload under way finishes first).
    pub(crate) fn stop(self) {
        self.stop.store(true, Ordering::Release);
        // A panic there has been printed; the run's result stands.
        let _ = self.thread.join();
    }
}

/// The watching thread's state.
struct Watch {
    path: PathBuf,
    /// The version that runs, as the file has it.
    running: Project,
    editor: Arc<Mutex<LiveEditor>>,
    controller: Controller,
    config: NodeConfig,
    capture: Option<Capture>,
}

impl Watch {
    fn run(&mut self, mut loaded: Option<Stamp>, stop: &AtomicBool) {
        let mut seen = loaded;
        while !stop.load(Ordering::Acquire) {
            std::thread::sleep(POLL);
            // The schedules the engine handed back since: freed here, not at the next edit.
            self.lock().reclaim();
            let now = stamp(&self.path);
            if now.is_some() && now != loaded && now == seen {
                // Tried once per version: a bad one is reported once, a later save applies.
                loaded = now;
                self.reload();
            }
            seen = now;
        }
    }

    fn lock(&self) -> MutexGuard<'_, LiveEditor> {
        // Every edit is committed or discarded under one lock: a panic leaves nothing staged
        // that the next commit would take by mistake.
        self.editor.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn reload(&mut self) {
        let file = self.path.display().to_string();
        let refused = |why: &dyn std::fmt::Display| {
            eprintln!("watch: `{file}` not applied; the run goes on as it was: {why}");
        };
        let new = match Project::load(&self.path) {
            Ok(p) => p,
            Err(e) => return refused(&e),
        };
        let d = diff(&self.running, &new);
        for note in &d.not_applied {
            eprintln!("watch: note: {note}");
        }
        if self.capture.is_none() {
            let input = new
                .nodes
                .iter()
                .position(|n| n.kind == "input" && d.added.contains(&n.name));
            if let Some(i) = input {
                let e = new.node_error(
                    i,
                    format!(
                        "node `{}`: this run has no device input for an `input` node to read; \
                         restart the run to add one",
                        new.nodes[i].name
                    ),
                );
                return refused(&e);
            }
        }
        // Built before the editor is locked: OSC goes on meanwhile (a plugin loads slowly).
        let built = match &self.capture {
            Some(c) => c.connect(|| d.build(&self.config)),
            None => d.build(&self.config),
        };
        let applied = built.and_then(|nodes| {
            let mut live = self.editor.lock().unwrap_or_else(|e| e.into_inner());
            d.apply_built(nodes, &mut live, &mut self.controller)
        });
        match applied {
            Ok(()) => {
                eprintln!("watch: reloaded `{file}`: {d}");
                self.running = new;
            }
            // The graph edits went through: that version is what runs now.
            Err(e @ ApplyError::Control { .. }) => {
                eprintln!("watch: reloaded `{file}` in part: {e}");
                self.running = new;
            }
            Err(e) => refused(&e),
        }
    }
}
