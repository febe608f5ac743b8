//! CLAP state through the `downbeat` executable: a run whose parameter changes are replayed
//! (`--replay`, a step at frame 0) saves the plugin's state (`--save-state DIR`); a run of a
//! project whose node says `state = "FILE"` (relative to the project) renders bit for bit
//! what the first run rendered; a parameter given in the project wins over the state's. And
//! the host-probe plugin, through the executable, logs from its audio thread to stderr and
//! is torn down with exit 0.
//!
//! The executable is `DOWNBEAT_BIN` when set (crates/plugin/ci.sh), else the `downbeat` next
//! to this test's own build (`cargo test --workspace` builds it); missing, the test fails.

mod clap_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use clap_support::{test_plugins, HOST_PROBE_ID, PROBE_NAME};

fn downbeat() -> PathBuf {
    let bin = match std::env::var_os("DOWNBEAT_BIN") {
        Some(b) => PathBuf::from(b),
        None => std::env::current_exe()
            .unwrap()
            .ancestors()
            .nth(2)
            .expect("the test runs from <target>/<profile>/deps")
            .join("downbeat"),
    };
    assert!(
        bin.is_file(),
        "no downbeat executable at {} (build it: cargo build -p downbeat-cli, or set DOWNBEAT_BIN)",
        bin.display()
    );
    bin
}

fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Noise through the probe; `extra` goes into the probe's table.
fn project(extra: &str) -> String {
    format!(
        "sample_rate = 48000\nblock_size = 256\nedges = [\"n -> p -> out\"]\n\
         [nodes.n]\ntype = \"noise\"\nseed = 7\n\
         [nodes.p]\ntype = \"clap\"\npath = \"{}\"\nid = \"{HOST_PROBE_ID}\"\n{extra}\n\
         [nodes.out]\ntype = \"output\"\n",
        test_plugins().display()
    )
}

fn run(project: &Path, extra: &[&str]) -> Output {
    let out = Command::new(downbeat())
        .arg("run")
        .arg(project)
        .args(["--device", "offline", "--seconds", "0.5"])
        .args(extra)
        .output()
        .expect("downbeat runs");
    assert!(
        out.status.success(),
        "{}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The samples of a float WAV file that `downbeat run --out` wrote.
fn samples(path: &Path) -> Vec<f32> {
    let b = std::fs::read(path).unwrap();
    let at = b
        .windows(4)
        .position(|w| w == b"data")
        .expect("a data chunk");
    b[at + 8..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn a_saved_state_reloads_into_the_same_render_and_project_parameters_win() {
    let d = dir("clap-state-cli");
    std::fs::write(d.join("first.toml"), project("")).unwrap();
    std::fs::write(
        d.join("changes.jsonl"),
        "{\"frame\":0,\"node\":\"p\",\"param\":\"gain\",\"change\":\"step\",\"value\":0.5}\n",
    )
    .unwrap();
    let first = d.join("first.wav");
    let out = run(
        &d.join("first.toml"),
        &[
            "--replay",
            d.join("changes.jsonl").to_str().unwrap(),
            "--save-state",
            d.join("states").to_str().unwrap(),
            "--out",
            first.to_str().unwrap(),
        ],
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("saved the state of 1 node(s)"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(d.join("states/p.clapstate").is_file());

    // Relative to the project's folder, not the working directory.
    std::fs::write(
        d.join("again.toml"),
        project("state = \"states/p.clapstate\""),
    )
    .unwrap();
    let again = d.join("again.wav");
    run(&d.join("again.toml"), &["--out", again.to_str().unwrap()]);
    let (a, b) = (samples(&first), samples(&again));
    assert_eq!(a.len(), 2 * 24000);
    assert!(a.iter().any(|&s| s != 0.0));
    assert!(
        a == b,
        "the reloaded state renders what the saved run rendered"
    );

    // Without the state the render differs (gain 1): the state is what made them equal.
    let plain = d.join("plain.wav");
    run(&d.join("first.toml"), &["--out", plain.to_str().unwrap()]);
    assert!(samples(&plain) != a);

    // A parameter given in the project wins over the state's value.
    std::fs::write(
        d.join("override.toml"),
        project("state = \"states/p.clapstate\"\ngain = 0.125"),
    )
    .unwrap();
    let over = d.join("over.wav");
    run(&d.join("override.toml"), &["--out", over.to_str().unwrap()]);
    let quarter: Vec<f32> = a.iter().map(|s| s * 0.25).collect();
    assert!(
        samples(&over) == quarter,
        "gain 0.125 from the project, not 0.5"
    );
}

#[test]
fn a_missing_state_file_is_refused_with_exit_2_naming_the_key_and_the_file() {
    let d = dir("clap-state-missing");
    std::fs::write(d.join("p.toml"), project("state = \"nope.clapstate\"")).unwrap();
    let out = Command::new(downbeat())
        .arg("run")
        .arg(d.join("p.toml"))
        .args(["--device", "offline", "--seconds", "0.1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("nope.clapstate") && err.contains("state"),
        "{err}"
    );
}

#[test]
fn a_preset_is_refused_for_clap_with_exit_2_and_what_to_do_instead() {
    let d = dir("clap-preset");
    std::fs::write(d.join("q.toml"), project("preset = \"Warm\"")).unwrap();
    let out = Command::new(downbeat())
        .arg("run")
        .arg(d.join("q.toml"))
        .args(["--device", "offline", "--seconds", "0.1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("preset") && err.contains("--save-state"),
        "{err}"
    );
}

#[test]
fn the_probe_logs_from_its_audio_thread_to_stderr_and_exits_0() {
    let d = dir("clap-probe-cli");
    std::fs::write(d.join("p.toml"), project("")).unwrap();
    let out = run(
        &d.join("p.toml"),
        &["--out", d.join("x.wav").to_str().unwrap()],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    for n in 1..=3 {
        let line = format!("[downbeat] clap {PROBE_NAME}: INFO: process call {n}");
        assert!(err.contains(&line), "no `{line}` in:\n{err}");
    }
}
