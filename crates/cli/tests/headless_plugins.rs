//! A plugin that starts Qt (synthv1) on a machine with no display: `downbeat run` picks Qt's
//! offscreen platform by itself and says so, where it used to die of Qt's abort (exit 134);
//! and when Qt is made to abort anyway (the user chose the `xcb` platform with no X server),
//! the run names the plugin and the phase it died in before dying of the signal. A missing
//! plugin fails the test (`scripts/deps.sh` installs `synthv1-lv2` and `lilv-utils`).

// Built with the `lv2` feature only (crates/plugin/ci.sh turns it on).
#![cfg(feature = "lv2")]

mod support;

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output};

const SYNTH: &str = "http://synthv1.sourceforge.net/lv2";
/// `SIGABRT` on Linux.
const SIGABRT: i32 = 6;

fn require_synthv1() {
    let lv2info = Command::new("lv2info").arg(SYNTH).output();
    assert!(
        lv2info.is_ok_and(|o| o.status.success() && !o.stdout.is_empty()),
        "LV2 plugin <{SYNTH}> (Debian package synthv1-lv2) or lv2info (lilv-utils) is not \
         installed; `bash scripts/deps.sh` installs them"
    );
}

/// `downbeat run` of a project hosting synthv1, offline for a second, with no display in
/// its environment and `QT_QPA_PLATFORM` set to `qt` (or unset).
fn run_synthv1(name: &str, qt: Option<&str>) -> Output {
    let project = support::tmp("headless", &format!("{name}.toml"));
    std::fs::write(
        &project,
        format!(
            "sample_rate = 48000\nblock_size = 256\nedges = [\"synth -> out\"]\n\
             [nodes.synth]\ntype = \"lv2\"\nuri = \"{SYNTH}\"\n\
             [nodes.out]\ntype = \"output\"\n"
        ),
    )
    .unwrap();
    let mut run = Command::new(env!("CARGO_BIN_EXE_downbeat"));
    run.arg("run")
        .arg(&project)
        .args(["--device", "offline", "--seconds", "1"])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("QT_QPA_PLATFORM");
    if let Some(platform) = qt {
        run.env("QT_QPA_PLATFORM", platform);
    }
    run.output().expect("the downbeat binary runs")
}

#[test]
fn with_no_display_a_qt_plugin_runs_on_the_offscreen_platform() {
    require_synthv1();
    let out = run_synthv1("offscreen", None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(
        stderr.contains(
            "note: no display (DISPLAY and WAYLAND_DISPLAY are unset): plugins that start Qt \
             ran on its offscreen platform (QT_QPA_PLATFORM=offscreen)\n"
        ),
        "{stderr}"
    );
}

#[test]
fn a_plugin_that_aborts_when_created_is_named_with_its_phase() {
    require_synthv1();
    // The user's own choice wins, even a platform that cannot start here: Qt aborts in
    // synthv1's `instantiate`, which the run names before it dies of SIGABRT.
    let out = run_synthv1("xcb", Some("xcb"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.signal(),
        Some(SIGABRT),
        "{:?}: {stderr}",
        out.status
    );
    assert!(
        stderr.contains(&format!(
            "error: the plugin `synthv1` ({SYNTH}) crashed in create with SIGABRT (signal 6)\n"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("note: no display"), "{stderr}");
}
