//! The control thread: a live edit every second, the schedule it replaced freed, then a
//! reading of the process.
//!
//! It waits for the device's second block, then starts the OSC sender process (so that no
//! traffic piles up before the engine runs; a backlog of more than the schedule's queue
//! holds would keep the sequencer's events waiting behind it) and counts seconds from there.
//! Each second `k`:
//!
//! 1. at `k` s, writes the project's other variant to its file, loads it, and applies the
//!    difference to the running graph as `downbeat run --watch` does
//!    ([`downbeat::project::diff`]): the added or removed node as one committed edit, the
//!    moved filter as an event; the engine takes the edit over at its next block, every
//!    other node running on (the player's stream, the voices, the compressors' frames);
//! 2. as soon as the engine has taken it (within half a second), frees the schedule it
//!    replaced and the node the edit removed ([`LiveEditor::reclaim`]);
//! 3. 0.2 s later, once the old player's stream has left the reader thread and closed its
//!    file, reads the process (`/proc/self`). A reading whose threads or descriptors differ
//!    from the first one is taken again for up to 0.3 s, so that only a difference that stays
//!    counts, and what differs is printed.
//!
//! It is also the soak's watchdog: an engine whose position has not moved for [`STALL`] is
//! stuck (a healthy one moves every 1.45 ms), and the soak ends there (see
//! [`super::stalled`]) rather than wait for a device that will never hand it back.

use std::net::SocketAddr;
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use downbeat::control::Controller;
use downbeat::edit::LiveEditor;
use downbeat::project::diff::diff;
use downbeat::project::Project;
use downbeat_graph::{NodeConfig, SharedMonitor};

use super::osc;
use super::proc_self::{self, Counts};
use super::project::Files;

/// How long the engine may take to take an edit over (it does at its next block).
const SWAP_WITHIN: Duration = Duration::from_millis(500);
/// When, after the old schedule is freed, the process is read.
const READ_AFTER: Duration = Duration::from_millis(200);
/// How long a reading that differs from the first is retried.
const SETTLE: Duration = Duration::from_millis(300);
/// How long the device may take to start.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the engine's position may stand still before the soak calls it stuck: far
/// beyond any scheduling hiccup, and beyond the 4 s the OSC queue and the recording's ring
/// hold.
pub const STALL: Duration = Duration::from_secs(10);

/// What the control thread is given.
pub struct Setup {
    /// Edits the running graph.
    pub live: LiveEditor,
    /// Moves the changed live parameters.
    pub params: Controller,
    /// The version of the project that runs.
    pub running: Project,
    /// The running engine's format, for the nodes an edit adds.
    pub config: NodeConfig,
    pub files: Files,
    /// A controller of the engine, only to see its position move.
    pub position: Controller,
    /// Where the OSC sender process sends, and for how long.
    pub osc_to: SocketAddr,
    pub osc_seconds: f64,
    /// The counters of the schedule the engine starts with: every node but the one the
    /// edits add and remove (a sine, which has none) runs for the whole soak.
    pub first_monitors: Vec<(String, SharedMonitor)>,
    /// Readings to make room for (one a second), so the list never grows during the run.
    pub samples: usize,
    /// Test hook: kB to leak every second from `leak_from` seconds on.
    pub leak_kb: usize,
    pub leak_from: f64,
    /// Test hook: leak a file descriptor every second.
    pub leak_fd: bool,
    /// What the watchdog needs to end the soak.
    pub stall: super::Stall,
}

/// One reading of the process.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Seconds since the device started.
    pub at: f64,
    pub counts: Counts,
}

/// What the control thread did and saw.
#[derive(Debug, Default)]
pub struct Controlled {
    /// The OSC sender process, once started.
    pub osc_sender: Option<Child>,
    pub samples: Vec<Sample>,
    /// Edits committed.
    pub edits: u64,
    /// Edits that failed: a project that did not load, an edit refused or not taken in
    /// time, a reading of `/proc` that failed. Each is printed.
    pub failures: u64,
    /// The longest load-diff-and-commit of an edit, in ms.
    pub build_ms_max: f64,
    /// Frames of silence where a player's file should have played.
    pub underrun_frames: u64,
    /// Every other loss counter of the nodes (see `NodeCount::loss`).
    pub other_losses: u64,
}

/// Starts the thread; it runs until `stop`.
pub fn start(setup: Setup, stop: Arc<AtomicBool>) -> Result<JoinHandle<Controlled>, String> {
    std::thread::Builder::new()
        .name("soak-control".into())
        .spawn(move || run(setup, &stop))
        .map_err(|e| format!("cannot start the control thread: {e}"))
}

/// Sleeps until `at`, in short steps so that a stop is seen; false when stopped.
fn sleep_until(at: Instant, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Acquire) {
            return false;
        }
        let now = Instant::now();
        if now >= at {
            return true;
        }
        std::thread::sleep((at - now).min(Duration::from_millis(50)));
    }
}

fn run(mut s: Setup, stop: &AtomicBool) -> Controlled {
    let mut out = Controlled {
        samples: Vec::with_capacity(s.samples),
        ..Controlled::default()
    };
    let waited = Instant::now();
    while s.position.position() == 0 {
        if stop.load(Ordering::Acquire) || waited.elapsed() > START_TIMEOUT {
            eprintln!("soak: the device did not start");
            out.failures += 1;
            return out;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let start = Instant::now();
    match osc::spawn_sender(s.osc_to, s.osc_seconds) {
        Ok(child) => out.osc_sender = Some(child),
        Err(e) => {
            eprintln!("soak: {e}");
            out.failures += 1;
        }
    }
    let mut baseline: Option<Counts> = None;
    // The first reading's descriptors and threads, to say what changed.
    let mut described = Vec::new();
    let mut changes_said = 0;
    let mut leaked_fds = Vec::with_capacity(s.samples);
    let (mut frame, mut moved) = (s.position.position(), Instant::now());
    for k in 1u32.. {
        let tick = start + Duration::from_secs(u64::from(k));
        if !sleep_until(tick, stop) {
            break;
        }
        let now = s.position.position();
        if now != frame {
            (frame, moved) = (now, Instant::now());
        } else if moved.elapsed() >= STALL && !stop.load(Ordering::Acquire) {
            super::stalled(&s.stall, start.elapsed().as_secs_f64(), frame);
        }
        let mut sent = false;
        match edit(&mut s, k) {
            Ok(ms) => {
                out.build_ms_max = out.build_ms_max.max(ms);
                out.edits += 1;
                sent = true;
            }
            Err(e) => {
                eprintln!("soak: edit {k}: {e}");
                out.failures += 1;
            }
        }
        // The edit retires one schedule: wait for it (a run that ends first stops here).
        let within = Instant::now() + SWAP_WITHIN;
        let mut freed = 0;
        loop {
            freed += s.live.reclaim();
            if freed > 0 || !sent || Instant::now() >= within || stop.load(Ordering::Acquire) {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        if !sleep_until(Instant::now() + READ_AFTER, stop) {
            break;
        }
        if sent && freed == 0 {
            eprintln!("soak: edit {k}: the engine did not take it within {SWAP_WITHIN:?}");
            out.failures += 1;
        }
        let at = start.elapsed().as_secs_f64();
        if s.leak_kb > 0 && at >= s.leak_from {
            // Touched, so that it is resident.
            std::mem::forget(vec![1u8; s.leak_kb * 1024]);
        }
        if s.leak_fd {
            if let Ok(f) = std::fs::File::open(&s.files.project) {
                leaked_fds.push(f);
            }
        }
        match settled(baseline) {
            Ok(counts) => {
                match baseline {
                    None => {
                        baseline = Some(counts);
                        described = proc_self::describe();
                    }
                    Some(b) if b.threads != counts.threads || b.fds != counts.fds => {
                        // The first few times: a leak would say so every second.
                        if changes_said < 3 {
                            say_what_changed(at, &described);
                            changes_said += 1;
                        }
                    }
                    Some(_) => {}
                }
                out.samples.push(Sample { at, counts });
            }
            Err(e) => {
                eprintln!("soak: cannot read /proc/self: {e}");
                out.failures += 1;
            }
        }
    }
    // The handles count on in the nodes the edits kept, which is all that have them.
    add_losses(&mut out, &s.first_monitors);
    drop(leaked_fds);
    out
}

/// Writes the `k`th version to the project file, loads it and applies the difference to
/// the running graph; the time taken, in ms.
fn edit(s: &mut Setup, k: u32) -> Result<f64, String> {
    let t = Instant::now();
    let text = &s.files.variants[k as usize % 2];
    std::fs::write(&s.files.project, text).map_err(|e| e.to_string())?;
    let new = Project::load(&s.files.project).map_err(|e| e.to_string())?;
    let d = diff(&s.running, &new);
    if !d.has_edits() {
        return Err("the two versions differ by no node or edge".into());
    }
    d.apply(&mut s.live, &mut s.params, &s.config)
        .map_err(|e| e.to_string())?;
    s.running = new;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

/// Reads the process; while its threads or descriptors differ from `baseline`, reads again
/// for up to [`SETTLE`]: a thread or a file on its way out is not a leak, one that stays is.
fn settled(baseline: Option<Counts>) -> std::io::Result<Counts> {
    let until = Instant::now() + SETTLE;
    loop {
        let c = proc_self::read()?;
        let same = baseline.is_none_or(|b| b.threads == c.threads && b.fds == c.fds);
        if same || Instant::now() >= until {
            return Ok(c);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Prints the descriptors and threads that differ from the first reading's, `first`.
fn say_what_changed(at: f64, first: &[String]) {
    // Differences of the two lists as multisets: two descriptors of one file are two.
    let mut new = proc_self::describe();
    let mut gone = Vec::new();
    for line in first {
        match new.iter().position(|l| l == line) {
            Some(i) => {
                new.remove(i);
            }
            None => gone.push(line),
        }
    }
    eprintln!("soak: at {at:.1} s, since the first reading: gone {gone:?}, new {new:?}");
}

/// Adds the nodes' loss counters.
fn add_losses(out: &mut Controlled, monitors: &[(String, SharedMonitor)]) {
    for (_, m) in monitors {
        for c in m.counts().into_iter().filter(|c| c.loss) {
            if c.name == "underrun_frames" {
                out.underrun_frames += c.value;
            } else if c.name != "underruns" {
                // `underruns` counts the same silences as `underrun_frames`, in episodes.
                out.other_losses += c.value;
            }
        }
    }
}
