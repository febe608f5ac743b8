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

/// One full collection and the start of the next: the audio thread's block writes reach the
/// copy, the copy finishes before the audio thread writes again, the snapshot reaches the
/// mark-and-sweep thread, and the sweep's writes to garbage reach the next copy.
#[test]
fn a_collection_hands_over_cleanly_to_the_next() {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(1);
    }
    // Threads that wait for each other by spinning take many branches per execution.
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
                let mut copies = [[0; 2]; 2];
                for copy in copies.iter_mut() {
                    spin_until(|| w.hs.requested());
                    for (i, c) in copy.iter_mut().enumerate() {
                        *c = w.heap[i].with(|p| unsafe { *p });
                        w.snapshot[i].with_mut(|p| unsafe { *p = *c });
                    }
                    if copy[0] == 1 {
                        w.hs.copied();
                    }
                }
                copies
            })
        };
        let sweep = {
            let w = w.clone();
            thread::spawn(move || {
                spin_until(|| w.hs.marking());
                let seen = w.snapshot[0].with(|p| unsafe { *p });
                assert_eq!(w.snapshot[1].with(|p| unsafe { *p }), 7);
                // The garbage block: zeroed in the live heap while audio runs.
                w.heap[1].with_mut(|p| unsafe { *p = 0 });
                w.hs.swept();
                seen
            })
        };

        // The audio thread: block 1, request; block 2 (waits for the copy), request again as
        // soon as the collector is idle (the runtime would just skip the block instead).
        w.heap[0].with_mut(|p| unsafe { *p = 1 });
        assert!(w.hs.try_request());
        spin_until(|| !w.hs.copying());
        w.heap[0].with_mut(|p| unsafe { *p = 2 });
        spin_until(|| w.hs.try_request());

        let copies = snap.join().unwrap();
        assert_eq!(sweep.join().unwrap(), 1, "the snapshot holds block 1");
        assert_eq!(
            copies,
            [[1, 7], [2, 0]],
            "the second copy sees block 2 and the sweep"
        );
    });
}
