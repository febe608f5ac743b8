//! The differential test through the command line: `downbeat run` of a project with an LV2
//! node (`examples/projects/overdrive-lv2.toml`), offline with a WAV input, writes what
//! `lv2apply` writes for the same plugin and control values, within 1e-5.
//!
//! The `downbeat` executable belongs to another package, so the test is given its path in
//! `DOWNBEAT_BIN` (crates/plugin/ci.sh builds it with `--features lv2` and sets it); without
//! it the test fails.

// Built with the `lv2` feature only (crates/plugin/ci.sh turns it on).
#![cfg(feature = "lv2")]

mod lv2_support;

use std::path::Path;
use std::process::Command;

use lv2_support::{read_wav, require_plugin, require_tool, signal, tmp, write_wav};

const OVERDRIVE: &str = "http://drobilla.net/plugins/mda/Overdrive";

#[test]
fn downbeat_run_with_an_lv2_node_matches_lv2apply() {
    let downbeat = std::env::var_os("DOWNBEAT_BIN").expect(
        "DOWNBEAT_BIN must name the downbeat executable built with `cargo build -p \
         downbeat-cli --features lv2` (crates/plugin/ci.sh builds it and sets it)",
    );
    require_tool("lv2apply", "lilv-utils");
    require_plugin(OVERDRIVE);
    let dir = tmp("lv2-cli");
    let (input, ours, theirs) = (
        dir.join("in.wav"),
        dir.join("ours.wav"),
        dir.join("theirs.wav"),
    );
    write_wav(&input, 2, 48000, &signal(2, 48000, 48000));
    let project =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/projects/overdrive-lv2.toml");
    let run = Command::new(&downbeat)
        .arg("run")
        .arg(&project)
        .args(["--device", "offline", "--seconds", "1", "--input"])
        .arg(&input)
        .arg("--out")
        .arg(&ours)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "downbeat run failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    // The project's settings: drive 0.7, muffle 0.3, output 0.6.
    let status = Command::new("lv2apply")
        .arg("-i")
        .arg(&input)
        .arg("-o")
        .arg(&theirs)
        .args([
            "-c", "drive", "0.7", "-c", "muffle", "0.3", "-c", "output", "0.6",
        ])
        .arg(OVERDRIVE)
        .status()
        .unwrap();
    assert!(status.success());
    let (ch_a, a) = read_wav(&ours);
    let (ch_b, b) = read_wav(&theirs);
    assert_eq!((ch_a, a.len()), (ch_b, b.len()), "channels and samples");
    let worst = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max);
    assert!(
        worst <= 1e-5,
        "downbeat run differs from lv2apply by {worst}"
    );
    assert!(a.iter().map(|s| s * s).sum::<f32>() > 1.0, "silent output");
}
