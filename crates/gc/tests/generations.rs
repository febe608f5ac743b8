//! A handle kept across blocks without a root is refused once its object was collected, even
//! after the memory was reused for a new object: handles carry the generation of the block
//! they were returned for, and every access compares it with the block's header.

use std::time::{Duration, Instant};

use downbeat_gc::{start, AccessError, Config, Gc, Mode, Mutator};
use downbeat_rt::guard;

downbeat_rt::install_guard_allocator!();

/// Runs empty blocks until the audio side has applied at least `freed` object frees.
fn until_freed(m: &mut Mutator, freed: u64, atomic_freed: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while m.stats().objects_freed < freed || m.stats().atomic_freed < atomic_freed {
        assert!(
            Instant::now() < deadline,
            "the collector never freed the object"
        );
        m.begin_block().end();
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Allocates an unrooted object, lets the collector free it, allocates one of the same size
/// (which takes the freed block: the heap does not grow), roots it in slot 0 and returns
/// (old, new).
fn collected_and_reused(m: &mut Mutator) -> (Gc, Gc) {
    let old = {
        let mut b = m.begin_block();
        let old = b.alloc(1, 1).unwrap();
        b.set_data(old, 0, 7).unwrap();
        old
    }; // not rooted: garbage once this block ends
    until_freed(m, 1, 0);
    let used = m.heap_used();
    let new = {
        let mut b = m.begin_block();
        let new = b.alloc(1, 1).unwrap();
        // Rooted, so that the collector (running concurrently in snapshot mode) keeps it.
        b.set_root(0, Some(new)).unwrap();
        new
    };
    assert_eq!(m.heap_used(), used, "the freed block was reused");
    assert_ne!(old, new, "the new incarnation has a new generation");
    (old, new)
}

fn check_refused(mode: Mode) {
    let config = Config {
        mode,
        poll: Duration::from_micros(50),
        ..Config::small()
    };
    let (mut m, _c) = start(config).unwrap();
    let (old, new) = collected_and_reused(&mut m);
    let mut b = m.begin_block();
    assert!(b.is_live(new));
    assert!(!b.is_live(old));
    assert_eq!(b.data(old, 0), Err(AccessError::Stale));
    assert_eq!(b.set_data(old, 0, 99), Err(AccessError::Stale));
    assert_eq!(b.get_ref(old, 0), Err(AccessError::Stale));
    assert_eq!(b.set_ref(old, 0, None), Err(AccessError::Stale));
    // Storing the stale handle would make the new object reachable through an old name.
    assert_eq!(b.set_ref(new, 0, Some(old)), Err(AccessError::Stale));
    assert_eq!(b.set_root(1, Some(old)), Err(AccessError::Stale));
    assert_eq!(b.root(1), Ok(None));
    assert_eq!(b.root(0), Ok(Some(new)));
    // The new object saw none of the refused writes.
    assert_eq!(b.data(new, 0), Ok(0));
    assert_eq!(b.get_ref(new, 0), Ok(None));
}

#[test]
fn a_stale_handle_is_refused_after_its_block_is_reused_snapshot() {
    check_refused(Mode::Snapshot);
}

#[test]
fn a_stale_handle_is_refused_after_its_block_is_reused_stop_the_world() {
    check_refused(Mode::StopTheWorld);
}

#[test]
fn a_stale_atomic_handle_is_refused_after_its_slot_is_reused() {
    let (mut m, _c) = start(Config::small()).unwrap();
    let old = m.begin_block().alloc_atomic(64).unwrap();
    until_freed(&mut m, 0, 1);
    let mut b = m.begin_block();
    let new = b.alloc_atomic(64).unwrap();
    assert_ne!(old, new);
    let holder = b.alloc(1, 0).unwrap();
    assert!(b.is_live_atomic(new) && !b.is_live_atomic(old));
    assert!(b.samples(old).is_none());
    assert!(b.bytes(old).is_none());
    assert_eq!(b.set_atomic(holder, 0, Some(old)), Err(AccessError::Stale));
    assert_eq!(b.set_root_atomic(0, Some(old)), Err(AccessError::Stale));
    assert_eq!(b.get_atomic(holder, 0), Ok(None));
}

/// Refusing a stale handle on the audio thread is an O(1) check: no allocation, free, lock
/// or system call.
#[test]
fn refusing_a_stale_handle_is_real_time_safe() {
    let config = Config {
        mode: Mode::StopTheWorld,
        ..Config::small()
    };
    let (mut m, _c) = start(config).unwrap();
    let (old, new) = collected_and_reused(&mut m);
    let mut b = m.begin_block();
    let (refused, report) = guard::check_with(&guard::Options::new(), || {
        [
            b.data(old, 0).err(),
            b.set_data(old, 0, 1).err(),
            b.set_ref(new, 0, Some(old)).err(),
            b.set_root(2, Some(old)).err(),
        ]
    });
    assert!(report.is_complete(), "{report}");
    report.assert_clean();
    assert_eq!(refused, [Some(AccessError::Stale); 4]);
}
