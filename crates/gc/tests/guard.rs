//! The audio thread's side of the collector is real-time safe while the snapshot thread keeps
//! up: allocating objects and atomic blocks, field and root access, applying the collector's
//! frees, and the block protocol make no heap call, system call, lock, context switch or page
//! fault. A snapshot thread that is late is not waited for: the audio thread takes the copy
//! over, and without a real-time snapshot thread it copies every snapshot itself.

use std::time::Duration;

use downbeat_gc::{start, Barrier, Collector, Config, Mode, Mutator};
use downbeat_rt::guard;

mod support;

downbeat_rt::install_guard_allocator!();

/// Note-ons and note-offs: voices with a delay line, chained from root 0, dropped every 16
/// blocks so the collector has garbage to return while we watch.
fn play(m: &mut Mutator, blocks: usize, wait_for_copy: bool, collector: &Collector) -> u64 {
    let mut sum = 0u64;
    for n in 0..blocks {
        if n % 100 == 99 {
            // Let the collector catch up now and then (spinning, no system call), so that
            // collections complete inside the watched scope however busy the machine is.
            while !collector.is_idle() {
                std::hint::spin_loop();
            }
        }
        if wait_for_copy {
            // Spin (no system call) so the block never has to fall back to yielding; the
            // snapshot thread needs a little time on a busy two-core machine.
            while m.snapshot_pending() {
                std::hint::spin_loop();
            }
        }
        let mut b = m.begin_block();
        for k in 0..4 {
            let voice = b.alloc(2, 2).expect("room for a voice");
            let line = b
                .alloc_atomic(256 + 64 * ((n + k) % 16))
                .expect("room for a line");
            b.samples(line).unwrap().fill(0.1);
            b.set_atomic(voice, 0, Some(line)).unwrap();
            b.set_ref(voice, 1, b.root(0).unwrap()).unwrap();
            b.set_data(voice, 0, n as u64).unwrap();
            b.set_root(0, Some(voice)).unwrap();
        }
        if n % 16 == 15 {
            b.set_root(0, None).unwrap();
        }
        if let Some(v) = b.root(0).unwrap() {
            sum += b.data(v, 0).unwrap();
        }
    }
    sum
}

fn check(mode: Mode) {
    let config = Config {
        mode,
        poll: Duration::from_micros(50),
        full_snapshot_every: Duration::from_millis(10),
        // Room for everything the scope allocates even if the collector (a normal-priority
        // thread) falls behind on a loaded machine: the test is about the audio side.
        heap_bytes: 4 << 20,
        atomic_bytes: 16 << 20,
        atomic_slots: 16384,
        ..Config::small()
    };
    let (mut m, collector) = start(config).unwrap();
    // Warm up outside the guard: code paths, thread start-up, a few collections.
    play(&mut m, 200, true, &collector);
    std::thread::sleep(Duration::from_millis(20));
    let before = m.stats();
    let (_, report) = guard::check_with(&guard::Options::new(), || {
        play(&mut m, 2000, true, &collector);
    });
    assert!(report.is_complete(), "{report}");
    report.assert_clean();
    let after = m.stats();
    assert!(
        after.objects_freed > before.objects_freed,
        "frees were applied inside the scope"
    );
    assert!(collector.stats().cycles > 0);
}

#[test]
fn snapshot_mode_audio_side_is_clean() {
    check(Mode::Snapshot);
}

/// The write barrier (every `set_ref`/`set_atomic` and allocation above also writes the
/// complementary block, and the stack), the swap and the roots' copy at the end of a block.
#[test]
fn replicating_mode_audio_side_is_clean_barrier_included() {
    check(Mode::Replicating(Barrier::Block));
    check(Mode::Replicating(Barrier::Stacks));
}

#[test]
fn stop_the_world_mode_is_clean_too_just_slow() {
    check(Mode::StopTheWorld);
}

/// A snapshot thread that polls every 50 ms: once it has just looked, a snapshot requested
/// now is still unclaimed at the next block.
const LATE_POLL: Duration = Duration::from_millis(50);

/// One block that allocates a voice and roots it, so that ending it may request a snapshot.
fn note_on(m: &mut Mutator) {
    let mut b = m.begin_block();
    let v = b.alloc(0, 1).expect("room for a voice");
    b.set_root(0, Some(v)).unwrap();
}

/// A late snapshot thread is not waited for: the next block finds the copy unclaimed, takes
/// it over and copies on the audio thread (no system call, no spinning on the other thread).
/// The mark-and-sweep thread then collects as usual.
#[test]
fn a_late_snapshot_is_taken_over_by_the_audio_thread() {
    let config = Config {
        poll: LATE_POLL,
        // Keep every copy partial: a full one is padded.
        full_snapshot_every: Duration::from_secs(3600),
        ..Config::small()
    };
    let (mut m, collector) = start(config).unwrap();
    if let Some(note) = collector.stats().priority_note {
        // Without a real-time snapshot thread every copy is the audio thread's anyway; the
        // test below covers that.
        support::refused("a_late_snapshot_is_taken_over_by_the_audio_thread", &note);
        return;
    }
    let mut taken = 0;
    for _attempt in 0..5 {
        // Outside the guard: request a snapshot and let it be copied and swept, so that the
        // snapshot thread has just looked and sleeps a whole poll now.
        note_on(&mut m);
        while m.snapshot_pending() || !collector.is_idle() {
            std::hint::spin_loop();
        }
        let before = m.stats();
        let (requested, report) = guard::check_with(&guard::Options::new(), || {
            // The block after a request never requests; the one after that does.
            note_on(&mut m);
            note_on(&mut m);
            let requested = m.snapshot_pending();
            drop(m.begin_block());
            requested
        });
        assert!(requested, "the second block requested a snapshot");
        assert!(report.is_complete(), "{report}");
        report.assert_clean();
        let after = m.stats();
        assert!(!m.snapshot_pending(), "the copy is done after begin_block");
        taken = after.copies_on_audio_thread - before.copies_on_audio_thread;
        if taken > 0 {
            assert_eq!(after.blocked_blocks, before.blocked_blocks + 1);
            break;
        }
        // The test thread stalled long enough for the snapshot thread to look: try again.
    }
    assert!(taken > 0, "no attempt found the snapshot thread late");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while collector.stats().cycles == 0 {
        assert!(std::time::Instant::now() < deadline, "never swept");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// With no real-time snapshot thread (`snapshot_priority: None` here; a refused priority does
/// the same), every snapshot is copied by the audio thread at the end of the block that
/// requests it, so no block ever waits for another thread; the audio side stays clean.
#[test]
fn without_a_realtime_snapshot_thread_the_audio_thread_copies() {
    let config = Config {
        snapshot_priority: None,
        poll: Duration::from_micros(50),
        heap_bytes: 4 << 20,
        atomic_bytes: 16 << 20,
        atomic_slots: 16384,
        ..Config::small()
    };
    let (mut m, collector) = start(config).unwrap();
    assert!(
        collector.stats().priority_note.is_some(),
        "the fallback is noted"
    );
    play(&mut m, 200, false, &collector);
    let before = m.stats();
    let (_, report) = guard::check_with(&guard::Options::new(), || {
        play(&mut m, 2000, false, &collector);
    });
    assert!(report.is_complete(), "{report}");
    report.assert_clean();
    let after = m.stats();
    let requested = after.snapshots_requested - before.snapshots_requested;
    assert!(requested > 0);
    assert_eq!(
        after.copies_on_audio_thread - before.copies_on_audio_thread,
        requested,
        "every snapshot was copied on the audio thread"
    );
    assert_eq!(
        after.blocked_blocks, before.blocked_blocks,
        "no block waited"
    );
    assert!(after.objects_freed > before.objects_freed);
}
