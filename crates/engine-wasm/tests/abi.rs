//! The ABI natively: loading, every event op against the native `Controller`'s output,
//! errors with their codes and messages, and the table JSON. Each test thread has its own
//! module state, so the tests run in parallel.

use downbeat::control::When;
use downbeat::project::Project;
use downbeat::Engine;
use downbeat_engine_wasm::*;

mod support;
use support::{event, load, param, table};

const PROJECT: &str = "sample_rate = 48000\nblock_size = 64\n\
    edges = [\"a -> g -> out\", \"k -> g\"]\n\
    [nodes.a]\ntype = \"sine\"\nfreq = 330.0\n\
    [nodes.k]\ntype = \"synth\"\n\
    [nodes.g]\ntype = \"gain\"\ngain = 1.0\n\
    [nodes.out]\ntype = \"output\"\n";

fn load_midi(bytes: &[u8]) -> i32 {
    // SAFETY: the slice is valid for its length.
    unsafe { db_load_midi(bytes.as_ptr(), bytes.len() as u32) }
}

fn add_file(path: &str, bytes: &[u8]) -> i32 {
    let (p, b) = (path.as_bytes(), bytes);
    // SAFETY: both slices are valid for their lengths.
    unsafe { db_add_file(p.as_ptr(), p.len() as u32, b.as_ptr(), b.len() as u32) }
}

fn render(frames: usize) -> Vec<f32> {
    let block = db_block_size() as usize;
    let mut out = Vec::new();
    let mut left = frames;
    while left > 0 {
        let n = left.min(block);
        assert_eq!(db_render(n as u32), n as i32, "{}", last_error());
        // SAFETY: channel 0 of the last render holds `n` samples.
        out.extend_from_slice(unsafe { std::slice::from_raw_parts(db_output_ptr(0), n) });
        left -= n;
    }
    out
}

/// The same events through a native engine's `Controller`: channel 0 of `frames` frames.
fn native(frames: usize, send: impl FnOnce(&mut downbeat::control::Controller)) -> Vec<f32> {
    let project = Project::parse(PROJECT, "x.toml").unwrap();
    let mut engine = Engine::new(project.build().unwrap());
    let mut control = engine.controller(64);
    engine.process(&mut []);
    send(&mut control);
    let mut out = vec![0.0f32; frames * 2];
    for piece in out.chunks_mut(64 * 2) {
        engine.process(piece);
    }
    out.chunks_exact(2).map(|f| f[0]).collect()
}

#[test]
fn the_table_lists_live_parameters_and_instruments() {
    assert_eq!(load(PROJECT, "x.toml"), 0, "{}", last_error());
    let t = table();
    assert_eq!(t["sample_rate"], 48000);
    assert_eq!(t["block_size"], 64);
    assert_eq!(t["channels"], 2);
    let gain = &t["params"][param(&t, "g", "gain") as usize];
    assert_eq!(gain["min"], 0.0);
    assert_eq!(gain["initial"], 1.0);
    assert_eq!(gain["output"], false);
    assert_eq!(
        t["instruments"],
        serde_json::json!([{"id": 0, "node": "k"}])
    );
    let ids: Vec<u64> = t["params"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, (0..ids.len() as u64).collect::<Vec<_>>());
    assert_eq!(db_value(param(&t, "a", "freq")), 330.0);
}

#[test]
fn every_op_lands_as_the_native_controllers_event() {
    let frames = 4000;
    assert_eq!(load(PROJECT, "x.toml"), 0, "{}", last_error());
    let t = table();
    let (gain, freq) = (param(&t, "g", "gain"), param(&t, "a", "freq"));
    assert_eq!(event(1, freq, 100, 440.0, 0.0, 0), 0, "{}", last_error());
    assert_eq!(event(2, gain, 500, 0.5, 0.0, 0), 0, "{}", last_error());
    assert_eq!(event(3, gain, 900, 1.5, 0.01, 0), 0, "{}", last_error());
    assert_eq!(event(4, ALL, 1200, 60.0, 1.0, 2), 0, "{}", last_error());
    assert_eq!(event(4, 0, 1300, 64.0, 0.5, 3), 0, "{}", last_error());
    assert_eq!(event(5, ALL, 2000, 60.0, 0.0, 2), 0, "{}", last_error());
    assert_eq!(event(6, ALL, 3000, 0.0, 0.0, ALL), 0, "{}", last_error());
    let wasm = render(frames);
    assert_eq!(db_position(), frames as f64);
    let native = native(frames, |c| {
        use downbeat_graph::{Change, NoteEvent, Ramp, Shape};
        let f = c.resolve("a", "freq").unwrap();
        let g = c.resolve("g", "gain").unwrap();
        let k = c.resolve_instrument("k").unwrap();
        c.send(When::Frame(100), f, Change::Set(440.0)).unwrap();
        c.send(When::Frame(500), g, Change::Step(0.5)).unwrap();
        let ramp = Ramp {
            shape: Shape::Linear,
            from: None,
            to: 1.5,
            frames: 480,
        };
        c.send(When::Frame(900), g, Change::Ramp(ramp)).unwrap();
        c.note_on(When::Frame(1200), 2, 60.0, 1.0).unwrap();
        let on = NoteEvent::On {
            channel: 3,
            note: 64.0,
            velocity: 0.5,
        };
        c.send_note_to(When::Frame(1300), k, on).unwrap();
        c.note_off(When::Frame(2000), 2, 60.0).unwrap();
        c.all_notes_off(When::Frame(3000), None).unwrap();
    });
    assert_eq!(wasm.len(), native.len());
    let differ = wasm
        .iter()
        .zip(&native)
        .position(|(a, b)| a.to_bits() != b.to_bits());
    assert_eq!(differ, None, "differs from the native controller's render");
    // And the events did something: the step halves the sine at frame 500.
    let plain = {
        assert_eq!(load(PROJECT, "x.toml"), 0);
        render(frames)
    };
    let first = wasm.iter().zip(&plain).position(|(a, b)| a != b).unwrap();
    assert!(
        first > 100 && first < 200,
        "the smoothed frequency change starts at frame 100: {first}"
    );
    assert_eq!(db_dropped(), 0.0);
}

#[test]
fn now_applies_at_the_start_of_the_next_block() {
    assert_eq!(load(PROJECT, "x.toml"), 0);
    let gain = param(&table(), "g", "gain");
    render(100);
    assert_eq!(db_event(2, gain, u32::MAX, u32::MAX, 0.0, 0.0, 0), 0);
    // The last render was 36 frames short of a block; "now" is frame 100, where the next
    // render begins.
    let next = render(64);
    assert!(next.iter().all(|&x| x == 0.0));
}

#[test]
fn bad_events_say_why_with_their_codes() {
    assert_eq!(db_event(1, 0, 0, 0, 1.0, 0.0, 0), -1);
    assert_eq!(last_error(), "no project is loaded: call db_load first");
    assert_eq!(load(PROJECT, "x.toml"), 0);
    let t = table();
    let n = t["params"].as_array().unwrap().len() as u32;
    let gain = param(&t, "g", "gain");
    assert_eq!(event(1, n, 0, 1.0, 0.0, 0), -3);
    assert_eq!(
        last_error(),
        format!("no parameter has id {n}: ids go from 0 to {}", n - 1)
    );
    assert_eq!(event(4, 5, 0, 60.0, 0.75, 0), -3);
    assert_eq!(last_error(), "no instrument has id 5: ids go from 0 to 0");
    assert_eq!(event(1, gain, 0, 99.0, 0.0, 0), -4);
    assert_eq!(
        last_error(),
        "bad value for `gain` of node `g`: got 99, expected a number from 0 to 16"
    );
    assert_eq!(event(4, ALL, 0, 128.0, 0.75, 0), -4);
    assert_eq!(
        last_error(),
        "note 128 is outside 0 to 127 (MIDI note numbers; 69 is A4)"
    );
    assert_eq!(event(4, ALL, 0, 60.0, 100.0, 0), -4);
    assert_eq!(
        last_error(),
        "velocity 100 is outside 0 to 1 (0 is a note off)"
    );
    assert_eq!(event(5, ALL, 0, 60.0, 0.0, 16), -4);
    assert_eq!(
        last_error(),
        "channel 16 is outside 0 to 15 (MIDI channels 1 to 16)"
    );
    assert_eq!(event(3, gain, 0, 1.0, -1.0, 0), -4);
    assert_eq!(event(13, gain, 0, 1.0, 0.0, 0), -2);
    assert_eq!(
        last_error(),
        "no event op 13: give 1 to 12, plus 65536 to time it by a beat"
    );
    assert_eq!(db_render(65), -2);
    assert_eq!(
        last_error(),
        "render 65 frames: give 1 to 64 (the project's block_size)"
    );
    assert_eq!(db_render(0), -2);
    assert!(db_value(n).is_nan());
}

#[test]
fn a_full_event_list_is_refused_and_counted() {
    assert_eq!(load(PROJECT, "x.toml"), 0);
    let gain = param(&table(), "g", "gain");
    for i in 0..EVENT_CAPACITY {
        assert_eq!(
            db_event_room() as usize,
            EVENT_CAPACITY - i,
            "room before event {i}"
        );
        assert_eq!(event(2, gain, i as u64, 0.5, 0.0, 0), 0, "event {i}");
    }
    assert_eq!(db_event_room(), 0);
    assert_eq!(event(2, gain, 0, 0.5, 0.0, 0), -5);
    assert_eq!(event(2, gain, 0, 0.5, 0.0, 0), -5);
    assert_eq!(db_dropped(), 2.0);
    assert!(last_error().contains("full"), "{}", last_error());
    // A render takes what fits into the schedule's list and frees the queue for more.
    assert_eq!(db_render(64), 64);
    assert!(db_event_room() > 0);
}

#[test]
fn a_bad_project_gives_the_clis_message() {
    assert_eq!(load(PROJECT, "x.toml"), 0);
    let text = "edges = [\"a -> out\"\n[nodes.a]\ntype = \"sine\"\n";
    assert_eq!(load(text, "bad.toml"), -2);
    let expected = Project::parse(text, "bad.toml").unwrap_err().to_string();
    assert_eq!(last_error(), expected);
    assert!(expected.contains("--> bad.toml:2:1"), "{expected}");
    assert_eq!(
        db_render(64),
        -1,
        "a failed load drops the project loaded before"
    );
}

#[test]
fn node_types_that_need_the_system_are_refused_by_name() {
    for (kind, extra) in [
        ("player", "path = \"x.wav\"\n"),
        ("echoes", ""),
        ("lv2", "uri = \"urn:x\"\n"),
        ("clap", "path = \"x.clap\"\n"),
        ("input", ""),
    ] {
        let text = format!(
            "edges = [\"n -> out\"]\n[nodes.n]\ntype = \"{kind}\"\n{extra}[nodes.out]\ntype = \"output\"\n"
        );
        assert_eq!(load(&text, "p.toml"), -6, "{kind}: {}", last_error());
        let e = last_error();
        assert!(
            e.starts_with(&format!("node `n` is of type \"{kind}\"")),
            "{e}"
        );
        assert!(e.contains("not supported in the browser"), "{e}");
        assert!(e.contains("--> p.toml:3:8"), "{e}");
    }
}

#[test]
fn midi_files_play_as_with_the_cli() {
    assert_eq!(load(PROJECT, "x.toml"), 0);
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/projects/tune.mid"
    ))
    .unwrap();
    assert_eq!(load_midi(&bytes), 0, "{}", last_error());
    let file = downbeat::midi::MidiFile::parse(&bytes).unwrap();
    let project = Project::parse(PROJECT, "x.toml").unwrap();
    let table = project.build().unwrap().param_table();
    let expected = downbeat::midi::play::run_frames(&file, &table, 48000);
    assert_eq!(db_midi_frames(), expected as f64);
    let out = render(48000);
    assert_eq!(load(PROJECT, "x.toml"), 0);
    let without = render(48000);
    assert_ne!(out, without, "the file's notes sound");
    assert_eq!(load_midi(&[0u8; 4]), -2);
    assert!(last_error().starts_with("--midi: "), "{}", last_error());
}

#[test]
fn samples_handed_over_as_bytes_are_decoded_by_the_native_code() {
    let wav = {
        let mut b = Vec::new();
        let data: Vec<i16> = (0..441)
            .map(|i| ((i as f32 * 0.3).sin() * 20000.0) as i16)
            .collect();
        let bytes = (data.len() * 2) as u32;
        b.extend_from_slice(b"RIFF");
        b.extend_from_slice(&(36 + bytes).to_le_bytes());
        b.extend_from_slice(b"WAVEfmt ");
        b.extend_from_slice(&16u32.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&44100u32.to_le_bytes());
        b.extend_from_slice(&88200u32.to_le_bytes());
        b.extend_from_slice(&2u16.to_le_bytes());
        b.extend_from_slice(&16u16.to_le_bytes());
        b.extend_from_slice(b"data");
        b.extend_from_slice(&bytes.to_le_bytes());
        for s in data {
            b.extend_from_slice(&s.to_le_bytes());
        }
        b
    };
    let path = "../kits/blip-abi-test.wav";
    assert_eq!(add_file(path, &wav), 0);
    let text = format!(
        "edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sampler\"\nsample = \"{path}\"\n[nodes.out]\ntype = \"output\"\n"
    );
    assert_eq!(load(&text, "kit.toml"), 0, "{}", last_error());
    assert_eq!(event(4, ALL, 0, 60.0, 1.0, 0), 0);
    let out = render(512);
    let decoded = downbeat_file::decode_all(std::path::Path::new(path), 48000).unwrap();
    assert_eq!(
        decoded.frames(),
        480,
        "441 frames at 44.1 kHz are 480 at 48 kHz"
    );
    assert!(out.iter().any(|&x| x != 0.0));
    let missing = text.replace("blip-abi-test", "nothing-here");
    assert_eq!(load(&missing, "kit.toml"), -2);
    assert!(
        last_error().contains("nothing-here.wav"),
        "{}",
        last_error()
    );
}
