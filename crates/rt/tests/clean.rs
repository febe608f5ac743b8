//! Known-clean code reports nothing, and allowed calls are counted apart.

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::thread;
use std::time::Instant;

use downbeat_rt::guard::{self, Allow, Options, Report};

downbeat_rt::install_guard_allocator!();

fn assert_nothing(report: &Report) {
    assert!(report.is_complete(), "{report}");
    assert!(report.is_clean(), "{report}");
    assert!(
        report.syscalls.is_empty() && report.allowed_syscalls.is_empty(),
        "{report}"
    );
    assert_eq!(report.allocations.count + report.frees.count, 0, "{report}");
    assert!(report.notes.is_empty(), "{report}");
}

static SHARED: AtomicU64 = AtomicU64::new(0);

#[test]
fn arithmetic_is_clean() {
    let report = guard::check(|| {
        let mut phase = 0.0_f32;
        let mut out = [0.0_f32; 256];
        for sample in &mut out {
            *sample = (phase * std::f32::consts::TAU).sin();
            phase = (phase + 440.0 / 48_000.0).fract();
        }
        black_box(out)
    });
    assert_nothing(&report);
}

#[test]
fn atomics_are_clean() {
    let local = AtomicU32::new(0);
    let report = guard::check(|| {
        for i in 0..1000 {
            SHARED.fetch_add(i, Ordering::AcqRel);
            let _ =
                local.compare_exchange(i as u32, i as u32 + 1, Ordering::AcqRel, Ordering::Acquire);
        }
    });
    assert_nothing(&report);
    assert_eq!(local.load(Ordering::Relaxed), 1000);
}

#[test]
fn reading_the_clock_is_clean_because_it_is_a_vdso_call() {
    let (elapsed, report) = guard::check_with(&Options::new(), || {
        let start = Instant::now();
        black_box(Instant::now()) - start
    });
    assert!(elapsed.as_secs() < 1);
    assert_nothing(&report);
}

/// The guard faults in its thread's stack before arming (256 KiB by
/// default): code using a deep stack must not report the first touch.
#[test]
fn deep_stack_use_is_clean() {
    // One frame per KiB, each touched, and not inlined: a single big frame
    // would be probed at the entry of the guard's own function, before
    // arming, and prove nothing.
    #[inline(never)]
    fn descend(kib: usize) {
        let mut frame = [0_u8; 1024];
        frame[0] = 1;
        black_box(&mut frame);
        if kib > 1 {
            descend(kib - 1);
        }
        black_box(&mut frame);
    }
    let report = guard::check(|| descend(160));
    assert_nothing(&report);
}

#[test]
fn other_threads_heap_traffic_is_not_counted() {
    let stop = std::sync::atomic::AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                black_box(vec![0_u8; 64]);
            }
        });
        let report = guard::check(|| {
            let mut x = 1_u64;
            for _ in 0..100_000 {
                x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
            }
            x
        });
        stop.store(true, Ordering::Relaxed);
        assert_nothing(&report);
    });
}

#[test]
fn allowed_futex_wake_is_counted_not_failed() {
    let word = AtomicU32::new(0);
    let wake = || {
        // SAFETY: FUTEX_WAKE on a live word; nobody waits, it returns 0.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                1,
            )
        }
    };
    let (woken, report) = guard::check_with(&Options::new().allow(Allow::FutexWake), wake);
    assert_eq!(woken, 0);
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.allowed_syscall_count("futex"), 1, "{report}");
    assert_eq!(
        report.allowed_syscalls[0].futex_op,
        Some((libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG) as u32)
    );
    assert!(
        report
            .to_string()
            .contains("allowed system call futex (nr 202) FUTEX_WAKE_PRIVATE ×1"),
        "{report}"
    );

    // The same call without the allow-list is a violation.
    let report = guard::check(wake);
    assert_eq!(report.syscall_count("futex"), 1, "{report}");
    assert!(!report.is_clean());
}

#[test]
fn allowed_unpark_is_counted_not_failed() {
    let ready = std::sync::atomic::AtomicBool::new(false);
    let done = std::sync::atomic::AtomicBool::new(false);
    let mut allowed = 0;
    thread::scope(|s| {
        let parker = s.spawn(|| {
            while !done.load(Ordering::Acquire) {
                ready.store(true, Ordering::Release);
                thread::park();
            }
        });
        let parked = parker.thread().clone();
        for _ in 0..10 {
            while !ready.swap(false, Ordering::AcqRel) {
                thread::yield_now();
            }
            thread::sleep(std::time::Duration::from_millis(20));
            let (_, report) =
                guard::check_with(&Options::new().allow(Allow::FutexWake), || parked.unpark());
            assert!(report.is_clean(), "{report}");
            allowed = report.allowed_syscall_count("futex");
            if allowed > 0 {
                break;
            }
        }
        done.store(true, Ordering::Release);
        parked.unpark();
    });
    assert_eq!(allowed, 1);
}

#[test]
fn allowing_a_syscall_by_number() {
    let getpid = guard::syscall_number("getpid").unwrap();
    let options = Options::new().allow(Allow::Syscall(getpid));
    let (pid, report) = guard::check_with(&options, std::process::id);
    assert_eq!(pid, std::process::id());
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.allowed_syscall_count("getpid"), 1, "{report}");

    // Only that one: its neighbour getppid stays a violation.
    // SAFETY: getppid has no preconditions.
    let (_, report) = guard::check_with(&options, || unsafe { libc::getppid() });
    assert_eq!(report.syscall_count("getppid"), 1, "{report}");
    assert!(!report.is_clean());
}
