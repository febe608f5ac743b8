//! What a reference write costs under each collector: nanoseconds per `set_ref` in a tight
//! loop. The snapshot and stop-the-world collectors have no write barrier, so the difference
//! between theirs and the replicating collector's is the barrier's cost.
//!
//! Each block writes every reference field of [`OBJECTS`] objects of [`FIELDS`] fields once
//! ([`WRITES`] writes, below the default complementary stack of 16384 entries), and between
//! blocks the bench waits until the collector is idle. So every timed write is the first to
//! its word since the last collection started: for the complementary-stacks barrier that is
//! the slow path, which also pushes the index (a repeated write to a hot field only stores).

use std::hint::black_box;
use std::time::{Duration, Instant};

use downbeat_gc::{start, Config, Gc, Mode};

use crate::report::quantile;

/// Objects whose fields are written.
pub const OBJECTS: usize = 16;
/// Reference fields per object.
pub const FIELDS: usize = 256;
/// Timed writes per block.
pub const WRITES: usize = OBJECTS * FIELDS;

/// The median nanoseconds per `set_ref` over `blocks` blocks under `mode`, on a thread
/// pinned to CPU 0 at the audio priority (the collector's threads pinned to `collector_cpu`).
pub fn set_ref_ns(mode: Mode, blocks: usize, copy_rate: f64, collector_cpu: usize) -> f64 {
    let (mut m, collector) = start(Config {
        mode,
        copy_rate: Some(copy_rate),
        snapshot_priority: Some(super::PRIORITY),
        collector_cpu: Some(collector_cpu),
        ..Config::default()
    })
    .expect("the default heap fits");
    let (objects, targets) = {
        let mut b = m.begin_block();
        let mut alloc = |refs| b.alloc(refs, 1).expect("a fresh 4 MiB heap has room");
        let objects: Vec<Gc> = (0..OBJECTS).map(|_| alloc(FIELDS)).collect();
        let targets: Vec<Gc> = (0..FIELDS).map(|_| alloc(0)).collect();
        for (i, o) in objects.iter().chain(&targets).enumerate() {
            b.set_root(i, Some(*o)).expect("the default 4096 roots");
        }
        (objects, targets)
    };
    let idle = || {
        while !collector.is_idle() {
            std::thread::sleep(Duration::from_micros(100));
        }
    };
    let mut per_write = vec![0.0; blocks];
    std::thread::scope(|s| {
        s.spawn(|| {
            let _ = downbeat_rt::pool::pin_current_thread(0);
            let _ = downbeat_rt::pool::set_current_thread_realtime(super::PRIORITY);
            for (k, t) in per_write.iter_mut().enumerate() {
                idle();
                let mut b = m.begin_block();
                let t0 = Instant::now();
                for (j, &o) in objects.iter().enumerate() {
                    for f in 0..FIELDS {
                        // A different target each block, so every write changes the word.
                        let to = targets[(f + j + k) % FIELDS];
                        b.set_ref(black_box(o), f, Some(to)).expect("rooted");
                    }
                }
                *t = t0.elapsed().as_nanos() as f64 / WRITES as f64;
                drop(b);
            }
        });
    });
    per_write.sort_by(f64::total_cmp);
    quantile(&per_write, 0.5)
}
