//! Thread priority and CPU affinity, with the reason when the system refuses.

use std::fmt;

use crate::OsError;

/// Why a thread setting (scheduling policy, CPU affinity, timer slack) was refused.
///
/// ```
/// use downbeat_rt::pool::{pin_current_thread, ThreadError};
/// # #[cfg(target_os = "linux")]
/// assert_eq!(
///     pin_current_thread(1 << 20),
///     Err(ThreadError::CoreOutOfRange { core: 1 << 20 })
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ThreadError {
    /// The system refused the scheduling policy (no `CAP_SYS_NICE`, an `RLIMIT_RTPRIO` too
    /// low, a priority out of range).
    Policy {
        /// `SCHED_FIFO`, `SCHED_RR` or `SCHED_OTHER`.
        policy: &'static str,
        /// The priority asked for.
        priority: i32,
        /// What the system said.
        source: OsError,
    },
    /// The core is beyond what an affinity set can name.
    CoreOutOfRange {
        /// The core asked for.
        core: usize,
    },
    /// The system refused the affinity (no such core, say).
    Pin {
        /// The core asked for.
        core: usize,
        /// What the system said.
        source: OsError,
    },
    /// The system refused `PR_SET_TIMERSLACK`.
    TimerSlack {
        /// What the system said.
        source: OsError,
    },
    /// Real-time scheduling was not tried because the environment variable
    /// [`NO_RT_ENV`](crate::clock::NO_RT_ENV) is set.
    DisabledByEnv {
        /// The variable.
        var: &'static str,
    },
    /// The setting is only implemented on Linux.
    Unsupported {
        /// The setting (`SCHED_FIFO`, `pinning`, `timer slack`).
        setting: &'static str,
    },
}

impl fmt::Display for ThreadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThreadError::Policy {
                policy,
                priority,
                source,
            } => write!(f, "{policy} {priority} refused: {source}"),
            ThreadError::CoreOutOfRange { core } => write!(f, "core {core} out of range"),
            ThreadError::Pin { core, source } => write!(f, "core {core}: {source}"),
            ThreadError::TimerSlack { source } => write!(f, "PR_SET_TIMERSLACK refused: {source}"),
            ThreadError::DisabledByEnv { var } => write!(f, "skipped because {var} is set"),
            ThreadError::Unsupported { setting } => {
                write!(f, "{setting} is only implemented on Linux")
            }
        }
    }
}

impl std::error::Error for ThreadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ThreadError::Policy { source, .. }
            | ThreadError::Pin { source, .. }
            | ThreadError::TimerSlack { source } => Some(source),
            ThreadError::CoreOutOfRange { .. }
            | ThreadError::DisabledByEnv { .. }
            | ThreadError::Unsupported { .. } => None,
        }
    }
}

/// Cores this process may run on.
pub fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Gives the calling thread `SCHED_FIFO` at `priority` (1..=99).
///
/// # Errors
/// The system's reason, e.g. when the process lacks `CAP_SYS_NICE` or an `RLIMIT_RTPRIO`.
pub fn set_current_thread_realtime(priority: i32) -> Result<(), ThreadError> {
    set_policy(Policy::Fifo, priority)
}

/// Gives the calling thread `SCHED_RR` at `priority` (1..=99).
///
/// # Errors
/// The system's reason, as for [`set_current_thread_realtime`].
pub fn set_current_thread_round_robin(priority: i32) -> Result<(), ThreadError> {
    set_policy(Policy::RoundRobin, priority)
}

/// Gives the calling thread back ordinary (`SCHED_OTHER`) scheduling.
///
/// # Errors
/// The system's reason, as for [`set_current_thread_realtime`].
pub(crate) fn set_current_thread_normal() -> Result<(), ThreadError> {
    set_policy(Policy::Other, 0)
}

enum Policy {
    Fifo,
    RoundRobin,
    Other,
}

fn set_policy(policy: Policy, priority: i32) -> Result<(), ThreadError> {
    let name = match policy {
        Policy::Fifo => "SCHED_FIFO",
        Policy::RoundRobin => "SCHED_RR",
        Policy::Other => "SCHED_OTHER",
    };
    #[cfg(target_os = "linux")]
    {
        let policy = match policy {
            Policy::Fifo => libc::SCHED_FIFO,
            Policy::RoundRobin => libc::SCHED_RR,
            Policy::Other => libc::SCHED_OTHER,
        };
        let param = libc::sched_param {
            sched_priority: priority,
        };
        // SAFETY: plain FFI call on the calling thread with a valid parameter struct.
        let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), policy, &param) };
        if rc == 0 {
            Ok(())
        } else {
            Err(ThreadError::Policy {
                policy: name,
                priority,
                source: OsError(rc),
            })
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = priority;
        Err(ThreadError::Unsupported { setting: name })
    }
}

/// Pins the calling thread to `core`.
///
/// # Errors
/// The system's reason when the affinity cannot be set.
pub fn pin_current_thread(core: usize) -> Result<(), ThreadError> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `cpu_set_t` is plain data; zeroed is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        if core >= libc::CPU_SETSIZE as usize {
            return Err(ThreadError::CoreOutOfRange { core });
        }
        // SAFETY: `core` was just checked against the set's capacity.
        unsafe { libc::CPU_SET(core, &mut set) };
        // SAFETY: FFI call with a valid, initialised set for the calling thread (pid 0).
        let rc =
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        if rc == 0 {
            Ok(())
        } else {
            Err(ThreadError::Pin {
                core,
                source: OsError::last(),
            })
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = core;
        Err(ThreadError::Unsupported { setting: "pinning" })
    }
}
