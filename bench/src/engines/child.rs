//! Running one engine as a child process and taking its CPU time from the kernel.

use std::fmt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What one run cost.
#[derive(Clone, Copy, Debug)]
pub struct Cost {
    /// User plus system CPU time of the child and every thread it had (`wait4`'s rusage).
    pub cpu: Duration,
    /// Wall-clock time from spawn to exit.
    pub wall: Duration,
}

/// A run that failed.
#[derive(Debug)]
pub struct RunError {
    pub command: String,
    pub reason: String,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.command, self.reason)
    }
}

impl std::error::Error for RunError {}

/// Runs `cmd` pinned to `cpus` at the caller's priority (every engine alike), with stdout
/// and stderr kept in `log`, and returns its cost; a non-zero exit is an error quoting the
/// end of the log.
pub fn run(cmd: Command, cpus: &[usize], log: &std::path::Path) -> Result<Cost, RunError> {
    spawn(cmd, cpus, log)?.wait()
}

/// A child started by [`spawn`], not yet waited for.
pub struct Running {
    pid: libc::pid_t,
    start: Instant,
    command: String,
    log: std::path::PathBuf,
}

/// Starts `cmd` as [`run`] does, without waiting for it.
pub fn spawn(mut cmd: Command, cpus: &[usize], log: &std::path::Path) -> Result<Running, RunError> {
    let command = format!("{cmd:?}").replace('"', "");
    let err = |reason: String| RunError {
        command: command.clone(),
        reason,
    };
    let file = std::fs::File::create(log).map_err(|e| err(format!("{}: {e}", log.display())))?;
    let file2 = file.try_clone().map_err(|e| err(e.to_string()))?;
    cmd.stdin(Stdio::null()).stdout(file).stderr(file2);
    let cpus = cpus.to_vec();
    // SAFETY: between fork and exec the closure only builds a cpu_set_t on the stack and
    // calls sched_setaffinity, both async-signal-safe; it touches no lock or allocation.
    unsafe {
        cmd.pre_exec(move || {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &c in &cpus {
                libc::CPU_SET(c, &mut set);
            }
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let start = Instant::now();
    let child = cmd.spawn().map_err(|e| err(e.to_string()))?;
    Ok(Running {
        pid: child.id() as libc::pid_t,
        start,
        command,
        log: log.to_path_buf(),
    })
}

impl Running {
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Waits for the child; a non-zero exit is an error quoting the end of its log.
    pub fn wait(self) -> Result<Cost, RunError> {
        let (pid, start, log) = (self.pid, self.start, self.log.as_path());
        let err = |reason: String| RunError {
            command: self.command.clone(),
            reason,
        };
        let mut status = 0;
        // SAFETY: rusage is plain data the kernel fills; `pid` is our child, not yet reaped
        // (std's Child only reaps in wait/try_wait, which are never called on it).
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointers to locals for the duration of the call.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        let wall = start.elapsed();
        if r != pid {
            return Err(err(format!("wait4: {}", std::io::Error::last_os_error())));
        }
        if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let tail: String = text
                .lines()
                .rev()
                .take(8)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n");
            return Err(err(format!(
                "exit status {status}; its output ends:\n{tail}"
            )));
        }
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        Ok(Cost {
            cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
            wall,
        })
    }
}
