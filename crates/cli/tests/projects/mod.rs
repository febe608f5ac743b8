//! The example projects, for the tests that run every one of them: the list, the node types
//! they need registered, and which of them this build cannot run and why.
// Each test binary includes this module and uses a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Every `examples/projects/*.toml`, sorted; fails when there is none (a moved directory
/// must not leave the tests that iterate over it passing on nothing).
pub fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/projects");
    let mut projects: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    projects.sort();
    assert!(!projects.is_empty(), "no project in {}", dir.display());
    projects
}

/// Registers the node types the `downbeat` binary registers (`echoes`, and the plugin
/// hosts this build has) and returns the plugin node types this build lacks.
pub fn register_node_types() -> Vec<&'static str> {
    downbeat_cli::register_node_types().unwrap();
    // Once per test binary: tests running side by side must not rewrite a file another reads.
    static MADE: std::sync::Once = std::sync::Once::new();
    MADE.call_once(|| {
        make_player_file();
        make_drum_kit();
    });
    [
        ("clap", cfg!(feature = "clap")),
        ("lv2", cfg!(feature = "lv2")),
    ]
    .into_iter()
    .filter(|(_, built)| !built)
    .map(|(t, _)| t)
    .collect()
}

/// Makes the samples `examples/projects/drums.toml` plays (with python3, as the guide does).
pub fn make_drum_kit() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/samples");
    if !dir.join("open-hat.wav").exists() {
        let status = std::process::Command::new("python3")
            .arg(dir.join("make.py"))
            .status()
            .expect("python3");
        assert!(status.success(), "examples/samples/make.py failed");
    }
}

/// Makes the file `examples/projects/player.toml` plays (with sox, which the test then
/// needs: without it the player example fails to load, naming the file).
pub fn make_player_file() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/projects");
    if !dir.join("player.wav").exists() {
        let status = std::process::Command::new("sh")
            .arg(dir.join("make-player-file.sh"))
            .status()
            .expect("sh");
        assert!(
            status.success(),
            "make-player-file.sh failed (is sox installed?)"
        );
    }
}

/// Why this build cannot run `path`: the node type it uses whose feature is not built
/// (`type = "lv2"` without `--features lv2`); `None` when it can run it.
pub fn unbuilt_feature(path: &Path, missing: &[&str]) -> Option<String> {
    let text = std::fs::read_to_string(path).unwrap();
    missing
        .iter()
        .find(|t| text.contains(&format!("type = \"{t}\"")))
        .map(|t| format!("this build has no `{t}` nodes (build with --features {t})"))
}

/// Whether `path` reads the device's input (an `input` node).
pub fn reads_input(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .unwrap()
        .contains("type = \"input\"")
}

/// Channels of the capture the tests hand to projects that read input: as many as the
/// examples' `input` nodes ask for (a project asking for more fails to build, saying so).
pub const CAPTURE_CHANNELS: usize = 2;

/// Frame `frame` of a test input, channel `c`: two detuned sines loud enough to drive an
/// overdrive, the same on every run.
pub fn input_sample(frame: usize, c: usize) -> f32 {
    let t = frame as f32 / 48_000.0;
    let f = [220.0, 331.0][c % 2];
    0.8 * (std::f32::consts::TAU * f * t).sin()
}
