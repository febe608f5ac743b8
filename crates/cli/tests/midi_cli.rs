//! `downbeat run PROJECT --midi FILE.mid` end to end: notes land at the frames their ticks
//! fall on through the tempo map, renders are bit-identical, the run lasts to the last event
//! plus the release, and every malformed file of the corpus exits 2 naming its byte offset.

#[path = "../../engine/tests/midi_corpus/mod.rs"]
mod midi_corpus;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use downbeat::midi::MidiFile;
use midi_corpus::{corpus, smf, Track};

const SYNTH: &str = r#"
sample_rate = 48000
block_size = 256
edges = ["keys -> out"]
[nodes.keys]
type = "synth"
wave = "sine"
channels = 1
[nodes.out]
type = "output"
channels = 1
"#;

const PLAIN: &str = r#"
edges = ["osc -> out"]
[nodes.osc]
type = "sine"
[nodes.out]
type = "output"
"#;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("downbeat-midi-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn downbeat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .args(args)
        .output()
        .unwrap()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_string()
}

fn wav(path: &str) -> Vec<f32> {
    hound::WavReader::open(path)
        .unwrap()
        .samples::<f32>()
        .map(Result::unwrap)
        .collect()
}

/// Four notes 480 ticks (five quarters at 96 PPQ) apart, format 1 with the
/// tempo track apart, the tempo changing between them: 120, then 90, then 200 bpm.
fn tune() -> Vec<u8> {
    let tempo = Track::default()
        .tempo(0, 500_000)
        .tempo(480, 666_667)
        .tempo(960, 300_000)
        .end(0);
    let mut notes = Track::default();
    for (i, key) in [60u8, 67, 72, 64].into_iter().enumerate() {
        notes = notes
            .event(if i == 0 { 0 } else { 432 }, &[0x90, key, 100])
            .event(48, &[0x80, key, 0]);
    }
    smf(1, 96, &[tempo, notes.end(96)])
}

#[test]
fn notes_start_at_the_frames_of_their_ticks_and_renders_are_bit_identical() {
    let d = dir("onsets");
    let project = write(&d, "synth.toml", SYNTH.as_bytes());
    let bytes = tune();
    let mid = write(&d, "tune.mid", &bytes);
    let file = MidiFile::parse(&bytes).unwrap();
    let mut renders = Vec::new();
    for k in 0..2 {
        let out = d.join(format!("tune-{k}.wav"));
        let o = downbeat(&[
            "run",
            &project,
            "--device",
            "offline",
            "--midi",
            &mid,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        renders.push(wav(out.to_str().unwrap()));
    }
    assert!(renders[0] == renders[1], "two renders differ");
    let x = &renders[0];
    // Without --seconds: to the file's last event plus the synth's release.
    let release = 48000.0 * 0.1; // the synth's default release, at most 100 ms
    let end = file.end_frame(48000) as f64;
    assert!(
        (x.len() as f64) > end && (x.len() as f64) <= end + release + 1.0,
        "{} frames for a file ending at {end}",
        x.len()
    );
    let onsets: Vec<u64> = [0u64, 480, 960, 1440]
        .iter()
        .map(|&t| file.tempo_map().frame(t, 48000))
        .collect();
    // 120 bpm for 5 quarters, then 90, then 200: the gaps differ.
    assert_eq!(onsets[1], 48000 * 5 / 2);
    for &f in &onsets {
        let f = f as usize;
        let from = f.saturating_sub(480);
        let first = from + x[from..].iter().position(|s| s.abs() > 0.01).unwrap();
        assert!(
            first >= f && first <= f + 240,
            "note at frame {f} first audible at {first}"
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn seconds_limits_a_midi_run() {
    let d = dir("seconds");
    let project = write(&d, "synth.toml", SYNTH.as_bytes());
    let mid = write(&d, "tune.mid", &tune());
    let out = d.join("short.wav");
    let o = downbeat(&[
        "run",
        &project,
        "--device",
        "offline",
        "--midi",
        &mid,
        "--seconds",
        "0.5",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(wav(out.to_str().unwrap()).len(), 24000);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_project_tempo_overriding_the_files_is_a_warning_that_counts_the_changes() {
    let d = dir("tempo-warning");
    let with_tempo = format!("{SYNTH}\n[tempo]\nbpm = 100\n");
    let project = write(&d, "synth.toml", with_tempo.as_bytes());
    let mid = write(&d, "tune.mid", &tune());
    let o = downbeat(&[
        "run",
        &project,
        "--device",
        "offline",
        "--midi",
        &mid,
        "--seconds",
        "0.1",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stderr = String::from_utf8_lossy(&o.stderr);
    let expected = format!(
        "warning: --midi `{mid}`: the project's [tempo] sets the song's tempo; the file's 2 \
         tempo change(s) are ignored"
    );
    assert!(stderr.contains(&expected), "{stderr}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn every_malformed_file_exits_2_with_its_offset() {
    let d = dir("corpus");
    let project = write(&d, "synth.toml", SYNTH.as_bytes());
    let corpus = corpus();
    assert!(corpus.len() >= 10);
    for bad in &corpus {
        let mid = write(&d, &format!("{}.mid", bad.name), &bad.bytes);
        let o = downbeat(&["run", &project, "--device", "offline", "--midi", &mid]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{}: {err}", bad.name);
        assert!(
            err.contains(&format!("byte {}: ", bad.offset)) && err.contains(bad.expected),
            "{}: stderr `{err}` lacks the offset {} or `{}`",
            bad.name,
            bad.offset,
            bad.expected
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_project_without_instruments_refuses_midi() {
    let d = dir("plain");
    let project = write(&d, "plain.toml", PLAIN.as_bytes());
    let mid = write(&d, "tune.mid", &tune());
    let o = downbeat(&["run", &project, "--device", "offline", "--midi", &mid]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no node of this project plays notes"), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}

const CC: &str = r#"
edges = ["keys -> level -> out"]
[nodes.keys]
type = "synth"
wave = "sine"
channels = 1
[nodes.level]
type = "gain"
channels = 1
[nodes.out]
type = "output"
channels = 1
[midi.cc]
7 = "level.gain"
"#;

/// `[midi.cc] 7 = "level.gain"`: CC 7 spans the gain's range, 0 to 16, linearly; a CC 7 of
/// 0 silences the held note from its frame on (after the 5 ms smoothing of a set).
#[test]
fn midi_cc_moves_the_mapped_parameter_at_its_frame() {
    let p = downbeat::project::Project::parse(CC, "cc.toml").unwrap();
    let s = p.build().unwrap();
    let maps = p.cc_mappings(&s.param_table()).unwrap();
    assert_eq!(maps.len(), 1);
    assert_eq!(maps[0].controller, 7);
    assert_eq!((maps[0].value(0), maps[0].value(127)), (0.0, 16.0));
    assert_eq!(maps[0].value(64), 16.0 * 64.0 / 127.0);

    let d = dir("cc");
    let project = write(&d, "cc.toml", CC.as_bytes());
    // 96 PPQ at 120 bpm: 96 ticks are 24000 frames.
    let notes = Track::default()
        .event(0, &[0x90, 69, 100])
        .event(96, &[0xB0, 7, 0])
        .event(96, &[0x80, 69, 0])
        .end(0);
    let mid = write(&d, "cc.mid", &smf(0, 96, &[notes]));
    let out = d.join("cc.wav");
    let o = downbeat(&[
        "run",
        &project,
        "--device",
        "offline",
        "--midi",
        &mid,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let x = wav(out.to_str().unwrap());
    let peak = |r: std::ops::Range<usize>| x[r].iter().fold(0.0f32, |m, s| m.max(s.abs()));
    assert!(peak(20000..24000) > 0.05, "the note sounds before the CC");
    assert_eq!(peak(24000 + 240..48000), 0.0, "CC 7 = 0 silences it");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn midi_cc_errors_point_at_the_entry() {
    let cases = [
        (
            "128 = \"level.gain\"",
            "MIDI controller `128` does not exist",
        ),
        ("7 = \"levl.gain\"", "unknown node `levl`"),
        ("7 = \"level.gian\"", "unknown parameter `gian`"),
        ("7 = \"level.channels\"", "cannot change while running"),
        ("7 = \"level\"", "`level` names no parameter"),
    ];
    for (entry, want) in cases {
        let text = CC.replace("7 = \"level.gain\"", entry);
        let line = text.lines().position(|l| l == entry).unwrap() + 1;
        let err = downbeat::project::Project::parse(&text, "cc.toml")
            .and_then(|p| p.build().map(|_| ()))
            .unwrap_err();
        assert_eq!(err.line, line, "{entry}: {err}");
        assert!(err.message.contains(want), "{entry}: {err}");
    }
}

/// SMPTE division end to end: 25 frames per second of 40 ticks each is 1000 ticks per
/// second, so a note at tick 500 starts at half a second, frame 24000.
#[test]
fn an_smpte_file_plays_at_its_times() {
    let d = dir("smpte");
    let project = write(&d, "synth.toml", SYNTH.as_bytes());
    let notes = Track::default()
        .event(500, &[0x90, 69, 100])
        .event(250, &[0x80, 69, 0])
        .end(0);
    let mid = write(&d, "smpte.mid", &smf(0, 0xE728, &[notes]));
    let out = d.join("smpte.wav");
    let o = downbeat(&[
        "run",
        &project,
        "--device",
        "offline",
        "--midi",
        &mid,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let x = wav(out.to_str().unwrap());
    let first = x.iter().position(|s| s.abs() > 0.01).unwrap();
    assert!((24000..24240).contains(&first), "first audible at {first}");
    // Ends at tick 750 (36000) plus the synth's release, at most 100 ms.
    assert!(
        x.len() > 36000 && x.len() <= 36000 + 4800,
        "{} frames",
        x.len()
    );
    std::fs::remove_dir_all(&d).unwrap();
}
