//! Why the guard could not watch something: a tracker that did not run ([`Untracked`]), and
//! the notes a report carries beside its findings ([`Note`]).

use std::fmt;

use super::Tracker;
use crate::OsError;

/// Why one of the guard's trackers did not run in a scope. A report with one is not clean:
/// see [`Report::missing_trackers`](super::Report::missing_trackers).
///
/// ```
/// use downbeat_rt::guard::{self, Options, Untracked};
///
/// let (_, report) = guard::check_with(&Options::new().track_syscalls(false), || ());
/// assert_eq!(report.syscall_tracking, Err(Untracked::TurnedOff));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Untracked {
    /// [`GuardAlloc`](super::GuardAlloc) is not the test binary's global allocator.
    NoGuardAllocator,
    /// System-call tracking was turned off by
    /// [`Options::track_syscalls`](super::Options::track_syscalls).
    TurnedOff,
    /// This target has no mechanism for the tracker.
    Unsupported {
        /// The tracker.
        tracker: Tracker,
        /// The target's operating system.
        os: &'static str,
        /// The target's architecture.
        arch: &'static str,
    },
    /// A call the tracker needs failed (a sandbox forbidding `seccomp(2)`, say).
    Failed {
        /// The tracker.
        tracker: Tracker,
        /// The call, as written in C (`prctl(PR_SET_NO_NEW_PRIVS)`).
        call: &'static str,
        /// What the system said.
        source: OsError,
    },
}

impl Untracked {
    /// The tracker this is about.
    ///
    /// ```
    /// use downbeat_rt::guard::{Tracker, Untracked};
    /// assert_eq!(Untracked::NoGuardAllocator.tracker(), Tracker::Allocations);
    /// ```
    pub fn tracker(&self) -> Tracker {
        match self {
            Untracked::NoGuardAllocator => Tracker::Allocations,
            Untracked::TurnedOff => Tracker::Syscalls,
            Untracked::Unsupported { tracker, .. } | Untracked::Failed { tracker, .. } => *tracker,
        }
    }
}

impl fmt::Display for Untracked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Untracked::NoGuardAllocator => f.write_str(
                "allocations not tracked: downbeat_rt::guard::GuardAlloc is not the global \
                 allocator (add `downbeat_rt::install_guard_allocator!();` to the test binary)",
            ),
            Untracked::TurnedOff => f.write_str(
                "system calls not tracked: turned off by Options::track_syscalls(false)",
            ),
            Untracked::Unsupported {
                tracker: Tracker::Syscalls,
                os,
                arch,
            } => write!(
                f,
                "system-call tracking needs Linux on x86_64; this is {os} on {arch}, so system \
                 calls are not tracked"
            ),
            Untracked::Unsupported {
                tracker: Tracker::Rusage,
                os,
                ..
            } => write!(
                f,
                "per-thread getrusage is Linux-only; on {os} context switches and page faults \
                 are not tracked"
            ),
            Untracked::Unsupported { tracker, os, arch } => {
                write!(f, "{tracker} not tracked: unsupported on {os} on {arch}")
            }
            Untracked::Failed {
                tracker: Tracker::Syscalls,
                call,
                source,
            } => write!(f, "seccomp unavailable: {call} failed: {source}"),
            Untracked::Failed {
                tracker,
                call,
                source,
            } => write!(f, "{call} failed ({source}): {tracker} are not tracked"),
        }
    }
}

impl std::error::Error for Untracked {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Untracked::Failed { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Something to know when reading a report that is not a finding of the scope.
///
/// ```
/// use downbeat_rt::guard::{self, Note};
///
/// downbeat_rt::install_guard_allocator!();
///
/// # fn main() {
/// let report = guard::check(|| ());
/// assert!(!report.notes.contains(&Note::Backtraces));
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Note {
    /// The code pages could not be faulted in before the scope, so its first run may report
    /// page faults that are not its own.
    CodeNotPrefaulted(PrefaultError),
    /// The `rtsan` feature is on but RealtimeSanitizer was compiled to no-ops.
    RtsanOff,
    /// Backtraces were captured in the scope, and their page faults and context switches
    /// count.
    Backtraces,
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::CodeNotPrefaulted(e) => e.fmt(f),
            Note::RtsanOff => f.write_str(
                "RealtimeSanitizer off: the `rtsan` feature is on but RTSAN_ENABLE was not set \
                 at build time, so rtsan-standalone compiled to no-ops",
            ),
            Note::Backtraces => {
                f.write_str("page faults and context switches include capturing the backtraces")
            }
        }
    }
}

/// Why the guard could not fault in the code pages before a scope.
///
/// ```
/// use downbeat_rt::guard::PrefaultError;
/// assert!(PrefaultError::NoPopulate.to_string().contains("Linux 5.14"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PrefaultError {
    /// `/proc/self/maps` could not be read.
    Maps(OsError),
    /// `madvise(MADV_POPULATE_*)` is not supported by this kernel.
    NoPopulate,
}

impl fmt::Display for PrefaultError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrefaultError::Maps(e) => write!(
                f,
                "code pages not pre-faulted (reading /proc/self/maps: {e}); first-run page \
                 faults may be reported"
            ),
            PrefaultError::NoPopulate => f.write_str(
                "code pages not pre-faulted (MADV_POPULATE needs Linux 5.14); first-run page \
                 faults may be reported",
            ),
        }
    }
}

impl std::error::Error for PrefaultError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PrefaultError::Maps(e) => Some(e),
            PrefaultError::NoPopulate => None,
        }
    }
}
