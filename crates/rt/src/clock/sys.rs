//! The few system calls the clock needs, with the system's reason when one is refused.

use std::time::Duration;

use crate::pool::ThreadError;

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
///
/// # Errors
/// [`ThreadError::TimerSlack`] with the system's reason; [`ThreadError::Unsupported`] off
/// Linux.
pub fn set_timer_slack(slack: Duration) -> Result<(), ThreadError> {
    #[cfg(target_os = "linux")]
    {
        // Zero would mean "back to the process default", not "no slack".
        let ns = slack.as_nanos().clamp(1, u64::MAX as u128) as libc::c_ulong;
        // SAFETY: PR_SET_TIMERSLACK takes one integer argument and affects only this thread.
        let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns, 0, 0, 0) };
        if rc == 0 {
            Ok(())
        } else {
            Err(ThreadError::TimerSlack {
                source: crate::OsError::last(),
            })
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = slack;
        Err(ThreadError::Unsupported {
            setting: "timer slack",
        })
    }
}

/// Gives the calling thread `SCHED_RR` at `priority` (1..=99).
pub fn set_round_robin(priority: i32) -> Result<(), ThreadError> {
    crate::pool::set_current_thread_round_robin(priority)
}

/// A thread's scheduling, affinity and timer slack as they were before a [`Ticker`] changed
/// them, so that they can be put back.
///
/// [`Ticker`]: super::Ticker
#[derive(Clone, Copy)]
pub(crate) struct SavedThread {
    thread: u64,
    #[cfg(target_os = "linux")]
    sched: Option<(libc::c_int, libc::c_int)>,
    #[cfg(target_os = "linux")]
    affinity: Option<libc::cpu_set_t>,
    #[cfg(target_os = "linux")]
    slack_ns: Option<libc::c_ulong>,
}

impl SavedThread {
    /// Reads the calling thread's settings.
    pub(crate) fn current() -> Self {
        let thread = thread_token();
        #[cfg(target_os = "linux")]
        {
            let mut policy = 0;
            let mut param = libc::sched_param { sched_priority: 0 };
            // SAFETY: the calling thread, alive; both out-pointers are valid.
            let sched = (unsafe {
                libc::pthread_getschedparam(libc::pthread_self(), &mut policy, &mut param)
            } == 0)
                .then_some((policy, param.sched_priority));
            // SAFETY: `cpu_set_t` is plain data; zeroed is the empty set.
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            // SAFETY: pid 0 is the calling thread; `set` is valid for the size given.
            let affinity = (unsafe {
                libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set)
            } == 0)
                .then_some(set);
            // SAFETY: PR_GET_TIMERSLACK takes no argument and returns the calling thread's slack.
            let slack = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
            let slack_ns = (slack > 0).then_some(slack as libc::c_ulong);
            Self {
                thread,
                sched,
                affinity,
                slack_ns,
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            Self { thread }
        }
    }

    /// Whether the calling thread is the one these settings were read on.
    pub(crate) fn is_current_thread(&self) -> bool {
        thread_token() == self.thread
    }

    /// Puts the settings back on the calling thread, best effort: lowering one's own
    /// priority or widening one's affinity back to what it was is always permitted.
    pub(crate) fn restore(&self) {
        #[cfg(target_os = "linux")]
        {
            if let Some((policy, priority)) = self.sched {
                let param = libc::sched_param {
                    sched_priority: priority,
                };
                // SAFETY: the calling thread, a valid parameter struct read from it earlier.
                unsafe { libc::pthread_setschedparam(libc::pthread_self(), policy, &param) };
            }
            if let Some(set) = &self.affinity {
                // SAFETY: pid 0 is the calling thread; `set` was filled by sched_getaffinity.
                unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) };
            }
            if let Some(ns) = self.slack_ns {
                // SAFETY: PR_SET_TIMERSLACK takes one integer and affects only this thread.
                unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns, 0, 0, 0) };
            }
        }
    }
}

/// A number that names the calling thread for the life of the process. Unlike a `pthread_t`
/// or a kernel thread id, it is never reused after the thread exits, so a ticker dropped on a
/// later thread is never mistaken for one dropped where it was made.
fn thread_token() -> u64 {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicU64, Ordering};

    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static TOKEN: Cell<u64> = const { Cell::new(0) };
    }
    TOKEN.with(|t| {
        if t.get() == 0 {
            t.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        t.get()
    })
}
