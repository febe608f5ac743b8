//! Thread priority and CPU affinity, with the reason when the system refuses.

/// Cores this process may run on.
pub fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Gives the calling thread `SCHED_FIFO` at `priority` (1..=99).
///
/// # Errors
/// The system's reason, e.g. when the process lacks `CAP_SYS_NICE` or an `RLIMIT_RTPRIO`.
pub fn set_current_thread_realtime(priority: i32) -> Result<(), String> {
    set_policy(Policy::Fifo, priority)
}

/// Gives the calling thread `SCHED_RR` at `priority` (1..=99).
///
/// # Errors
/// The system's reason, as for [`set_current_thread_realtime`].
pub fn set_current_thread_round_robin(priority: i32) -> Result<(), String> {
    set_policy(Policy::RoundRobin, priority)
}

/// Gives the calling thread back ordinary (`SCHED_OTHER`) scheduling.
///
/// # Errors
/// The system's reason, as for [`set_current_thread_realtime`].
pub(crate) fn set_current_thread_normal() -> Result<(), String> {
    set_policy(Policy::Other, 0)
}

enum Policy {
    Fifo,
    RoundRobin,
    Other,
}

fn set_policy(policy: Policy, priority: i32) -> Result<(), String> {
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
            Err(format!(
                "{name} {priority} refused: {}",
                std::io::Error::from_raw_os_error(rc)
            ))
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = priority;
        Err(format!("{name} is only implemented on Linux"))
    }
}

/// Pins the calling thread to `core`.
///
/// # Errors
/// The system's reason when the affinity cannot be set.
pub fn pin_current_thread(core: usize) -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `cpu_set_t` is plain data; zeroed is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        if core >= libc::CPU_SETSIZE as usize {
            return Err(format!("core {core} out of range"));
        }
        // SAFETY: `core` was just checked against the set's capacity.
        unsafe { libc::CPU_SET(core, &mut set) };
        // SAFETY: FFI call with a valid, initialised set for the calling thread (pid 0).
        let rc =
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        if rc == 0 {
            Ok(())
        } else {
            Err(format!("core {core}: {}", std::io::Error::last_os_error()))
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = core;
        Err("pinning is only implemented on Linux".into())
    }
}
