//! The soak (issue 42, "Hardening"): Downbeat left running under everything a live session
//! throws at it, judged on what must not change with time.
//!
//! One process holds the engine (it runs here, through the same library calls
//! `downbeat run --watch --osc` makes, so that the soak can read its figures): the virtual
//! device at 64-frame blocks
//! plays a project made of `examples/projects/fanin84.toml`'s 71 strings and 84
//! compressors, a saw `synth` and a plucked string played by `examples/projects/tune.mid`
//! on loop (a sequencer thread sends each loop's notes a second ahead through a
//! `Controller`), and a streamed `player` looping a file the soak writes, all into a mix.
//! Beside it, for the whole run:
//!
//! * a child process (this binary again, `soak --osc-send`) sends 1,000 OSC messages a
//!   second over UDP to the engine's OSC server (`downbeat::control::osc::serve`, the
//!   server `downbeat run --osc` starts);
//! * a control thread rewrites the project file every second (alternately adding and
//!   removing a node and changing a filter), loads it and applies the difference as a live
//!   edit (as `downbeat run --watch` does: every other node runs on), then frees the
//!   schedule it replaced and samples the process: resident memory, threads and file
//!   descriptors (`/proc/self`);
//! * the device records everything it plays to a WAV file through its writer thread.
//!
//! At the end every figure is checked against its bound (see [`checks`]); any figure out of
//! bounds makes the command exit 1. An engine whose position stands still for 10 s ends the
//! soak at once, with exit 1 and every thread's CPU and priority ([`stalled`]). `--quick`
//! runs 10 s, for the smoke runs.

mod checks;
mod control;
mod osc;
mod proc_self;
mod project;
mod sequencer;
mod wav;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use downbeat::control::osc as osc_server;
use downbeat::device::{Device, RunLength, Virtual};
use downbeat::project::Project;
use downbeat::Engine;
use downbeat_graph::NodeConfig;

use checks::Outcome;

/// Options of `downbeat-bench soak`.
#[derive(clap::Args, Clone, Debug)]
pub struct SoakArgs {
    /// Minutes to run.
    #[arg(long, default_value_t = 1.0)]
    pub minutes: f64,
    /// Print one JSON object (each figure and its bound as rows) on stdout; the table of
    /// checks goes to stderr.
    #[arg(long)]
    pub json: bool,
    /// Smoke mode: 10 s instead of `--minutes` (memory is judged from the 5th second).
    #[arg(long)]
    pub quick: bool,
    /// Keep the working folder (project, player file, recording) and print where it is.
    #[arg(long)]
    pub keep: bool,
    /// Internal: be the OSC sender process, sending to this UDP address.
    #[arg(long, hide = true, value_name = "ADDR")]
    pub osc_send: Option<String>,
    /// Internal: how long the OSC sender process sends.
    #[arg(long, hide = true, value_name = "SECONDS", default_value_t = 0.0)]
    pub osc_seconds: f64,
    /// Test hook: the control thread leaks this many kB of touched memory every second
    /// once memory is being judged, to see the memory check fail.
    #[arg(long, hide = true, value_name = "KB", default_value_t = 0)]
    pub test_leak_kb: usize,
    /// Test hook: the control thread leaks one file descriptor every second, to see the
    /// descriptor check fail.
    #[arg(long, hide = true)]
    pub test_leak_fd: bool,
    /// Diagnosis: when the engine's position stands still this many milliseconds, stop the
    /// kernel's trace (`/sys/kernel/tracing/tracing_on`, set up beforehand with the
    /// scheduler's events) so that it ends at the stall, and say when.
    #[arg(long, hide = true, value_name = "MS")]
    pub trace_stalls: Option<u64>,
}

/// Frames per block: the setting, far below fanin84's own 512.
pub const BLOCK: usize = 64;
/// OSC messages per second from the sender process.
pub const OSC_RATE: u32 = 1000;
/// Seconds a `--quick` run lasts.
const QUICK_SECONDS: f64 = 10.0;
/// Memory is judged from this second on (the "from the 20th second"): by then every
/// buffer of the run exists and the allocator has seen a full cycle of swaps.
const MEMORY_FROM: f64 = 20.0;

/// Runs `downbeat-bench soak` and returns the process's exit code: 0 when every figure is
/// within its bound, 1 when one is not, 2 when the soak could not run.
pub fn main(args: &SoakArgs) -> i32 {
    if let Some(addr) = &args.osc_send {
        return osc::sender_main(addr, args.osc_seconds, OSC_RATE);
    }
    let seconds = if args.quick {
        QUICK_SECONDS
    } else {
        args.minutes * 60.0
    };
    if !(seconds >= 5.0 && seconds.is_finite()) {
        eprintln!("soak: --minutes must give at least 5 seconds");
        return 2;
    }
    let dir = std::env::temp_dir().join(format!("downbeat-soak-{}", std::process::id()));
    let result = std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot make {}: {e}", dir.display()))
        .and_then(|()| soak(&dir, seconds, args));
    if args.keep {
        eprintln!("soak: kept {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    match result {
        Ok(outcome) => {
            let judged = checks::judge(&outcome);
            let report = checks::report(&outcome, &judged);
            let table = checks::table(&outcome, &judged);
            if args.json {
                eprint!("{table}");
                report.print(true);
            } else {
                print!("{table}");
                for note in &report.notes {
                    println!("note: {note}");
                }
            }
            i32::from(judged.iter().any(|c| !c.passed))
        }
        Err(e) => {
            eprintln!("soak: {e}");
            2
        }
    }
}

/// The whole run in `dir`: sets everything up, plays `seconds`, gathers the figures.
fn soak(dir: &Path, seconds: f64, args: &SoakArgs) -> Result<Outcome, String> {
    let files = project::write(dir)?;
    let first = Project::load(&files.project).map_err(|e| e.to_string())?;
    let (editor, schedule) = first.editor().map_err(|e| e.to_string())?;
    let rate = schedule.config().sample_rate;
    let length = RunLength::seconds(seconds, rate);
    let blocks = length.frames.div_ceil(BLOCK as u64) as usize;
    let first_monitors = schedule.monitors();
    // The load of every block is kept (prefaulted now, so the history does not grow the
    // process while memory is judged) for the early and late load figures.
    let mut engine = Engine::with_history(schedule, blocks + 16);
    let threads = downbeat_rt::pool::available_cores();
    for note in engine.set_threads(threads) {
        eprintln!("soak: note: {note}");
    }
    let live = engine.live_editor(editor);
    let config = NodeConfig {
        sample_rate: rate,
        max_block: BLOCK,
    };
    let mut refused_shown = 0;
    let server = osc_server::serve(
        "127.0.0.1:0",
        engine.controller(osc::SERVER_QUEUE),
        move |from, why| {
            // Every refusal is counted and fails the run; the first few say why.
            if refused_shown < 5 {
                eprintln!("soak: osc: rejected a packet from {from}: {why}");
                refused_shown += 1;
            }
        },
    )
    .map_err(|e| format!("cannot serve OSC: {e}"))?;
    let sequence = sequencer::Sequence::load(&first, &engine, &files.midi, length.frames)?;
    let sequencer_control = engine.controller(sequencer::QUEUE);
    let stop = Arc::new(AtomicBool::new(false));

    let sequencer = {
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("soak-sequencer".into())
            .spawn(move || sequence.play(sequencer_control, &stop))
            .map_err(|e| e.to_string())?
    };
    let memory_from = if seconds >= 2.0 * MEMORY_FROM {
        MEMORY_FROM
    } else {
        seconds / 2.0
    };
    let control = control::start(
        control::Setup {
            live,
            params: engine.controller(osc::SERVER_QUEUE),
            running: first.clone(),
            config,
            files: files.clone(),
            position: engine.controller(1),
            osc_to: server.local_addr(),
            // The sender stops a second before the run does, so that every message it sent
            // has been taken by the engine when the run ends (a message left in a queue is
            // not lost, but neither would it be seen to arrive).
            osc_seconds: seconds - 1.0,
            first_monitors,
            samples: seconds.ceil() as usize + 8,
            leak_kb: args.test_leak_kb,
            leak_from: memory_from,
            leak_fd: args.test_leak_fd,
            stall: Stall {
                dir: dir.to_path_buf(),
                keep: args.keep,
                json: args.json,
                rate,
            },
        },
        Arc::clone(&stop),
    )?;

    if let Some(ms) = args.trace_stalls {
        let position = engine.controller(1);
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("soak-tracer".into())
            .spawn(move || trace_stalls(&position, Duration::from_millis(ms), &stop))
            .map_err(|e| e.to_string())?;
    }
    let mut device = Virtual::new(Some(files.recording.clone()));
    let ran = device.run(engine, length);
    stop.store(true, Ordering::Release);
    let mut control = control.join().map_err(|_| "the control thread panicked")?;
    let midi = sequencer
        .join()
        .map_err(|_| "the sequencer thread panicked")?;
    let sender = control
        .osc_sender
        .take()
        .ok_or("the OSC sender did not start")?;
    let sent = osc::wait_sender(sender)?;
    // Waits for the socket to be empty: every packet sent has been handled.
    std::thread::sleep(Duration::from_millis(100));
    let osc_counts = server.stop();
    let run = ran.map_err(|e| format!("the virtual device failed: {e}"))?;
    // Gaps are judged from the first second on, before which no edit comes: the sources
    // start at their own moments once the graph has filled.
    let recording = wav::check(&files.recording, u64::from(rate));
    Ok(Outcome::gather(checks::Gathered {
        seconds,
        rate,
        threads,
        length,
        memory_from,
        run,
        control,
        midi,
        osc_sent: sent,
        osc_counts,
        recording,
    }))
}

/// What the watchdog needs to end a soak whose engine is stuck.
#[derive(Clone, Debug)]
pub struct Stall {
    /// The working folder, removed unless `keep`.
    pub dir: PathBuf,
    pub keep: bool,
    pub json: bool,
    pub rate: u32,
}

/// Ends a soak whose engine has not moved for [`control::STALL`], `at` seconds into the run
/// and stuck at `frame`: says so, with every thread's state, CPU and priority (a stuck audio
/// thread is a matter of who holds which core), prints a report whose one figure fails, and
/// exits 1. The device will never hand the engine back, so the figures of the run are lost.
pub fn stalled(s: &Stall, at: f64, frame: u64) -> ! {
    let audio = frame as f64 / f64::from(s.rate.max(1));
    eprintln!(
        "soak: FAILED: the engine's position has not moved for {:?}: stuck at frame {frame} \
         ({audio:.3} s of audio) {at:.1} s into the run. Its threads:",
        control::STALL
    );
    for t in proc_self::threads() {
        eprintln!("soak:   {t}");
    }
    let mut report = crate::report::Report::new("soak");
    report.add("engine_stalled_at", "downbeat", "s", &[audio]);
    report.add("failed_checks", "downbeat", "checks", &[1.0]);
    if s.json {
        report.print(true);
    }
    if !s.keep {
        let _ = std::fs::remove_dir_all(&s.dir);
    }
    std::process::exit(1)
}

/// Stops the kernel's trace the first time `position` stands still for `limit`, so that the
/// trace's last events are those of the stall.
fn trace_stalls(position: &downbeat::control::Controller, limit: Duration, stop: &AtomicBool) {
    let start = std::time::Instant::now();
    let (mut frame, mut moved) = (position.position(), std::time::Instant::now());
    while !stop.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(2));
        let now = position.position();
        if now != frame || now == 0 {
            (frame, moved) = (now, std::time::Instant::now());
        } else if moved.elapsed() >= limit {
            let stopped = std::fs::write("/sys/kernel/tracing/tracing_on", "0");
            eprintln!(
                "soak: trace: position stood still {:?} at frame {frame}, {:.3} s into the \
                 run; trace stopped: {stopped:?}",
                moved.elapsed(),
                start.elapsed().as_secs_f64()
            );
            return;
        }
    }
}

/// Where the soak's inputs come from in the repository.
fn repo_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}
