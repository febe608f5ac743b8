//! Every interleaving of the block/snapshot handshake, with the heap, the snapshot and the
//! garbage the sweep zeroes modelled as loom cells: a missing Release/Acquire pair anywhere in
//! the hand-overs shows up as a causality violation.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p downbeat-gc --test loom --release` in a target
//! directory of its own (`crates/gc/ci.sh` does).
#![cfg(loom)]

mod sync {
    pub(crate) use loom::sync::atomic::{AtomicU8, Ordering};
}

#[path = "../src/handshake.rs"]
#[allow(dead_code)]
mod handshake;

use handshake::Handshake;
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

struct World {
    hs: Handshake,
    /// heap[0]: written by the audio thread in its blocks; heap[1]: a garbage block the sweep
    /// zeroes while the audio thread runs.
    heap: [UnsafeCell<u32>; 2],
    snapshot: [UnsafeCell<u32>; 2],
}

// SAFETY: every cell access is ordered by the handshake, which is what the model checks.
unsafe impl Sync for World {}

fn spin_until(cond: impl Fn() -> bool) {
    while !cond() {
        thread::yield_now();
    }
}

#[test]
fn two_collections_hand_over_cleanly() {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(1);
    }
    // Three threads that wait for each other by spinning take many branches per execution;
    // one preemption already covers every hand-over order, and two take far too long.
    builder.max_branches = 100_000;
    builder.check(|| {
        let w = Arc::new(World {
            hs: Handshake::new(),
            heap: [UnsafeCell::new(0), UnsafeCell::new(7)],
            snapshot: [UnsafeCell::new(0), UnsafeCell::new(0)],
        });

        let snap = {
            let w = w.clone();
            thread::spawn(move || {
                for _ in 0..2 {
                    spin_until(|| w.hs.requested());
                    for i in 0..2 {
                        let v = w.heap[i].with(|p| unsafe { *p });
                        w.snapshot[i].with_mut(|p| unsafe { *p = v });
                    }
                    w.hs.copied();
                }
            })
        };
        let sweep = {
            let w = w.clone();
            thread::spawn(move || {
                let mut seen = [0; 2];
                for (cycle, s) in seen.iter_mut().enumerate() {
                    spin_until(|| w.hs.marking());
                    *s = w.snapshot[0].with(|p| unsafe { *p });
                    // The garbage block: zeroed in the live heap while audio runs.
                    let g = w.snapshot[1].with(|p| unsafe { *p });
                    assert_eq!(g, if cycle == 0 { 7 } else { 0 });
                    w.heap[1].with_mut(|p| unsafe { *p = 0 });
                    w.hs.swept();
                }
                seen
            })
        };

        // The audio thread: three blocks, a collection requested after the first two.
        for block in 1..=3u32 {
            spin_until(|| !w.hs.copying());
            w.heap[0].with_mut(|p| unsafe { *p = block });
            if block < 3 {
                // In the runtime a busy collector just means "not this block"; here the model
                // waits so that exactly two collections happen.
                spin_until(|| w.hs.try_request());
            }
        }
        snap.join().unwrap();
        let seen = sweep.join().unwrap();
        assert_eq!(seen, [1, 2], "each snapshot holds the block before it");
    });
}
