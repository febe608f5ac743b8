//! The transport a CLAP plugin is handed with every block (`clap_process.transport`), read
//! back exactly by the workspace's transport recorder (`org.downbeat.test.transport`, which
//! writes each field's 64 bits into its output channels), against a real tempo map and
//! transport (`downbeat_graph::time`) driven as the engine drives them: blocks cut where
//! the transport says, playing through a ramp, a step and signature changes, stopped,
//! located, and looping.
//!
//! Every block must carry a transport, and agree with the map: flags exact; the beat (CLAP
//! fixed point, 2^31 to the beat) within 1/2^31 of the map's beat at the block's song frame;
//! seconds within 1/2^31 of the frame over the rate; the tempo exactly the map's there (a
//! tempo point's frame has the point's tempo); bar,
//! bar start (to 1/2^31) and signature the map's; the loop's ends in beats and seconds (to
//! 1/2^31); `tempo_inc` the map's tempo change over the block per frame (to 1e-9 bpm over
//! the block), 0 when stopped. No `CLAP_EVENT_TRANSPORT` is sent in the event list (the
//! engine cuts blocks where the transport changes, so one per block is enough).

#![cfg(feature = "clap")]

mod clap_support;
mod song_support;

use clap_support::{test_plugins, TRANSPORT_CHANNELS, TRANSPORT_FIELDS, TRANSPORT_ID};
use downbeat_graph::time::{
    Signature, SignatureChange, TempoMap, TempoPoint, Transport, TransportCommand,
};
use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};
use downbeat_plugin::clap::ClapNode;

const RATE: u32 = 48000;
const MAX_BLOCK: usize = 256;
/// CLAP's fixed point: `CLAP_BEATTIME_FACTOR` and `CLAP_SECTIME_FACTOR`.
const FACTOR: f64 = (1u64 << 31) as f64;
/// The error allowed on a fixed-point time: one unit of it.
const FIXED: f64 = 1.0 / FACTOR;

// `CLAP_TRANSPORT_*`, from the CLAP headers (events.h).
const HAS_TEMPO: u32 = 1 << 0;
const HAS_BEATS_TIMELINE: u32 = 1 << 1;
const HAS_SECONDS_TIMELINE: u32 = 1 << 2;
const HAS_TIME_SIGNATURE: u32 = 1 << 3;
const IS_PLAYING: u32 = 1 << 4;
const IS_LOOP_ACTIVE: u32 = 1 << 6;
const ALWAYS: u32 = HAS_TEMPO | HAS_BEATS_TIMELINE | HAS_SECONDS_TIMELINE | HAS_TIME_SIGNATURE;

/// What the recorder was given in one call.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Seen {
    given: bool,
    flags: u32,
    beats: f64,
    seconds: f64,
    tempo: f64,
    tempo_inc: f64,
    loop_beats: (f64, f64),
    loop_seconds: (f64, f64),
    bar_start: f64,
    bar: i64,
    numerator: u64,
    denominator: u64,
    events: u64,
    frames: u64,
}

impl Seen {
    /// Reads the record from the first frame of the recorder's channels (the layout of
    /// `crates/clap-test-plugins/src/transport.rs`: field `f` in channels `3f` to `3f + 2`,
    /// bits 0-23, 24-47 and 48-63).
    fn decode(output: &[f32], stride: usize) -> Seen {
        let mut w = [0u64; TRANSPORT_FIELDS];
        for (f, word) in w.iter_mut().enumerate() {
            let part = |k: usize| {
                let v = output[(3 * f + k) * stride];
                assert!(v >= 0.0 && v < (1 << 24) as f32 && v.fract() == 0.0, "{v}");
                v as u64
            };
            *word = part(0) | part(1) << 24 | part(2) << 48;
        }
        let fixed = |word: u64| word as i64 as f64 / FACTOR;
        Seen {
            given: w[0] == 1,
            flags: w[1] as u32,
            beats: fixed(w[2]),
            seconds: fixed(w[3]),
            tempo: f64::from_bits(w[4]),
            tempo_inc: f64::from_bits(w[5]),
            loop_beats: (fixed(w[6]), fixed(w[7])),
            loop_seconds: (fixed(w[8]), fixed(w[9])),
            bar_start: fixed(w[10]),
            bar: w[11] as i64,
            numerator: w[12],
            denominator: w[13],
            events: w[14],
            frames: w[15],
        }
    }
}

fn recorder() -> ClapNode {
    let node = ClapNode::load(&test_plugins(), Some(TRANSPORT_ID), RATE, MAX_BLOCK).unwrap();
    assert_eq!(
        (node.input_channels(), node.output_channels()),
        (0, TRANSPORT_CHANNELS)
    );
    node
}

/// One call of the node; what the plugin was given.
fn call(node: &mut ClapNode, ctx: &ProcessContext) -> Seen {
    let mut output = vec![f32::NAN; TRANSPORT_CHANNELS * MAX_BLOCK];
    node.process(
        ctx,
        AudioRef::new(&[], 0, MAX_BLOCK, ctx.frames),
        AudioMut::new(&mut output, TRANSPORT_CHANNELS, MAX_BLOCK, ctx.frames),
    );
    assert_eq!(node.failed_calls(), 0);
    for c in 0..TRANSPORT_CHANNELS {
        let ch = &output[c * MAX_BLOCK..c * MAX_BLOCK + ctx.frames];
        assert!(ch.iter().all(|s| *s == ch[0]), "channel {c}: {ch:?}");
    }
    Seen::decode(&output, MAX_BLOCK)
}

/// Plays `transport` through the node as the engine does: blocks of the sizes in `sizes`
/// (cycled), each cut where the transport says (tempo points, signature changes, the loop's
/// end), each with the transport's position at its first frame, until `blocks` calls were
/// made. Returns each call's context and what the plugin saw.
fn play(
    node: &mut ClapNode,
    transport: &mut Transport,
    sizes: &[usize],
    blocks: usize,
    position: &mut u64,
) -> Vec<(ProcessContext, Seen)> {
    let mut out = Vec::with_capacity(blocks);
    for &size in sizes.iter().cycle().take(blocks) {
        let frames = transport.piece(size);
        let ctx = ProcessContext {
            sample_rate: RATE,
            frames,
            position: *position,
            musical: transport.position(),
        };
        out.push((ctx, call(node, &ctx)));
        transport.advance(frames);
        *position += frames as u64;
    }
    out
}

/// Asserts that what the plugin saw in a block agrees with `map` at the block's song frame.
fn agrees(map: &TempoMap, ctx: &ProcessContext, seen: &Seen) {
    let m = &ctx.musical;
    let at = format!(
        "block at song frame {} ({} frames): {seen:?}",
        m.song_frame, ctx.frames
    );
    assert!(seen.given, "no transport: {at}");
    let mut flags = ALWAYS;
    if m.playing {
        flags |= IS_PLAYING;
    }
    if m.looping.is_some() {
        flags |= IS_LOOP_ACTIVE;
    }
    assert_eq!(seen.flags, flags, "flags: {at}");
    let (segment, beat, bpm) = song_support::at_frame(map, m.song_frame);
    assert!((seen.beats - beat).abs() <= FIXED, "beat {beat}: {at}");
    let seconds = m.song_frame as f64 / f64::from(RATE);
    assert!((seen.seconds - seconds).abs() <= FIXED, "{seconds} s: {at}");
    assert_eq!(seen.tempo, bpm, "tempo: {at}");
    if m.playing {
        // The tempo at the block's end along the block's tempo segment: a step on the frame
        // after the block is the next block's.
        let end_frame = m.song_frame + ctx.frames as u64;
        let end = segment
            .bpm_at(segment.beat_at_seconds(end_frame as f64 / f64::from(map.sample_rate())));
        let change = seen.tempo_inc * ctx.frames as f64;
        assert!(
            (change - (end - seen.tempo)).abs() < 1e-9,
            "tempo change {change} over the block, the map's {}: {at}",
            end - seen.tempo
        );
    } else {
        assert_eq!(seen.tempo_inc, 0.0, "stopped, the tempo stands: {at}");
    }
    let (bar, bar_start) = map.bar_at(beat);
    assert_eq!(seen.bar, bar, "bar: {at}");
    assert!(
        (seen.bar_start - bar_start).abs() <= FIXED,
        "bar start {bar_start}: {at}"
    );
    let signature = map.signature_at(beat);
    assert_eq!(
        (seen.numerator, seen.denominator),
        (
            u64::from(signature.numerator),
            u64::from(signature.denominator)
        ),
        "signature: {at}"
    );
    match m.looping {
        Some((start, end)) => {
            for (got, want) in [
                (seen.loop_beats.0, start),
                (seen.loop_beats.1, end),
                (seen.loop_seconds.0, map.seconds_at(start)),
                (seen.loop_seconds.1, map.seconds_at(end)),
            ] {
                assert!((got - want).abs() <= FIXED, "loop {want}: {at}");
            }
        }
        None => assert_eq!(
            (seen.loop_beats, seen.loop_seconds),
            ((0.0, 0.0), (0.0, 0.0)),
            "no loop: {at}"
        ),
    }
    assert_eq!(seen.events, 0, "a transport event in the list: {at}");
    assert_eq!(seen.frames, ctx.frames as u64, "{at}");
}

/// 120 bpm in 4/4; a ramp down to 90 bpm over beats 16 to 24; 6/8 from beat 24 (bar 6), 7/8
/// from beat 33 (three bars of 6/8 later); a step to 140 bpm at beat 36.
fn song() -> TempoMap {
    TempoMap::new(
        120.0,
        Signature::default(),
        &[
            TempoPoint {
                beat: 16.0,
                bpm: 90.0,
                ramp: 8.0,
            },
            TempoPoint {
                beat: 36.0,
                bpm: 140.0,
                ramp: 0.0,
            },
        ],
        &[
            SignatureChange {
                beat: 24.0,
                signature: "6/8".parse().unwrap(),
            },
            SignatureChange {
                beat: 33.0,
                signature: "7/8".parse().unwrap(),
            },
        ],
        RATE,
    )
    .unwrap()
}

#[test]
fn a_playing_song_reaches_the_plugin_block_by_block_through_a_ramp_a_step_and_signatures() {
    let map = song();
    let mut transport = Transport::new(map.clone());
    let mut node = recorder();
    // Blocks of many lengths, one frame among them; 21 s of song, to beat 44 or so.
    let sizes = [256, 1, 100, 37, 256, 7, 256, 255];
    let mut position = 0;
    let mut blocks = Vec::new();
    while transport.position().beat < 44.0 {
        blocks.extend(play(&mut node, &mut transport, &sizes, 64, &mut position));
    }
    for (ctx, seen) in &blocks {
        agrees(&map, ctx, seen);
    }
    // Every stretch of the song was played, each with its own tempo and signature.
    let saw = |f: &dyn Fn(&Seen) -> bool| blocks.iter().any(|(_, s)| f(s));
    assert!(saw(
        &|s| s.tempo == 120.0 && (s.numerator, s.denominator) == (4, 4)
    ));
    assert!(saw(&|s| s.tempo_inc < 0.0
        && s.tempo < 120.0
        && s.tempo > 90.0));
    assert!(saw(
        &|s| s.tempo == 90.0 && (s.numerator, s.denominator) == (6, 8)
    ));
    assert!(saw(
        &|s| s.tempo == 140.0 && (s.numerator, s.denominator) == (7, 8)
    ));
    // Through the ramp, each block's tempo and tempo_inc lead exactly to the next block's
    // tempo: a plugin following tempo_inc never drifts from the map.
    for pair in blocks.windows(2) {
        let ((ctx, a), (_, b)) = (&pair[0], &pair[1]);
        if a.beats >= 16.0 && b.beats <= 24.0 {
            let predicted = a.tempo + a.tempo_inc * ctx.frames as f64;
            assert!(
                (predicted - b.tempo).abs() < 1e-9,
                "{a:?} leads to {predicted} bpm, the next block has {b:?}"
            );
        }
    }
}

#[test]
fn stopped_the_plugin_gets_a_transport_that_stands_still() {
    let map = song();
    let mut transport = Transport::new(map.clone());
    let mut node = recorder();
    // What a node driven by hand (ProcessContext::new) gets: stopped at beat 0, 120 bpm, 4/4.
    let seen = call(&mut node, &ProcessContext::new(RATE, 64, 0));
    assert_eq!(seen.flags, ALWAYS);
    assert_eq!((seen.beats, seen.seconds, seen.tempo), (0.0, 0.0, 120.0));
    assert_eq!((seen.bar, seen.numerator, seen.denominator), (0, 4, 4));

    // Stopped in the middle of the ramp (at the frame nearest beat 18.5): the same position
    // in every block, 110.625 bpm, no tempo change.
    transport.apply(TransportCommand::Stop).unwrap();
    transport.apply(TransportCommand::LocateBeat(18.5)).unwrap();
    let mut position = 64;
    let stopped = play(&mut node, &mut transport, &[256, 5], 10, &mut position);
    for (ctx, seen) in &stopped {
        agrees(&map, ctx, seen);
        assert_eq!(seen.flags & IS_PLAYING, 0);
        assert!((seen.beats - 18.5).abs() < 1e-4, "{seen:?}");
        let first = Seen {
            frames: seen.frames,
            ..stopped[0].1
        };
        assert_eq!(seen, &first, "the same transport in every block");
    }
    assert!((stopped[0].1.tempo - 110.625).abs() < 1e-3);
    assert_eq!((stopped[0].1.bar, stopped[0].1.bar_start), (4, 16.0));

    // Played from there: it moves, and the ramp shows in tempo_inc.
    transport.apply(TransportCommand::Play).unwrap();
    let playing = play(&mut node, &mut transport, &[256], 10, &mut position);
    for (ctx, seen) in &playing {
        agrees(&map, ctx, seen);
        assert!(seen.tempo_inc < 0.0, "{seen:?}");
    }
    assert!(playing[9].1.beats > playing[0].1.beats);
}

#[test]
fn looping_the_plugin_gets_the_loop_and_the_song_wraps() {
    let map = song();
    let mut transport = Transport::new(map.clone());
    let mut node = recorder();
    // Two and a half beats at 120 bpm: 1.25 s, 60,000 frames, not a multiple of the blocks.
    transport.apply(TransportCommand::Loop(4.0, 6.5)).unwrap();
    transport.apply(TransportCommand::LocateBeat(3.0)).unwrap();
    let mut position = 0;
    let blocks = play(&mut node, &mut transport, &[256, 100], 2000, &mut position);
    let mut wraps = 0;
    for (k, (ctx, seen)) in blocks.iter().enumerate() {
        agrees(&map, ctx, seen);
        assert_eq!(seen.loop_beats, (4.0, 6.5));
        assert_eq!(seen.loop_seconds, (2.0, 3.25));
        if k > 0 && seen.beats < blocks[k - 1].1.beats {
            wraps += 1;
            assert_eq!(seen.beats, 4.0, "wrapped to the loop's start");
            assert_eq!((seen.bar, seen.bar_start), (1, 4.0));
        }
    }
    assert!(wraps >= 5, "{wraps} wraps");

    // No more loop: the flag and the loop's ends are gone.
    transport.apply(TransportCommand::Unloop).unwrap();
    for (ctx, seen) in play(&mut node, &mut transport, &[256], 4, &mut position) {
        agrees(&map, &ctx, &seen);
        assert_eq!(seen.flags, ALWAYS | IS_PLAYING);
    }
}
