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
//! * `clicks_steps`, `clicks_ramp`: a click on every beat of a song (100 bpm, 140 from beat
//!   8; in `clicks_ramp` reached by a ramp), rendered by Downbeat's metronome and by Tone.js'
//!   Transport in headless Chromium (`web/bench/tone-transport.mjs`, `Tone.Offline`, each
//!   beat starting a `ConstantSourceNode`); each click's first frame against the frame
//!   nearest its exact time, worked out here from each library's own tempo model (ours is
//!   linear in beats, Tone's `linearRampToValueAtTime` linear in time; steps are the same in
//!   both): the largest error, in frames.

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
                        let _ = control.step(When::Beat(beat + 1.0), "g0", "gain", 0.9);
                        let _ = control.step(When::NextBar, "g0", "gain", 1.0);
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
    if common.wants("clicks") {
        for ramp in [false, true] {
            let case = if ramp { "clicks_ramp" } else { "clicks_steps" };
            match clicks(ramp) {
                Ok(((ours, ours_after), (tone, tone_after))) => {
                    report.add(case, "downbeat", "frames (max error)", &[ours]);
                    report.add(case, "tone.js", "frames (max error)", &[tone]);
                    let after = format!("{case}_at_or_after");
                    report.add(&after, "downbeat", "frames (max error)", &[ours_after]);
                    report.add(&after, "tone.js", "frames (max error)", &[tone_after]);
                }
                Err(e) => {
                    eprintln!("transport: {case}: {e}");
                    std::process::exit(1);
                }
            }
        }
    }
    report.notes.push(format!(
        "{BLOCK}-frame blocks at 48 kHz (budget {:.0} us), one thread, no pinning, {runs} runs \
         (engine cases alternating); position: {blocks} blocks of the song with a ramp every \
         four beats and a 64-beat loop; engine: 100 gains and a metronome",
        BLOCK as f64 / RATE * 1e6
    ));
    report
}

/// A click render's largest error in frames: by the nearest-frame rule, and by the
/// first-frame-at-or-after rule.
type Errors = (f64, f64);

/// Beats each click song has.
const CLICK_BEATS: usize = 16;

/// The largest error of Downbeat's clicks and of Tone.js' clicks, in frames, for the song
/// with a step (`ramp` false) or a ramp from beat 8 to 140 bpm: each against the frame
/// nearest the exact time (Downbeat's rule) and against the first frame at or after it (Web
/// Audio's rule for starting a source).
fn clicks(ramp: bool) -> Result<(Errors, Errors), String> {
    let (bpm0, bpm1, from) = (100.0f64, 140.0f64, 8.0f64);
    let change = if ramp {
        format!("{{ beat = {from}, bpm = {bpm1}, ramp = 8 }}")
    } else {
        format!("{{ beat = {from}, bpm = {bpm1} }}")
    };
    let text = format!(
        "block_size = 256\nedges = [\"m -> out\"]\n[nodes.m]\ntype = \"metronome\"\n\
         channels = 1\n[nodes.out]\ntype = \"output\"\nchannels = 1\n\
         [tempo]\nbpm = {bpm0}\nchanges = [{change}]\n"
    );
    let p = Project::parse(&text, "clicks.toml").map_err(|e| e.to_string())?;
    // Our model, worked out independently of the map's code: a ramp linear in beats over
    // 8 beats, t(b) = ts + 60 L / (t1 - t0) ln(t(b) / t0).
    let t_from = 60.0 * from / bpm0;
    let ours_exact = |b: f64| {
        if b <= from {
            60.0 * b / bpm0
        } else if !ramp {
            t_from + 60.0 * (b - from) / bpm1
        } else if b <= from + 8.0 {
            let tempo = bpm0 + (bpm1 - bpm0) * (b - from) / 8.0;
            t_from + 60.0 * 8.0 / (bpm1 - bpm0) * (tempo / bpm0).ln()
        } else {
            let end = t_from + 60.0 * 8.0 / (bpm1 - bpm0) * (bpm1 / bpm0).ln();
            end + 60.0 * (b - from - 8.0) / bpm1
        }
    };
    let seconds = ours_exact(CLICK_BEATS as f64) + 0.5;
    let frames = (seconds * RATE) as usize;
    let mut engine = Engine::new(p.build().map_err(|e| e.to_string())?);
    let mut audio = Vec::with_capacity(frames);
    let mut block = vec![0.0f32; 256];
    while audio.len() < frames {
        engine.process(&mut block);
        audio.extend_from_slice(&block);
    }
    // The metronome goes on past the last beat Tone is asked for: its first beats.
    let mut ours = onsets(&audio);
    ours.truncate(CLICK_BEATS);
    let ours_error = (
        max_error(&ours, |k| ours_exact(k as f64), f64::round)?,
        max_error(&ours, |k| ours_exact(k as f64), f64::ceil)?,
    );

    // Tone's model: the same step, or a ramp linear in time over the seconds ours takes
    // from beat 8 to 16; within it beats(t) = 8 + (t0 τ + (t1 - t0) τ² / 2D) / 60.
    let ramp_seconds = ours_exact(from + 8.0) - t_from;
    let tone_exact = |k: usize| {
        let b = k as f64;
        if b <= from {
            return 60.0 * b / bpm0;
        }
        if !ramp {
            return t_from + 60.0 * (b - from) / bpm1;
        }
        let (a, lin) = ((bpm1 - bpm0) / (2.0 * ramp_seconds * 60.0), bpm0 / 60.0);
        let tau = (-lin + (lin * lin + 4.0 * a * (b - from)).sqrt()) / (2.0 * a);
        if tau <= ramp_seconds {
            t_from + tau
        } else {
            let beats_in_ramp = (bpm0 + bpm1) / 2.0 * ramp_seconds / 60.0;
            t_from + ramp_seconds + 60.0 * (b - from - beats_in_ramp) / bpm1
        }
    };
    let tempo = if ramp {
        serde_json::json!([
            [0.0, bpm0, "set"],
            [t_from, bpm0, "set"],
            [t_from + ramp_seconds, bpm1, "linear"]
        ])
    } else {
        serde_json::json!([[0.0, bpm0, "set"], [t_from, bpm1, "set"]])
    };
    let song = serde_json::json!({
        "sample_rate": RATE, "seconds": seconds, "beats": CLICK_BEATS, "tempo": tempo,
    });
    let dir = std::env::temp_dir().join(format!("downbeat-tone-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (song_path, out_path) = (dir.join("song.json"), dir.join("out.json"));
    std::fs::write(&song_path, song.to_string()).map_err(|e| e.to_string())?;
    let web = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../web");
    let status = std::process::Command::new("node")
        .current_dir(&web)
        .arg("bench/tone-transport.mjs")
        .arg(&song_path)
        .arg(&out_path)
        .status()
        .map_err(|e| format!("cannot run node (Node 20 or later, with web/node_modules installed by `npm ci` in web/): {e}"))?;
    if !status.success() {
        return Err(format!(
            "web/bench/tone-transport.mjs failed ({status}); it needs Chromium (/usr/bin/chromium or CHROMIUM=) and `npm ci` in web/"
        ));
    }
    let out: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_path).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&dir);
    let tone: Vec<usize> = out["onsets"]
        .as_array()
        .ok_or("no onsets from Tone.js")?
        .iter()
        .filter_map(|v| v.as_u64().map(|f| f as usize))
        .collect();
    let tone_error = (
        max_error(&tone, tone_exact, f64::round)?,
        max_error(&tone, tone_exact, f64::ceil)?,
    );
    Ok((ours_error, tone_error))
}

/// The first frame of each click: a non-zero sample after at least 100 zeros.
fn onsets(audio: &[f32]) -> Vec<usize> {
    let mut zeros = usize::MAX;
    let mut found = Vec::new();
    for (i, &x) in audio.iter().enumerate() {
        if x == 0.0 {
            zeros = zeros.saturating_add(1);
        } else {
            if zeros >= 100 {
                found.push(i);
            }
            zeros = 0;
        }
    }
    found
}

/// The largest distance between each onset and the frame `rule` makes of its beat's exact
/// time in frames; an error unless there is one onset per beat.
fn max_error(
    onsets: &[usize],
    exact: impl Fn(usize) -> f64,
    rule: fn(f64) -> f64,
) -> Result<f64, String> {
    if onsets.len() != CLICK_BEATS {
        return Err(format!(
            "{} clicks found, {CLICK_BEATS} expected: {onsets:?}",
            onsets.len()
        ));
    }
    Ok(onsets
        .iter()
        .enumerate()
        // A time a hair past a whole frame is that frame (the exact times are computed in
        // f64, a few ulps from the true ones).
        .map(|(k, &f)| (f as f64 - rule(exact(k) * RATE - 1e-6)).abs())
        .fold(0.0, f64::max))
}
