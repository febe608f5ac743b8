//! An instrument plugin plays a MIDI file: a Standard MIDI File read by the engine's reader
//! (`downbeat::midi`), its notes sent to mda EPiano at the frames its tempo map gives.

// Built with the `lv2` feature only (crates/plugin/ci.sh turns it on).
#![cfg(feature = "lv2")]

#[path = "../../plugin/tests/lv2_support/mod.rs"]
mod lv2_support;

use downbeat::midi::{MidiFile, MidiMessage};
use downbeat_graph::{Node, NodeConfig};
use downbeat_plugin::lv2::{ControlValue, Lv2Node};
use lv2_support::{render, require_plugin};

const EPIANO: &str = "http://drobilla.net/plugins/mda/EPiano";
const RATE: u32 = 48000;

/// Format 0, 480 ticks per quarter, 120 bpm (500000 us per quarter): A4 on at tick 240
/// (0.25 s = frame 12000), off at tick 960 (1 s = frame 48000).
fn song() -> Vec<u8> {
    let mut track = Vec::new();
    track.extend_from_slice(&[0x00, 0xFF, 0x51, 0x03, 0x07, 0xA1, 0x20]); // tempo
    track.extend_from_slice(&[0x81, 0x70, 0x90, 69, 100]); // delta 240: note on
    track.extend_from_slice(&[0x85, 0x50, 0x80, 69, 64]); // delta 720: note off
    track.extend_from_slice(&[0x00, 0xFF, 0x2F, 0x00]); // end of track
    let mut file = b"MThd\0\0\0\x06\0\0\0\x01\x01\xE0MTrk".to_vec();
    file.extend_from_slice(&(track.len() as u32).to_be_bytes());
    file.extend_from_slice(&track);
    file
}

#[test]
fn epiano_plays_a_midi_file_at_its_frames() {
    require_plugin(EPIANO);
    let midi = MidiFile::parse(&song()).unwrap();
    let cfg = NodeConfig {
        sample_rate: RATE,
        max_block: 256,
    };
    let values = [("random_tuning".to_string(), ControlValue::Number(0.0))];
    let mut piano = Lv2Node::load(EPIANO, &values, &cfg).unwrap();
    let mut sent = Vec::new();
    for (frame, message) in midi.frames(RATE) {
        if let MidiMessage::Note(event) = message {
            piano.note(frame as usize, event).unwrap();
            sent.push(frame);
        }
    }
    assert_eq!(sent, [12000, 48000]);
    let frames = 2 * RATE as usize;
    let out = render(Box::new(piano), 0, &vec![0.0; frames], RATE, 256);
    let left: Vec<f32> = out.iter().step_by(2).copied().collect();
    assert!(
        left[..12000].iter().all(|&s| s == 0.0),
        "sound before the note"
    );
    let first = left.iter().position(|&s| s.abs() > 1e-4).unwrap();
    assert!((12000..12010).contains(&first), "first sound at {first}");
    let rms = |x: &[f32]| (x.iter().map(|s| s * s).sum::<f32>() / x.len() as f32).sqrt();
    let held = rms(&left[40000..48000]);
    let released = rms(&left[80000..88000]);
    assert!(
        released < 0.1 * held,
        "the note off silences it: {held} held, {released} after"
    );
}
