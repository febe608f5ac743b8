//! What a scope did, and which of it is a violation.

use std::borrow::Cow;
use std::fmt;

use super::rusage::Rusage;
use super::state::{GuardState, HeapLog};
use super::syscalls::{futex_op_name, nr, syscall_name};
use super::{Note, Options, Tracker, Untracked};

/// Allocations, or frees, seen in a scope.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeapActivity {
    /// How many (exact).
    pub count: u64,
    /// Their sizes added up, in bytes (exact).
    pub bytes: u64,
    /// The first 64 sizes, in order.
    pub sizes: Vec<usize>,
    /// Where the first one happened, when backtraces were on (see
    /// [`Options::backtraces`]): one frame per line pair, innermost first,
    /// starting at the code that called the allocator.
    pub backtrace: Option<String>,
}

impl HeapActivity {
    fn take(log: &mut HeapLog) -> Self {
        Self {
            count: *log.count.get_mut(),
            bytes: *log.bytes.get_mut(),
            sizes: log.sizes(),
            backtrace: render(&log.frames()),
        }
    }
}

/// Resolves return addresses to `name` and `at file:line` lines, dropping the
/// guard's own frames at both ends (allocator and stack walk inside, the guard
/// thread's plumbing outside).
fn render(frames: &[usize]) -> Option<String> {
    if frames.is_empty() {
        return None;
    }
    // One entry per function, inlined ones included, innermost first.
    let mut resolved: Vec<(String, Option<String>)> = Vec::new();
    for &ip in frames {
        let before = resolved.len();
        // A return address is one past its call: step back into the call so
        // inlined frames and line numbers come out right.
        backtrace::resolve(ip.saturating_sub(1) as *mut std::ffi::c_void, |symbol| {
            let name = symbol
                .name()
                .map_or_else(|| format!("{ip:#x}"), |n| format!("{n:#}"));
            let place = symbol
                .filename()
                .zip(symbol.lineno())
                .map(|(file, line)| format!("{}:{line}", file.display()));
            resolved.push((name, place));
        });
        if resolved.len() == before {
            resolved.push((format!("{ip:#x}"), None));
        }
    }
    let plumbing = |(name, _): &(String, Option<String>)| {
        [
            "downbeat_rt::guard::",
            "<downbeat_rt::guard::",
            "backtrace::",
            "__rust",
            "__rdl_",
        ]
        .iter()
        .any(|p| name.starts_with(p))
    };
    let last = resolved
        .iter()
        .position(|(n, _)| n.starts_with("downbeat_rt::guard::guarded"))
        .unwrap_or(resolved.len());
    let first = resolved[..last]
        .iter()
        .rposition(plumbing)
        .map_or(0, |i| i + 1);
    let mut out = String::new();
    for (i, (name, place)) in resolved[first..last].iter().enumerate() {
        out.push_str(&format!("{i:>3}: {name}\n"));
        if let Some(place) = place {
            out.push_str(&format!("       at {place}\n"));
        }
    }
    Some(out)
}

/// One kind of system call and how often the scope made it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SyscallCount {
    /// The x86_64 system call number.
    pub nr: i64,
    /// Its name, see [`syscall_name`].
    pub name: Cow<'static, str>,
    /// For `futex`, the operation word (its second argument), which tells a
    /// wake from a wait.
    pub futex_op: Option<u32>,
    /// How many calls.
    pub count: u64,
}

impl fmt::Display for SyscallCount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (nr {})", self.name, self.nr)?;
        if let Some(op) = self.futex_op {
            write!(f, " {}", futex_op_name(op))?;
        }
        write!(f, " ×{}", self.count)
    }
}

/// A call to a function that may block, announced through
/// [`notify_blocking`](super::notify_blocking) (for example by
/// [`guard::Mutex::lock`](super::Mutex::lock)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlockingCall {
    /// The name passed to `notify_blocking`.
    pub name: &'static str,
    /// How many calls.
    pub count: u64,
}

/// Everything the guard saw while running one closure, from
/// [`check`](super::check) or [`check_with`](super::check_with).
///
/// Violations, which make [`is_clean`](Report::is_clean) false, are
/// allocations and frees (unless [`Options::allow_allocations`]), system
/// calls not on the allow-list, blocking calls, voluntary context switches
/// and page faults. Allowed system calls and involuntary context switches
/// are listed but are not violations: the first are permitted by design, the
/// second are the scheduler preempting the thread, which on a shared
/// machine happens to any code.
///
/// A report is also not clean when a [`Tracker`] did not run
/// ([`missing_trackers`](Report::missing_trackers)): nothing watched is not
/// the same as nothing done. A platform that lacks a tracker is excused only
/// explicitly, with
/// [`assert_clean_allowing_missing`](Report::assert_clean_allowing_missing).
///
/// # Examples
///
/// ```
/// use downbeat_rt::guard;
///
/// downbeat_rt::install_guard_allocator!();
///
/// # fn main() {
/// let report = guard::check(|| std::fs::read("/dev/null"));
/// assert!(!report.is_clean());
/// println!("{report}"); // lists openat, read, close, ... with counts
///
/// guard::check(|| 1 + 1).assert_clean();
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// Allocations, reallocations included (counted at their new size).
    pub allocations: HeapActivity,
    /// Frees.
    pub frees: HeapActivity,
    /// Whether the options made allocations and frees not violations.
    pub allocations_allowed: bool,
    /// System calls not on the allow-list, in first-seen order of kind:
    /// violations.
    pub syscalls: Vec<SyscallCount>,
    /// System calls on the allow-list: counted, not violations.
    pub allowed_syscalls: Vec<SyscallCount>,
    /// System calls of kinds beyond the 64 itemised ones: violations.
    pub other_syscalls: u64,
    /// Calls announced as blocking: violations.
    pub blocking_calls: Vec<BlockingCall>,
    /// Context switches and page faults of the guarded thread, or why the
    /// platform could not tell.
    pub rusage: Result<Rusage, Untracked>,
    /// `Ok` if allocations were tracked; otherwise why not (typically:
    /// [`GuardAlloc`](super::GuardAlloc) is not the global allocator).
    pub allocation_tracking: Result<(), Untracked>,
    /// `Ok` if system calls were tracked; otherwise why not.
    pub syscall_tracking: Result<(), Untracked>,
    /// Things to know when reading the report that are not findings, such
    /// as code pages that could not be faulted in beforehand. (A tracker
    /// that did not run is in its own field and in
    /// [`violations`](Report::violations).)
    pub notes: Vec<Note>,
}

/// One kind of thing a scope did that a real-time thread must not do, or a tracker that did
/// not watch it: what [`Report::violations`] lists, so that a reader such as
/// `downbeat audit` never parses the report's text.
///
/// ```
/// use downbeat_rt::guard::{self, Violation};
///
/// downbeat_rt::install_guard_allocator!();
///
/// # fn main() {
/// let report = guard::check(|| Box::new(7));
/// assert!(report.violations().iter().any(|v| matches!(v, Violation::Allocation(h) if h.count == 1)));
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Violation {
    /// Allocations (reallocations included), unless the options allow them.
    Allocation(HeapActivity),
    /// Frees, unless the options allow them.
    Free(HeapActivity),
    /// A system call not on the allow-list, with its number, name and count.
    Syscall(SyscallCount),
    /// System calls of kinds beyond the itemised ones.
    OtherSyscalls {
        /// How many.
        count: u64,
    },
    /// A call that may block, such as a lock, announced through
    /// [`notify_blocking`](super::notify_blocking).
    Blocking(BlockingCall),
    /// The thread gave up the CPU (blocked).
    ContextSwitch {
        /// Voluntary context switches.
        count: u64,
    },
    /// Page faults.
    PageFault {
        /// Served without I/O.
        minor: u64,
        /// Waited for I/O.
        major: u64,
    },
    /// A tracker did not run, so a clean result would prove nothing; counts no event.
    Untracked(Untracked),
}

impl Violation {
    /// The events this stands for: what [`Report::violation_count`] adds up (0 for
    /// [`Untracked`](Violation::Untracked)).
    ///
    /// ```
    /// use downbeat_rt::guard::Violation;
    /// assert_eq!(Violation::PageFault { minor: 2, major: 1 }.count(), 3);
    /// ```
    pub fn count(&self) -> u64 {
        match self {
            Violation::Allocation(h) | Violation::Free(h) => h.count,
            Violation::OtherSyscalls { count } | Violation::ContextSwitch { count } => *count,
            Violation::Syscall(s) => s.count,
            Violation::Blocking(b) => b.count,
            Violation::PageFault { minor, major } => minor + major,
            Violation::Untracked(_) => 0,
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Allocation(h) => {
                write!(f, "allocations: {} totalling {} bytes", h.count, h.bytes)
            }
            Violation::Free(h) => write!(f, "frees: {} totalling {} bytes", h.count, h.bytes),
            Violation::Syscall(s) => write!(f, "system call {s}"),
            Violation::OtherSyscalls { count } => {
                write!(f, "system calls of kinds not itemised ×{count}")
            }
            Violation::Blocking(b) => write!(f, "blocking call {} ×{}", b.name, b.count),
            Violation::ContextSwitch { count } => {
                write!(f, "voluntary context switches (blocked): {count}")
            }
            Violation::PageFault { minor, major } => {
                write!(f, "page faults: {minor} minor, {major} major")
            }
            Violation::Untracked(why) => why.fmt(f),
        }
    }
}

impl Report {
    pub(crate) fn build(
        state: &mut GuardState,
        options: &Options,
        rusage: Result<Rusage, Untracked>,
        allocation_tracking: Result<(), Untracked>,
        syscall_tracking: Result<(), Untracked>,
        notes: Vec<Note>,
    ) -> Self {
        let (mut syscalls, mut allowed_syscalls) = (Vec::new(), Vec::new());
        for (number, detail, count) in state.syscalls.entries() {
            let futex = number == nr::FUTEX;
            let entry = SyscallCount {
                nr: number,
                name: syscall_name(number),
                futex_op: futex.then_some(detail),
                count,
            };
            if options.allows(number, detail) {
                allowed_syscalls.push(entry);
            } else {
                syscalls.push(entry);
            }
        }
        let by_kind =
            |a: &SyscallCount, b: &SyscallCount| (a.nr, a.futex_op).cmp(&(b.nr, b.futex_op));
        syscalls.sort_by(by_kind);
        allowed_syscalls.sort_by(by_kind);
        let mut blocking_calls: Vec<BlockingCall> = Vec::new();
        for (name, count) in state.blocking.entries() {
            match blocking_calls.iter_mut().find(|b| b.name == name) {
                Some(known) => known.count += count,
                None => blocking_calls.push(BlockingCall { name, count }),
            }
        }
        Report {
            allocations: HeapActivity::take(&mut state.allocs),
            frees: HeapActivity::take(&mut state.frees),
            allocations_allowed: options.allow_allocations,
            syscalls,
            allowed_syscalls,
            other_syscalls: *state.syscalls.overflow.get_mut() + *state.blocking.overflow.get_mut(),
            blocking_calls,
            rusage,
            allocation_tracking,
            syscall_tracking,
            notes,
        }
    }

    /// Whether the scope did nothing a real-time thread must not do **and**
    /// every tracker ran to see it: a report with a tracker missing (see
    /// [`missing_trackers`](Report::missing_trackers)) is not clean, so a test
    /// cannot pass because nothing was watched. To excuse a tracker the
    /// platform lacks, use
    /// [`is_clean_allowing_missing`](Report::is_clean_allowing_missing).
    ///
    /// ```
    /// downbeat_rt::install_guard_allocator!();
    ///
    /// # fn main() {
    /// assert!(downbeat_rt::guard::check(|| 6 * 7).is_clean());
    /// # }
    /// ```
    pub fn is_clean(&self) -> bool {
        self.is_clean_allowing_missing(&[])
    }

    /// Whether the scope made no violation that the trackers which ran
    /// could see, and every tracker not in `may_be_missing` ran.
    ///
    /// This is the explicit opt-out for a platform without a tracker; pass
    /// [`Tracker::unsupported_on_this_target`] rather than a list of your own,
    /// so that where the tracker exists (Linux x86-64 has them all) it must
    /// run.
    ///
    /// ```
    /// use downbeat_rt::guard::{self, Options, Tracker};
    ///
    /// // No GuardAlloc in this binary: allocations are not watched.
    /// let (_, report) = guard::check_with(&Options::new(), || 6 * 7);
    /// assert!(!report.is_clean());
    /// assert!(report.is_clean_allowing_missing(&[Tracker::Allocations]));
    /// ```
    pub fn is_clean_allowing_missing(&self, may_be_missing: &[Tracker]) -> bool {
        self.violation_count() == 0
            && self
                .missing_trackers()
                .iter()
                .all(|t| may_be_missing.contains(t))
    }

    /// Whether every tracker (allocations, system calls, rusage) was working,
    /// so that a clean report means what it says.
    ///
    /// ```
    /// let report = downbeat_rt::guard::check(|| ());
    /// if !report.is_complete() {
    ///     eprintln!("partial guard: {:?}", report.notes);
    /// }
    /// ```
    pub fn is_complete(&self) -> bool {
        self.missing_trackers().is_empty()
    }

    /// The trackers that did not run in this scope, in [`Tracker::ALL`]
    /// order; the [`notes`](Report::notes) say why.
    ///
    /// ```
    /// use downbeat_rt::guard::{self, Options, Tracker};
    ///
    /// let (_, report) = guard::check_with(&Options::new().track_syscalls(false), || ());
    /// assert!(report.missing_trackers().contains(&Tracker::Syscalls));
    /// ```
    pub fn missing_trackers(&self) -> Vec<Tracker> {
        Tracker::ALL
            .into_iter()
            .filter(|t| match t {
                Tracker::Allocations => self.allocation_tracking.is_err(),
                Tracker::Syscalls => self.syscall_tracking.is_err(),
                Tracker::Rusage => self.rusage.is_err(),
            })
            .collect()
    }

    /// The number of violating events: allocations, frees, disallowed system
    /// calls, blocking calls, voluntary context switches and page faults.
    ///
    /// ```
    /// let report = downbeat_rt::guard::check(|| std::process::id());
    /// # #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    /// assert_eq!(report.violation_count(), 1); // getpid
    /// ```
    pub fn violation_count(&self) -> u64 {
        let heap = if self.allocations_allowed {
            0
        } else {
            self.allocations.count + self.frees.count
        };
        let syscalls: u64 =
            self.syscalls.iter().map(|s| s.count).sum::<u64>() + self.other_syscalls;
        let blocking: u64 = self.blocking_calls.iter().map(|b| b.count).sum();
        let rusage = self
            .rusage
            .as_ref()
            .map_or(0, |r| r.voluntary_context_switches + r.page_faults());
        heap + syscalls + blocking + rusage
    }

    /// Every violation, one entry per kind, in the order the report prints them, then every
    /// tracker that did not run (in [`Tracker::ALL`] order). Empty exactly when the report
    /// [`is_clean`](Report::is_clean).
    ///
    /// ```
    /// use downbeat_rt::guard::{self, Options, Tracker, Untracked, Violation};
    ///
    /// let (_, report) = guard::check_with(&Options::new(), || std::process::id());
    /// let v = report.violations();
    /// # #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    /// assert!(v.iter().any(|v| matches!(v, Violation::Syscall(s) if s.name == "getpid")));
    /// // This doctest's binary has no GuardAlloc.
    /// assert!(v.contains(&Violation::Untracked(Untracked::NoGuardAllocator)));
    /// ```
    pub fn violations(&self) -> Vec<Violation> {
        let mut out = Vec::new();
        if !self.allocations_allowed {
            if self.allocations.count > 0 {
                out.push(Violation::Allocation(self.allocations.clone()));
            }
            if self.frees.count > 0 {
                out.push(Violation::Free(self.frees.clone()));
            }
        }
        out.extend(self.syscalls.iter().cloned().map(Violation::Syscall));
        if self.other_syscalls > 0 {
            out.push(Violation::OtherSyscalls {
                count: self.other_syscalls,
            });
        }
        out.extend(self.blocking_calls.iter().cloned().map(Violation::Blocking));
        if let Ok(r) = &self.rusage {
            if r.voluntary_context_switches > 0 {
                out.push(Violation::ContextSwitch {
                    count: r.voluntary_context_switches,
                });
            }
            if r.page_faults() > 0 {
                out.push(Violation::PageFault {
                    minor: r.minor_page_faults,
                    major: r.major_page_faults,
                });
            }
        }
        out.extend(self.untracked().cloned().map(Violation::Untracked));
        out
    }

    /// Why each tracker that did not run did not, in [`Tracker::ALL`] order.
    fn untracked(&self) -> impl Iterator<Item = &Untracked> {
        [
            self.allocation_tracking.as_ref().err(),
            self.syscall_tracking.as_ref().err(),
            self.rusage.as_ref().err(),
        ]
        .into_iter()
        .flatten()
    }

    /// How many disallowed calls of the system call called `name` the scope
    /// made.
    ///
    /// ```
    /// let report = downbeat_rt::guard::check(|| std::process::id());
    /// # #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    /// assert_eq!(report.syscall_count("getpid"), 1);
    /// ```
    pub fn syscall_count(&self, name: &str) -> u64 {
        self.syscalls
            .iter()
            .filter(|s| s.name == name)
            .map(|s| s.count)
            .sum()
    }

    /// How many allowed calls of the system call called `name` the scope
    /// made.
    ///
    /// ```
    /// use downbeat_rt::guard::{self, Allow, Options};
    /// let (_, report) = guard::check_with(&Options::new().allow(Allow::FutexWake), || ());
    /// assert_eq!(report.allowed_syscall_count("futex"), 0);
    /// ```
    pub fn allowed_syscall_count(&self, name: &str) -> u64 {
        self.allowed_syscalls
            .iter()
            .filter(|s| s.name == name)
            .map(|s| s.count)
            .sum()
    }

    /// Panics, printing the report, unless it [`is_clean`](Report::is_clean):
    /// on any violation, and when a tracker did not run.
    ///
    /// ```should_panic
    /// downbeat_rt::install_guard_allocator!();
    ///
    /// # fn main() {
    /// downbeat_rt::guard::check(|| std::thread::sleep(std::time::Duration::from_millis(1))).assert_clean();
    /// # }
    /// ```
    ///
    /// A scope nothing watched fails too: here the binary lacks
    /// [`GuardAlloc`](super::GuardAlloc).
    ///
    /// ```should_panic
    /// downbeat_rt::guard::check(|| ()).assert_clean(); // allocations were not tracked
    /// ```
    #[track_caller]
    pub fn assert_clean(&self) {
        self.assert_clean_allowing_missing(&[]);
    }

    /// Like [`assert_clean`](Report::assert_clean), but a tracker in
    /// `may_be_missing` may have been unavailable: the explicit opt-out for
    /// platforms that lack one. Pass [`Tracker::unsupported_on_this_target`]
    /// so the excuse holds only where it is true.
    ///
    /// ```
    /// use downbeat_rt::guard::{self, Tracker};
    ///
    /// downbeat_rt::install_guard_allocator!();
    ///
    /// # fn main() {
    /// guard::check(|| 6 * 7).assert_clean_allowing_missing(Tracker::unsupported_on_this_target());
    /// # }
    /// ```
    #[track_caller]
    pub fn assert_clean_allowing_missing(&self, may_be_missing: &[Tracker]) {
        if self.violation_count() > 0 {
            panic!("the guarded code is not real-time safe:\n{self}");
        }
        let unexcused: Vec<&str> = self
            .missing_trackers()
            .into_iter()
            .filter(|t| !may_be_missing.contains(t))
            .map(Tracker::name)
            .collect();
        if !unexcused.is_empty() {
            panic!(
                "the guard did not watch everything ({} not tracked), so a clean result would \
                 prove nothing; fix the cause in the notes, or excuse a tracker this platform \
                 lacks with assert_clean_allowing_missing(Tracker::unsupported_on_this_target()):\n{self}",
                unexcused.join(", ")
            );
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let violations = self.violation_count();
        let missing = self.missing_trackers();
        if violations > 0 {
            writeln!(f, "real-time guard: {violations} violation(s)")?;
        } else if missing.is_empty() {
            writeln!(f, "real-time guard: clean")?;
        } else {
            writeln!(
                f,
                "real-time guard: incomplete, no violation seen by the trackers that ran"
            )?;
        }
        if !missing.is_empty() {
            let names: Vec<&str> = missing.into_iter().map(Tracker::name).collect();
            writeln!(f, "  not tracked: {} (see notes)", names.join(", "))?;
        }
        let heap = |f: &mut fmt::Formatter<'_>, what: &str, h: &HeapActivity| -> fmt::Result {
            if h.count == 0 {
                return Ok(());
            }
            let allowed = if self.allocations_allowed {
                " (allowed)"
            } else {
                ""
            };
            write!(
                f,
                "  {what}{allowed}: {} totalling {} bytes; sizes",
                h.count, h.bytes
            )?;
            for size in &h.sizes {
                write!(f, " {size}")?;
            }
            if h.count > h.sizes.len() as u64 {
                write!(f, " and {} more", h.count - h.sizes.len() as u64)?;
            }
            writeln!(f)?;
            if let Some(trace) = &h.backtrace {
                writeln!(f, "    first one at:")?;
                for line in trace.lines() {
                    writeln!(f, "      {line}")?;
                }
            }
            Ok(())
        };
        heap(f, "allocations", &self.allocations)?;
        heap(f, "frees", &self.frees)?;
        if !self.syscalls.is_empty() || self.other_syscalls > 0 {
            writeln!(f, "  system calls:")?;
            for call in &self.syscalls {
                writeln!(f, "    {call}")?;
            }
            if self.other_syscalls > 0 {
                writeln!(f, "    {} more of kinds not itemised", self.other_syscalls)?;
            }
        }
        if !self.blocking_calls.is_empty() {
            writeln!(f, "  blocking calls:")?;
            for call in &self.blocking_calls {
                writeln!(f, "    {} ×{}", call.name, call.count)?;
            }
        }
        if let Ok(r) = &self.rusage {
            if r.voluntary_context_switches > 0 {
                writeln!(
                    f,
                    "  voluntary context switches (blocked): {}",
                    r.voluntary_context_switches
                )?;
            }
            if r.page_faults() > 0 {
                writeln!(
                    f,
                    "  page faults: {} minor, {} major",
                    r.minor_page_faults, r.major_page_faults
                )?;
            }
        }
        let preempted = self
            .rusage
            .as_ref()
            .map_or(0, |r| r.involuntary_context_switches);
        if !self.allowed_syscalls.is_empty() || preempted > 0 {
            writeln!(f, "  not violations:")?;
            for call in &self.allowed_syscalls {
                writeln!(f, "    allowed system call {call}")?;
            }
            if preempted > 0 {
                writeln!(
                    f,
                    "    involuntary context switches (preempted): {preempted}"
                )?;
            }
        }
        if !self.notes.is_empty() || self.untracked().next().is_some() {
            writeln!(f, "  notes:")?;
            for why in self.untracked() {
                writeln!(f, "    {why}")?;
            }
            for note in &self.notes {
                writeln!(f, "    {note}")?;
            }
        }
        Ok(())
    }
}
