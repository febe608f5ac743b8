//! The song's transport for plugins that follow it (`time:Position`) and control outputs,
//! with Ardour's a-delay: synced to the tempo, its delay time (a control output, one of the
//! node's `Node::outputs`) and its echo follow the song's tempo the node sends from the
//! engine's transport (`ProcessContext::musical`), the schedule's default 120 bpm, a tempo
//! map's, and a tempo change in the middle of the render, the delay time read through the
//! schedule as a watcher reads it; the transport's audio-thread path (a playing ramp, a
//! stop, a locate, a loop) runs under the guard.

// Built with the `lv2` feature only (crates/plugin/ci.sh turns it on).
#![cfg(feature = "lv2")]

mod lv2_support;

use downbeat_graph::time::{Signature, TempoMap, TempoPoint, Transport, TransportCommand};
use downbeat_graph::{AudioMut, AudioRef, Node, NodeConfig, ProcessContext};
use downbeat_plugin::lv2::{ControlValue, Lv2Node};
use lv2_support::{render_song, require_plugin};

downbeat_rt::install_guard_allocator!();

const DELAY: &str = "urn:ardour:a-delay";
const RATE: u32 = 48000;
const CFG: NodeConfig = NodeConfig {
    sample_rate: RATE,
    max_block: 256,
};

/// a-delay synced to the tempo, a quarter note, fully wet, no feedback; plus `extra`.
fn synced(extra: &[(&str, f64)]) -> Lv2Node {
    let mut values: Vec<(String, ControlValue)> = [
        ("sync", 1.0),
        ("div", 4.0),
        ("drywet", 100.0),
        ("feedback", 0.0),
        ("lpf", 20000.0),
    ]
    .iter()
    .chain(extra)
    .map(|(s, v)| (s.to_string(), ControlValue::Number(*v)))
    .collect();
    values.dedup_by(|a, b| a.0 == b.0);
    Lv2Node::load(DELAY, &values, &CFG).unwrap()
}

/// 120 bpm, stepping to `bpm` at `beat`.
fn step(beat: f64, bpm: f64) -> TempoMap {
    let point = TempoPoint {
        beat,
        bpm,
        ramp: 0.0,
    };
    TempoMap::new(120.0, Signature::default(), &[point], &[], RATE).unwrap()
}

/// Where the echo of an impulse at frame 0 is loudest, and the plugin's `delaytime` output
/// after the render, the song playing by `map` (the schedule's 120 bpm without one).
fn echo_frame(node: Lv2Node, seconds: f32, map: Option<TempoMap>) -> (usize, f32) {
    let frames = (seconds * RATE as f32) as usize;
    let mut input = vec![0.0f32; frames];
    input[0] = 1.0;
    let (out, outputs) = render_song(Box::new(node), 1, &input, RATE, 256, map);
    let at = out
        .iter()
        .enumerate()
        .skip(1)
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
        .unwrap()
        .0;
    (at, delaytime(&outputs))
}

fn delaytime(outputs: &[(&str, f32)]) -> f32 {
    outputs
        .iter()
        .find(|(name, _)| *name == "delaytime")
        .expect("a-delay's `delaytime` is one of the node's outputs")
        .1
}

#[test]
fn a_delay_synced_to_the_tempo_takes_the_songs_tempo() {
    require_plugin(DELAY);
    // The schedule's own song, 120 bpm: a quarter note is 500 ms.
    let (at, delay) = echo_frame(synced(&[]), 1.0, None);
    assert_eq!(delay, 500.0);
    assert!(
        (23990..24010).contains(&at),
        "echo at frame {at}, expected 24000"
    );

    // A project's tempo map at 150 bpm: 400 ms.
    let map = TempoMap::constant(150.0, RATE).unwrap();
    let (at, delay) = echo_frame(synced(&[]), 1.0, Some(map));
    assert_eq!(delay, 400.0);
    assert!(
        (19190..19210).contains(&at),
        "echo at frame {at}, expected 19200"
    );
    let node = synced(&[]);
    assert!(
        node.params().iter().all(|p| p.name != "delaytime"),
        "an output is not a parameter"
    );
    assert!(
        node.params().iter().all(|p| !p.name.starts_with("host_")),
        "the tempo is the song's, not a parameter of the node"
    );
    assert!(node.monitor().is_none(), "no worker, no counts");
}

#[test]
fn a_tempo_change_in_the_song_reaches_the_plugin_and_its_output_follows() {
    require_plugin(DELAY);
    // 120 bpm, then 90 from beat 1 (half a second in): the block starting there sends it.
    let silence = vec![0.0; 48000];
    let (_, outputs) = render_song(
        Box::new(synced(&[])),
        1,
        &silence,
        RATE,
        256,
        Some(step(1.0, 90.0)),
    );
    let got = delaytime(&outputs);
    assert!(
        (got - 60_000.0 / 90.0).abs() < 1e-3,
        "{got} ms, not 60000 / 90"
    );
    // The control: the step after the render's end never reaches the plugin.
    let (_, outputs) = render_song(
        Box::new(synced(&[])),
        1,
        &silence,
        RATE,
        256,
        Some(step(4.0, 90.0)),
    );
    assert_eq!(delaytime(&outputs), 500.0);
}

#[test]
fn unsynced_the_plugin_ignores_the_songs_tempo() {
    require_plugin(DELAY);
    // The control for the tests above: with sync off, the time is the `time` control's.
    let map = TempoMap::constant(90.0, RATE).unwrap();
    let node = synced(&[("sync", 0.0), ("time", 250.0)]);
    let (at, delay) = echo_frame(node, 0.5, Some(map));
    assert_eq!(delay, 250.0);
    assert!(
        (11990..12010).contains(&at),
        "echo at frame {at}, expected 12000"
    );
}

#[test]
fn the_old_tempo_parameters_are_gone() {
    require_plugin(DELAY);
    let values = [("host_bpm".to_string(), ControlValue::Number(150.0))];
    let err = Lv2Node::load(DELAY, &values, &CFG).err().unwrap();
    assert!(err.to_string().contains("host_bpm"), "{err}");
}

#[test]
fn the_transport_reaches_the_plugin_without_allocating_or_locking() {
    require_plugin(DELAY);
    let mut node = synced(&[]);
    let delay = node
        .outputs()
        .iter()
        .position(|o| o.name == "delaytime")
        .unwrap();
    // 120 bpm ramping down to 60 over the first beat (two thirds of a second, 125 blocks):
    // a new tempo, and a position, every block. Built here: the map allocates, the
    // transport's calls do not.
    let ramp = TempoPoint {
        beat: 0.0,
        bpm: 60.0,
        ramp: 1.0,
    };
    let map = TempoMap::new(120.0, Signature::default(), &[ramp], &[], RATE).unwrap();
    let mut transport = Transport::new(map);
    let mut last = (0.0, 0.0);
    let input = vec![0.0f32; 256];
    let mut out = vec![0.0f32; 256];
    let mut block = |node: &mut Lv2Node, transport: &mut Transport, n: u64| {
        let ctx = ProcessContext {
            musical: transport.position(),
            ..ProcessContext::new(RATE, transport.piece(256), n * 256)
        };
        node.process(
            &ctx,
            AudioRef::new(&input, 1, 256, ctx.frames),
            AudioMut::new(&mut out, 1, 256, ctx.frames),
        );
        transport.advance(ctx.frames);
        // As the schedule reads an output after a block, for a watcher.
        (ctx.musical.bpm, node.output_value(delay))
    };
    block(&mut node, &mut transport, 0);
    let report = downbeat_rt::guard::check(|| {
        for n in 1..60u64 {
            // Through the ramp, a stop and a start, a jump back, and a loop that wraps:
            // each sends a position.
            let command = match n {
                20 => Some(TransportCommand::Stop),
                25 => Some(TransportCommand::Play),
                30 => Some(TransportCommand::LocateBeat(0.1)),
                40 => Some(TransportCommand::Loop(0.1, 0.3)),
                _ => None,
            };
            if let Some(c) = command {
                transport.apply(c).unwrap();
            }
            last = block(&mut node, &mut transport, n);
        }
    });
    report.assert_clean();
    // The last block's tempo, sent at its start, set the delay.
    let (bpm, got) = last;
    assert!(bpm < 120.0 && bpm > 100.0, "{bpm} bpm");
    let want = (60_000.0 / bpm) as f32;
    assert!(
        (got - want).abs() < 1e-2,
        "delay time {got}, expected {want}"
    );
}
