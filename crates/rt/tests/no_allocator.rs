//! A test binary without `GuardAlloc`: the guard still tracks system calls
//! and says that allocations were not tracked, and the report is not clean.

use std::panic::{catch_unwind, AssertUnwindSafe};

use downbeat_rt::guard::{self, Options, Tracker, Untracked, Violation};

#[test]
fn report_says_allocation_tracking_is_unavailable() {
    let mut grown: Vec<u64> = Vec::new();
    let (pid, report) = guard::check_with(&Options::new(), || {
        grown.push(1);
        std::process::id()
    });
    assert_eq!(pid, std::process::id());
    let reason = report.allocation_tracking.as_ref().unwrap_err();
    assert_eq!(*reason, Untracked::NoGuardAllocator);
    assert_eq!(reason.tracker(), Tracker::Allocations);
    assert!(
        reason.to_string().contains("install_guard_allocator!"),
        "{report}"
    );
    assert_eq!(
        report.violations(),
        [
            Violation::Syscall(report.syscalls[0].clone()),
            Violation::Untracked(Untracked::NoGuardAllocator)
        ],
        "{report}"
    );
    assert!(
        report.to_string().contains("allocations not tracked"),
        "{report}"
    );
    assert_eq!(report.allocations.count, 0);
    assert!(!report.is_complete());
    assert_eq!(report.syscall_count("getpid"), 1, "{report}");
    assert_eq!(grown, [1]);
}

#[test]
fn an_unwatched_heap_is_not_clean() {
    let report = guard::check(|| 6 * 7);
    assert_eq!(
        report.missing_trackers(),
        [Tracker::Allocations],
        "{report}"
    );
    assert_eq!(report.violation_count(), 0, "{report}");
    assert!(!report.is_clean(), "{report}");
    let panic = catch_unwind(AssertUnwindSafe(|| report.assert_clean())).unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(message.contains("(allocations not tracked)"), "{message}");
    assert!(message.contains("install_guard_allocator!"), "{message}");
    // A missing allocator is never the platform's doing: the platform excuse
    // does not cover it.
    assert!(!report.is_clean_allowing_missing(Tracker::unsupported_on_this_target()));
    report.assert_clean_allowing_missing(&[Tracker::Allocations]);
}
