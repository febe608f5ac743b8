//! Standard MIDI File reading: files written byte by byte by these tests (formats 0 and 1,
//! running status, tempo changes, SMPTE division), exact tick-to-frame conversion, and a
//! corpus of malformed files each refused with the offset of its defect.

mod midi_corpus;

use downbeat::midi::{Division, MidiError, MidiFile, MidiMessage, TempoMap};
use downbeat_graph::NoteEvent;
use midi_corpus::{corpus, smf, Track};

fn on(note: f32, velocity: u8) -> MidiMessage {
    MidiMessage::Note(NoteEvent::On {
        channel: 0,
        note,
        velocity: f32::from(velocity) / 127.0,
    })
}

fn off(note: f32) -> MidiMessage {
    MidiMessage::Note(NoteEvent::Off { channel: 0, note })
}

/// Format 0 at 480 ticks per quarter and 48 kHz: 120 bpm (50 frames per tick), 150 bpm
/// from tick 960 (40 frames per tick), then 333 333 µs per quarter from tick 1920
/// (33.3333 frames per tick, so frames are floors of exact fractions). Notes use running
/// status and velocity-0 note offs.
#[test]
fn format_0_with_running_status_lands_on_exact_frames_across_tempo_changes() {
    let track = Track::default()
        .event(0, &[0x90, 60, 100]) // tick 0
        .event(480, &[60, 0]) // tick 480, running status, velocity 0
        .event(480, &[62, 90]) // tick 960
        .tempo(0, 400_000) // tick 960: 150 bpm; a meta event ends running status
        .event(480, &[0x90, 62, 0]) // tick 1440
        .event(480, &[64, 80]) // tick 1920
        .tempo(0, 333_333) // tick 1920
        .event(1, &[0x90, 64, 0]) // tick 1921
        .event(479, &[0x80, 65, 0]) // tick 2400: a real note off
        .event(7, &[0x90, 67, 127]) // tick 2407
        .end(100); // tick 2507
    let file = MidiFile::parse(&smf(0, 480, &[track])).unwrap();
    assert_eq!(file.format(), 0);
    assert_eq!(file.tempo_map().segments(), 3);
    let got: Vec<(u64, MidiMessage)> = file.frames(48000).collect();
    // 48000·0.333333/480 = 33.3333 frames per tick after tick 1920 (frame 86400).
    let after = |ticks: u64| 86_400 + ticks * 333_333 * 48_000 / 480_000_000;
    let want = vec![
        (0, on(60.0, 100)),
        (24_000, off(60.0)),
        (48_000, on(62.0, 90)),
        (48_000 + 19_200, off(62.0)),
        (86_400, on(64.0, 80)),
        (86_433, off(64.0)),
        (after(480), off(65.0)),
        (after(487), on(67.0, 127)),
    ];
    assert_eq!(after(480), 86_400 + 15_999);
    assert_eq!(got, want);
    assert_eq!(file.end_tick(), 2507);
    assert_eq!(file.end_frame(48000), after(587));
}

/// Format 1: a tempo track and two note tracks, merged in tick order; at one tick, the
/// earlier track first. Tempo changes in any track apply to all.
#[test]
fn format_1_merges_tracks_and_shares_the_tempo_map() {
    let tempo = Track::default()
        .tempo(0, 1_000_000)
        .tempo(96, 250_000)
        .end(0);
    let a = Track::default()
        .event(96, &[0x91, 48, 64]) // channel 2, tick 96
        .event(96, &[0x81, 48, 0]) // tick 192
        .end(0);
    let b = Track::default()
        .event(96, &[0x90, 72, 64]) // tick 96
        .event(48, &[0xB0, 74, 100]) // tick 144: CC 74
        .event(48, &[0xE0, 0x00, 0x60]) // tick 192: pitch bend up
        .end(0);
    let file = MidiFile::parse(&smf(1, 96, &[tempo, a, b])).unwrap();
    assert_eq!((file.format(), file.tracks()), (1, 3));
    let got: Vec<(u64, MidiMessage)> = file.frames(1000).collect();
    let bend = f32::from(0x60u16 << 7) / 8192.0 - 1.0;
    assert_eq!(
        got,
        vec![
            (
                1000,
                MidiMessage::Note(NoteEvent::On {
                    channel: 1,
                    note: 48.0,
                    velocity: 64.0 / 127.0
                })
            ),
            (1000, on(72.0, 64)),
            (
                1125,
                MidiMessage::Control {
                    channel: 0,
                    controller: 74,
                    value: 100
                }
            ),
            (
                1250,
                MidiMessage::Note(NoteEvent::Off {
                    channel: 1,
                    note: 48.0
                })
            ),
            (
                1250,
                MidiMessage::Note(NoteEvent::PitchBend {
                    channel: 0,
                    value: bend
                })
            ),
        ]
    );
    assert!((bend - 0.5).abs() < 1e-3);
}

#[test]
fn pedal_all_notes_off_and_ignored_messages() {
    let track = Track::default()
        .event(0, &[0xB3, 64, 127]) // pedal down, channel 4
        .event(0, &[0xB3, 64, 10]) // up
        .event(0, &[0xB3, 123, 0]) // all notes off
        .event(0, &[0xC3, 5]) // program change: not used
        .event(0, &[0xD3, 5]) // channel pressure: not used
        .end(0);
    let file = MidiFile::parse(&smf(0, 96, &[track])).unwrap();
    let got: Vec<MidiMessage> = file.messages().iter().map(|m| m.message).collect();
    assert_eq!(
        got,
        vec![
            MidiMessage::Note(NoteEvent::Sustain {
                channel: 3,
                on: true
            }),
            MidiMessage::Note(NoteEvent::Sustain {
                channel: 3,
                on: false
            }),
            MidiMessage::Note(NoteEvent::AllNotesOff { channel: Some(3) }),
        ]
    );
}

/// SMPTE division: 25 frames per second, 40 ticks per frame, 1000 ticks per second; tempo
/// events do not change it.
#[test]
fn smpte_division_is_supported() {
    let track = Track::default()
        .tempo(0, 250_000)
        .event(1500, &[0x90, 69, 100])
        .end(500);
    let division = (0xE7u16 << 8) | 40; // -25 fps, 40 ticks per frame
    let file = MidiFile::parse(&smf(0, division, &[track])).unwrap();
    assert_eq!(
        file.tempo_map().division(),
        Division::Smpte {
            fps: 25,
            ticks_per_frame: 40
        }
    );
    let got: Vec<(u64, MidiMessage)> = file.frames(48000).collect();
    assert_eq!(got, vec![(72_000, on(69.0, 100))]);
    assert_eq!(file.end_frame(48000), 96_000);
}

/// Ten minutes of beats under a tempo that changes every beat, alternating 120 and 150
/// bpm: every second beat lands on a multiple of 43 200 frames (0.9 s) exactly, however
/// many changes precede it, and reading the file twice gives the same frames.
#[test]
fn ten_minutes_of_tempo_changes_do_not_drift() {
    // The last note on is at 667 · 0.9 s + 0.5 s = 600.8 s.
    let beats = 2 * 668;
    // Every 480 ticks: the beat's tempo, a note on, and a note off 240 ticks later.
    let mut t = Track::default();
    for beat in 0..beats {
        let micros = if beat % 2 == 0 { 500_000 } else { 400_000 };
        t = t
            .tempo(if beat == 0 { 0 } else { 240 }, micros)
            .event(0, &[0x90, 60, 100])
            .event(240, &[0x80, 60, 0]);
    }
    let bytes = smf(0, 480, &[t.end(0)]);
    let file = MidiFile::parse(&bytes).unwrap();
    assert_eq!(file.tempo_map().segments(), beats);
    let frames: Vec<u64> = file
        .frames(48000)
        .filter(|(_, m)| matches!(m, MidiMessage::Note(NoteEvent::On { .. })))
        .map(|(f, _)| f)
        .collect();
    assert_eq!(frames.len(), beats);
    for (beat, &f) in frames.iter().enumerate() {
        let pairs = (beat / 2) as u64;
        let want = pairs * 43_200 + if beat % 2 == 1 { 24_000 } else { 0 };
        assert_eq!(f, want, "beat {beat}");
    }
    assert!(frames[beats - 1] as f64 / 48000.0 > 600.0);
    let again: Vec<(u64, MidiMessage)> = MidiFile::parse(&bytes).unwrap().frames(48000).collect();
    assert_eq!(again, file.frames(48000).collect::<Vec<_>>());
}

/// The conversion is exact where floating point is not: at 44.1 kHz with 333 333 µs per
/// quarter and 7 ticks per quarter, each tick is 2 099.9979 frames; after a million ticks the
/// frame is the exact floor, not a sum of rounded steps.
#[test]
fn tick_to_frame_is_the_floor_of_the_exact_fraction() {
    let map = TempoMap::new(Division::TicksPerQuarter(7), [(0, 333_333)]);
    for tick in [1u64, 7, 1000, 999_999, 1_000_000, 123_456_789] {
        let exact = u128::from(tick) * 333_333 * 44_100 / (7 * 1_000_000);
        assert_eq!(u128::from(map.frame(tick, 44_100)), exact, "tick {tick}");
    }
    // Summing per-tick frame counts in f32 would be far off by then.
    let mut sum = 0.0f32;
    for _ in 0..1_000_000 {
        sum += 333_333.0 * 44_100.0 / 7e6;
    }
    assert!((f64::from(sum) - map.frame(1_000_000, 44_100) as f64).abs() > 1000.0);
}

#[test]
fn every_malformed_file_is_refused_with_its_offset() {
    let corpus = corpus();
    assert!(corpus.len() >= 10);
    for bad in &corpus {
        let err = match MidiFile::parse(&bad.bytes) {
            Ok(_) => panic!("{}: accepted", bad.name),
            Err(e) => e,
        };
        assert_eq!(err.offset(), Some(bad.offset), "{}: {err}", bad.name);
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("byte {}: ", bad.offset)),
            "{}: {text}",
            bad.name
        );
        assert!(
            text.contains(bad.expected),
            "{}: `{text}` does not say `{}`",
            bad.name,
            bad.expected
        );
    }
    // Every prefix of a good file is refused too (none panics), with an offset inside it.
    let good = midi_corpus::good();
    for len in 0..good.len() {
        match MidiFile::parse(&good[..len]) {
            Ok(_) => panic!("a {len}-byte prefix was accepted"),
            Err(e) => assert!(e.offset().unwrap() <= len, "{len}: {e}"),
        }
    }
    assert!(MidiFile::parse(&good).is_ok());
}

#[test]
fn a_missing_file_names_the_path() {
    let err = MidiFile::read(std::path::Path::new("/nonexistent/song.mid")).unwrap_err();
    assert!(matches!(err, MidiError::Io { .. }));
    assert!(err.to_string().contains("/nonexistent/song.mid"), "{err}");
    assert_eq!(err.offset(), None);
}
