//! One run of the audit probe (`downbeat-audit-probe`) as a child process: its exit, the last
//! phase it announced, and what it said, with the announcements taken out.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use downbeat_cli::audit_phase::{parse_line, Phase, ANNOUNCE_ENV};
use downbeat_cli::Failure;

/// The probe's file name (with the platform's executable suffix).
fn probe_name() -> String {
    format!("downbeat-audit-probe{}", std::env::consts::EXE_SUFFIX)
}

/// The probe next to the running executable, as cargo builds and installs them.
pub(crate) fn probe() -> Result<PathBuf, Failure> {
    let exe = std::env::current_exe()
        .map_err(|e| Failure::Runtime(format!("cannot find this executable's path: {e}")))?;
    let probe = exe.with_file_name(probe_name());
    if probe.is_file() {
        Ok(probe)
    } else {
        Err(Failure::Runtime(format!(
            "the audit probe `{}` is missing: build it with `cargo build -p downbeat-cli` (it \
             is installed next to `downbeat`)",
            probe.display()
        )))
    }
}

/// Where the child's output goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Output {
    /// Its stdout is ours, and its stderr lines (but the announcements) are copied to ours
    /// as they come: the single-plugin audit.
    Relay,
    /// Both are kept in the [`Outcome`]: one row of `downbeat audit DIR`.
    Capture,
}

/// How a probe run ended.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// Its exit status.
    pub(crate) status: ExitStatus,
    /// The last phase it announced.
    pub(crate) phase: Option<Phase>,
    /// Its stdout ([`Output::Capture`] only).
    pub(crate) stdout: Vec<u8>,
    /// Its stderr without the announcements ([`Output::Capture`] only).
    pub(crate) stderr: String,
    /// The time limit it ran over, when it was killed for that.
    pub(crate) timed_out: Option<Duration>,
}

impl Outcome {
    /// The signal that ended the child, if one did.
    pub(crate) fn signal(&self) -> Option<i32> {
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            self.status.signal()
        }
        #[cfg(not(unix))]
        None
    }

    /// The probe's own explanation of a failure: its last `error: ` line, else its last
    /// line, else its exit status; for a probe killed for running over its time, that.
    pub(crate) fn reason(&self) -> String {
        if let Some(limit) = self.timed_out {
            return format!("did not finish within {} s: killed", limit.as_secs_f64());
        }
        let lines: Vec<&str> = self
            .stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect();
        if let Some(e) = lines.iter().rev().find_map(|l| l.strip_prefix("error: ")) {
            e.to_string()
        } else if let Some(l) = lines.last() {
            l.to_string()
        } else {
            format!("the audit probe ended with {}", self.status)
        }
    }
}

/// How often a child with a time limit is looked at.
const POLL: Duration = Duration::from_millis(20);

/// Runs `probe` with `argv` (and `env` added to its environment) to its end, with phase
/// announcements on; kills it (`SIGKILL`) once it has run for `limit`, when given.
pub(crate) fn run(
    probe: &Path,
    argv: &[OsString],
    env: &[(&str, OsString)],
    output: Output,
    limit: Option<Duration>,
) -> Result<Outcome, Failure> {
    let mut command = Command::new(probe);
    command
        .args(argv)
        .env(ANNOUNCE_ENV, "1")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .stdout(match output {
            Output::Relay => Stdio::inherit(),
            Output::Capture => Stdio::piped(),
        });
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command
        .spawn()
        .map_err(|e| Failure::Runtime(format!("cannot start `{}`: {e}", probe.display())))?;
    let started = Instant::now();
    // Each pipe is read on a thread of its own, so that neither can fill while this one
    // waits for the child or its time limit. What they read is in `heard` as it comes: a
    // process the plugin started may keep the pipes open after the probe has ended, and
    // then the readers are given up on (`LINGER`) with what they have.
    let heard = Arc::new(Mutex::new(Heard::default()));
    let (done, finished) = mpsc::channel();
    let mut readers = 0;
    if let Some(err) = child.stderr.take() {
        let (heard, done) = (Arc::clone(&heard), done.clone());
        std::thread::spawn(move || {
            read_stderr(err, output, &heard);
            let _ = done.send(());
        });
        readers += 1;
    }
    if let Some(out) = child.stdout.take() {
        let heard = Arc::clone(&heard);
        std::thread::spawn(move || {
            read_stdout(out, &heard);
            let _ = done.send(());
        });
        readers += 1;
    }
    let waited = |e: std::io::Error| Failure::Runtime(format!("waiting for the audit probe: {e}"));
    let mut timed_out = None;
    let status = match limit {
        None => child.wait().map_err(waited)?,
        Some(limit) => loop {
            if let Some(status) = child.try_wait().map_err(waited)? {
                break status;
            }
            if started.elapsed() >= limit {
                // Killing a child that has just ended fails harmlessly; `wait` reaps it.
                let _ = child.kill();
                timed_out = Some(limit);
                break child.wait().map_err(waited)?;
            }
            std::thread::sleep(POLL);
        },
    };
    let deadline = Instant::now() + LINGER;
    for _ in 0..readers {
        let left = deadline.saturating_duration_since(Instant::now());
        if finished.recv_timeout(left).is_err() {
            break;
        }
    }
    let heard = std::mem::take(&mut *heard.lock().unwrap_or_else(|e| e.into_inner()));
    Ok(Outcome {
        status,
        phase: heard.phase,
        stdout: heard.stdout,
        stderr: heard.stderr,
        timed_out,
    })
}

/// How long the pipes' readers are waited for once the probe has ended.
const LINGER: Duration = Duration::from_secs(2);

/// What the readers of a child's pipes have heard so far.
#[derive(Default)]
struct Heard {
    phase: Option<Phase>,
    stderr: String,
    stdout: Vec<u8>,
}

/// Reads the child's stderr to its end: the last phase announced, and the other lines
/// (copied to our stderr as they come with [`Output::Relay`], kept with `Capture`).
fn read_stderr(stderr: impl Read, output: Output, heard: &Mutex<Heard>) {
    for line in BufReader::new(stderr).split(b'\n') {
        let Ok(mut line) = line else { break };
        line.push(b'\n');
        let text = String::from_utf8_lossy(&line);
        let mut heard = heard.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = parse_line(&text) {
            heard.phase = Some(p);
        } else if output == Output::Relay {
            let _ = std::io::stderr().write_all(&line);
        } else {
            heard.stderr.push_str(&text);
        }
    }
}

/// Reads the child's stdout to its end.
fn read_stdout(mut stdout: impl Read, heard: &Mutex<Heard>) {
    let mut chunk = [0u8; 8192];
    while let Ok(n @ 1..) = stdout.read(&mut chunk) {
        let mut heard = heard.lock().unwrap_or_else(|e| e.into_inner());
        heard.stdout.extend_from_slice(&chunk[..n]);
    }
}

/// The usual name of a Linux signal number, for the reports.
///
/// Only the signals a crashing or killed plugin host ends with are named.
pub(crate) fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        31 => "SIGSYS",
        _ => return None,
    })
}

/// `SIGSEGV (signal 11)`, or `signal 40` for a signal without a name here.
pub(crate) fn describe_signal(signal: i32) -> String {
    match signal_name(signal) {
        Some(name) => format!("{name} (signal {signal})"),
        None => format!("signal {signal}"),
    }
}
