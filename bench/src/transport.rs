//! Musical time (issue 39): what the song's transport costs the audio thread.
//!
//! * `position`: the transport's own work per 64-frame block, alone: the piece the block
//!   may run as (`Schedule::piece`), the musical position every node is handed
//!   (`Transport::position`) and the move on (`Transport::advance`), over a map with a tempo
//!   ramp every four beats and a loop, so that blocks are cut. Reported in ns per block and
//!   as a share of the block's 1.33 ms at 48 kHz.
//! * `engine`: a whole engine block of 100 `gain` nodes in a chain and a metronome, the song
//!   with a ramp every four beats and a loop (`song`: blocks cut at every ramp end and wrap,
//!   beat events waiting) against the same graph at a steady 120 bpm with no loop and no
//!   events (`steady`), alternating, in µs per block; the ratio is what the cuts and waiting
//!   events add. The steady song still computes the position every block, which `position`
//!   measures apart.

use std::time::Instant;

use downbeat::control::When;
use downbeat::project::Project;
use downbeat::Engine;

use crate::report::{alternating, Better, Report};
use crate::Common;

/// Frames per block: the soak's, the smallest block the suites use.
const BLOCK: usize = 64;
const RATE: f64 = 48_000.0;

/// The song: a ramp every four beats for 400 beats, looping over the first 64.
fn tempo_tables() -> String {
    let mut changes = String::new();
    for k in 0..100 {
        let bpm = if k % 2 == 0 { 140 } else { 100 };
        changes.push_str(&format!(
            "  {{ beat = {}, bpm = {bpm}, ramp = 2 }},\n",
            4 * k + 2
        ));
    }
    format!("[tempo]\nbpm = 120\nchanges = [\n{changes}]\n[transport]\nloop = [0, 64]\n")
}

/// 100 gains in a chain after a sine, and a metronome, into the output.
fn project(song: bool) -> Project {
    let mut text = String::from("block_size = 64\nedges = [\n  \"s -> g0\",\n");
    for k in 1..100 {
        text.push_str(&format!("  \"g{} -> g{k}\",\n", k - 1));
    }
    text.push_str("  \"g99 -> out\",\n  \"m -> out\",\n]\n");
    text.push_str("[nodes.s]\ntype = \"sine\"\n[nodes.m]\ntype = \"metronome\"\n");
    text.push_str("[nodes.out]\ntype = \"output\"\n");
    for k in 0..100 {
        text.push_str(&format!("[nodes.g{k}]\ntype = \"gain\"\n"));
    }
    if song {
        text.push_str(&tempo_tables());
    } else {
        text.push_str("[tempo]\nbpm = 120\n");
    }
    Project::parse(&text, "transport.toml").expect("the bench's project parses")
}

/// Runs the `transport` suite.
pub fn run(common: &Common) -> Report {
    let mut report = Report::new("transport");
    let runs = common.runs();
    let blocks = if common.quick { 2_000 } else { 200_000 };
    if common.wants("position") {
        let mut samples = Vec::with_capacity(runs);
        for _ in 0..runs {
            let mut s = project(true).build().expect("builds");
            let start = Instant::now();
            let mut sink = 0.0;
            for _ in 0..blocks {
                let n = s.piece(BLOCK);
                let p = s.transport().position();
                sink += p.beat;
                s.transport_mut().advance(n);
            }
            let ns = start.elapsed().as_nanos() as f64 / blocks as f64;
            std::hint::black_box(sink);
            samples.push(ns);
        }
        report.add("position", "downbeat", "ns/block", &samples);
        let budget_ns = BLOCK as f64 / RATE * 1e9;
        let share: Vec<f64> = samples.iter().map(|ns| 100.0 * ns / budget_ns).collect();
        report.add("position_share", "downbeat", "% of block", &share);
    }
    if common.wants("engine") {
        let engine_blocks = if common.quick { 500 } else { 20_000 };
        let mut song = Vec::with_capacity(runs);
        let mut steady = Vec::with_capacity(runs);
        for r in 0..runs {
            for kind in alternating(&[true, false], r) {
                let mut engine = Engine::new(project(kind).build().expect("builds"));
                let mut control = engine.controller(256);
                let mut block = vec![0.0f32; BLOCK * engine.channels()];
                for _ in 0..200 {
                    engine.process(&mut block);
                }
                let start = Instant::now();
                for b in 0..engine_blocks {
                    if kind && b % 100 == 0 {
                        // A few events waiting for beats, as a live set has.
                        let beat = engine.schedule().transport().position().beat;
                        let _ = control.step("g0", "gain", 0.9, When::Beat(beat + 1.0));
                        let _ = control.step("g0", "gain", 1.0, When::NextBar);
                    }
                    engine.process(&mut block);
                }
                let us = start.elapsed().as_secs_f64() * 1e6 / engine_blocks as f64;
                if kind {
                    song.push(us);
                } else {
                    steady.push(us);
                }
            }
        }
        report.add("engine", "song", "us/block", &song);
        report.add("engine", "steady", "us/block", &steady);
        // song / steady: what cut blocks and waiting events cost, > 1 when they cost.
        report.ratio("song_cost", "engine", "song", "steady", Better::Higher);
    }
    report.notes.push(format!(
        "{BLOCK}-frame blocks at 48 kHz (budget {:.0} us), one thread, no pinning, {runs} runs \
         (engine cases alternating); position: {blocks} blocks of the song with a ramp every \
         four beats and a 64-beat loop; engine: 100 gains and a metronome",
        BLOCK as f64 / RATE * 1e6
    ));
    report
}
