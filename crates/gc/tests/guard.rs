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

/// A copy the snapshot thread is still doing after 2 ms is waited for, and only so: the audio
/// thread spins, then yields with `sched_yield` until the copy is done, and makes no other
/// call; the copy it waited for is whole (the collection that follows frees exactly the
/// garbage, and the live chain reads back intact).
///
/// The stall is real: every snapshot is full here, and a full snapshot is padded to the copy
/// time of the whole heap at the configured rate (the worst-case rehearsal), 0.01 bytes/ns
/// for 256 KiB, about 26 ms in the middle of the copy; the snapshot thread has claimed it
/// before the next block starts.
#[test]
fn a_copy_still_running_after_2_ms_is_waited_for_with_sched_yield_only() {
    let config = Config {
        copy_rate: Some(0.01),
        full_snapshot_every: Duration::ZERO,
        poll: Duration::from_micros(50),
        ..Config::small()
    };
    let (mut m, collector) = start(config).unwrap();
    if let Some(note) = collector.stats().priority_note {
        support::refused(
            "a_copy_still_running_after_2_ms_is_waited_for_with_sched_yield_only",
            &note,
        );
        return;
    }
    // The audio thread on another CPU than the collector's (the thesis' layout): the snapshot
    // thread spins at real-time priority on its own, and a test thread sharing its CPU would
    // only run once the copy is over.
    let cpu = Config::small().collector_cpu.expect("two CPUs or more");
    downbeat_rt::pool::pin_current_thread(if cpu == 0 { 1 } else { 0 }).unwrap();
    let sched_yield = guard::syscall_number("sched_yield").unwrap();
    let mut last = String::new();
    for _attempt in 0..10 {
        while m.snapshot_pending() || !collector.is_idle() {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Outside the guard: five unreachable objects, and a chain of three voices from root 0
        // that replaces the last one, so the previous chain is garbage too; then blocks until one requests a snapshot (every
        // other block may: the block after a request never requests).
        let garbage = m.live().0;
        let mut chain = Vec::new();
        let mut b = m.begin_block();
        b.set_root(0, None).unwrap();
        for _ in 0..5 {
            b.alloc(1, 1).expect("room for garbage");
        }
        for k in 0..3 {
            let v = b.alloc(1, 1).expect("room for a voice");
            b.set_data(v, 0, 100 + k).unwrap();
            b.set_ref(v, 0, b.root(0).unwrap()).unwrap();
            b.set_root(0, Some(v)).unwrap();
            chain.push(v);
        }
        drop(b);
        for _ in 0..2 {
            if m.snapshot_pending() {
                break;
            }
            drop(m.begin_block());
        }
        assert!(m.snapshot_pending(), "no block requested a snapshot");
        // Long enough for the snapshot thread (polling every 50 µs) to claim the copy, well
        // inside the copy's 26 ms; spinning keeps this thread on its CPU.
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_millis(3) {
            std::hint::spin_loop();
        }
        let before = m.stats();
        let (_, report) = guard::check_with(
            &guard::Options::new().allow(guard::Allow::Syscall(sched_yield)),
            || drop(m.begin_block()),
        );
        let after = m.stats();
        let yields = report.allowed_syscall_count("sched_yield");
        let preempted = report
            .rusage
            .as_ref()
            .is_ok_and(|r| r.involuntary_context_switches > 0);
        if after.copies_on_audio_thread > before.copies_on_audio_thread
            || after.blocked_blocks == before.blocked_blocks
            || (yields == 0 && (preempted || after.last_blocking < Duration::from_millis(3)))
        {
            // A busy machine: the snapshot thread had not claimed the copy yet, or this
            // thread was preempted until the copy was (nearly) over, so the wait never got
            // past its 2 ms of spinning. Try again.
            last = format!(
                "copied here: {}, blocked: {}, sched_yield: {yields}, preempted: {preempted}, \
                 waited {:?}",
                after.copies_on_audio_thread - before.copies_on_audio_thread,
                after.blocked_blocks - before.blocked_blocks,
                after.last_blocking
            );
            continue;
        }
        assert!(report.is_complete(), "{report}");
        report.assert_clean();
        assert!(
            yields > 0,
            "waited {:?} without yielding ({:?}): {report}",
            after.last_blocking,
            collector.stats()
        );
        assert!(
            after.last_blocking >= Duration::from_millis(2),
            "yielded after {:?}, before the 2 ms of spinning",
            after.last_blocking
        );
        assert_eq!(after.blocked_blocks, before.blocked_blocks + 1);
        assert!(!m.snapshot_pending(), "the copy is done after begin_block");
        // The copy was whole: the collection marks the new chain from its roots and frees
        // the rest, which the next blocks apply.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while m.live().0 != chain.len() as u64 {
            assert!(
                std::time::Instant::now() < deadline,
                "live objects {:?}, expected the chain of {} (live before: {garbage}, then 5 \
                 garbage objects)",
                m.live(),
                chain.len()
            );
            std::thread::sleep(Duration::from_millis(1));
            drop(m.begin_block());
        }
        let b = m.begin_block();
        let mut v = b.root(0).unwrap();
        for (k, &expected) in chain.iter().enumerate().rev() {
            let o = v.expect("the chain is whole");
            assert_eq!(o, expected);
            assert_eq!(b.data(o, 0).unwrap(), 100 + k as u64);
            v = b.get_ref(o, 0).unwrap();
        }
        assert_eq!(v, None);
        drop(b);
        assert!(m.audit().is_ok(), "{:?}", m.audit());
        return;
    }
    panic!(
        "no attempt waited for the snapshot thread's copy with this thread running throughout \
         (last attempt: {last})"
    );
}
