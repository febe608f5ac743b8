//! Notes through the schedule's event path: a note event reaches a note-playing node at its
//! exact frame whatever the block size, serially and on the pool alike, and the path (queue,
//! dispatch, voice allocation, stealing, rendering) is real-time safe.

use downbeat_graph::{CompileConfig, ControlError, Event, Graph, Node, NoteEvent, Schedule};
use downbeat_nodes::{Output, Synth, SynthSettings};
use downbeat_rt::guard;
use downbeat_rt::pool::{Pool, PoolConfig};

downbeat_rt::install_guard_allocator!();

const SR: u32 = 48000;

fn synth() -> Synth {
    Synth::new(1, SR, &SynthSettings::default()).unwrap()
}

fn synth_graph(block: usize) -> Schedule {
    let mut g = Graph::new();
    let s = g.add("synth", synth());
    let out = g.add("out", Output::new(1));
    g.connect(s, out);
    g.set_output(out);
    g.compile(CompileConfig {
        sample_rate: SR,
        max_block: block,
    })
    .unwrap()
}

fn pool() -> Pool {
    Pool::new(PoolConfig {
        workers: Some(2),
        ..PoolConfig::default()
    })
}

fn on(note: f32) -> NoteEvent {
    NoteEvent::On {
        channel: 0,
        note,
        velocity: 0.9,
    }
}

/// Renders `frames` frames of the schedule in its blocks after queueing `events`.
fn render(s: &mut Schedule, frames: usize, events: &[Event], pool: Option<&Pool>) -> Vec<f32> {
    for &e in events {
        s.push_event(e).unwrap();
    }
    let block = s.config().max_block;
    let mut out = Vec::new();
    while out.len() < frames {
        let n = block.min(frames - out.len());
        match pool {
            Some(p) => s.process_parallel(n, p),
            None => s.process(n),
        }
        out.extend_from_slice(&s.output().channel(0)[..n]);
    }
    out
}

/// The same notes given straight to a synth, rendered in one piece: what the schedule must
/// reproduce sample for sample.
fn reference(notes: &[(usize, NoteEvent)], frames: usize) -> Vec<f32> {
    let mut s = synth();
    for &(f, e) in notes {
        s.note(f, e).unwrap();
    }
    let mut buf = vec![0.0f32; frames];
    let ctx = downbeat_graph::ProcessContext::new(SR, frames, 0);
    s.process(
        &ctx,
        downbeat_graph::AudioRef::new(&[], 0, frames, frames),
        downbeat_graph::AudioMut::new(&mut buf, 1, frames, frames),
    );
    buf
}

#[test]
fn a_note_at_frame_k_starts_at_sample_k_for_any_block_size_serial_and_parallel() {
    let pool = pool();
    let frames = 4000;
    for block in [64usize, 256, 1000] {
        for k in [0u64, 1, 63, 100, 255, 999, 1001, 2500] {
            let notes = [
                (k as usize, on(69.0)),
                (k as usize + 700, on(76.0)),
                (
                    k as usize + 1200,
                    NoteEvent::Off {
                        channel: 0,
                        note: 69.0,
                    },
                ),
            ];
            let events: Vec<Event> = notes
                .iter()
                .map(|&(f, e)| Event::note_to_instruments(Some(f as u64), e))
                .collect();
            let want = reference(&notes, frames);
            let serial = render(&mut synth_graph(block), frames, &events, None);
            let parallel = render(&mut synth_graph(block), frames, &events, Some(&pool));
            let first = serial.iter().position(|&x| x != 0.0).unwrap();
            assert!(
                first >= k as usize && first <= k as usize + 2,
                "block {block}: note at {k} first sounds at {first}"
            );
            assert_eq!(serial, want, "block {block}, note at {k}: serial");
            assert_eq!(parallel, serial, "block {block}, note at {k}: parallel");
        }
    }
}

#[test]
fn notes_reach_only_nodes_that_play_them() {
    let mut g = Graph::new();
    let s = g.add("synth", synth());
    let out = g.add("out", Output::new(1));
    g.connect(s, out);
    g.set_output(out);
    let mut sched = g
        .compile(CompileConfig {
            sample_rate: SR,
            max_block: 64,
        })
        .unwrap();
    let table = sched.param_table();
    let synth_key = table.node_key("synth").unwrap();
    assert_eq!(table.note_nodes().collect::<Vec<_>>(), vec![synth_key]);
    let out_node = table.node_key("out").unwrap();
    assert_eq!(
        sched.push_event(Event::note(None, out_node, on(60.0))),
        Err(ControlError::Stale)
    );
}

#[test]
fn the_note_path_is_real_time_safe() {
    let mut s = synth_graph(256);
    s.set_recording(true);
    // Warm up: the first block touches the buffers.
    s.process(256);
    let report = guard::check(|| {
        let mut note = 30.0f32;
        for block in 0..60u64 {
            let at = 256 + block * 256;
            // More notes than voices, so voices are stolen; offs, bends, pedal, all-off.
            for j in 0..6u64 {
                note = if note > 100.0 { 30.0 } else { note + 7.5 };
                s.push_event(Event::note_to_instruments(Some(at + j * 40), on(note)))
                    .unwrap();
            }
            s.push_event(Event::note_to_instruments(
                Some(at + 10),
                NoteEvent::Off { channel: 0, note },
            ))
            .unwrap();
            s.push_event(Event::note_to_instruments(
                Some(at + 20),
                NoteEvent::PitchBend {
                    channel: 0,
                    value: 0.3,
                },
            ))
            .unwrap();
            s.push_event(Event::note_to_instruments(
                Some(at + 30),
                NoteEvent::Sustain {
                    channel: 0,
                    on: block % 2 == 0,
                },
            ))
            .unwrap();
            if block % 17 == 16 {
                s.push_event(Event::note_to_instruments(
                    Some(at + 200),
                    NoteEvent::AllNotesOff { channel: None },
                ))
                .unwrap();
            }
            s.process(256);
        }
    });
    report.assert_clean();
    assert_eq!(s.event_stats().refused, 0);
    assert!(s.event_stats().applied >= 60 * 9);
}
