//! The `time:Position` a plugin following the transport is sent, read back by a plugin made
//! to observe it (tests/lv2_time_plugin, C, compiled here with `cc` into a bundle of its own,
//! which `LV2_PATH` points lilv at; a missing `cc` fails the test), against a real tempo map
//! and transport (`downbeat_graph::time`) driven as the engine drives them: blocks cut where
//! the transport says, through a signature change and a tempo ramp, stopped, located,
//! played again and looping.
//!
//! A position must come exactly in the first block and in each block whose tempo,
//! signature or playing differs from the last position's, or whose song frame is not where
//! the last block ended (a locate, a loop wrap); never in another. It comes at the block's
//! frame 0, and says: `time:frame` the song's frame, `time:speed` 1 or 0, `time:bar` and
//! `time:beatsPerMinute` the map's there (the tempo as a float; a tempo point's frame has
//! the point's tempo), `time:barBeat` the beats
//! into the bar in the signature's beats (to 1e-5), `time:beatUnit` and `time:beatsPerBar`
//! the signature's, each property of the type LV2 time gives it.

// Built with the `lv2` feature only (crates/plugin/ci.sh turns it on).
#![cfg(feature = "lv2")]

mod c_bundle;
mod song_support;

use downbeat_graph::time::{
    Signature, SignatureChange, TempoMap, TempoPoint, Transport, TransportCommand,
};
use downbeat_graph::{AudioMut, AudioRef, Node, NodeConfig, ProcessContext};
use downbeat_plugin::lv2::Lv2Node;

const URI: &str = "urn:downbeat:test:time-probe";
const RATE: u32 = 48000;
const MAX_BLOCK: usize = 256;
/// The probe's outputs, one value each (see time_probe.c).
const OUTS: usize = 10;

/// What the probe's outputs said after a block.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Got {
    /// Positions received in the block.
    count: f32,
    /// The last position's properties.
    frame: f64,
    speed: f32,
    bar: f32,
    bar_beat: f32,
    beat_unit: f32,
    beats_per_bar: f32,
    bpm: f32,
    /// The frame of the block the last position came at.
    at: f32,
}

fn call(node: &mut Lv2Node, ctx: &ProcessContext) -> Got {
    let mut out = vec![f32::NAN; OUTS * MAX_BLOCK];
    node.process(
        ctx,
        AudioRef::new(&[], 0, MAX_BLOCK, ctx.frames),
        AudioMut::new(&mut out, OUTS, MAX_BLOCK, ctx.frames),
    );
    let v = |k: usize| out[k * MAX_BLOCK];
    Got {
        count: v(0),
        frame: f64::from(v(1)) + f64::from(v(2)) * f64::from(1u32 << 24),
        speed: v(3),
        bar: v(4),
        bar_beat: v(5),
        beat_unit: v(6),
        beats_per_bar: v(7),
        bpm: v(8),
        at: v(9),
    }
}

/// 120 bpm in 4/4; 6/8 from beat 8 (bar 2); a ramp down to 60 bpm over beats 14 to 20.
fn song() -> TempoMap {
    let ramp = TempoPoint {
        beat: 14.0,
        bpm: 60.0,
        ramp: 6.0,
    };
    let six_eight = SignatureChange {
        beat: 8.0,
        signature: "6/8".parse().unwrap(),
    };
    TempoMap::new(120.0, Signature::default(), &[ramp], &[six_eight], RATE).unwrap()
}

/// The test's own account of when a position is due: what the last one said, and where
/// the last block ended.
#[derive(Default)]
struct Expect {
    told: Option<(f64, Signature, bool)>,
    next: Option<u64>,
}

impl Expect {
    fn due(&mut self, ctx: &ProcessContext) -> bool {
        let m = &ctx.musical;
        let now = (m.bpm, m.signature, m.playing);
        let due = self.told != Some(now) || self.next != Some(m.song_frame);
        self.told = Some(now);
        self.next = Some(m.song_frame + if m.playing { ctx.frames as u64 } else { 0 });
        due
    }
}

/// Asserts that the block got a position exactly when one was due, and that it agrees
/// with `map` at the block's song frame.
fn check(map: &TempoMap, ctx: &ProcessContext, got: &Got, due: bool) {
    let m = &ctx.musical;
    let at = format!(
        "block at song frame {} ({} frames, {}): {got:?}",
        m.song_frame,
        ctx.frames,
        if m.playing { "playing" } else { "stopped" }
    );
    assert_eq!(got.count, if due { 1.0 } else { 0.0 }, "positions: {at}");
    if !due {
        return;
    }
    let (_, beat, bpm) = song_support::at_frame(map, m.song_frame);
    let (bar, bar_start) = map.bar_at(beat);
    let signature = map.signature_at(beat);
    assert_eq!(got.at, 0.0, "at the block's first frame: {at}");
    assert_eq!(got.frame, m.song_frame as f64, "time:frame: {at}");
    assert_eq!(
        got.speed,
        if m.playing { 1.0 } else { 0.0 },
        "time:speed: {at}"
    );
    assert_eq!(got.bar, bar as f32, "time:bar: {at}");
    let bar_beat = ((beat - bar_start).max(0.0) / signature.beat_length()) as f32;
    assert!(
        (got.bar_beat - bar_beat).abs() < 1e-5,
        "time:barBeat {bar_beat}: {at}"
    );
    assert_eq!(
        (got.beat_unit, got.beats_per_bar),
        (
            f32::from(signature.denominator),
            f32::from(signature.numerator)
        ),
        "time:beatUnit, time:beatsPerBar: {at}"
    );
    assert_eq!(got.bpm, bpm as f32, "time:beatsPerMinute: {at}");
}

#[test]
fn the_plugin_gets_the_songs_position_first_and_whenever_it_changes_or_jumps() {
    // Before lilv's world is created (on the first load), and only our bundle.
    std::env::set_var("LV2_PATH", c_bundle::build("lv2_time_plugin", "time_probe"));
    let cfg = NodeConfig {
        sample_rate: RATE,
        max_block: MAX_BLOCK,
    };
    let mut node = Lv2Node::load(URI, &[], &cfg).unwrap();
    assert_eq!(node.output_channels(), OUTS);
    assert!(node.info().follows_time());
    assert!(node.params().is_empty(), "no parameters of the host's own");

    let map = song();
    let mut transport = Transport::new(map.clone());
    let mut expect = Expect::default();
    let mut position = 0;
    let mut sent = Vec::new();
    let mut run = |transport: &mut Transport, sizes: &[usize], blocks: usize| {
        for &size in sizes.iter().cycle().take(blocks) {
            let ctx = ProcessContext {
                musical: transport.position(),
                ..ProcessContext::new(RATE, transport.piece(size), position)
            };
            let got = call(&mut node, &ctx);
            let due = expect.due(&ctx);
            check(&map, &ctx, &got, due);
            sent.push(due);
            transport.advance(ctx.frames);
            position += ctx.frames as u64;
        }
    };
    let sizes = [256, 100, 1, 77];
    // Playing from beat 0 through the signature change into the ramp and out of it: to beat
    // 21 or so, some 6,000 blocks.
    while transport.position().beat < 21.0 {
        run(&mut transport, &sizes, 100);
    }
    // Stopped, located while stopped, played again.
    transport.apply(TransportCommand::Stop).unwrap();
    run(&mut transport, &sizes, 5);
    transport.apply(TransportCommand::LocateBeat(10.0)).unwrap();
    run(&mut transport, &sizes, 5);
    transport.apply(TransportCommand::Play).unwrap();
    run(&mut transport, &sizes, 5);
    // A loop of half a beat in 6/8 at 120 bpm: 12,000 frames, a wrap every 88 blocks or so.
    transport.apply(TransportCommand::Loop(10.0, 10.5)).unwrap();
    run(&mut transport, &sizes, 300);

    // Every case came up: few blocks at a steady tempo got a position, every block of the
    // ramp did.
    let count = sent.iter().filter(|&&s| s).count();
    assert!(
        count > 1000 && count < sent.len() / 2,
        "{count} of {}",
        sent.len()
    );
}
