//! The control thread: a live edit hot-swapped in every second, the schedule it replaced
//! freed, then a reading of the process.
//!
//! It waits for the device's second block, then starts the OSC sender process (so that no
//! traffic piles up before the engine runs; a backlog of more than the schedule's queue
//! holds would keep the sequencer's events waiting behind it) and counts seconds from there.
//! Each second `k`:
//!
//! 1. at `k` s, writes the project's other variant to its file, loads and builds it, and
//!    sends the schedule to the engine, which swaps it in at its next block;
//! 2. as soon as the engine has swapped it in (within half a second), frees the schedule it
//!    replaced (`Reclaimer::collect`) and adds up its nodes' loss counters (a player's
//!    underruns);
//! 3. 0.2 s later, once the old player's stream has left the reader thread and closed its
//!    file, reads the process (`/proc/self`). A reading whose threads or descriptors differ
//!    from the first one is taken again for up to 0.3 s, so that only a difference that stays
//!    counts, and what differs is printed.
//!
//! It is also the soak's watchdog: an engine whose position has not moved for [`STALL`] is
//! stuck (a healthy one moves every 1.45 ms), and the soak ends there (see
//! [`super::stalled`]) rather than wait for a device that will never hand it back.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use downbeat::control::Controller;
use downbeat::project::Project;
use downbeat::swap::ScheduleSender;
use downbeat_graph::SharedMonitor;
use downbeat_rt::reclaim::Reclaimer;

use super::osc;
use super::proc_self::{self, Counts};
use super::project::Files;

/// How long the engine may take to swap a schedule in (it does at its next block).
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
    pub sender: ScheduleSender,
    pub reclaimer: Reclaimer,
    pub files: Files,
    /// A controller of the engine, only to see its position move.
    pub position: Controller,
    /// Where the OSC sender process sends, and for how long.
    pub osc_to: SocketAddr,
    pub osc_seconds: f64,
    /// The counters of the schedule the engine starts with.
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
    /// Schedules sent to the engine.
    pub swaps_sent: u64,
    /// Edits that failed: a project that did not load or build, a swap channel full, a
    /// reading of `/proc` that failed. Each is printed.
    pub failures: u64,
    /// The longest load-and-build of an edit, in ms.
    pub build_ms_max: f64,
    /// Frames of silence where a player's file should have played, every schedule's.
    pub underrun_frames: u64,
    /// Every other loss counter of every schedule's nodes (see `NodeCount::loss`).
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
    // The schedules alive or in flight, oldest first: the running one, at most one sent and
    // one retired. Their counters are read when the reclaimer frees them.
    let mut alive: VecDeque<Vec<(String, SharedMonitor)>> = VecDeque::with_capacity(8);
    alive.push_back(std::mem::take(&mut s.first_monitors));
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
        match edit(&s, k) {
            Ok((schedule, ms)) => {
                out.build_ms_max = out.build_ms_max.max(ms);
                let monitors = schedule.monitors();
                match s.sender.send(schedule) {
                    Ok(()) => {
                        alive.push_back(monitors);
                        out.swaps_sent += 1;
                        sent = true;
                    }
                    Err(e) => {
                        eprintln!("soak: swap {k}: {e}");
                        out.failures += 1;
                    }
                }
            }
            Err(e) => {
                eprintln!("soak: edit {k}: {e}");
                out.failures += 1;
            }
        }
        // The swap retires one schedule: wait for it (a run that ends first stops here).
        let within = Instant::now() + SWAP_WITHIN;
        let mut freed = 0;
        loop {
            for _ in 0..s.reclaimer.collect() {
                freed += 1;
                if let Some(monitors) = alive.pop_front() {
                    add_losses(&mut out, &monitors);
                }
            }
            if freed > 0 || !sent || Instant::now() >= within || stop.load(Ordering::Acquire) {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        if !sleep_until(Instant::now() + READ_AFTER, stop) {
            break;
        }
        if sent && freed == 0 {
            eprintln!(
                "soak: swap {k}: the engine did not take the schedule within {SWAP_WITHIN:?}"
            );
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
    // The schedules left: the engine's last one and any sent too late to be swapped in.
    for monitors in &alive {
        add_losses(&mut out, monitors);
    }
    drop(leaked_fds);
    out
}

/// Writes the `k`th edit to the project file, loads it and builds it (the time taken, in ms,
/// with it).
fn edit(s: &Setup, k: u32) -> Result<(downbeat_graph::Schedule, f64), String> {
    let t = Instant::now();
    let text = &s.files.variants[k as usize % 2];
    std::fs::write(&s.files.project, text).map_err(|e| e.to_string())?;
    let project = Project::load(&s.files.project).map_err(|e| e.to_string())?;
    let schedule = project.build().map_err(|e| e.to_string())?;
    Ok((schedule, t.elapsed().as_secs_f64() * 1e3))
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

/// Adds a freed schedule's loss counters.
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
