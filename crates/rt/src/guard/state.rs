//! The per-thread log an armed scope writes into.
//!
//! Writers are the allocator, the SIGSYS handler and [`notify_blocking`]
//! (super::notify_blocking), all running on the guarded thread, the handler
//! possibly interrupting the others. Everything is therefore a fixed-size
//! array of atomics: recording never allocates, locks or makes a system call,
//! and a nested writer can never see a torn slot.

use std::cell::Cell;
use std::ptr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize};

/// How many allocation (or free) sizes are kept verbatim; counts and byte
/// totals stay exact past it.
pub(crate) const RECORDED_SIZES: usize = 64;
/// Frames kept of the first allocation's (and free's) backtrace.
const BACKTRACE_FRAMES: usize = 48;
/// Distinct `(system call, futex op)` kinds itemised per scope.
const SYSCALL_SLOTS: usize = 64;
/// Distinct blocking-call names itemised per scope.
const BLOCKING_SLOTS: usize = 16;

thread_local! {
    // `const` and free of `Drop`, so reading it never allocates, never
    // registers a destructor and stays valid in the thread's exit path,
    // where the SIGSYS handler still runs.
    static CURRENT: Cell<*const GuardState> = const { Cell::new(ptr::null()) };
}

/// Allocations or frees seen in a scope.
pub(crate) struct HeapLog {
    pub(crate) count: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) sizes: [AtomicUsize; RECORDED_SIZES],
    /// Return addresses of the first event, resolved to names only after
    /// the scope: resolving allocates and takes locks.
    frames: [AtomicUsize; BACKTRACE_FRAMES],
    depth: AtomicUsize,
}

impl HeapLog {
    const fn new() -> Self {
        Self {
            count: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            sizes: [const { AtomicUsize::new(0) }; RECORDED_SIZES],
            frames: [const { AtomicUsize::new(0) }; BACKTRACE_FRAMES],
            depth: AtomicUsize::new(0),
        }
    }

    /// Returns how many events came before this one.
    fn record(&self, size: usize) -> u64 {
        let before = self.count.fetch_add(1, Relaxed);
        self.bytes.fetch_add(size as u64, Relaxed);
        if let Some(slot) = usize::try_from(before).ok().and_then(|i| self.sizes.get(i)) {
            slot.store(size, Relaxed);
        }
        before
    }

    fn reset(&self) {
        self.count.store(0, Relaxed);
        self.bytes.store(0, Relaxed);
        for word in self.sizes.iter().chain(&self.frames) {
            word.store(0, Relaxed);
        }
        self.depth.store(0, Relaxed);
    }

    /// The first event's return addresses, innermost first; empty unless
    /// backtraces were captured.
    pub(crate) fn frames(&self) -> Vec<usize> {
        let depth = self.depth.load(Relaxed);
        self.frames[..depth]
            .iter()
            .map(|f| f.load(Relaxed))
            .collect()
    }

    /// The recorded sizes, in order.
    pub(crate) fn sizes(&self) -> Vec<usize> {
        let n = usize::try_from(self.count.load(Relaxed)).unwrap_or(usize::MAX);
        self.sizes[..n.min(RECORDED_SIZES)]
            .iter()
            .map(|s| s.load(Relaxed))
            .collect()
    }
}

/// Per-kind system-call counters: an open-addressed table whose slots are
/// claimed by compare-and-swap, so a handler nested in another (a signal
/// arriving inside the SIGSYS handler) still records correctly.
pub(crate) struct SyscallLog {
    keys: [AtomicU64; SYSCALL_SLOTS],
    counts: [AtomicU64; SYSCALL_SLOTS],
    pub(crate) overflow: AtomicU64,
}

/// An empty slot. No real key has all bits set: only `futex` keys carry a
/// detail, and `futex` is not number -1.
const EMPTY: u64 = u64::MAX;

impl SyscallLog {
    const fn new() -> Self {
        Self {
            keys: [const { AtomicU64::new(EMPTY) }; SYSCALL_SLOTS],
            counts: [const { AtomicU64::new(0) }; SYSCALL_SLOTS],
            overflow: AtomicU64::new(0),
        }
    }

    fn key(nr: i64, detail: u32) -> u64 {
        (u64::from(nr as u32) << 32) | u64::from(detail)
    }

    fn record(&self, nr: i64, detail: u32) {
        let key = Self::key(nr, detail);
        let start = (key ^ (key >> 29)) as usize % SYSCALL_SLOTS;
        for i in 0..SYSCALL_SLOTS {
            let slot = (start + i) % SYSCALL_SLOTS;
            match self.keys[slot].compare_exchange(EMPTY, key, Relaxed, Relaxed) {
                Ok(_) => {}
                Err(existing) if existing == key => {}
                Err(_) => continue,
            }
            self.counts[slot].fetch_add(1, Relaxed);
            return;
        }
        self.overflow.fetch_add(1, Relaxed);
    }

    fn reset(&self) {
        for (key, count) in self.keys.iter().zip(&self.counts) {
            key.store(EMPTY, Relaxed);
            count.store(0, Relaxed);
        }
        self.overflow.store(0, Relaxed);
    }

    /// `(number, detail, count)` for every kind seen.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (i64, u32, u64)> + '_ {
        self.keys
            .iter()
            .zip(&self.counts)
            .filter_map(|(key, count)| {
                let key = key.load(Relaxed);
                (key != EMPTY).then(|| {
                    (
                        i64::from((key >> 32) as u32 as i32),
                        key as u32,
                        count.load(Relaxed),
                    )
                })
            })
    }
}

/// Counters for [`notify_blocking`](super::notify_blocking) names.
pub(crate) struct BlockingLog {
    names: [AtomicPtr<u8>; BLOCKING_SLOTS],
    lens: [AtomicUsize; BLOCKING_SLOTS],
    counts: [AtomicU64; BLOCKING_SLOTS],
    pub(crate) overflow: AtomicU64,
}

impl BlockingLog {
    const fn new() -> Self {
        Self {
            names: [const { AtomicPtr::new(ptr::null_mut()) }; BLOCKING_SLOTS],
            lens: [const { AtomicUsize::new(0) }; BLOCKING_SLOTS],
            counts: [const { AtomicU64::new(0) }; BLOCKING_SLOTS],
            overflow: AtomicU64::new(0),
        }
    }

    fn record(&self, name: &'static str) {
        let ptr = name.as_ptr().cast_mut();
        for i in 0..BLOCKING_SLOTS {
            match self.names[i].compare_exchange(ptr::null_mut(), ptr, Relaxed, Relaxed) {
                Ok(_) => self.lens[i].store(name.len(), Relaxed),
                Err(existing) if self.holds(i, existing, name) => {}
                Err(_) => continue,
            }
            self.counts[i].fetch_add(1, Relaxed);
            return;
        }
        self.overflow.fetch_add(1, Relaxed);
    }

    /// Whether slot `i`, whose name pointer is `existing`, is `name`: the
    /// same text may live at two addresses when it comes from two crates.
    fn holds(&self, i: usize, existing: *mut u8, name: &str) -> bool {
        let len = self.lens[i].load(Relaxed);
        if len != name.len() {
            return false;
        }
        // SAFETY: a non-null pointer in `names` always comes from a
        // `&'static str` whose length is stored in `lens` right after it.
        existing == name.as_ptr().cast_mut()
            || unsafe { std::slice::from_raw_parts(existing, len) } == name.as_bytes()
    }

    fn reset(&self) {
        for i in 0..BLOCKING_SLOTS {
            self.names[i].store(ptr::null_mut(), Relaxed);
            self.lens[i].store(0, Relaxed);
            self.counts[i].store(0, Relaxed);
        }
        self.overflow.store(0, Relaxed);
    }

    /// `(name, count)` for every name seen.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        (0..BLOCKING_SLOTS).filter_map(|i| {
            let ptr = self.names[i].load(Relaxed);
            (!ptr.is_null()).then(|| {
                // SAFETY: `ptr` and the length were taken from one
                // `&'static str` by `record`, which ran to completion on
                // this thread before the scope ended and `entries` runs.
                let bytes = unsafe { std::slice::from_raw_parts(ptr, self.lens[i].load(Relaxed)) };
                // SAFETY: the bytes came from a `str`.
                let name = unsafe { std::str::from_utf8_unchecked(bytes) };
                (name, self.counts[i].load(Relaxed))
            })
        })
    }
}

/// Everything one guarded thread records.
pub(crate) struct GuardState {
    armed: AtomicBool,
    capture_backtraces: AtomicBool,
    pub(crate) allocs: HeapLog,
    pub(crate) frees: HeapLog,
    pub(crate) syscalls: SyscallLog,
    pub(crate) blocking: BlockingLog,
}

impl GuardState {
    pub(crate) const fn new() -> Self {
        Self {
            armed: AtomicBool::new(false),
            capture_backtraces: AtomicBool::new(false),
            allocs: HeapLog::new(),
            frees: HeapLog::new(),
            syscalls: SyscallLog::new(),
            blocking: BlockingLog::new(),
        }
    }

    /// Zeroes the counters. Storing to every word also faults in every page
    /// of a freshly allocated state, which the scope must not do later.
    pub(crate) fn reset(&self) {
        self.allocs.reset();
        self.frees.reset();
        self.syscalls.reset();
        self.blocking.reset();
    }

    pub(crate) fn set_capture_backtraces(&self, on: bool) {
        self.capture_backtraces.store(on, Relaxed);
    }
}

/// Points this thread's recorders at a state until dropped.
pub(crate) struct Installed<'a>(&'a GuardState);

impl<'a> Installed<'a> {
    pub(crate) fn new(state: &'a GuardState) -> Self {
        CURRENT.with(|c| c.set(state));
        Installed(state)
    }

    /// Starts recording; the returned token stops it when dropped, also
    /// when the guarded code unwinds.
    pub(crate) fn arm(&self) -> Armed<'_> {
        self.0.armed.store(true, Relaxed);
        Armed(self.0)
    }
}

impl Drop for Installed<'_> {
    fn drop(&mut self) {
        self.0.armed.store(false, Relaxed);
        CURRENT.with(|c| c.set(ptr::null()));
    }
}

/// Recording is on while this lives.
pub(crate) struct Armed<'a>(&'a GuardState);

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        self.0.armed.store(false, Relaxed);
    }
}

/// Runs `f` on this thread's state if the thread is inside an armed scope.
fn with_armed(f: impl FnOnce(&GuardState)) {
    let Ok(state) = CURRENT.try_with(Cell::get) else {
        return;
    };
    if state.is_null() {
        return;
    }
    // SAFETY: `Installed` sets the pointer from a live reference and clears
    // it before that reference's lifetime ends; only this thread reads it.
    let state = unsafe { &*state };
    if state.armed.load(Relaxed) {
        f(state);
    }
}

/// Records the return addresses of the current call stack into `log`.
///
/// Walks the stack without `std::backtrace`, whose capture takes a
/// process-wide lock that this thread may already hold (a panic hook
/// printing a backtrace, an error type capturing one) and then allocates:
/// capturing through it from the allocator would deadlock.
fn capture(state: &GuardState, log: &HeapLog) {
    if !state.capture_backtraces.load(Relaxed) {
        return;
    }
    // Nothing the walk does may count, should it allocate or call the kernel.
    state.armed.store(false, Relaxed);
    let mut depth = 0;
    #[cfg(unix)]
    // SAFETY: "unsynchronized" guards against unwinders that are not
    // thread-safe (Windows' dbghelp); the Unix unwinder is, and the walk
    // only reads this thread's own stack.
    unsafe {
        backtrace::trace_unsynchronized(|frame| {
            log.frames[depth].store(frame.ip() as usize, Relaxed);
            depth += 1;
            depth < BACKTRACE_FRAMES
        });
    }
    log.depth.store(depth, Relaxed);
    state.armed.store(true, Relaxed);
}

pub(crate) fn record_alloc(size: usize) {
    with_armed(|s| {
        if s.allocs.record(size) == 0 {
            capture(s, &s.allocs);
        }
    });
}

pub(crate) fn record_free(size: usize) {
    with_armed(|s| {
        if s.frees.record(size) == 0 {
            capture(s, &s.frees);
        }
    });
}

pub(crate) fn record_syscall(nr: i64, detail: u32) {
    with_armed(|s| s.syscalls.record(nr, detail));
}

pub(crate) fn record_blocking(name: &'static str) {
    with_armed(|s| s.blocking.record(name));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syscall_keys_round_trip() {
        let log = SyscallLog::new();
        for (nr, detail) in [(0, 0), (202, 129), (-1, 0), (0x4000_0001, 7)] {
            log.record(nr, detail);
            log.record(nr, detail);
        }
        let mut seen: Vec<_> = log.entries().collect();
        seen.sort();
        assert_eq!(
            seen,
            [(-1, 0, 2), (0, 0, 2), (202, 129, 2), (0x4000_0001, 7, 2)]
        );
    }

    #[test]
    fn syscall_log_counts_overflow() {
        let log = SyscallLog::new();
        for nr in 0..SYSCALL_SLOTS as i64 + 3 {
            log.record(nr, 0);
        }
        assert_eq!(log.entries().count(), SYSCALL_SLOTS);
        assert_eq!(log.overflow.load(Relaxed), 3);
    }

    #[test]
    fn heap_log_keeps_first_sizes_and_exact_totals() {
        let log = HeapLog::new();
        for size in 0..RECORDED_SIZES + 10 {
            log.record(size);
        }
        assert_eq!(log.sizes(), (0..RECORDED_SIZES).collect::<Vec<_>>());
        assert_eq!(log.count.load(Relaxed), RECORDED_SIZES as u64 + 10);
    }

    #[test]
    fn blocking_log_merges_by_name() {
        let log = BlockingLog::new();
        log.record("a");
        log.record("b");
        log.record("a");
        let mut seen: Vec<_> = log.entries().collect();
        seen.sort();
        assert_eq!(seen, [("a", 2), ("b", 1)]);
    }
}
