//! The heap plan's worst case fits: as many taps as the plan counts (live ones and the ended
//! ones of the slack) can all be allocated at once, objects and delay lines, and again after
//! the collector freed them all (a freed line serves the next request of its size).

use downbeat_gc::{start, Config, Mode};
use downbeat_gc_nodes::{HeapPlan, TAP_BYTES};

/// Tap objects have two references and five data words (and a header).
const REFS: usize = 2;
const DATA: usize = 5;

fn fill(plan: HeapPlan) {
    assert_eq!(TAP_BYTES, 8 * (1 + REFS + DATA));
    let config = Config {
        // Collects at the end of every block that allocated, on this thread: no timing.
        mode: Mode::StopTheWorld,
        copy_rate: Some(5.0),
        ..plan.config()
    };
    let (mut m, _c) = start(config).unwrap();
    for round in 0..3 {
        let mut b = m.begin_block();
        for k in 0..plan.taps {
            b.alloc(REFS, DATA)
                .unwrap_or_else(|e| panic!("{plan:?} round {round}: tap {k}: {e}"));
            b.alloc_atomic(plan.line_bytes)
                .unwrap_or_else(|e| panic!("{plan:?} round {round}: line {k}: {e}"));
        }
        // Unrooted: all garbage when the block ends.
        drop(b);
        // The collector runs at most every second block: give it one without allocations.
        drop(m.begin_block());
    }
    assert_eq!(m.live(), (0, 0), "every round was collected");
}

#[test]
fn the_planned_number_of_taps_fits_and_fits_again_after_collection() {
    // The defaults; a short delay (many ended taps in the slack); a long one on 8 channels
    // at 96 kHz; odd sizes that are not on an allocator class boundary.
    for (channels, samples, taps, rate) in [
        (2, 12_000, 16, 48_000),
        (1, 48, 64, 48_000),
        (8, 96_000, 8, 96_000),
        (3, 12_345, 5, 44_100),
        (2, 1_001, 64, 48_000),
    ] {
        fill(HeapPlan::new(channels, samples, taps, rate).unwrap());
    }
}

#[test]
fn far_beyond_the_plan_allocation_fails_with_an_error() {
    // The plan is not vacuous: far beyond it, allocation fails (with an error, no panic).
    let plan = HeapPlan::new(2, 12_000, 16, 48_000).unwrap();
    let (mut m, _c) = start(Config {
        heap_bytes: plan.pointer_bytes,
        atomic_bytes: plan.atomic_bytes,
        atomic_slots: 4 * plan.taps,
        roots: 1,
        mode: Mode::StopTheWorld,
        copy_rate: Some(5.0),
        ..Config::default()
    })
    .unwrap();
    let mut b = m.begin_block();
    let fitted = (0..4 * plan.taps)
        .take_while(|_| b.alloc_atomic(plan.line_bytes).is_ok())
        .count();
    assert!(fitted >= plan.taps, "{fitted} of {}", plan.taps);
    assert!(fitted < 2 * plan.taps, "the plan is generous: {fitted} fit");
}

#[test]
fn the_documented_default_sizes() {
    // Quoted in the crate docs.
    let plan = HeapPlan::new(2, 12_000, 16, 48_000).unwrap();
    assert_eq!(plan.taps, 48);
    assert_eq!(plan.pointer_bytes, 4480);
    assert_eq!(plan.atomic_bytes >> 10, 4801, "{plan:?}");
}

#[test]
fn lines_freed_between_live_ones_serve_new_taps() {
    // Taps end in any order, so the holes they leave sit between live lines: the next taps
    // must fit in those holes (the plan's margin alone holds only a few lines).
    for (channels, samples) in [(2, 12_000), (3, 12_345), (1, 1_001)] {
        let plan = HeapPlan::new(channels, samples, 16, 48_000).unwrap();
        let (mut m, _c) = start(Config {
            mode: Mode::StopTheWorld,
            copy_rate: Some(5.0),
            ..plan.config()
        })
        .unwrap();
        let mut b = m.begin_block();
        // A list of every planned tap, each with its line, held by root 0.
        let mut taps = Vec::new();
        for _ in 0..plan.taps {
            let t = b.alloc(REFS, DATA).unwrap();
            let line = b.alloc_atomic(plan.line_bytes).unwrap();
            b.set_atomic(t, 0, Some(line)).unwrap();
            b.set_ref(t, 1, b.root(0).unwrap()).unwrap();
            b.set_root(0, Some(t)).unwrap();
            taps.push(t);
        }
        // One tap in three ends: unlinked from the newer one before it in the list.
        for pair in taps.chunks(3) {
            // `taps` is oldest first; each tap links to the one allocated before it.
            if let [older, ended, newer] = *pair {
                assert_eq!(b.get_ref(newer, 1), Ok(Some(ended)));
                b.set_ref(ended, 1, None).unwrap();
                b.set_ref(newer, 1, Some(older)).unwrap();
            }
        }
        drop(b);
        drop(m.begin_block()); // the collection after the allocating block
        let ended = plan.taps / 3;
        assert_eq!(m.live().1 as usize, plan.taps - ended, "{plan:?}");
        let mut b = m.begin_block();
        for k in 0..ended {
            b.alloc_atomic(plan.line_bytes)
                .unwrap_or_else(|e| panic!("{plan:?}: new line {k} of {ended}: {e}"));
        }
    }
}
