//! The smallest possible wait/wake pair on one 32-bit word.

use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Sleeps while `word` holds `expected`, at most `timeout`; returns early on a wake, a signal or
/// a changed value (the kernel compares atomically with going to sleep, so no wake is lost).
pub fn wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    #[cfg(target_os = "linux")]
    {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `word` is a live, aligned 32-bit atomic for the duration of the call, and `ts`
        // a valid relative timeout; FUTEX_WAIT only reads both.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                expected,
                &ts as *const libc::timespec,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        use std::sync::atomic::Ordering;
        // Without a futex, nap briefly: correct, only slower to react.
        if word.load(Ordering::Acquire) == expected {
            std::thread::sleep(timeout.min(Duration::from_millis(1)));
        }
    }
}

/// Wakes one thread sleeping in [`wait`] on `word`: one system call.
pub fn wake_one(word: &AtomicU32) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `word` is a live, aligned 32-bit atomic; FUTEX_WAKE does not touch memory.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                1,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = word;
    }
}
