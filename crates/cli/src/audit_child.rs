//! One run of the audit probe (`downbeat-audit-probe`) as a child process: its exit, the last
//! phase it announced, and what it said, with the announcements taken out.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

use downbeat_cli::audit_phase::{Phase, ANNOUNCE_ENV};
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
    /// line, else its exit status.
    pub(crate) fn reason(&self) -> String {
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

/// Runs `probe` with `argv` (and `env` added to its environment) to its end, with phase
/// announcements on.
pub(crate) fn run(
    probe: &Path,
    argv: &[OsString],
    env: &[(&str, OsString)],
    output: Output,
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
    let stderr = child.stderr.take().expect("stderr is piped");
    // Read on a thread of its own, so that neither pipe can fill while the other is read.
    let reader = std::thread::spawn(move || read_stderr(stderr, output));
    let mut stdout = Vec::new();
    if let Some(mut out) = child.stdout.take() {
        out.read_to_end(&mut stdout)
            .map_err(|e| Failure::Runtime(format!("reading the audit probe's output: {e}")))?;
    }
    let status = child
        .wait()
        .map_err(|e| Failure::Runtime(format!("waiting for the audit probe: {e}")))?;
    let (phase, stderr) = reader
        .join()
        .map_err(|_| Failure::Runtime("reading the audit probe's errors failed".into()))?;
    Ok(Outcome {
        status,
        phase,
        stdout,
        stderr,
    })
}

/// Reads the child's stderr to its end: the last phase announced, and the other lines
/// (copied to our stderr as they come with [`Output::Relay`], kept with `Capture`).
fn read_stderr(stderr: impl Read, output: Output) -> (Option<Phase>, String) {
    let mut phase = None;
    let mut kept = String::new();
    for line in BufReader::new(stderr).split(b'\n') {
        let Ok(mut line) = line else { break };
        line.push(b'\n');
        let text = String::from_utf8_lossy(&line);
        if let Some(p) = Phase::parse_line(&text) {
            phase = Some(p);
        } else if output == Output::Relay {
            let _ = std::io::stderr().write_all(&line);
        } else {
            kept.push_str(&text);
        }
    }
    (phase, kept)
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
