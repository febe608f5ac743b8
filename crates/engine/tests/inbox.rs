//! The engine is the one way in for events: notes from a controller and MIDI handed in by a
//! device (the entry the JACK device uses) reach the running schedule's instruments across
//! hot swaps, each at its frame; a swap keeps the events of the nodes it keeps and counts
//! the others as stale; dropped controllers free their slots; and the whole path is
//! real-time safe.

use downbeat::control::{When, MAX_CONTROLLERS};
use downbeat::project::Project;
use downbeat::swap::{ScheduleSender, SwapError};
use downbeat::Engine;
use downbeat_graph::{Schedule, Shape};
use downbeat_rt::guard;
use downbeat_rt::reclaim::Reclaimer;

#[path = "support/marker.rs"]
mod marker;

downbeat_rt::install_guard_allocator!();

const BLOCK: usize = 64;

/// One marker, `m`, straight into the output.
const ONE: &str = "block_size = 64\nedges = [\"m -> out\"]\n[nodes.m]\ntype = \"marker\"\n\
                   [nodes.out]\ntype = \"output\"\nchannels = 1\n";

/// `m` behind a silent sine (so at another position in processing order) and a second
/// marker, `m2`.
const TWO: &str = "block_size = 64\nedges = [\"pre -> m -> out\", \"m2 -> out\"]\n\
                   [nodes.pre]\ntype = \"sine\"\namp = 0.0\nchannels = 1\n\
                   [nodes.m]\ntype = \"marker\"\n[nodes.m2]\ntype = \"marker\"\n\
                   [nodes.out]\ntype = \"output\"\nchannels = 1\n";

fn build(src: &str) -> Schedule {
    marker::register();
    Project::parse(src, "inbox.toml").unwrap().build().unwrap()
}

/// Sends `s`, collecting old schedules until there is room.
fn send(sender: &mut ScheduleSender, reclaimer: &mut Reclaimer, mut s: Schedule) {
    loop {
        reclaimer.collect();
        match sender.send(s) {
            Ok(()) => return,
            Err(SwapError::Full(back)) => {
                s = *back;
                std::thread::yield_now();
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// Controller notes sent `AHEAD` blocks before their frame (so most sit in the schedule's
/// queue across a swap) and device MIDI handed in for the block it plays in, through 50
/// swaps between a schedule with one instrument and one with two (where the kept marker
/// is at another position). Every note is heard at its frame, once per instrument that
/// took it; the copies for the marker a swap removes are counted stale, nothing else is.
#[test]
fn notes_from_a_controller_and_device_midi_survive_fifty_hot_swaps_at_their_frames() {
    const SWAPS: usize = 50;
    const EVERY: usize = 3;
    const AHEAD: usize = 4;
    let blocks = SWAPS * EVERY + 2 * AHEAD;
    let mut engine = Engine::new(build(ONE));
    let (mut sender, mut collector) = engine.swap_channel(2);
    let mut control = engine.controller(64);
    // Which schedule plays each block: `ONE` (1 instrument) or `TWO` (2).
    let kind: Vec<usize> = (0..blocks)
        .map(|b| {
            let swaps = (b / EVERY).min(SWAPS);
            if swaps % 2 == 0 {
                1
            } else {
                2
            }
        })
        .collect();
    let ctrl_note = |b: usize| (b % 50 + 1) as f32;
    let midi_note = |b: usize| (b % 50 + 60) as u8;
    let mut out = vec![0.0f32; blocks * BLOCK];
    for b in 0..blocks {
        if b > 0 && b % EVERY == 0 && b / EVERY <= SWAPS {
            let next = if kind[b] == 1 { ONE } else { TWO };
            send(&mut sender, &mut collector, build(next));
        }
        // Taken into the schedule at block `b`, for frame 5 of block `b + AHEAD`.
        if b + AHEAD < blocks {
            let frame = ((b + AHEAD) * BLOCK + 5) as u64;
            control
                .note_on(When::Frame(frame), 0, ctrl_note(b + AHEAD), 1.0)
                .unwrap();
        }
        engine.midi(40, &[0x90, midi_note(b), 100]);
        engine.process(&mut out[b * BLOCK..(b + 1) * BLOCK]);
    }
    collector.collect();
    assert_eq!(engine.swaps(), SWAPS as u64);

    let mut want = vec![0.0f32; blocks * BLOCK];
    let mut stale = 0;
    for b in 0..blocks {
        want[b * BLOCK + 40] = f32::from(midi_note(b)) * kind[b] as f32;
        if b >= AHEAD {
            // Fanned out when taken, at block `b - AHEAD`; a copy for `m2` survives only
            // if no swap in between removed `m2`.
            let taken = kind[b - AHEAD];
            let kept = if kind[b - AHEAD..=b].iter().all(|&k| k == 2) {
                2
            } else {
                1
            };
            stale += taken - kept;
            want[b * BLOCK + 5] = ctrl_note(b) * kept as f32;
        }
    }
    for (i, (g, w)) in out.iter().zip(&want).enumerate() {
        assert_eq!(
            g,
            w,
            "frame {i} (block {}, schedule with {} instruments)",
            i / BLOCK,
            kind[i / BLOCK]
        );
    }
    assert!(stale > 0, "the test removes queued copies");
    assert_eq!(engine.stale_events(), stale as u64);
    assert_eq!(engine.undelivered_events(), stale as u64);
    assert_eq!(engine.midi_input().dropped(), 0);
    assert_eq!(engine.schedule().event_stats().late, 0);
}

/// A gain kept across a swap keeps its queued step and ramp; the events of a gain the new
/// schedule lacks are counted stale, not applied to whatever node took its position.
#[test]
fn a_swap_keeps_a_kept_nodes_pending_ramps_and_counts_a_removed_nodes_events() {
    let old = "block_size = 64\nedges = [\"one -> a -> b -> out\"]\n\
               [nodes.one]\ntype = \"sine\"\nfreq = 0.0\nphase = 0.25\namp = 1.0\nchannels = 1\n\
               [nodes.a]\ntype = \"gain\"\nchannels = 1\n[nodes.b]\ntype = \"gain\"\nchannels = 1\n\
               [nodes.out]\ntype = \"output\"\nchannels = 1\n";
    // `a` is gone, and `b` takes its position.
    let new = "block_size = 64\nedges = [\"one -> b -> out\"]\n\
               [nodes.one]\ntype = \"sine\"\nfreq = 0.0\nphase = 0.25\namp = 1.0\nchannels = 1\n\
               [nodes.b]\ntype = \"gain\"\nchannels = 1\n\
               [nodes.out]\ntype = \"output\"\nchannels = 1\n";
    let mut engine = Engine::new(build(old));
    let (mut sender, mut collector) = engine.swap_channel(2);
    let mut c = engine.controller(16);
    c.step(When::Frame(200), "b", "gain", 0.5).unwrap();
    c.ramp(
        When::Frame(300),
        "b",
        "gain",
        Shape::Linear,
        0.0,
        64.0 / 48_000.0,
    )
    .unwrap();
    c.step(When::Frame(250), "a", "gain", 4.0).unwrap();
    c.step(When::Frame(260), "a", "gain", 8.0).unwrap();
    let mut out = vec![0.0f32; 8 * BLOCK];
    engine.process(&mut out[..BLOCK]);
    assert_eq!(engine.schedule().pending_events(), 4);
    send(&mut sender, &mut collector, build(new));
    for b in 1..8 {
        engine.process(&mut out[b * BLOCK..(b + 1) * BLOCK]);
    }
    assert_eq!(engine.swaps(), 1);
    assert_eq!(engine.stale_events(), 2);
    assert!(out[..200].iter().all(|&x| x == 1.0));
    assert!(out[200..300].iter().all(|&x| x == 0.5), "the step moved");
    for k in 0..64 {
        let want = 0.5 * (1.0 - k as f32 / 64.0);
        assert!((out[300 + k] - want).abs() < 1e-6, "ramp frame {k}");
    }
    assert!(out[364..].iter().all(|&x| x == 0.0), "the ramp moved");
}

/// The 17th controller is refused only while 16 are alive: a dropped controller's slot is
/// reused once the engine has taken its events.
#[test]
fn dropped_controllers_free_their_slots() {
    let mut engine = Engine::new(build(ONE));
    let mut block = vec![0.0f32; BLOCK];
    let mut first = engine.controller(4);
    first.note_on(When::Frame(10), 0, 7.0, 1.0).unwrap();
    drop(first);
    // Its note is still queued: the slot is not freed before the note reaches the schedule.
    let kept: Vec<_> = (1..MAX_CONTROLLERS).map(|_| engine.controller(4)).collect();
    let full = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| engine.controller(4)));
    assert!(full.is_err(), "16 controllers are held");
    engine.process(&mut block);
    assert_eq!(block[10], 7.0, "the dropped controller's note was played");
    // Without reuse, the first of these would be the 17th.
    for _ in 0..3 * MAX_CONTROLLERS {
        drop(engine.controller(4));
    }
    drop(kept);
    let again: Vec<_> = (0..MAX_CONTROLLERS).map(|_| engine.controller(4)).collect();
    assert_eq!(again.len(), MAX_CONTROLLERS);
}

/// The path the JACK callback runs: device MIDI into the engine, controller notes fanned
/// out to the running schedule's instruments, and the swap moving queued events to the new
/// schedule, under the guard: no allocation, free, lock or system call.
#[test]
fn midi_intake_fan_out_and_the_swaps_event_move_are_real_time_safe() {
    const SWAPS: u64 = 50;
    let mut engine = Engine::new(build(ONE));
    let (mut sender, mut collector) = engine.swap_channel(4);
    let mut control = engine.controller(1024);
    let mut block = vec![0.0f32; BLOCK];
    for _ in 0..4 {
        engine.process(&mut block);
    }
    let schedules: Vec<Schedule> = (0..SWAPS)
        .map(|k| build(if k % 2 == 0 { TWO } else { ONE }))
        .collect();
    let mut heard = 0.0f32;
    let (_, report) = std::thread::scope(|scope| {
        let sending = scope.spawn(move || {
            for s in schedules {
                send(&mut sender, &mut collector, s);
                std::thread::sleep(std::time::Duration::from_micros(300));
            }
            (sender, collector)
        });
        let report = guard::check(|| {
            let mut b = 4u64;
            while engine.swaps() < SWAPS {
                // Far enough ahead to sit in the schedule's queue through a swap.
                let frame = (b + 8) * BLOCK as u64 + 3;
                if control.available() > 0 {
                    control.note_on(When::Frame(frame), 0, 1.0, 1.0).unwrap();
                }
                engine.midi(17, &[0x90, 2, 100]);
                engine.midi(18, &[0x80, 2, 0]);
                engine.midi(19, &[0xC0, 5]); // a program change: ignored
                engine.process(&mut block);
                heard += block.iter().sum::<f32>();
                b += 1;
                assert!(b < 10_000_000, "swaps stalled at {}", engine.swaps());
            }
        });
        let (_sender, mut collector) = sending.join().unwrap();
        collector.collect();
        ((), report)
    });
    report.assert_clean();
    assert_eq!(engine.swaps(), SWAPS);
    assert!(heard > 0.0);
    assert!(engine.midi_input().ignored() > 0);
    assert_eq!(engine.midi_input().dropped(), 0);
}
