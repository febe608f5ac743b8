//! Plugins that crash: `downbeat audit` reports the test plugins (CLAP and VST3) that crash
//! in `create`, `activate`, `process` and `deactivate`, and a library that crashes when it is
//! loaded, with the phase
//! and the signal (exit 2), and is not taken down with them; and `downbeat run` with a plugin
//! that crashes mid-run leaves a recording that is a valid WAV of what was played before,
//! all but its last half second at most.

#![cfg(feature = "clap")]

#[path = "../../plugin/tests/clap_support/mod.rs"]
mod clap_support;
mod support;
#[path = "../../plugin/tests/vst3_support/mod.rs"]
mod vst3_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use clap_support::test_plugins;
use support::read_wav;

const CRASH_CREATE: &str = "org.downbeat.test.crash.create";
const CRASH_ACTIVATE: &str = "org.downbeat.test.crash.activate";
const CRASH_PROCESS: &str = "org.downbeat.test.crash.process";
const CRASH_DEACTIVATE: &str = "org.downbeat.test.crash.deactivate";

fn downbeat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .args(args)
        .output()
        .expect("downbeat runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A folder of this test binary's own.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("downbeat-crashes-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn each_crash_is_reported_with_its_phase_and_signal() {
    for (id, phase) in [
        (CRASH_CREATE, "create"),
        (CRASH_ACTIVATE, "activate"),
        (CRASH_PROCESS, "process"),
        (CRASH_DEACTIVATE, "deactivate"),
    ] {
        let spec = format!("{}#{id}", test_plugins().display());
        let out = downbeat(&["audit", &spec, "--blocks", "20"]);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(2), "{id}: {stdout}{stderr}");
        assert_eq!(
            stderr,
            format!("error: {spec}: the plugin crashed in {phase} with SIGSEGV (signal 11)\n"),
            "{id}"
        );
        // A plugin that dies in its teardown was audited before: its report is out.
        if phase == "deactivate" {
            assert!(stdout.ends_with("result: clean\n"), "{stdout}");
        } else {
            assert!(stdout.is_empty(), "{id}: {stdout}");
        }
    }
}

/// The same for the VST3 test plugins, through `downbeat audit BUNDLE#CLASS`.
#[cfg(feature = "vst3")]
#[test]
fn each_vst3_crash_is_reported_with_its_phase_and_signal() {
    use vst3_support::{
        test_bundle, CRASH_ACTIVATE, CRASH_CREATE, CRASH_DEACTIVATE, CRASH_PROCESS,
    };
    for (class, phase) in [
        (CRASH_CREATE, "create"),
        (CRASH_ACTIVATE, "activate"),
        (CRASH_PROCESS, "process"),
        (CRASH_DEACTIVATE, "deactivate"),
    ] {
        let spec = format!("{}#{class}", test_bundle().display());
        let out = downbeat(&["audit", &spec, "--blocks", "20"]);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(2), "{class}: {stdout}{stderr}");
        assert_eq!(
            stderr,
            format!("error: {spec}: the plugin crashed in {phase} with SIGSEGV (signal 11)\n"),
            "{class}"
        );
    }
}

/// A shared library named like a CLAP plugin that kills its process with `SIGSEGV` when it
/// is loaded, built with the C compiler (which `cargo` needs as its linker anyway).
fn crashing_library(dir: &Path) -> PathBuf {
    let source = dir.join("crash.c");
    std::fs::write(
        &source,
        "#include <signal.h>\n\
         __attribute__((constructor)) static void crash(void) {\n\
         \x20   signal(SIGSEGV, SIG_DFL);\n\
         \x20   raise(SIGSEGV);\n\
         }\n",
    )
    .unwrap();
    let library = dir.join("crash-on-load.clap");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&source)
        .status()
        .expect("`cc` runs (Debian: gcc)");
    assert!(status.success(), "cc failed to build {}", library.display());
    std::fs::remove_file(&source).unwrap();
    library
}

#[test]
fn a_library_that_crashes_when_loaded_is_a_crash_in_load() {
    let dir = scratch("load");
    let library = crashing_library(&dir);
    let lib = library.to_str().unwrap();
    let out = downbeat(&["audit", lib]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!("error: {lib}: the plugin crashed in load with SIGSEGV (signal 11)\n")
    );
    // In a folder, next to plugins that work: its row says where, the others are audited.
    std::fs::copy(test_plugins(), dir.join("test.clap")).unwrap();
    let out = downbeat(&["audit", dir.to_str().unwrap(), "--blocks", "10", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    let rows = v.as_array().unwrap();
    assert_eq!(rows[0]["path"], lib);
    assert!(rows[0]["id"].is_null(), "{v:#}");
    assert_eq!(rows[0]["result"], "crashed");
    assert_eq!(rows[0]["phase"], "load");
    assert_eq!(rows[0]["signal"], 11);
    assert!(
        rows.iter().any(|r| r["result"] == "clean"),
        "the other plugins were audited: {v:#}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A project playing a sine through the plugin that crashes in `process` after `after`
/// blocks of 256 frames.
fn crashing_project(dir: &Path, after: u32) -> PathBuf {
    let project = dir.join(format!("crash-after-{after}.toml"));
    std::fs::write(
        &project,
        format!(
            r#"sample_rate = 48000
block_size = 256
edges = ["osc -> fx -> out"]

[nodes.osc]
type = "sine"
freq = 440.0
amp = 0.5

[nodes.fx]
type = "clap"
path = "{}"
id = "{CRASH_PROCESS}"
after = {after}

[nodes.out]
type = "output"
"#,
            test_plugins().display()
        ),
    )
    .unwrap();
    project
}

/// The frames of a WAV file as `sox` counts them (and so, a file `sox` can read).
fn sox_frames(path: &Path) -> u64 {
    let out = Command::new("sox")
        .arg("--i")
        .arg("-s")
        .arg(path)
        .output()
        .expect("sox runs (Debian: sox)");
    assert!(
        out.status.success(),
        "sox cannot read {}: {}",
        path.display(),
        text(&out.stderr)
    );
    text(&out.stdout).trim().parse().unwrap()
}

#[test]
fn a_plugin_crashing_mid_run_leaves_a_valid_recording_of_the_frames_before() {
    use std::os::unix::process::ExitStatusExt;
    let dir = scratch("run");
    // 375 blocks: the crash comes at 2.0 s, on the virtual device's real-time pacing, so
    // the recording's writer has synced its header several times (every 0.5 s).
    let crash_frame = 375 * 256;
    let project = crashing_project(&dir, 375);
    let wav = dir.join("crashed.wav");
    let out = downbeat(&[
        "run",
        project.to_str().unwrap(),
        "--seconds",
        "10",
        "--out",
        wav.to_str().unwrap(),
    ]);
    // The plugin takes the run down with it: no summary, killed by the signal.
    assert_eq!(out.status.signal(), Some(11), "{}", text(&out.stderr));
    let frames = sox_frames(&wav);
    let (samples, channels) = read_wav(&wav);
    assert_eq!(channels, 2);
    assert_eq!(samples.len() as u64, frames * 2, "hound and sox disagree");
    eprintln!("{frames} frames recorded, the crash at frame {crash_frame}");
    // All the frames before the crash, but those after the header's last update: at most
    // the sync interval (0.5 s), and 0.5 s more for a writer late on a busy machine.
    assert!(
        frames <= crash_frame && frames + 48_000 >= crash_frame,
        "the file holds {frames} frames; the crash came at frame {crash_frame}"
    );
    // And they are what was played: the same project rendered offline, crashing later.
    let reference = dir.join("reference.wav");
    let project = crashing_project(&dir, 1_000_000);
    let out = downbeat(&[
        "run",
        project.to_str().unwrap(),
        "--device",
        "offline",
        "--seconds",
        "2",
        "--out",
        reference.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (want, _) = read_wav(&reference);
    assert!(
        want.iter().any(|s| s.abs() > 0.1),
        "the reference is silent"
    );
    assert_eq!(samples[..], want[..samples.len()]);
    std::fs::remove_dir_all(&dir).unwrap();
}
