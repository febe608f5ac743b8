//! `downbeat run --replay FILE` applies recorded events at their frames, and
//! `--record-events` writes what a run applied, so a replay of a replay records the same.

use std::path::Path;
use std::process::Command;

mod support;

fn run(dir: &Path, extra: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .args([
            "run",
            dir.join("p.toml").to_str().unwrap(),
            "--device",
            "offline",
        ])
        .args(["--seconds", "0.01", "--threads", "1"])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn replay_applies_recorded_events_at_their_frames_and_records_them_again() {
    let dir = std::env::temp_dir().join(format!("downbeat-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("p.toml"), support::constant_through_gain(64)).unwrap();
    let events = "{\"frame\":100,\"node\":\"g\",\"param\":\"gain\",\"change\":\"step\",\"value\":0.25}\n\
                  {\"frame\":300,\"node\":\"g\",\"param\":\"gain\",\"change\":\"linear\",\"to\":0.0,\"frames\":40}\n";
    std::fs::write(dir.join("in.jsonl"), events).unwrap();
    let wav = dir.join("x.wav");
    let again = dir.join("again.jsonl");
    run(
        &dir,
        &[
            "--replay",
            dir.join("in.jsonl").to_str().unwrap(),
            "--record-events",
            again.to_str().unwrap(),
            "--out",
            wav.to_str().unwrap(),
        ],
    );
    let samples: Vec<f32> = hound::WavReader::open(&wav)
        .unwrap()
        .samples::<f32>()
        .map(Result::unwrap)
        .collect();
    assert!(samples[..100].iter().all(|&x| x == 1.0));
    assert!(samples[100..300].iter().all(|&x| x == 0.25));
    assert!((samples[320] - 0.125).abs() < 1e-6);
    assert!(samples[340..].iter().all(|&x| x == 0.0));
    assert_eq!(
        std::fs::read_to_string(&again).unwrap(),
        events.replace("                  ", "")
    );
    // A bad line is refused with its number.
    let bad = dir.join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"frame\":1,\"node\":\"g\",\"param\":\"gain\",\"change\":\"set\",\"value\":99}\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .args([
            "run",
            dir.join("p.toml").to_str().unwrap(),
            "--device",
            "offline",
        ])
        .args(["--replay", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 1: bad value for `gain` of node `g`"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
