//! The guard's independent ways of watching, and which of them this target can have.

use std::fmt;

/// One of the guard's trackers. Each watches one kind of violation by its own
/// mechanism, and each can be missing from a scope: [`Report::missing_trackers`]
/// lists those that did not run, and such a report is not clean (see
/// [`Report::assert_clean`]) unless the missing tracker is explicitly excused
/// with [`Report::assert_clean_allowing_missing`].
///
/// [`Report::missing_trackers`]: super::Report::missing_trackers
/// [`Report::assert_clean`]: super::Report::assert_clean
/// [`Report::assert_clean_allowing_missing`]: super::Report::assert_clean_allowing_missing
///
/// # Examples
///
/// ```
/// use downbeat_rt::guard::{self, Options, Tracker};
///
/// let (_, report) = guard::check_with(&Options::new().track_syscalls(false), || ());
/// assert!(report.missing_trackers().contains(&Tracker::Syscalls));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Tracker {
    /// Allocations and frees, counted by [`GuardAlloc`](super::GuardAlloc).
    /// Missing when the test binary did not install it as its global
    /// allocator: always the test's doing, never the platform's.
    Allocations,
    /// System calls, trapped by a per-thread seccomp filter. Linux x86-64
    /// only; also missing when a sandbox forbids `seccomp(2)` or when
    /// [`Options::track_syscalls`](super::Options::track_syscalls) turned it
    /// off.
    Syscalls,
    /// Voluntary context switches and page faults, from
    /// `getrusage(RUSAGE_THREAD)`. Linux only.
    Rusage,
}

impl Tracker {
    /// Every tracker, in the order reports list them.
    pub const ALL: [Tracker; 3] = [Tracker::Allocations, Tracker::Syscalls, Tracker::Rusage];

    /// The trackers this build target has no mechanism for, whatever the
    /// test does: empty on Linux x86-64, where every tracker must run.
    ///
    /// For a test that also runs on other platforms, this is the one
    /// honest argument to
    /// [`Report::assert_clean_allowing_missing`](super::Report::assert_clean_allowing_missing):
    /// it excuses what the platform lacks and nothing else.
    ///
    /// ```
    /// use downbeat_rt::guard::Tracker;
    ///
    /// # #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    /// assert!(Tracker::unsupported_on_this_target().is_empty());
    /// assert!(!Tracker::unsupported_on_this_target().contains(&Tracker::Allocations));
    /// ```
    pub fn unsupported_on_this_target() -> &'static [Tracker] {
        if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
            &[]
        } else if cfg!(target_os = "linux") {
            &[Tracker::Syscalls]
        } else {
            &[Tracker::Syscalls, Tracker::Rusage]
        }
    }

    /// The name of the tracker's subject, as reports print it.
    ///
    /// ```
    /// assert_eq!(downbeat_rt::guard::Tracker::Syscalls.name(), "system calls");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Tracker::Allocations => "allocations",
            Tracker::Syscalls => "system calls",
            Tracker::Rusage => "context switches and page faults",
        }
    }
}

impl fmt::Display for Tracker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
