//! Scheduler and memory-manager counters of the guarded thread, from
//! `getrusage(RUSAGE_THREAD)`.

use super::{Tracker, Untracked};

/// How often the guarded thread was switched out and faulted, between arming
/// and disarming: the difference of two `getrusage(RUSAGE_THREAD)` readings.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let report = downbeat_rt::guard::check(|| std::thread::sleep(Duration::from_millis(1)));
/// # #[cfg(target_os = "linux")]
/// assert!(report.rusage.unwrap().voluntary_context_switches >= 1); // sleeping blocks
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rusage {
    /// The thread gave up the CPU: it blocked (sleep, lock wait, I/O).
    pub voluntary_context_switches: u64,
    /// The scheduler preempted the thread. Not the code's doing.
    pub involuntary_context_switches: u64,
    /// Faults served without I/O: first touch of fresh memory, copy-on-write.
    pub minor_page_faults: u64,
    /// Faults that waited for I/O, such as swapped-out or unread file pages.
    pub major_page_faults: u64,
}

impl Rusage {
    /// Minor plus major page faults.
    ///
    /// ```
    /// let r = downbeat_rt::guard::Rusage::default();
    /// assert_eq!(r.page_faults(), 0);
    /// ```
    pub fn page_faults(&self) -> u64 {
        self.minor_page_faults + self.major_page_faults
    }

    pub(crate) fn since(&self, start: &Rusage) -> Rusage {
        Rusage {
            voluntary_context_switches: self
                .voluntary_context_switches
                .saturating_sub(start.voluntary_context_switches),
            involuntary_context_switches: self
                .involuntary_context_switches
                .saturating_sub(start.involuntary_context_switches),
            minor_page_faults: self
                .minor_page_faults
                .saturating_sub(start.minor_page_faults),
            major_page_faults: self
                .major_page_faults
                .saturating_sub(start.major_page_faults),
        }
    }
}

/// Reads the calling thread's counters, or says why that is impossible here.
#[cfg(target_os = "linux")]
pub(crate) fn snapshot() -> Result<Rusage, Untracked> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `usage` is a writable `struct rusage`. The stub keeps the
    // reading itself out of the trap handler, whose epilogue would run after
    // the reading and so inside the measured window.
    let failed = unsafe {
        super::seccomp::untracked_syscall(
            super::syscalls::nr::GETRUSAGE,
            [
                libc::RUSAGE_THREAD as u64,
                usage.as_mut_ptr() as u64,
                0,
                0,
                0,
                0,
            ],
        )
    } != 0;
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: `usage` is a writable `struct rusage`.
    let failed = unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) } != 0;
    if failed {
        return Err(Untracked::Failed {
            tracker: Tracker::Rusage,
            call: "getrusage(RUSAGE_THREAD)",
            source: crate::OsError::last(),
        });
    }
    // SAFETY: filled in by the successful call.
    let usage = unsafe { usage.assume_init() };
    let count = |n: libc::c_long| u64::try_from(n).unwrap_or(0);
    Ok(Rusage {
        voluntary_context_switches: count(usage.ru_nvcsw),
        involuntary_context_switches: count(usage.ru_nivcsw),
        minor_page_faults: count(usage.ru_minflt),
        major_page_faults: count(usage.ru_majflt),
    })
}

/// Reads the calling thread's counters, or says why that is impossible here.
#[cfg(not(target_os = "linux"))]
pub(crate) fn snapshot() -> Result<Rusage, Untracked> {
    Err(Untracked::Unsupported {
        tracker: Tracker::Rusage,
        os: std::env::consts::OS,
        arch: std::env::consts::ARCH,
    })
}
