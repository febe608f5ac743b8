//! The guide's first MIDI command (docs/guide/src/start/cli.md) renders the example project with its MIDI file: the WAV
//! is not silent and lasts to the file's last event plus the longest release (the pluck's
//! 0.6 s `length`).

use std::path::Path;
use std::process::Command;

use downbeat::midi::MidiFile;

#[test]
fn the_guide_command_renders_the_example_tune() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::env::temp_dir().join(format!("downbeat-tune-{}.wav", std::process::id()));
    // The guide's command, `cargo run --release -- ` being this test's own build.
    let o = Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .current_dir(&root)
        .args([
            "run",
            "examples/projects/synth.toml",
            "--device",
            "offline",
            "--midi",
            "examples/projects/tune.mid",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let guide = std::fs::read_to_string(root.join("docs/guide/src/start/cli.md")).unwrap();
    assert!(
        guide.contains(
            "cargo run --release -- run examples/projects/synth.toml --device offline \
             --midi examples/projects/tune.mid --out tune.wav"
        ),
        "the guide shows this command"
    );
    let mut r = hound::WavReader::open(&out).unwrap();
    let spec = r.spec();
    let samples: Vec<f32> = r.samples::<f32>().map(Result::unwrap).collect();
    std::fs::remove_file(&out).unwrap();
    let frames = samples.len() / usize::from(spec.channels);
    let file = MidiFile::read(&root.join("examples/projects/tune.mid")).unwrap();
    let want = file.end_frame(48000) + (0.6f64 * 48000.0).ceil() as u64;
    assert_eq!(frames as u64, want);
    let peak = samples.iter().fold(0.0f32, |m, s| m.max(s.abs()));
    let rms = (samples.iter().map(|s| s * s).sum::<f32>() / samples.len() as f32).sqrt();
    assert!(peak > 0.05 && peak <= 1.0, "peak {peak}");
    assert!(rms > 0.01, "rms {rms}");
}
