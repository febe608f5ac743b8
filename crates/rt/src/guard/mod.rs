//! Catch real-time violations in tests: run a closure under watch and get a
//! [`Report`] of every allocation, free, system call, blocking call,
//! voluntary context switch and page fault it caused.
//!
//! Audio-thread code must never allocate, free, lock or make system calls:
//! any of them can wait for an unbounded time and the audio glitches. The
//! guard makes such mistakes fail tests instead of producing dropouts on a
//! user's machine.
//!
//! # Usage
//!
//! The test binary installs the counting allocator once, then checks the
//! code it cares about:
//!
//! ```
//! downbeat_rt::install_guard_allocator!();
//!
//! # fn main() {
//! let mut gains = vec![0.5_f32; 64];
//! let report = downbeat_rt::guard::check(|| gains.iter_mut().for_each(|g| *g *= 2.0));
//! report.assert_clean(); // panics with a readable listing if not
//! # }
//! ```
//!
//! [`check`] runs the closure on a fresh thread the guard owns (scoped, so
//! the closure may borrow, e.g. `&mut engine`), waits for it and returns the
//! report; [`check_with`] also takes [`Options`] and hands back the closure's
//! result. A panic in the closure is re-raised in the caller.
//!
//! # How each thing is seen
//!
//! * **Heap.** [`GuardAlloc`] wraps the system allocator and counts, per
//!   thread, the calls made while that thread's scope is armed. Without it
//!   the report says allocation tracking was unavailable, and is not clean.
//! * **System calls.** On Linux x86_64 the guard thread installs a seccomp
//!   filter on itself alone (no `TSYNC`) that traps every system call. The
//!   SIGSYS handler records it and re-issues it from a stub the filter lets
//!   through, so the code under test gets the same results. vDSO calls such
//!   as `clock_gettime` (`Instant::now`) never enter the kernel and are not
//!   reported. A filter cannot be removed, which is why the guard runs the
//!   closure on a thread of its own that ends with the check. Where seccomp
//!   is unavailable (another OS, another architecture, a sandbox that
//!   forbids it) the report says so and the other trackers carry on, but the
//!   report is incomplete (see below).
//! * **Scheduling and faults.** `getrusage(RUSAGE_THREAD)` before arming
//!   and after disarming gives the thread's context switches and page
//!   faults.
//! * **Locks.** See below.
//!
//! Before arming, the guard does all of its own allocating, faults in its
//! thread's stack (256 KiB by default) and the pages of the program's code
//! and static data, and runs each recording path once, so that nothing it
//! does itself shows up in the report.
//!
//! # What is a violation
//!
//! Allocations and frees, system calls not on the allow-list, blocking
//! calls, voluntary context switches (the thread blocked) and page faults
//! (minor ones included: each is a trip into the kernel, and the first
//! touch of fresh memory is exactly the kind of bug this catches).
//!
//! Involuntary context switches are reported but not violations: they are
//! the scheduler preempting the thread, which on a busy two-core machine
//! happens to the most innocent code. Allowed system calls are counted in
//! their own list. The design permits one, the worker pool's wake of its
//! parked workers, hence [`Allow::FutexWake`], which matches only the wake
//! operation of `futex`: waiting stays a violation.
//!
//! # Every tracker, or an explicit excuse
//!
//! A scope a tracker did not watch proves nothing about what that tracker
//! watches, so a report with a [`Tracker`] missing is not clean:
//! [`Report::is_clean`] is false and [`Report::assert_clean`] panics,
//! naming the tracker and, in the notes, why it did not run. On Linux
//! x86-64 every tracker exists, and a test binary gets them all by
//! installing [`GuardAlloc`]. A test that also runs where the platform lacks
//! one says so explicitly:
//!
//! ```
//! use downbeat_rt::guard::{self, Tracker};
//!
//! downbeat_rt::install_guard_allocator!();
//!
//! # fn main() {
//! guard::check(|| 6 * 7).assert_clean_allowing_missing(Tracker::unsupported_on_this_target());
//! # }
//! ```
//!
//! # Locks
//!
//! A contended `std::sync::Mutex` is caught: the waiter makes a `futex`
//! wait system call and switches out voluntarily. An **uncontended** lock
//! cannot be seen by any of the mechanisms above: on Linux it is a single
//! compare-and-swap, the same instruction as the atomics real-time code may
//! use, with no system call, allocation, switch or fault. Rather than guess,
//! the guard offers [`Mutex`], a `std` mutex whose `lock` reports itself
//! through [`notify_blocking`] (the idea of RealtimeSanitizer's blocking
//! annotations), so locks shared with the audio thread are caught even
//! when nobody else holds them. A plain `std::sync::Mutex` taken
//! uncontended goes unreported.
//!
//! # RealtimeSanitizer (feature `rtsan`)
//!
//! With the optional `rtsan` feature, [`check`] and [`check_with`] also run
//! the closure inside LLVM RealtimeSanitizer's real-time context (through
//! the `rtsan-standalone` crate): RTSan's interceptors then watch the same
//! code the guard watches, from inside libc, and print the stack of the
//! offending call. Without the feature nothing of it is compiled or
//! linked. To use it on Debian 12:
//!
//! ```sh
//! apt-get install libclang-rt-22-dev
//! RTSAN_ENABLE=1 \
//! RTSAN_LIB_PATH=/usr/lib/llvm-22/lib/clang/22/lib/linux/libclang_rt.rtsan-x86_64.a \
//!     cargo test -p downbeat-rt --features rtsan
//! ```
//!
//! Both variables are read when `rtsan-standalone` is built. `RTSAN_LIB_PATH`
//! names the runtime to link statically; without it the crate (built with
//! `default-features = false`, so nothing is downloaded) would try to clone
//! and build LLVM's compiler-rt. Without `RTSAN_ENABLE` RTSan compiles to
//! no-ops, and every [`Report`] says so in its notes. At run time RTSan reads
//! `RTSAN_OPTIONS` (for example `halt_on_error=false` to report every
//! distinct violation instead of aborting on the first).
//!
//! RTSan symbolises its stack with `llvm-symbolizer`, a child process. The
//! guard thread refuses `execve` (see Limitations), so by default the stack
//! is printed as addresses with the binary's BuildId (`addr2line -e` turns
//! them into lines). For a symbolised stack, turn the seccomp trap off with
//! [`Options::track_syscalls`]`(false)` and set
//! `RTSAN_OPTIONS=external_symbolizer_path=/usr/lib/llvm-14/bin/llvm-symbolizer`
//! (any LLVM's `llvm-symbolizer`; that path is Debian's `llvm-14`). Such a
//! report lacks [`Tracker::Syscalls`] and is not clean unless the test
//! excuses it with [`Report::assert_clean_allowing_missing`].
//!
//! RTSan catches allocation (`malloc`, `calloc`, ...), I/O such as `write`
//! and `open`, libc's `syscall()`, `futex` and contended mutexes. It misses
//! `clock_nanosleep`, `sem_post` and uncontended locks, and raw system calls
//! that bypass libc; the guard's seccomp trap sees those. What it adds is a
//! second opinion from inside libc, with a stack at the first violation.
//!
//! It differs from the guard in two ways that matter for tests:
//!
//! * RTSan **aborts the process** (exit status 43) on the first violation
//!   and prints `==PID==ERROR: RealtimeSanitizer: unsafe-library-call` and
//!   the stack on stderr. A test that expects a violation, or a panic,
//!   inside the scope (the panic machinery writes and allocates) cannot run
//!   in the same process: run it in a child, as `tests/rtsan.rs` does.
//! * It has **no allow-list**: [`Allow::FutexWake`] does not apply to it, so
//!   a worker pool's wake or `Thread::unpark` inside the scope is an RTSan
//!   error. Wrap such calls in `rtsan_standalone::ScopedDisabler` if needed.
//!
//! # Limitations
//!
//! * The closure runs on a new thread: thread-local state it initialises on
//!   first use (a `thread_local!` with a destructor, `thread::current()`)
//!   is initialised, and reported, inside the scope.
//! * Values moved into the closure are dropped inside it: their frees count.
//!   Borrow what should outlive the scope.
//! * Thread and process creation: `clone`, `clone3`, `fork` and `vfork` pass
//!   the filter untrapped (re-issuing them from a signal handler would start
//!   the child on the handler's frame). Spawning a thread is still reported
//!   through its allocations and `mmap`/`mprotect`. `execve` is refused with
//!   `EPERM` on the guard thread and anything it spawns, because the filter
//!   would outlive the exec and kill the new program.
//! * SIGSYS cannot be blocked on the guard thread (the kernel would kill the
//!   process on the next trap); the guard keeps it unblocked. A later
//!   SIGSYS handler installed by someone else would take over the traps.
//! * Only the guard thread is watched: work handed to other threads (a
//!   pool's workers) is not, only the handing-over itself. On another thread
//!   the counting allocator is not armed (allocations and frees are not
//!   counted), the seccomp filter is absent (system calls are not trapped;
//!   the filter is installed without `TSYNC`, on the guard thread alone),
//!   blocking calls through [`Mutex`] are not recorded, and
//!   `getrusage(RUSAGE_THREAD)` does not include its page faults or context
//!   switches. A guarded parallel callback thus checks the nodes the calling
//!   thread runs and the wake of the workers, not the nodes the workers run;
//!   test those by running them on the guard thread (serially).
//! * An uncontended lock other than [`Mutex`] (a `std::sync::Mutex`, a lock
//!   inside a plugin or a C library) is invisible: taking a free lock is a
//!   compare-and-swap, no system call (see [`notify_blocking`]).
//!
//! [`Mutex`]: Mutex

mod alloc;
mod blocking;
mod options;
mod prefault;
mod report;
#[cfg(feature = "rtsan")]
mod rtsan;
mod rusage;
mod seccomp;
mod state;
mod syscalls;
mod tracker;
mod untracked;

use std::hint::black_box;
use std::sync::atomic::{compiler_fence, Ordering::SeqCst};
use std::time::{Instant, SystemTime};

pub use alloc::GuardAlloc;
pub use blocking::{notify_blocking, Mutex};
pub use options::{Allow, Options};
pub use report::{BlockingCall, HeapActivity, Report, SyscallCount, Violation};
pub use rusage::Rusage;
pub use syscalls::{syscall_name, syscall_number};
pub use tracker::Tracker;
pub use untracked::{Note, PrefaultError, Untracked};

/// Runs `f` under the guard with default [`Options`] (nothing allowed) and
/// reports what it did. `f`'s result is dropped after the scope; use
/// [`check_with`] to keep it.
///
/// # Panics
///
/// If `f` panics (the panic is re-raised), or if the guard thread cannot be
/// spawned.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// downbeat_rt::install_guard_allocator!();
///
/// # fn main() {
/// let frames = AtomicU64::new(0);
/// let report = downbeat_rt::guard::check(|| frames.fetch_add(128, Ordering::Relaxed));
/// assert!(report.is_clean(), "{report}");
/// # }
/// ```
pub fn check<F, R>(f: F) -> Report
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    check_with(&Options::default(), f).1
}

/// Runs `f` under the guard with `options` and returns its result with the
/// report.
///
/// `f` runs on a dedicated, scoped thread, so it may borrow from the caller.
/// Everything `f` does between its first and last instruction is watched,
/// including dropping what it owns.
///
/// # Panics
///
/// If `f` panics (the panic is re-raised), or if the guard thread cannot be
/// spawned.
///
/// # Examples
///
/// ```
/// use downbeat_rt::guard::{self, Allow, Options};
///
/// downbeat_rt::install_guard_allocator!();
///
/// # fn main() {
/// let mut block = [0.25_f32; 64];
/// let options = Options::new().allow(Allow::FutexWake);
/// let (peak, report) = guard::check_with(&options, || {
///     block.iter_mut().for_each(|s| *s *= 0.5);
///     block.iter().copied().fold(0.0, f32::max)
/// });
/// assert_eq!(peak, 0.125);
/// report.assert_clean();
/// # }
/// ```
pub fn check_with<F, R>(options: &Options, f: F) -> (R, Report)
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    let mut notes = Vec::new();
    if let Err(e) = prefault::code() {
        notes.push(Note::CodeNotPrefaulted(e));
    }
    #[cfg(feature = "rtsan")]
    if let Err(note) = rtsan::status() {
        notes.push(note);
    }
    let backtraces = options
        .backtraces
        .unwrap_or_else(|| std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0"));
    std::thread::scope(|scope| {
        let guard = std::thread::Builder::new()
            .name("downbeat-guard".into())
            .stack_size(options.stack_size)
            .spawn_scoped(scope, move || guarded(options, backtraces, notes, f))
            .expect("downbeat_rt::guard: cannot spawn the guard thread");
        guard
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// The guard thread's body: set up, run `f` armed, collect.
fn guarded<F, R>(options: &Options, backtraces: bool, mut notes: Vec<Note>, f: F) -> (R, Report)
where
    F: FnOnce() -> R,
{
    let mut state = Box::new(state::GuardState::new());
    state.reset();
    prefault::stack(
        options
            .stack_prefault
            .min(options.stack_size.saturating_sub(64 * 1024)),
    );
    #[cfg(feature = "rtsan")]
    rtsan::prepare();

    let installed = state::Installed::new(&state);
    let syscall_tracking = if options.track_syscalls {
        seccomp::install()
    } else {
        Err(Untracked::TurnedOff)
    };
    warm_up(&installed);
    let allocation_tracking = if state.allocs.count.load(SeqCst) > 0 && alloc::installed() {
        Ok(())
    } else {
        Err(Untracked::NoGuardAllocator)
    };
    state.reset();
    state.set_capture_backtraces(backtraces);

    let start = rusage::snapshot();
    let armed = installed.arm();
    compiler_fence(SeqCst);
    #[cfg(feature = "rtsan")]
    let value = rtsan::run(f);
    #[cfg(not(feature = "rtsan"))]
    let value = f();
    compiler_fence(SeqCst);
    drop(armed);
    let end = rusage::snapshot();
    drop(installed);

    let rusage = match (start, end) {
        (Ok(start), Ok(end)) => Ok(end.since(&start)),
        (Err(why), _) | (_, Err(why)) => Err(why),
    };
    if backtraces && state.allocs.count.load(SeqCst) + state.frees.count.load(SeqCst) > 0 {
        notes.push(Note::Backtraces);
    }
    let report = Report::build(
        &mut state,
        options,
        rusage,
        allocation_tracking,
        syscall_tracking,
        notes,
    );
    (value, report)
}

/// Runs every recording path once, armed, so their code, the signal
/// delivery path and the vDSO data are faulted in before the real scope;
/// the caller resets what this records.
fn warm_up(installed: &state::Installed<'_>) {
    let _armed = installed.arm();
    // Seen by the allocator only if GuardAlloc is installed: that is the probe.
    drop(black_box(Box::new(0_u64)));
    notify_blocking("warm-up");
    let _ = black_box(Instant::now());
    let _ = black_box(SystemTime::now());
    #[cfg(target_os = "linux")]
    {
        let word = std::sync::atomic::AtomicU32::new(0);
        // SAFETY: getpid has no arguments; FUTEX_WAKE on a live local word
        // wakes nobody. Both go through the trap like the code under test.
        unsafe {
            libc::syscall(libc::SYS_getpid);
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                1,
            );
        }
    }
}
