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

/// An engine's cost split into its start-up and its steady state, from two runs of the
/// same case that differ only in length: the steady state is what the long run's extra
/// seconds of audio cost, and the start-up what is left of the short run once its own
/// seconds are paid for at that rate. Whatever an engine does once (loading, building the
/// graph, starting threads, opening the file) lands in the start-up; whatever it does per
/// block, in the steady state, whichever engine it is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Split {
    /// CPU seconds per second of audio, start-up excluded.
    pub cpu_per_second: f64,
    /// Wall-clock seconds per second of audio, start-up excluded.
    pub wall_per_second: f64,
    /// CPU seconds spent before the first block, as extrapolated.
    pub startup_cpu: f64,
    /// Wall-clock seconds before the first block, as extrapolated.
    pub startup_wall: f64,
}

impl Split {
    /// The split of a run of `long_seconds` of audio that cost `long` and one of
    /// `short_seconds` that cost `short`.
    pub fn of(long: Cost, long_seconds: f64, short: Cost, short_seconds: f64) -> Self {
        let span = long_seconds - short_seconds;
        let rate = |l: Duration, s: Duration| (l.as_secs_f64() - s.as_secs_f64()) / span;
        let (cpu, wall) = (rate(long.cpu, short.cpu), rate(long.wall, short.wall));
        Self {
            cpu_per_second: cpu,
            wall_per_second: wall,
            startup_cpu: short.cpu.as_secs_f64() - cpu * short_seconds,
            startup_wall: short.wall.as_secs_f64() - wall * short_seconds,
        }
    }
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

/// Runs `cmd` pinned to `cpus`, every thread of it at `SCHED_FIFO` priority `fifo` when
/// given and else at the caller's priority, with stdout and stderr kept in `log`, and
/// returns its cost; a non-zero exit is an error quoting the end of the log.
pub fn run(
    cmd: Command,
    cpus: &[usize],
    fifo: Option<i32>,
    log: &std::path::Path,
) -> Result<Cost, RunError> {
    spawn(cmd, cpus, fifo, log)?.wait()
}

/// Pins the calling thread (or the child between fork and exec: it only builds a
/// `cpu_set_t` on the stack and makes one system call) to `cpus`.
pub fn pin(cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes within it, and the
    // kernel reads it for the length given.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A child started by [`spawn`], not yet waited for.
pub struct Running {
    pid: libc::pid_t,
    start: Instant,
    command: String,
    log: std::path::PathBuf,
}

/// Starts `cmd` as [`run`] does, without waiting for it.
pub fn spawn(
    mut cmd: Command,
    cpus: &[usize],
    fifo: Option<i32>,
    log: &std::path::Path,
) -> Result<Running, RunError> {
    let command = format!("{cmd:?}").replace('"', "");
    let err = |reason: String| RunError {
        command: command.clone(),
        reason,
    };
    let file = std::fs::File::create(log).map_err(|e| err(format!("{}: {e}", log.display())))?;
    let file2 = file.try_clone().map_err(|e| err(e.to_string()))?;
    cmd.stdin(Stdio::null()).stdout(file).stderr(file2);
    let cpus = cpus.to_vec();
    // SAFETY: between fork and exec the closure only builds a cpu_set_t and a sched_param
    // on the stack and calls sched_setaffinity and sched_setscheduler, system calls that are
    // async-signal-safe; it touches no lock or allocation. The policy is inherited by every
    // thread the engine starts.
    unsafe {
        cmd.pre_exec(move || {
            pin(&cpus)?;
            if let Some(priority) = fifo {
                let param = libc::sched_param {
                    sched_priority: priority,
                };
                if libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_takes_the_start_up_out_of_the_rate() {
        // An engine that spends 0.5 s of CPU (0.8 s of wall time) starting and 0.1 s (0.12 s)
        // per second of audio, run for 20 s and for 1 s.
        let cost = |secs: f64| Cost {
            cpu: Duration::from_secs_f64(0.5 + 0.1 * secs),
            wall: Duration::from_secs_f64(0.8 + 0.12 * secs),
        };
        let split = Split::of(cost(20.0), 20.0, cost(1.0), 1.0);
        let near = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(near(split.cpu_per_second, 0.1), "{split:?}");
        assert!(near(split.wall_per_second, 0.12), "{split:?}");
        assert!(near(split.startup_cpu, 0.5), "{split:?}");
        assert!(near(split.startup_wall, 0.8), "{split:?}");
    }
}
