//! The native side of the Web's identity tests for control calls: renders a project through
//! the native `Engine`, with calls made through its `Controller` before the first block, and
//! writes the samples, so that `web/packages/engine/test/native-transport.test.mjs` can hold
//! `renderOffline` making the same calls (`engine.transport.loop(...)`, `engine.noteOn(...,
//! { beat })`) against it bit for bit.
//!
//! ```sh
//! cargo run -p downbeat-engine-wasm --example native_script -- PROJECT.toml SCRIPT.json OUT.f32
//! ```
//!
//! `SCRIPT.json` is `{ "frames": N, "calls": [CALL, ...], "beats": [B, ...] }`, each call written as the
//! JavaScript API takes it: `["transport.loop", 4, 8, { "nextBar": true }]`,
//! `["transport.tempo", 120, 2, { "beat": 6 }]` (or without the ramp), `["transport.play" | "transport.stop" |
//! "transport.unloop", AT?]`, `["transport.locate", BEAT, AT?]`, `["noteOn", NOTE, VELOCITY,
//! { "instrument"?, "channel"?, AT }]`, `["noteOff", NOTE, {...}]`, `["allNotesOff", {
//! "channel"?, AT }]`, `["setParam", NODE, PARAM, VALUE, { "smooth"?, AT }]`, `["ramp", NODE,
//! PARAM, TARGET, SECONDS, AT?]`, where `AT` is `{ "frame": F }`, `{ "beat": B }`, `{
//! "nextBeat": true }`, `{ "nextBar": true }` or nothing (now). Values, velocities, beats of
//! the transport and ramp lengths pass through `f32` on their way, as the Web's control
//! records carry them; a time's beat stays an `f64`, as there.
//!
//! Writes `frames` frames, interleaved `f32` little-endian, in blocks of the project's size
//! (as `downbeat run --device offline` renders them), and prints the song's position at the
//! end as JSON: `{"frames", "channels", "playing", "beat", "bar", "bar_beat", "bpm",
//! "beat_frames"}`, the last the frames of the song (its tempo map's, with the live tempo
//! changes) at which the script's `beats` fall.

use std::io::Write as _;

use downbeat::control::{Controller, When};
use downbeat::project::Project;
use downbeat::Engine;
use downbeat_graph::time::TransportCommand;
use downbeat_graph::{Change, NoteEvent, Shape};
use serde_json::Value;

fn main() {
    if let Err(e) = run() {
        eprintln!("native_script: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [project, script, out] = args.as_slice() else {
        return Err("usage: native_script PROJECT.toml SCRIPT.json OUT.f32".into());
    };
    let text = std::fs::read_to_string(project).map_err(|e| format!("{project}: {e}"))?;
    let script: Value = serde_json::from_str(
        &std::fs::read_to_string(script).map_err(|e| format!("{script}: {e}"))?,
    )
    .map_err(|e| format!("{script}: {e}"))?;
    let frames = script["frames"]
        .as_u64()
        .ok_or("the script has no `frames`")? as usize;
    let p = Project::parse(&text, project).map_err(|e| e.to_string())?;
    let mut engine = Engine::new(p.build().map_err(|e| e.to_string())?);
    let mut control = engine.controller(4096);
    // As the Web's engine does at load: a block of no frames tells the controller how many
    // instruments there are, so that notes sent before the first block are taken.
    engine.process(&mut []);
    for (i, call) in script["calls"]
        .as_array()
        .ok_or("the script has no `calls`")?
        .iter()
        .enumerate()
    {
        make(&mut control, call).map_err(|e| format!("call {i} {call}: {e}"))?;
    }
    let (block, ch) = (engine.block_size(), engine.channels());
    let mut audio = vec![0.0f32; frames * ch];
    for piece in audio.chunks_mut(block * ch) {
        engine.process(piece);
    }
    let bytes: Vec<u8> = audio.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(out, bytes).map_err(|e| format!("{out}: {e}"))?;
    let transport = engine.schedule().transport();
    let beat_frames: Vec<u64> = script["beats"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(Value::as_f64)
        .map(|b| transport.map().frame_of(b))
        .collect();
    let p = transport.position();
    let summary = serde_json::json!({
        "frames": frames,
        "channels": ch,
        "playing": p.playing,
        "beat": p.beat,
        "bar": p.bar,
        "bar_beat": p.bar_beat,
        "bpm": p.bpm,
        "beat_frames": beat_frames,
    });
    writeln!(std::io::stdout(), "{summary}").map_err(|e| e.to_string())
}

/// Makes one call through the controller.
fn make(c: &mut Controller, call: &Value) -> Result<(), String> {
    let args = call.as_array().ok_or("a call is an array")?;
    let name = args.first().and_then(Value::as_str).ok_or("no call name")?;
    let num = |k: usize| {
        args.get(k)
            .and_then(Value::as_f64)
            .ok_or_else(|| format!("argument {k} is not a number"))
    };
    let f32_of = |k: usize| num(k).map(|x| x as f32);
    let beat_of = |k: usize| f32_of(k).map(f64::from);
    let text = |k: usize| {
        args.get(k)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("argument {k} is not a string"))
    };
    let options = |k: usize| args.get(k).cloned().unwrap_or(Value::Null);
    let e = |e: downbeat_graph::ControlError| e.message();
    let transport =
        |c: &mut Controller, k: usize, command| c.transport(when(&options(k))?, command).map_err(e);
    match name {
        "transport.play" => transport(c, 1, TransportCommand::Play),
        "transport.stop" => transport(c, 1, TransportCommand::Stop),
        "transport.unloop" => transport(c, 1, TransportCommand::Unloop),
        "transport.locate" => transport(c, 2, TransportCommand::LocateBeat(beat_of(1)?)),
        "transport.loop" => transport(c, 3, TransportCommand::Loop(beat_of(1)?, beat_of(2)?)),
        "transport.tempo" => {
            let bpm = beat_of(1)?;
            // `tempo(bpm, at?)` or `tempo(bpm, rampBeats, at?)`.
            let (ramp, k) = match args.get(2) {
                Some(Value::Number(_)) => (beat_of(2)?, 3),
                _ => (0.0, 2),
            };
            transport(c, k, TransportCommand::Tempo { bpm, ramp })
        }
        "noteOn" | "noteOff" | "allNotesOff" => {
            let k = if name == "noteOn" {
                3
            } else if name == "noteOff" {
                2
            } else {
                1
            };
            let o = options(k);
            let at = when(&o)?;
            let channel = o["channel"].as_u64().map(|c| c as u8);
            let event = match name {
                "noteOn" => NoteEvent::On {
                    channel: channel.unwrap_or(0),
                    note: f32_of(1)?,
                    velocity: f32_of(2)?,
                },
                "noteOff" => NoteEvent::Off {
                    channel: channel.unwrap_or(0),
                    note: f32_of(1)?,
                },
                _ => NoteEvent::AllNotesOff { channel },
            };
            match o["instrument"].as_str() {
                Some(node) => {
                    let key = c.resolve_instrument(node).map_err(e)?;
                    c.send_note_to(at, key, event).map_err(e)
                }
                None => c.send_note(at, event).map_err(e),
            }
        }
        "setParam" => {
            let o = options(4);
            let id = c.resolve(text(1)?, text(2)?).map_err(e)?;
            let value = f32_of(3)?;
            let change = if o["smooth"] == Value::Bool(false) {
                Change::Step(value)
            } else {
                Change::Set(value)
            };
            c.send(when(&o)?, id, change).map_err(e)
        }
        "ramp" => {
            let at = when(&options(5))?;
            let seconds = f64::from(f32_of(4)?);
            c.ramp(at, text(1)?, text(2)?, Shape::Linear, f32_of(3)?, seconds)
                .map_err(e)
        }
        _ => Err(format!("unknown call `{name}`")),
    }
}

/// The time of a call's options: a frame, a beat, the next beat or bar line, or now.
fn when(o: &Value) -> Result<When, String> {
    if let Some(f) = o.get("frame").filter(|v| !v.is_null()) {
        return f
            .as_u64()
            .map(When::Frame)
            .ok_or_else(|| format!("frame {f}"));
    }
    if let Some(b) = o.get("beat").filter(|v| !v.is_null()) {
        return b
            .as_f64()
            .map(When::Beat)
            .ok_or_else(|| format!("beat {b}"));
    }
    if o.get("nextBeat") == Some(&Value::Bool(true)) {
        return Ok(When::NextBeat);
    }
    if o.get("nextBar") == Some(&Value::Bool(true)) {
        return Ok(When::NextBar);
    }
    Ok(When::Now)
}
