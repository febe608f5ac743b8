//! The guard must not change what the guarded code observes, and must leave
//! the rest of the process alone.

use std::io::ErrorKind;

use downbeat_rt::guard::{self, Options};

downbeat_rt::install_guard_allocator!();

#[test]
fn getpid_returns_the_real_pid() {
    let (pid, report) = guard::check_with(&Options::new(), std::process::id);
    assert_eq!(pid, std::process::id());
    assert_eq!(report.syscall_count("getpid"), 1, "{report}");
    assert_eq!(report.violation_count(), 1, "{report}");
}

#[test]
fn failing_syscalls_fail_the_same_way() {
    let (opened, report) = guard::check_with(&Options::new(), || {
        std::fs::File::open("/nonexistent/downbeat")
    });
    assert_eq!(opened.unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(report.syscall_count("openat"), 1, "{report}");
}

fn blocked_signals() -> libc::sigset_t {
    // SAFETY: queries the mask into a local set.
    unsafe {
        let mut set = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut set);
        set
    }
}

#[test]
fn signal_mask_changes_stick_except_for_sigsys() {
    let ((usr1, sys), report) = guard::check_with(&Options::new(), || {
        // SAFETY: blocks two signals on this, the guard, thread.
        unsafe {
            let mut set = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGUSR1);
            libc::sigaddset(&mut set, libc::SIGSYS);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            let now = blocked_signals();
            (
                libc::sigismember(&now, libc::SIGUSR1),
                libc::sigismember(&now, libc::SIGSYS),
            )
        }
    });
    assert_eq!(report.syscall_count("rt_sigprocmask"), 2, "{report}");
    assert_eq!(usr1, 1, "SIGUSR1 must stay blocked after the trap returns");
    assert_eq!(sys, 0, "the guard keeps SIGSYS deliverable");
}

#[test]
fn spawning_a_process_is_refused_not_killed() {
    let (status, report) = guard::check_with(&Options::new(), || {
        std::process::Command::new("/bin/true").status()
    });
    assert_eq!(
        status.unwrap_err().kind(),
        ErrorKind::PermissionDenied,
        "{report}"
    );
    assert_eq!(report.syscall_count("execve"), 1, "{report}");
    // Outside the guard the process can still spawn.
    assert!(std::process::Command::new("/bin/true")
        .status()
        .unwrap()
        .success());
}

#[test]
fn only_the_guard_thread_is_filtered() {
    let report = guard::check(|| ());
    assert!(report.is_clean(), "{report}");
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    assert!(status.lines().any(|l| l == "Seccomp:\t0"), "{status}");
    let (guard_status, _) = guard::check_with(&Options::new().allow_allocations(true), || {
        std::fs::read_to_string("/proc/thread-self/status").unwrap()
    });
    assert!(
        guard_status.lines().any(|l| l == "Seccomp:\t2"),
        "{guard_status}"
    );
}

#[test]
fn guards_run_concurrently() {
    let reports: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                s.spawn(move || guard::check_with(&Options::new(), move || (std::process::id(), i)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, ((pid, n), report)) in reports.into_iter().enumerate() {
        assert_eq!((pid, n), (std::process::id(), i));
        assert_eq!(report.syscall_count("getpid"), 1, "{report}");
    }
}

#[test]
fn turning_syscall_tracking_off_is_noted() {
    let (_, report) = guard::check_with(&Options::new().track_syscalls(false), std::process::id);
    assert!(report.syscalls.is_empty());
    assert!(!report.is_complete());
    assert_eq!(report.syscall_tracking, Err(guard::Untracked::TurnedOff));
    assert!(
        report
            .to_string()
            .contains("turned off by Options::track_syscalls(false)"),
        "{report}"
    );
}
