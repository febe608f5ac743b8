//! RealtimeSanitizer around the guarded closure (cargo feature `rtsan`).
//!
//! `rtsan-standalone` exposes RTSan's C interface through safe functions;
//! the runtime's own contract is only that `__rtsan_realtime_enter` and
//! `__rtsan_realtime_exit` pair up on one thread, which [`run`] keeps with a
//! guard value that exits on return and on unwind alike.

use rtsan_standalone::{ensure_initialized, realtime_enter, realtime_exit, ScopedSanitizeRealtime};

/// `Err` with a note for the report when RTSan is compiled out: the crate's
/// calls are no-ops unless `RTSAN_ENABLE` was set when it was built.
pub(super) fn status() -> Result<(), super::Note> {
    if option_env!("RTSAN_ENABLE").is_some() {
        Ok(())
    } else {
        Err(super::Note::RtsanOff)
    }
}

/// Called on the guard thread before anything is armed: initialises the
/// runtime and creates this thread's RTSan context (the first enter
/// allocates it from RTSan's internal allocator and may `mmap`), so that
/// neither shows up in the guard's report.
pub(super) fn prepare() {
    ensure_initialized();
    realtime_enter();
    realtime_exit();
}

/// Runs `f` inside RTSan's real-time context: its interceptors then flag
/// `malloc`, `write`, `pthread_mutex_lock` and the like as they happen, and
/// by default abort the process with a report on stderr.
pub(super) fn run<R>(f: impl FnOnce() -> R) -> R {
    let _context = ScopedSanitizeRealtime::default();
    f()
}
