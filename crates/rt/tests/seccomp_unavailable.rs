//! Where seccomp is not permitted, the guard falls back with a clear note.

use std::panic::{catch_unwind, AssertUnwindSafe};

use downbeat_rt::guard::{self, Tracker};

downbeat_rt::install_guard_allocator!();

/// Forbids `seccomp(2)` (EPERM) on the calling thread and the threads it
/// spawns, like a container sandbox would.
fn forbid_seccomp_on_this_thread() {
    let ld_nr = libc::sock_filter {
        code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
        jt: 0,
        jf: 0,
        k: 0,
    };
    let is_seccomp = libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt: 0,
        jf: 1,
        k: libc::SYS_seccomp as u32,
    };
    let deny = libc::sock_filter {
        code: (libc::BPF_RET | libc::BPF_K) as u16,
        jt: 0,
        jf: 0,
        k: libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
    };
    let allow = libc::sock_filter {
        code: (libc::BPF_RET | libc::BPF_K) as u16,
        jt: 0,
        jf: 0,
        k: libc::SECCOMP_RET_ALLOW,
    };
    let filter = [ld_nr, is_seccomp, deny, allow];
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: a valid program for this thread only (no TSYNC).
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        assert_eq!(
            libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, &prog),
            0
        );
    }
}

#[test]
fn falls_back_when_seccomp_is_not_permitted() {
    let report = std::thread::spawn(|| {
        forbid_seccomp_on_this_thread();
        guard::check(|| {
            let _ = std::process::id();
            Box::new(1)
        })
    })
    .join()
    .unwrap();
    let reason = report.syscall_tracking.as_ref().unwrap_err();
    assert!(
        matches!(
            reason,
            guard::Untracked::Failed {
                tracker: Tracker::Syscalls,
                source: downbeat_rt::OsError(libc::EPERM),
                ..
            }
        ),
        "{report}"
    );
    assert!(
        reason.to_string().contains("seccomp unavailable"),
        "{report}"
    );
    assert!(
        reason.to_string().contains("Operation not permitted"),
        "{report}"
    );
    let source = std::error::Error::source(reason).expect("the system's error");
    assert_eq!(source.to_string(), "Operation not permitted (os error 1)");
    assert!(report
        .violations()
        .contains(&guard::Violation::Untracked(reason.clone())));
    assert!(
        report.to_string().contains("seccomp unavailable"),
        "{report}"
    );
    assert!(report.syscalls.is_empty(), "{report}");
    assert!(!report.is_complete());
    assert_eq!(report.missing_trackers(), [Tracker::Syscalls], "{report}");
    // The other trackers carry on.
    assert_eq!(report.allocations.count, 1, "{report}");
    assert!(report.rusage.is_ok());
}

#[test]
fn a_forbidden_seccomp_fails_assert_clean() {
    let report = std::thread::spawn(|| {
        forbid_seccomp_on_this_thread();
        guard::check(std::process::id)
    })
    .join()
    .unwrap();
    // The getpid went unseen: no violation is counted, and that proves nothing.
    assert_eq!(report.violation_count(), 0, "{report}");
    assert!(!report.is_clean(), "{report}");
    let panic = catch_unwind(AssertUnwindSafe(|| report.assert_clean())).unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(message.contains("(system calls not tracked)"), "{message}");
    assert!(message.contains("Operation not permitted"), "{message}");
    report.assert_clean_allowing_missing(&[Tracker::Syscalls]);
}
