//! The few system calls the clock needs, with the system's reason when one is refused.

use std::time::Duration;

/// Nanoseconds on `CLOCK_MONOTONIC`, the clock `clock_nanosleep` sleeps against.
///
/// On Linux this is a vDSO call: no system call, cheap enough to spin on.
pub fn now_ns() -> u64 {
    read_clock(libc::CLOCK_MONOTONIC)
}

/// CPU time consumed so far by the calling thread.
pub fn thread_cpu_ns() -> u64 {
    read_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn read_clock(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; both clock ids exist on every Unix we build for.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    debug_assert_eq!(rc, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until `deadline_ns` on `CLOCK_MONOTONIC`.
///
/// An absolute deadline, so a wake-up that comes late never shifts the following ones.
pub fn sleep_until_ns(deadline_ns: u64) {
    #[cfg(target_os = "linux")]
    {
        let ts = libc::timespec {
            tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
        };
        loop {
            // SAFETY: `ts` is a valid timespec; a null remainder is allowed with TIMER_ABSTIME.
            let rc = unsafe {
                libc::clock_nanosleep(
                    libc::CLOCK_MONOTONIC,
                    libc::TIMER_ABSTIME,
                    &ts,
                    std::ptr::null_mut(),
                )
            };
            // A signal interrupts the sleep; the absolute deadline makes retrying exact.
            if rc != libc::EINTR {
                break;
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let now = now_ns();
        if deadline_ns > now {
            std::thread::sleep(Duration::from_nanos(deadline_ns - now));
        }
    }
}

/// Sets the calling thread's timer slack, the extra time the kernel may add to a sleep to
/// batch wake-ups (50 µs by default for ordinary threads).
pub fn set_timer_slack(slack: Duration) -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        // Zero would mean "back to the process default", not "no slack".
        let ns = slack.as_nanos().clamp(1, u64::MAX as u128) as libc::c_ulong;
        // SAFETY: PR_SET_TIMERSLACK takes one integer argument and affects only this thread.
        let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns, 0, 0, 0) };
        if rc == 0 {
            Ok(())
        } else {
            Err(format!(
                "PR_SET_TIMERSLACK refused: {}",
                std::io::Error::last_os_error()
            ))
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = slack;
        Err("timer slack is only adjustable on Linux".into())
    }
}

/// Gives the calling thread `SCHED_RR` at `priority` (1..=99).
pub fn set_round_robin(priority: i32) -> Result<(), String> {
    crate::pool::set_current_thread_round_robin(priority)
}
