//! A test binary without `GuardAlloc`: the guard still tracks system calls
//! and says that allocations were not tracked.

use downbeat_rt::guard::{self, Options};

#[test]
fn report_says_allocation_tracking_is_unavailable() {
    let mut grown: Vec<u64> = Vec::new();
    let (pid, report) = guard::check_with(&Options::new(), || {
        grown.push(1);
        std::process::id()
    });
    assert_eq!(pid, std::process::id());
    let reason = report.allocation_tracking.as_ref().unwrap_err();
    assert!(reason.contains("install_guard_allocator!"), "{report}");
    assert!(report.notes.contains(reason), "{report}");
    assert!(
        report.to_string().contains("allocations not tracked"),
        "{report}"
    );
    assert_eq!(report.allocations.count, 0);
    assert!(!report.is_complete());
    assert_eq!(report.syscall_count("getpid"), 1, "{report}");
    assert_eq!(grown, [1]);
}
