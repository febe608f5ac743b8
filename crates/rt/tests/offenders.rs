//! Known offenders: each must show up in the report as what it is.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

use downbeat_rt::guard::{self, Options};

downbeat_rt::install_guard_allocator!();

/// The tracker every syscall assertion below relies on must have worked:
/// on this project's machines (Linux x86_64) anything else is a bug.
fn syscalls_tracked(report: &guard::Report) {
    assert_eq!(report.syscall_tracking, Ok(()), "{report}");
}

fn futex_ops(report: &guard::Report) -> Vec<u32> {
    report
        .syscalls
        .iter()
        .filter_map(|s| s.futex_op)
        .map(|op| op & 0x7f)
        .collect()
}

#[test]
fn vec_push_past_capacity_allocates() {
    let mut samples: Vec<f32> = Vec::with_capacity(4);
    samples.extend([0.0; 4]);
    let report = guard::check(|| samples.push(1.0));
    assert_eq!(report.allocations.count, 1, "{report}");
    assert_eq!(report.allocations.sizes, [8 * 4]);
    assert!(!report.is_clean());
    assert_eq!(samples.len(), 5);
}

#[test]
fn dropping_a_box_frees() {
    let boxed = Box::new([0_u64; 16]);
    let report = guard::check(move || drop(boxed));
    assert_eq!(report.frees.count, 1, "{report}");
    assert_eq!(report.frees.bytes, 128);
    assert_eq!(report.allocations.count, 0);
    assert!(!report.is_clean());
}

#[test]
fn allowed_allocations_are_counted_but_clean() {
    let (v, report) =
        guard::check_with(&Options::new().allow_allocations(true), || vec![1_u8; 100]);
    assert_eq!(v.len(), 100);
    assert_eq!(report.allocations.count, 1, "{report}");
    assert!(report.is_clean(), "{report}");
}

#[test]
fn first_allocation_backtrace_is_captured_on_request() {
    let (_, report) = guard::check_with(&Options::new().backtraces(true), || {
        black_box(Box::new(5_u32))
    });
    let trace = report
        .allocations
        .backtrace
        .as_ref()
        .expect("backtrace requested");
    // Starts at the allocation in the test, not inside the guard.
    assert!(trace.lines().next().unwrap().contains("alloc::"), "{trace}");
    assert!(
        trace.contains("first_allocation_backtrace_is_captured_on_request"),
        "{trace}"
    );
    assert!(!trace.contains("downbeat_rt::guard::guarded"), "{trace}");
    assert!(report.to_string().contains("first one at"), "{report}");
    // The capture itself allocates; none of that may be counted.
    assert_eq!(report.allocations.count, 1, "{report}");

    let (_, report) = guard::check_with(&Options::new().backtraces(false), || {
        black_box(Box::new(5_u32))
    });
    assert!(report.allocations.backtrace.is_none());
}

#[test]
fn contended_std_mutex_waits_in_the_kernel() {
    let mutex = Mutex::new(0);
    let held = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            let guard = mutex.lock().unwrap();
            held.store(true, Ordering::Release);
            thread::sleep(Duration::from_millis(300));
            drop(guard);
        });
        while !held.load(Ordering::Acquire) {
            thread::yield_now();
        }
        let report = guard::check(|| *mutex.lock().unwrap() += 1);
        syscalls_tracked(&report);
        // FUTEX_WAIT (0) or FUTEX_WAIT_BITSET (9): the waiting kind.
        assert!(
            futex_ops(&report).iter().any(|op| [0, 9].contains(op)),
            "{report}"
        );
        assert!(
            report.rusage.as_ref().unwrap().voluntary_context_switches >= 1,
            "{report}"
        );
        assert!(!report.is_clean());
    });
    assert_eq!(*mutex.lock().unwrap(), 1);
}

/// Pins the limitation documented in the guard's module docs: an
/// uncontended `std::sync::Mutex` is one compare-and-swap, invisible to
/// every tracker. If this starts failing, std changed and the docs must too.
#[test]
fn uncontended_std_mutex_is_invisible_as_documented() {
    let mutex = Mutex::new(0);
    let report = guard::check(|| *mutex.lock().unwrap() += 1);
    syscalls_tracked(&report);
    assert!(
        report.syscalls.is_empty() && report.allocations.count == 0,
        "{report}"
    );
    assert!(report.blocking_calls.is_empty());
}

#[test]
fn uncontended_guard_mutex_is_reported_as_blocking() {
    let mutex = guard::Mutex::new(0);
    let report = guard::check(|| *mutex.lock().unwrap() += 1);
    assert_eq!(report.blocking_calls.len(), 1, "{report}");
    assert_eq!(
        (
            report.blocking_calls[0].name,
            report.blocking_calls[0].count
        ),
        ("Mutex::lock", 1)
    );
    assert!(!report.is_clean());
    assert!(report.to_string().contains("Mutex::lock ×1"), "{report}");

    let report = guard::check(|| drop(mutex.try_lock()));
    assert!(report.is_clean(), "try_lock never waits: {report}");
}

#[test]
fn sleeping_blocks() {
    let report = guard::check(|| thread::sleep(Duration::from_millis(5)));
    syscalls_tracked(&report);
    assert_eq!(
        report.syscall_count("clock_nanosleep") + report.syscall_count("nanosleep"),
        1,
        "{report}"
    );
    assert!(
        report.rusage.as_ref().unwrap().voluntary_context_switches >= 1,
        "{report}"
    );
    assert!(!report.is_clean());
}

#[test]
fn file_write_makes_syscalls_and_still_writes() {
    let path = std::env::temp_dir().join(format!("downbeat-guard-{}.txt", std::process::id()));
    let report = guard::check(|| std::fs::write(&path, b"written under guard").unwrap());
    let written = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    syscalls_tracked(&report);
    assert_eq!(written, b"written under guard");
    assert_eq!(report.syscall_count("openat"), 1, "{report}");
    assert_eq!(report.syscall_count("write"), 1, "{report}");
    assert_eq!(report.syscall_count("close"), 1, "{report}");
    assert!(!report.is_clean());
}

/// Unparking a parked thread is a futex wake. `unpark` only makes the call
/// when the thread is parked, which the parker cannot announce exactly, so
/// a few attempts are allowed.
#[test]
fn unparking_a_parked_thread_wakes_it_through_the_kernel() {
    let ready = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let mut woke = None;
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
            thread::sleep(Duration::from_millis(20));
            let report = guard::check(|| parked.unpark());
            syscalls_tracked(&report);
            if report.syscall_count("futex") > 0 {
                woke = Some(report);
                break;
            }
        }
        done.store(true, Ordering::Release);
        parked.unpark();
    });
    let report = woke.expect("no attempt caught the parker parked");
    assert_eq!(futex_ops(&report), [1], "a FUTEX_WAKE: {report}");
    assert!(!report.is_clean());
}

#[test]
fn touching_fresh_mmap_memory_page_faults() {
    const LEN: usize = 1 << 20;
    // SAFETY: a fresh private anonymous mapping, unmapped below.
    let memory = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            LEN,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(memory, libc::MAP_FAILED);
    let address = memory as usize;
    let report = guard::check(|| {
        for page in (0..LEN).step_by(4096) {
            // SAFETY: within the mapping, which lives until after the check.
            unsafe { std::ptr::write_volatile((address + page) as *mut u8, 1) };
        }
    });
    // SAFETY: the mapping made above, no longer used.
    unsafe { libc::munmap(memory, LEN) };
    let faults = report.rusage.as_ref().unwrap().minor_page_faults;
    assert!(faults >= (LEN / 4096 / 2) as u64, "{report}");
    assert!(report.syscalls.is_empty(), "{report}");
    assert!(!report.is_clean());
}

#[test]
fn spawning_a_thread_is_reported_and_works() {
    let (answer, report) =
        guard::check_with(&Options::new(), || thread::spawn(|| 6 * 7).join().unwrap());
    assert_eq!(answer, 42);
    syscalls_tracked(&report);
    // clone3 itself passes the filter untrapped; the spawn shows through
    // glibc's signal masking around it (and mmap, unless a cached stack is
    // reused), its allocations and the join's wait.
    assert!(report.syscall_count("rt_sigprocmask") >= 1, "{report}");
    assert_eq!(
        report.syscall_count("clone3") + report.syscall_count("clone"),
        0
    );
    assert!(report.allocations.count >= 1, "{report}");
}

#[test]
fn futex_wait_stays_a_violation_when_wake_is_allowed() {
    let word = AtomicU32::new(0);
    let options = Options::new().allow(guard::Allow::FutexWake);
    let (result, report) = guard::check_with(&options, || {
        // SAFETY: waits for 1 on a word holding 0: returns EAGAIN at once.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                1,
                0,
            )
        }
    });
    assert_eq!(result, -1);
    syscalls_tracked(&report);
    assert_eq!(futex_ops(&report), [0], "{report}");
    assert!(!report.is_clean());
}

#[test]
fn assert_clean_panics_with_a_listing() {
    let report = guard::check(|| black_box(vec![0_u8; 10]));
    let panic = std::panic::catch_unwind(|| report.assert_clean()).unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(message.contains("not real-time safe"), "{message}");
    assert!(
        message.contains("allocations: 1 totalling 10 bytes"),
        "{message}"
    );
}

#[test]
#[should_panic(expected = "boom inside the guard")]
fn panics_inside_the_scope_reach_the_caller() {
    guard::check(|| panic!("boom inside the guard"));
}

/// Every kind of offence comes back as a typed violation, one entry per kind, whose counts
/// add up to the report's count: what `downbeat audit` reads instead of the report's text.
#[test]
fn violations_are_typed_one_entry_per_kind() {
    use guard::Violation;
    let lock = guard::Mutex::new(0);
    let report = guard::check(|| {
        drop(black_box(vec![0u8; 100]));
        let _ = std::process::id();
        *lock.lock().unwrap() += 1;
        thread::sleep(Duration::from_millis(1));
    });
    syscalls_tracked(&report);
    let v = report.violations();
    assert!(
        v.iter()
            .any(|v| matches!(v, Violation::Allocation(h) if h.count == 1 && h.bytes == 100)),
        "{v:?}"
    );
    assert!(
        v.iter()
            .any(|v| matches!(v, Violation::Free(h) if h.count == 1)),
        "{v:?}"
    );
    assert!(
        v.iter()
            .any(|v| matches!(v, Violation::Syscall(s) if s.name == "getpid" && s.nr == 39)),
        "{v:?}"
    );
    assert!(
        v.iter()
            .any(|v| matches!(v, Violation::Syscall(s) if s.name == "clock_nanosleep")),
        "{v:?}"
    );
    assert!(
        v.iter()
            .any(|v| matches!(v, Violation::Blocking(b) if b.count == 1)),
        "{v:?}"
    );
    assert!(
        v.iter()
            .any(|v| matches!(v, Violation::ContextSwitch { count } if *count >= 1)),
        "{v:?}"
    );
    assert!(
        !v.iter().any(|v| matches!(v, Violation::Untracked(_))),
        "{v:?}"
    );
    assert_eq!(
        v.iter().map(Violation::count).sum::<u64>(),
        report.violation_count(),
        "{report}"
    );
    assert!(guard::check(|| 6 * 7).violations().is_empty());
}
