//! `FlushDenormals`: subnormals become zeros while it lives, the thread's mode comes back
//! when it is dropped, and setting and restoring it is clean under the guard.

use std::hint::black_box;

use downbeat_rt::denormals::{is_flushing, FlushDenormals};
use downbeat_rt::guard;

downbeat_rt::install_guard_allocator!();

/// Half the smallest normal `f32`: a subnormal result, or zero when flushing.
fn half_of_smallest_normal() -> f32 {
    black_box(f32::MIN_POSITIVE) * black_box(0.5)
}

#[test]
fn subnormals_flush_inside_and_come_back_after() {
    assert!(!is_flushing(), "a new thread starts without flushing");
    assert!(half_of_smallest_normal() > 0.0);
    {
        let _flush = FlushDenormals::new();
        assert!(is_flushing());
        assert_eq!(half_of_smallest_normal(), 0.0, "results flush");
        // Denormals-are-zero: a subnormal input reads as zero.
        let sub = black_box(f32::from_bits(1));
        assert_eq!(sub * black_box(2.0f32), 0.0, "inputs flush");
    }
    assert!(!is_flushing());
    assert!(half_of_smallest_normal() > 0.0, "restored");
}

#[test]
fn nested_scopes_restore_what_they_found() {
    let outer = FlushDenormals::new();
    {
        let _inner = FlushDenormals::new();
        assert!(is_flushing());
    }
    assert!(
        is_flushing(),
        "the inner scope put back the outer's mode, not the default"
    );
    drop(outer);
    assert!(!is_flushing());
}

#[test]
fn setting_and_restoring_is_clean_under_the_guard() {
    let report = guard::check(|| {
        let mut zeros = 0;
        for _ in 0..1000 {
            let _flush = FlushDenormals::new();
            if half_of_smallest_normal() == 0.0 {
                zeros += 1;
            }
        }
        assert_eq!(zeros, 1000);
        assert!(!is_flushing());
    });
    assert!(report.is_complete(), "{report}");
    assert!(report.is_clean(), "{report}");
    assert!(report.syscalls.is_empty(), "{report}");
}

/// Items that record, on whichever thread processes them, whether it flushes.
struct Probe {
    next: std::sync::atomic::AtomicUsize,
    left: std::sync::atomic::AtomicUsize,
    /// Per item: 0 = not run, 1 = run by a worker that flushes, 2 = by one that does not,
    /// 3 = run by the calling thread.
    seen: Vec<std::sync::atomic::AtomicUsize>,
}

impl downbeat_rt::pool::WorkList for Probe {
    type Item = usize;
    fn next_item(&self, _thread: usize) -> Option<usize> {
        use std::sync::atomic::Ordering::Relaxed;
        let i = self.next.fetch_add(1, Relaxed);
        (i < self.seen.len()).then_some(i)
    }
    fn do_work(&self, i: usize, thread: usize) -> Option<usize> {
        use std::sync::atomic::Ordering::Relaxed;
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_micros(50) {
            std::hint::spin_loop();
        }
        let v = match (thread, is_flushing()) {
            (0, _) => 3,
            (_, true) => 1,
            (_, false) => 2,
        };
        self.seen[i].store(v, Relaxed);
        self.left.fetch_sub(1, Relaxed);
        None
    }
    fn is_done(&self) -> bool {
        self.left.load(std::sync::atomic::Ordering::Relaxed) == 0
    }
    fn ready(&self) -> usize {
        self.seen
            .len()
            .saturating_sub(self.next.load(std::sync::atomic::Ordering::Relaxed))
    }
}

#[test]
fn pool_workers_flush() {
    use downbeat_rt::pool::{Pool, PoolConfig};
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    let pool = Pool::new(PoolConfig {
        workers: Some(1),
        realtime_priority: None,
        ..PoolConfig::default()
    });
    let mut by_workers = 0;
    for _ in 0..50 {
        let probe = Probe {
            next: AtomicUsize::new(0),
            left: AtomicUsize::new(200),
            seen: (0..200).map(|_| AtomicUsize::new(0)).collect(),
        };
        pool.run(&probe);
        let seen: Vec<usize> = probe.seen.iter().map(|s| s.load(Relaxed)).collect();
        assert!(!seen.contains(&2), "a worker ran an item without flushing");
        by_workers += seen.iter().filter(|&&v| v == 1).count();
        if by_workers > 0 {
            break;
        }
    }
    assert!(
        by_workers > 0,
        "no worker took an item: nothing was checked"
    );
}
