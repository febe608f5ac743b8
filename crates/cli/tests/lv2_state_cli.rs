//! LV2 state through the `downbeat` binary: a run whose parameters are changed by replayed
//! events (`--replay`) saves its plugin's state (`--save-state DIR` writes `DIR/drive.ttl`),
//! and a run of a project that loads it (`state = "…"`, relative to the project) renders
//! bit for bit what the first run rendered after its changes; a bad state file is bad input
//! (exit 2) naming the file.

// Built with the `lv2` feature only (crates/plugin/ci.sh turns it on).
#![cfg(feature = "lv2")]

mod support;

use std::path::Path;
use std::process::{Command, Output};

const OVERDRIVE: &str = "http://drobilla.net/plugins/mda/Overdrive";

fn project(dir: &Path, name: &str, extra: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "sample_rate = 48000\nblock_size = 256\nedges = [\"in -> drive -> out\"]\n\
             [nodes.in]\ntype = \"input\"\nchannels = 2\n\
             [nodes.drive]\ntype = \"lv2\"\nuri = \"{OVERDRIVE}\"\n{extra}\n\
             [nodes.out]\ntype = \"output\"\n"
        ),
    )
    .unwrap();
    path
}

fn run(project: &Path, input: &Path, out: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .arg("run")
        .arg(project)
        .args(["--device", "offline", "--seconds", "1", "--input"])
        .arg(input)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

/// A quarter second of silence (the replayed changes' smoothing ends in it, while the
/// plugin's filters hold zero), then three quarters of a stereo test tone.
fn write_input(path: &Path) {
    let spec = hound::WavSpec {
        channels: 2,
        sample_rate: 48000,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    for i in 0..48000 {
        let t = i as f32 / 48000.0;
        let s = if i < 12000 {
            0.0
        } else {
            0.5 * (std::f32::consts::TAU * 220.0 * t).sin()
        };
        w.write_sample(s).unwrap();
        w.write_sample(0.7 * s).unwrap();
    }
    w.finalize().unwrap();
}

/// Panics, failing the test, unless mda Overdrive is installed (`lv2info` knows it).
fn require_overdrive() {
    let lv2info = Command::new("lv2info").arg(OVERDRIVE).output();
    assert!(
        lv2info.is_ok_and(|o| o.status.success() && !o.stdout.is_empty()),
        "mda Overdrive (Debian package mda-lv2) or lv2info (lilv-utils) is not installed; \
         `bash scripts/deps.sh` installs them"
    );
}

#[test]
fn a_saved_state_renders_what_the_run_rendered_after_its_changes() {
    require_overdrive();
    let dir = support::tmp("lv2-state-cli", "run");
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("in.wav");
    write_input(&input);
    let events = dir.join("changes.jsonl");
    std::fs::write(
        &events,
        "{\"frame\":0,\"node\":\"drive\",\"param\":\"drive\",\"change\":\"step\",\"value\":0.95}\n\
         {\"frame\":0,\"node\":\"drive\",\"param\":\"muffle\",\"change\":\"step\",\"value\":0.6}\n\
         {\"frame\":0,\"node\":\"drive\",\"param\":\"output\",\"change\":\"step\",\"value\":0.3}\n",
    )
    .unwrap();
    let states = dir.join("states");
    let _ = std::fs::remove_dir_all(&states);
    let plain = project(&dir, "plain.toml", "");
    let changed = dir.join("changed.wav");
    let first = run(
        &plain,
        &input,
        &changed,
        &[
            "--replay",
            events.to_str().unwrap(),
            "--save-state",
            states.to_str().unwrap(),
        ],
    );
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let saved = std::fs::read_to_string(states.join("drive.ttl")).unwrap();
    assert!(
        saved.contains("\"muffle\"") && saved.contains("0.6"),
        "{saved}"
    );

    // Relative to the project's folder.
    let loaded = project(&dir, "loaded.toml", "state = \"states/drive.ttl\"");
    let restored = dir.join("restored.wav");
    let second = run(&loaded, &input, &restored, &[]);
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let defaults = dir.join("defaults.wav");
    assert!(run(&plain, &input, &defaults, &[]).status.success());

    let (a, _) = support::read_wav(&changed);
    let (b, _) = support::read_wav(&restored);
    let (c, _) = support::read_wav(&defaults);
    assert_eq!(a.len(), 96000);
    assert!(a.iter().any(|&s| s != 0.0), "the run made sound");
    assert!(
        a == b,
        "the restored run renders what the changed run did, bit for bit"
    );
    assert!(a != c, "and not what the plugin's defaults render");
}

#[test]
fn a_bad_state_file_is_bad_input_naming_it() {
    require_overdrive();
    let dir = support::tmp("lv2-state-cli", "bad");
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("in.wav");
    write_input(&input);
    std::fs::write(dir.join("junk.ttl"), "not turtle at all {").unwrap();
    let p = project(&dir, "junk.toml", "state = \"junk.ttl\"");
    let out = run(&p, &input, &dir.join("x.wav"), &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("junk.ttl") && err.contains("not an LV2 state"),
        "{err}"
    );
    let p = project(&dir, "preset.toml", "preset = \"Nope\"");
    let out = run(&p, &input, &dir.join("x.wav"), &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown preset `Nope`") && err.contains("has no presets"),
        "{err}"
    );
}
