//! What a scope allows and how it is set up.

use super::syscalls::nr;

/// A system call the design permits on the audio thread: counted and listed
/// in [`Report::allowed_syscalls`](super::Report::allowed_syscalls), not a
/// violation.
///
/// # Examples
///
/// ```
/// use downbeat_rt::guard::{syscall_number, Allow, Options};
///
/// let options = Options::new()
///     .allow(Allow::FutexWake)
///     .allow(Allow::Syscall(syscall_number("sched_yield").unwrap()));
/// # let _ = options;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Allow {
    /// Waking threads parked on a futex: `futex` with `FUTEX_WAKE` (private
    /// or not) and `futex_wake`. The worker pool's wake of parked workers,
    /// the one call the design permits. Waiting on a futex stays a violation,
    /// although it is the same system call number.
    FutexWake,
    /// Every use of the system call with this x86_64 number, whatever its
    /// arguments.
    Syscall(i64),
}

impl Allow {
    pub(crate) fn matches(self, number: i64, detail: u32) -> bool {
        const FUTEX_WAKE: u32 = 1;
        const FUTEX_CMD_MASK: u32 = !(128 | 256);
        match self {
            Allow::FutexWake => {
                (number == nr::FUTEX && detail & FUTEX_CMD_MASK == FUTEX_WAKE)
                    || number == nr::FUTEX_WAKE
            }
            Allow::Syscall(allowed) => allowed == number,
        }
    }
}

/// Settings for [`check_with`](super::check_with). The defaults allow
/// nothing.
///
/// # Examples
///
/// ```
/// use downbeat_rt::guard::{self, Allow, Options};
///
/// downbeat_rt::install_guard_allocator!();
///
/// # fn main() {
/// let options = Options::new().allow(Allow::FutexWake);
/// let (sum, report) = guard::check_with(&options, || 2 + 2);
/// assert_eq!(sum, 4);
/// report.assert_clean();
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Options {
    pub(crate) allowed: Vec<Allow>,
    pub(crate) allow_allocations: bool,
    pub(crate) track_syscalls: bool,
    pub(crate) backtraces: Option<bool>,
    pub(crate) stack_size: usize,
    pub(crate) stack_prefault: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            allowed: Vec::new(),
            allow_allocations: false,
            track_syscalls: true,
            backtraces: None,
            stack_size: 2 * 1024 * 1024,
            stack_prefault: 256 * 1024,
        }
    }
}

impl Options {
    /// The defaults: nothing allowed, everything tracked.
    ///
    /// ```
    /// downbeat_rt::install_guard_allocator!();
    ///
    /// # fn main() {
    /// let report = downbeat_rt::guard::check_with(&downbeat_rt::guard::Options::new(), || ()).1;
    /// assert!(report.is_clean());
    /// # }
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Lets `call` happen without failing the report; it is still counted.
    ///
    /// ```
    /// use downbeat_rt::guard::{Allow, Options};
    /// let options = Options::new().allow(Allow::FutexWake);
    /// # let _ = options;
    /// ```
    pub fn allow(mut self, call: Allow) -> Self {
        self.allowed.push(call);
        self
    }

    /// Whether allocations and frees are expected (counted, not violations).
    /// Off by default. For code that is not meant to be real-time safe yet
    /// but should still not block or make system calls.
    ///
    /// ```
    /// use downbeat_rt::guard::{self, Options};
    ///
    /// downbeat_rt::install_guard_allocator!();
    ///
    /// # fn main() {
    /// let (_, report) = guard::check_with(&Options::new().allow_allocations(true), || vec![0_u8; 64]);
    /// assert!(report.is_clean());
    /// assert_eq!(report.allocations.count, 1);
    /// # }
    /// ```
    pub fn allow_allocations(mut self, allow: bool) -> Self {
        self.allow_allocations = allow;
        self
    }

    /// Whether to install the seccomp filter (on by default). Turned off, the
    /// report notes that system calls were not tracked and is not clean
    /// unless [`Tracker::Syscalls`](super::Tracker::Syscalls) is excused with
    /// [`Report::assert_clean_allowing_missing`](super::Report::assert_clean_allowing_missing).
    ///
    /// ```
    /// use downbeat_rt::guard::{self, Options, Tracker};
    /// let (_, report) = guard::check_with(&Options::new().track_syscalls(false), || ());
    /// assert!(report.syscall_tracking.is_err());
    /// assert!(report.missing_trackers().contains(&Tracker::Syscalls));
    /// ```
    pub fn track_syscalls(mut self, track: bool) -> Self {
        self.track_syscalls = track;
        self
    }

    /// Whether to capture a backtrace of the first allocation and of the
    /// first free. Defaults to whether `RUST_BACKTRACE` is set (and not
    /// `0`). The capture's own page faults and context switches land in the
    /// report, which has already failed by then.
    ///
    /// ```
    /// use downbeat_rt::guard::{self, Options};
    /// let (_, report) = guard::check_with(&Options::new().backtraces(false), || ());
    /// assert!(report.allocations.backtrace.is_none());
    /// ```
    pub fn backtraces(mut self, capture: bool) -> Self {
        self.backtraces = Some(capture);
        self
    }

    /// Stack size of the guard thread (default 2 MiB).
    ///
    /// ```
    /// let options = downbeat_rt::guard::Options::new().stack_size(8 << 20).stack_prefault(1 << 20);
    /// # let _ = options;
    /// ```
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = bytes;
        self
    }

    /// How much of the guard thread's stack to fault in before arming
    /// (default 256 KiB, capped below the stack size). Raise it for code
    /// whose stack use is deeper, or its first touch of the stack pages
    /// is reported as page faults.
    ///
    /// ```
    /// let options = downbeat_rt::guard::Options::new().stack_prefault(512 * 1024);
    /// # let _ = options;
    /// ```
    pub fn stack_prefault(mut self, bytes: usize) -> Self {
        self.stack_prefault = bytes;
        self
    }

    pub(crate) fn allows(&self, number: i64, detail: u32) -> bool {
        self.allowed.iter().any(|a| a.matches(number, detail))
    }
}
