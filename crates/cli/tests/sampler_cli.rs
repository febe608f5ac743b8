//! The `sampler` node type end to end: a kit made by `sox` renders offline with each hit at
//! its note's frame (bit for bit at the project's rate, on time when resampled), bad kits
//! exit 2 naming the file or the note, and `downbeat check` prints the memory the samples
//! take. Needs `sox` (Debian `sox`): without it these tests fail.

#[path = "../../engine/tests/midi_corpus/mod.rs"]
mod midi_corpus;
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use midi_corpus::{smf, Track};
use support::downbeat;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("downbeat-sampler-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `sox` with `args` in `dir`; panics (fails the test) when sox is missing.
fn sox(dir: &Path, args: &[&str]) {
    let status = Command::new("sox")
        .current_dir(dir)
        .args(args)
        .status()
        .unwrap_or_else(|e| panic!("sox is needed for this test (apt-get install sox): {e}"));
    assert!(status.success(), "sox {args:?}");
}

fn wav(path: &Path) -> (u16, Vec<f32>) {
    let r = hound::WavReader::open(path).unwrap();
    let channels = r.spec().channels;
    (
        channels,
        r.into_samples::<f32>().map(Result::unwrap).collect(),
    )
}

/// The kit: a 32-bit float kick and snare at 48 kHz, a 16-bit hat at 44.1 kHz.
fn make_kit(d: &Path) {
    let float = ["-r", "48000", "-c", "1", "-b", "32", "-e", "floating-point"];
    let kick: Vec<&str> = ["-n"]
        .iter()
        .chain(&float)
        .chain(&["kick.wav", "synth", "0.02", "sine", "100", "vol", "0.8"])
        .copied()
        .collect();
    sox(d, &kick);
    let snare: Vec<&str> = ["-n"]
        .iter()
        .chain(&float)
        .chain(&["snare.wav", "synth", "0.02", "whitenoise", "vol", "0.5"])
        .copied()
        .collect();
    sox(d, &snare);
    sox(
        d,
        &[
            "-n", "-r", "44100", "-c", "1", "-b", "16", "hat.wav", "synth", "0.01", "square",
            "3000", "vol", "0.5",
        ],
    );
}

const KIT: &str = r#"
sample_rate = 48000
block_size = 256
edges = ["kit -> out"]
[nodes.kit]
type = "sampler"
samples = { 36 = "kick.wav", D2 = "snare.wav", "F#2" = "hat.wav" }
[nodes.out]
type = "output"
"#;

/// At 120 bpm and 96 ticks a quarter, a tick is 250 frames at 48 kHz.
fn beat() -> Vec<u8> {
    let notes = Track::default()
        .event(0, &[0x99, 36, 127])
        .event(48, &[0x89, 36, 0])
        .event(48, &[0x99, 38, 127])
        .event(24, &[0x89, 38, 0])
        .event(24, &[0x99, 42, 127])
        .event(24, &[0x89, 42, 0])
        .end(96);
    smf(0, 96, &[notes])
}

#[test]
fn each_hit_of_a_kit_plays_at_its_notes_frame() {
    let d = dir("hits");
    make_kit(&d);
    std::fs::write(d.join("kit.toml"), KIT).unwrap();
    std::fs::write(d.join("beat.mid"), beat()).unwrap();
    let out = d.join("out.wav");
    let o = downbeat(&[
        "run",
        d.join("kit.toml").to_str().unwrap(),
        "--device",
        "offline",
        "--midi",
        d.join("beat.mid").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (channels, data) = wav(&out);
    assert_eq!(channels, 2);
    let left: Vec<f32> = data.iter().step_by(2).copied().collect();
    let right: Vec<f32> = data.iter().skip(1).step_by(2).copied().collect();
    assert_eq!(left, right, "a mono kit plays on both channels");
    // Kick at frame 0 and snare at 96 ticks = frame 24 000: the files' own values (velocity
    // 127 is gain 1), bit for bit.
    for (file, at) in [("kick.wav", 0usize), ("snare.wav", 24_000)] {
        let (_, hit) = wav(&d.join(file));
        assert_eq!(hit.len(), 960);
        assert!(
            left[at.saturating_sub(100)..at].iter().all(|&x| x == 0.0),
            "{file}: early"
        );
        assert_eq!(&left[at..at + 960], &hit[..], "{file} at frame {at}");
        assert!(
            left[at + 960..at + 2000].iter().all(|&x| x == 0.0),
            "{file}: too long"
        );
    }
    // The hat, resampled from 44.1 kHz, starts at 144 ticks = frame 36 000 (its square
    // wave starts at full level) and lasts 10 ms.
    let hat = 36_000;
    assert!(left[hat - 1000..hat].iter().all(|&x| x == 0.0), "hat early");
    assert!(left[hat].abs() > 0.3, "hat at its frame: {}", left[hat]);
    assert!(left[hat + 400].abs() > 0.1);
    assert!(
        left[hat + 520..].iter().all(|&x| x.abs() < 1e-3),
        "hat too long"
    );
}

fn project(d: &Path, samples: &str) -> String {
    let text = KIT.replace(
        r#"samples = { 36 = "kick.wav", D2 = "snare.wav", "F#2" = "hat.wav" }"#,
        samples,
    );
    let p = d.join("bad.toml");
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn a_bad_kit_exits_2_naming_the_file_or_the_note() {
    let d = dir("bad");
    make_kit(&d);
    std::fs::write(d.join("corrupt.wav"), b"RIFF\x10\0\0\0WAVEjunkjunkjunk").unwrap();
    let missing = d.join("missing.wav");
    let cases = [
        (
            r#"samples = { 36 = "kick.wav", 38 = "missing.wav" }"#,
            vec![missing.to_str().unwrap().to_string(), "cannot open".into()],
        ),
        (
            r#"samples = { 36 = "kick.wav", C2 = "snare.wav" }"#,
            vec!["`36` and `C2` both name note 36 (C2)".to_string()],
        ),
        (
            r#"samples = { 36 = "corrupt.wav" }"#,
            vec![d.join("corrupt.wav").to_str().unwrap().to_string()],
        ),
        (
            r#"samples = { H2 = "kick.wav" }"#,
            vec!["`H2` is not a note".to_string()],
        ),
        (
            r#"samples = { 36 = 5 }"#,
            vec!["`36` is 5, expected the path of a file".to_string()],
        ),
        (
            r#"sample = "kick.wav"
samples = { 36 = "kick.wav" }"#,
            vec!["either `sample`".to_string()],
        ),
    ];
    for (samples, wanted) in cases {
        let p = project(&d, samples);
        for command in ["check", "run"] {
            let mut args = vec![command, p.as_str()];
            if command == "run" {
                args.extend(["--device", "offline", "--seconds", "0.1"]);
            }
            let o = downbeat(&args);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{command} {samples}: {err}");
            for w in &wanted {
                assert!(
                    err.contains(w.as_str()),
                    "{command} {samples}: wanted {w:?} in {err}"
                );
            }
            assert!(!err.contains("panicked"), "{err}");
        }
    }
}

#[test]
fn check_prints_the_memory_the_samples_take() {
    let d = dir("memory");
    make_kit(&d);
    std::fs::write(d.join("kit.toml"), KIT).unwrap();
    let o = downbeat(&["check", d.join("kit.toml").to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let line = out
        .lines()
        .find(|l| l.contains("node `kit` holds"))
        .unwrap_or_else(|| panic!("no memory line in {out}"));
    let bytes: u64 = line
        .split_whitespace()
        .nth(3)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no byte count in {line}"));
    // 960 + 960 + 480 frames of f32 (the hat resampled to 48 kHz), plus voices and events.
    let samples = (960 + 960 + 480) * 4;
    assert!(bytes >= samples && bytes < samples + 200_000, "{line}");
}
