//! Notes through controllers: 10,000 random notes and parameter changes from two control
//! threads are all applied at their frames, and a recording of the run (notes included)
//! replays offline to the same output, bit for bit.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use downbeat::control::record::read_events;
use downbeat::control::When;
use downbeat::project::Project;
use downbeat::Engine;
use downbeat_graph::{Change, ControlError, NoteEvent};

const PROJECT: &str = r#"
block_size = 64
edges = ["keys -> level -> out"]
[nodes.keys]
type = "synth"
channels = 1
[nodes.level]
type = "gain"
channels = 1
[nodes.out]
type = "output"
channels = 1
"#;

fn engine() -> Engine {
    Engine::new(
        Project::parse(PROJECT, "notes.toml")
            .unwrap()
            .build()
            .unwrap(),
    )
}

fn wait(mut ready: impl FnMut() -> bool, what: &str) {
    let start = std::time::Instant::now();
    while !ready() {
        assert!(start.elapsed().as_secs() < 30, "waited 30 s for {what}");
        std::thread::yield_now();
    }
}

fn xorshift(rng: &mut u64) -> u64 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    *rng
}

/// Thread 0 plays 5,000 notes (ons and offs, a bend and the pedal now and then), thread 1
/// sends 5,000 gain changes, at random frames; the audio thread does not start a block
/// before both have sent everything due in it, so each event can be on time. Every event
/// must be applied, none late or refused, and the recording must hold each one; replayed
/// offline, the recording gives the same output.
#[test]
fn ten_thousand_random_notes_and_params_from_two_controllers_none_lost_and_replayed_exactly() {
    const PER_THREAD: usize = 5_000;
    const FRAMES: u64 = 64 * 4_000;
    const LOOKAHEAD: u64 = 64 * 32;
    let mut live = engine();
    let mut record = live.record_events();
    let controllers = [live.controller(256), live.controller(256)];
    let sent_upto: Arc<[AtomicU64; 2]> = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let mut plans = Vec::new();
    let mut threads = Vec::new();
    for (t, mut c) in controllers.into_iter().enumerate() {
        let mut rng = 0x2545_f491_4f6c_dd1du64 ^ (t as u64 + 1);
        let mut frames: Vec<u64> = (0..PER_THREAD)
            .map(|_| xorshift(&mut rng) % FRAMES)
            .collect();
        frames.sort_unstable();
        plans.push(frames.clone());
        let sent_upto = Arc::clone(&sent_upto);
        threads.push(std::thread::spawn(move || {
            let id = c.resolve("level", "gain").unwrap();
            let mut rng = 0x1234_5678u64 + t as u64;
            for (i, &f) in frames.iter().enumerate() {
                wait(|| f <= c.position() + LOOKAHEAD, "the audio thread");
                let r = xorshift(&mut rng);
                let note = 36.0 + (r % 48) as f32 + if r % 5 == 0 { 0.5 } else { 0.0 };
                let event = match i % 11 {
                    3 => NoteEvent::PitchBend {
                        channel: (r % 16) as u8,
                        value: 0.25,
                    },
                    7 => NoteEvent::Sustain {
                        channel: 0,
                        on: r % 2 == 0,
                    },
                    k if k % 2 == 0 => NoteEvent::On {
                        channel: (r % 16) as u8,
                        note,
                        velocity: (1 + r % 127) as f32 / 127.0,
                    },
                    _ => NoteEvent::Off {
                        channel: (r % 16) as u8,
                        note,
                    },
                };
                let v = (i % 16) as f32 / 8.0;
                wait(
                    || {
                        let sent = if t == 0 {
                            c.send_note(When::Frame(f), event)
                        } else {
                            c.send(When::Frame(f), id, Change::Step(v))
                        };
                        match sent {
                            Ok(()) => true,
                            Err(ControlError::QueueFull { .. }) => false,
                            Err(e) => panic!("{e}"),
                        }
                    },
                    "room in the queue",
                );
                sent_upto[t].store(f + 1, Ordering::Release);
            }
            sent_upto[t].store(u64::MAX, Ordering::Release);
        }));
    }
    let mut out = vec![0.0f32; FRAMES as usize];
    for (b, block) in out.chunks_mut(64).enumerate() {
        let end = (b as u64 + 1) * 64;
        for (t, plan) in plans.iter().enumerate() {
            let next = plan.partition_point(|&f| f < end);
            let must_have = if next == 0 { 0 } else { plan[next - 1] + 1 };
            wait(
                || sent_upto[t].load(Ordering::Acquire) >= must_have,
                "a controller to send",
            );
        }
        live.process(block);
        record.read();
    }
    for t in threads {
        t.join().unwrap();
    }
    let stats = live.schedule().event_stats();
    assert_eq!(stats.applied, 2 * PER_THREAD as u64, "none lost: {stats:?}");
    assert_eq!(stats.late, 0, "each on time: {stats:?}");
    assert_eq!(stats.refused, 0, "none refused: {stats:?}");
    assert_eq!(record.len(), 2 * PER_THREAD);
    assert!(out.iter().any(|&x| x != 0.0), "the notes sound");

    let file = std::env::temp_dir().join(format!("downbeat-notes-{}.jsonl", std::process::id()));
    record.write(&file).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains(r#""change":"note_on""#), "notes are recorded");
    let mut replay = engine();
    let events = read_events(&file, &replay.schedule().param_table()).unwrap();
    std::fs::remove_file(&file).unwrap();
    assert_eq!(events.len(), 2 * PER_THREAD);
    replay.schedule_mut().set_timeline(events).unwrap();
    let mut again = vec![0.0f32; FRAMES as usize];
    for block in again.chunks_mut(64) {
        replay.process(block);
    }
    assert!(out == again, "the replay differs from the live run");
}

#[test]
fn bad_notes_and_a_project_without_instruments_are_refused() {
    let mut e = engine();
    let mut c = e.controller(2);
    assert!(matches!(
        c.note_on(When::Now, 16, 60.0, 1.0),
        Err(ControlError::BadNote(_))
    ));
    assert!(matches!(
        c.note_on(When::Now, 0, 128.0, 1.0),
        Err(ControlError::BadNote(_))
    ));
    c.note_on(When::Now, 0, 60.0, 1.0).unwrap();
    c.note_off(When::Now, 0, 60.0).unwrap();
    assert!(matches!(
        c.all_notes_off(When::Now, None),
        Err(ControlError::QueueFull { capacity: 2 })
    ));
    let plain = Project::parse(
        "edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n",
        "plain.toml",
    )
    .unwrap();
    let mut e = Engine::new(plain.build().unwrap());
    let mut c = e.controller(8);
    let err = c.note_on(When::Now, 0, 60.0, 1.0).unwrap_err();
    assert_eq!(err, ControlError::NoInstrument);
    assert!(err
        .to_string()
        .contains("no node of this project plays notes"));
}
