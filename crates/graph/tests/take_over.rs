//! `Schedule::take_over`: what a schedule swapped in keeps from the one it replaces.

use downbeat_graph::{Change, CompileConfig, Event, Graph, Schedule};
use downbeat_nodes::{Gain, Output, Sine, SineSettings};

/// A constant 1.0 through a gain named `gain`, behind `extra` more gains in front of it
/// (which move it in processing order).
fn graph(extra: usize) -> Schedule {
    let mut g = Graph::new();
    let mut last = g.add(
        "one",
        Sine::new(
            1,
            48_000,
            &SineSettings {
                freq: 0.0,
                amp: 1.0,
                phase: 0.25,
            },
        ),
    );
    for k in 0..extra {
        let n = g.add(format!("pad{k}"), Gain::new(1, 1.0));
        g.connect(last, n);
        last = n;
    }
    let gain = g.add("gain", Gain::new(1, 1.0));
    let out = g.add("out", Output::new(1));
    g.connect(last, gain);
    g.connect(gain, out);
    g.set_output(out);
    g.compile(CompileConfig {
        sample_rate: 48_000,
        max_block: 64,
    })
    .unwrap()
}

/// Queued events move to the same node at its new position, the earliest first; those
/// the new queue has no room for are counted as dropped, those for a node it lacks as stale.
#[test]
fn queued_events_move_by_key_and_what_cannot_is_counted() {
    let mut old = graph(0);
    old.process(64);
    let id = old.param_table().resolve("gain", "gain").unwrap();
    for k in 0..6u64 {
        old.push_event(Event::param(
            Some(1000 + 64 * k),
            id,
            Change::Step(k as f32 * 0.1),
        ))
        .unwrap();
    }
    let mut new = graph(2);
    new.set_event_capacity(4);
    new.take_over(&mut old);
    assert_eq!(old.pending_events(), 0);
    assert_eq!(new.pending_events(), 4);
    let stats = new.event_stats();
    assert_eq!((stats.dropped, stats.stale), (2, 0));
    // The four kept are the earliest: the gain is 0.3 from frame 1192 on, never 0.4.
    let mut out = Vec::new();
    while new.position() < 2000 {
        new.process(64);
        out.extend_from_slice(new.output().channel(0));
    }
    let at = |frame: usize| out[frame - 64];
    assert_eq!(
        (at(999), at(1000), at(1191), at(1192)),
        (1.0, 0.0, 0.2, 0.3)
    );
    assert_eq!(at(1999), 0.3);

    // A schedule without a pad takes over: the events of `pad0` are stale.
    let pad = new.param_table().resolve("pad0", "gain").unwrap();
    new.push_event(Event::param(Some(5000), pad, Change::Step(0.5)))
        .unwrap();
    new.push_event(Event::param(Some(5000), id, Change::Step(0.5)))
        .unwrap();
    let mut newer = graph(0);
    newer.take_over(&mut new);
    assert_eq!(newer.pending_events(), 1);
    assert_eq!(newer.event_stats().stale, 1);
    assert_eq!(newer.event_stats().dropped, 2, "the counters go on");
}

/// The timeline goes on, and the new schedule's own timeline starts at the swap.
#[test]
fn the_new_timeline_starts_where_the_old_one_was() {
    let mut old = graph(0);
    for _ in 0..10 {
        old.process(64);
    }
    let mut new = graph(1);
    let id = new.param_table().resolve("gain", "gain").unwrap();
    new.set_timeline(vec![Event::param(Some(10), id, Change::Step(0.0))])
        .unwrap();
    new.take_over(&mut old);
    assert_eq!(new.position(), 640);
    new.process(64);
    let out = new.output().channel(0);
    assert!(out[..10].iter().all(|&x| x == 1.0));
    assert!(out[10..].iter().all(|&x| x == 0.0));
    assert_eq!(new.event_stats().late, 0);
}
