//! A report a tracker did not watch is not clean: `assert_clean` fails on it,
//! and only the named opt-out, for exactly the missing tracker, lets it pass.
//! The binaries `no_allocator` and `seccomp_unavailable` check the same for
//! the other ways a tracker goes missing.

use std::panic::{catch_unwind, AssertUnwindSafe};

use downbeat_rt::guard::{self, Options, Report, Tracker};

downbeat_rt::install_guard_allocator!();

/// The message `assert_clean_allowing_missing(excused)` panics with, or
/// `None` if it passed.
fn failure(report: &Report, excused: &[Tracker]) -> Option<String> {
    let panic = catch_unwind(AssertUnwindSafe(|| {
        report.assert_clean_allowing_missing(excused)
    }))
    .err()?;
    Some(
        panic
            .downcast_ref::<String>()
            .expect("a formatted message")
            .clone(),
    )
}

#[test]
fn every_tracker_runs_here_by_default() {
    let report = guard::check(|| 6 * 7);
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        assert!(Tracker::unsupported_on_this_target().is_empty());
        assert_eq!(report.missing_trackers(), [], "{report}");
        report.assert_clean();
    }
    // Elsewhere, only what the platform lacks may be missing.
    report.assert_clean_allowing_missing(Tracker::unsupported_on_this_target());
}

#[test]
fn a_missing_tracker_fails_assert_clean() {
    let (pid, report) = guard::check_with(&Options::new().track_syscalls(false), std::process::id);
    assert_eq!(pid, std::process::id());
    assert_eq!(report.missing_trackers(), [Tracker::Syscalls], "{report}");
    // Nothing the remaining trackers count as a violation happened...
    assert_eq!(report.violation_count(), 0, "{report}");
    // ...yet the getpid went unseen, so the report is not clean.
    assert!(!report.is_clean(), "{report}");
    assert!(!report.is_complete());
    let message = failure(&report, &[]).expect("assert_clean must fail");
    assert!(message.contains("system calls not tracked"), "{message}");
    assert!(
        message.contains("Options::track_syscalls(false)"),
        "the reason is printed: {message}"
    );
    assert!(
        report
            .to_string()
            .starts_with("real-time guard: incomplete"),
        "{report}"
    );
}

#[test]
fn only_the_named_opt_out_lets_it_pass() {
    let (_, report) = guard::check_with(&Options::new().track_syscalls(false), || 6 * 7);
    assert!(report.is_clean_allowing_missing(&[Tracker::Syscalls]));
    assert_eq!(failure(&report, &[Tracker::Syscalls]), None);
    // Excusing another tracker does not excuse this one.
    assert!(!report.is_clean_allowing_missing(&[Tracker::Allocations, Tracker::Rusage]));
    let message = failure(&report, &[Tracker::Allocations, Tracker::Rusage])
        .expect("the wrong excuse must fail");
    assert!(message.contains("system calls not tracked"), "{message}");
}

#[test]
fn the_opt_out_does_not_excuse_violations() {
    let (_, report) = guard::check_with(&Options::new().track_syscalls(false), || {
        std::hint::black_box(Box::new(1_u64))
    });
    assert!(!report.is_clean_allowing_missing(&Tracker::ALL));
    let message = failure(&report, &Tracker::ALL).expect("an allocation must fail");
    assert!(message.contains("not real-time safe"), "{message}");
    assert!(
        message.contains("allocations: 1 totalling 8 bytes"),
        "{message}"
    );
}
