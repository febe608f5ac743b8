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

/// Reads a modelled cell.
fn get(cell: &UnsafeCell<u32>) -> u32 {
    // SAFETY: loom tracks the access; a read that races a write fails the model (a causality
    // violation) instead of happening.
    cell.with(|p| unsafe { *p })
}

/// Writes a modelled cell.
fn set(cell: &UnsafeCell<u32>, value: u32) {
    // SAFETY: as in `get`.
    cell.with_mut(|p| unsafe { *p = value })
}

fn spin_until(cond: impl Fn() -> bool) {
    while !cond() {
        thread::yield_now();
    }
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    builder.check(f);
}

fn world() -> Arc<World> {
    Arc::new(World {
        hs: Handshake::new(),
        heap: [UnsafeCell::new(0), UnsafeCell::new(7)],
        snapshot: [UnsafeCell::new(0), UnsafeCell::new(0)],
    })
}

/// The audio thread's block writes reach the copy, and the copy is finished before the audio
/// thread writes again.
#[test]
fn the_copy_sits_between_two_blocks() {
    model(|| {
        let w = world();
        let snap = {
            let w = w.clone();
            thread::spawn(move || {
                spin_until(|| w.hs.claim());
                let v = get(&w.heap[0]);
                set(&w.snapshot[0], v);
                w.hs.copied();
                v
            })
        };
        set(&w.heap[0], 1);
        assert!(w.hs.try_request());
        spin_until(|| !w.hs.copying());
        set(&w.heap[0], 2);
        assert_eq!(snap.join().unwrap(), 1);
    });
}

/// The snapshot reaches the mark-and-sweep thread, and the sweep's writes to a garbage block
/// are visible once the audio thread's next request succeeds.
#[test]
fn the_sweep_is_visible_to_the_next_copy() {
    model(|| {
        let w = world();
        // Collection 1 requested and copied already (single-threaded set-up).
        set(&w.snapshot[0], 1);
        assert!(w.hs.try_request());
        w.hs.copied();
        let sweep = {
            let w = w.clone();
            thread::spawn(move || {
                assert!(w.hs.marking());
                let seen = get(&w.snapshot[0]);
                set(&w.heap[1], 0);
                w.hs.swept();
                seen
            })
        };
        // The audio thread runs a block meanwhile (other cells than the sweep's), then requests
        // collection 2; from there on the heap is the next copy's to read, which the first
        // model checks, so reading it here stands for the copy.
        set(&w.heap[0], 2);
        spin_until(|| w.hs.try_request());
        assert!(w.hs.claim());
        let garbage = get(&w.heap[1]);
        assert_eq!(garbage, 0, "the next copy sees the zeroed garbage");
        assert_eq!(sweep.join().unwrap(), 1);
    });
}

/// The snapshot thread and the audio thread race for one copy: exactly one of them copies,
/// the copy holds the block's writes, and the audio thread's next block writes only after the
/// copy is published, whoever made it.
#[test]
fn one_copier_wins_the_claim_and_the_next_block_waits_for_it() {
    model(|| {
        let w = world();
        let snap = {
            let w = w.clone();
            thread::spawn(move || {
                // One look, as a snapshot thread that wakes once between two blocks.
                if w.hs.claim() {
                    set(&w.snapshot[0], get(&w.heap[0]));
                    w.hs.copied();
                    true
                } else {
                    false
                }
            })
        };
        set(&w.heap[0], 1);
        assert!(w.hs.try_request());
        // The next block's start: take the copy over if nobody started it, else wait.
        let mut took_over = false;
        while w.hs.copying() {
            if w.hs.claim() {
                set(&w.snapshot[0], get(&w.heap[0]));
                w.hs.copied();
                took_over = true;
            } else {
                thread::yield_now();
            }
        }
        set(&w.heap[0], 2);
        let by_snapshot_thread = snap.join().unwrap();
        assert!(took_over != by_snapshot_thread, "exactly one copier");
        assert_eq!(get(&w.snapshot[0]), 1);
    });
}

/// The replicating collector's cells: the complementary blocks change hands at each hand-over
/// (IDLE -> MARKING by the audio thread, MARKING -> IDLE by the collector), and so does the
/// roots' copy.
struct Replica {
    hs: Handshake,
    comp: [UnsafeCell<u32>; 2],
    roots: UnsafeCell<u32>,
    snapshot: UnsafeCell<u32>,
}

// SAFETY: as for `World`.
unsafe impl Sync for Replica {}

const UNUSED: u32 = u32::MAX;

/// Two collections: what the barrier and the roots' copy wrote before each hand-over reaches
/// the collector, and the collector's reset of a block happens before the audio thread's
/// barrier uses that block again (its load must see UNUSED, and no write may race).
#[test]
fn the_complementary_blocks_change_hands_at_the_hand_over() {
    model(|| {
        let w = Arc::new(Replica {
            hs: Handshake::new(),
            comp: [UnsafeCell::new(UNUSED), UnsafeCell::new(UNUSED)],
            roots: UnsafeCell::new(0),
            snapshot: UnsafeCell::new(0),
        });
        let collector = {
            let w = w.clone();
            thread::spawn(move || {
                let mut seen = [(0, 0); 2];
                for (gc, s) in seen.iter_mut().enumerate() {
                    spin_until(|| w.hs.marking());
                    let v = get(&w.comp[gc]);
                    set(&w.snapshot, v);
                    set(&w.comp[gc], UNUSED);
                    *s = (v, get(&w.roots));
                    w.hs.swept();
                }
                seen
            })
        };
        // Block 1: the barrier writes block 0; at its end, copy the roots and hand over.
        set(&w.comp[0], 1);
        assert!(w.hs.is_idle());
        set(&w.roots, 5);
        assert!(w.hs.try_hand_over());
        // Block 2 writes block 1 while the collector empties block 0.
        set(&w.comp[1], 2);
        spin_until(|| w.hs.is_idle());
        set(&w.roots, 6);
        assert!(w.hs.try_hand_over());
        // Block 3: block 0 is the barrier's again, and clean.
        assert_eq!(get(&w.comp[0]), UNUSED);
        set(&w.comp[0], 3);
        assert_eq!(collector.join().unwrap(), [(1, 5), (2, 6)]);
    });
}
