//! `downbeat audit` runs the audit in a child, `downbeat-audit-probe`: only the probe defines
//! `malloc` (the interposer is not under `downbeat run`), and `downbeat` relays what the
//! child says and its exit code, and survives it dying by a signal.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;

/// Held while a test writes an executable and while one starts a process: a child forked
/// while another test's file is open for writing would hold it open, and executing that file
/// would fail with "text file busy".
static FILES: Mutex<()> = Mutex::new(());

/// Runs `command` to its end, started under [`FILES`].
fn output(command: &mut Command) -> Output {
    let child = {
        let _files = FILES.lock().unwrap_or_else(|e| e.into_inner());
        command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{command:?}: {e}"))
    };
    child.wait_with_output().unwrap()
}

/// The dynamic symbols `binary` defines, as `nm -D --defined-only` lists them.
fn exported(binary: &str) -> Vec<String> {
    // A missing `nm` (binutils) fails here: the test needs it to read the dynamic symbols.
    let out = output(
        Command::new("nm")
            .args(["-D", "--defined-only"])
            .arg(binary),
    );
    assert!(out.status.success(), "nm {binary}: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last().map(str::to_owned))
        .collect()
}

#[test]
fn only_the_probe_exports_malloc() {
    let probe = exported(env!("CARGO_BIN_EXE_downbeat-audit-probe"));
    for f in ["malloc", "free", "calloc", "realloc", "posix_memalign"] {
        assert!(
            probe.iter().any(|s| s == f),
            "the probe must define {f} to count a plugin's allocations"
        );
    }
    let downbeat = exported(env!("CARGO_BIN_EXE_downbeat"));
    let interposed: Vec<_> = downbeat
        .iter()
        .filter(|s| ["malloc", "free", "calloc", "realloc"].contains(&s.as_str()))
        .collect();
    assert!(
        interposed.is_empty(),
        "`downbeat` defines {interposed:?}: the audit's interposer would sit under every command"
    );
}

/// A copy of `downbeat` in a folder of its own, next to a stand-in probe running `script`.
fn with_probe(name: &str, script: Option<&str>) -> PathBuf {
    let _files = FILES.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("downbeat-probe-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let downbeat = dir.join("downbeat");
    std::fs::copy(env!("CARGO_BIN_EXE_downbeat"), &downbeat).unwrap();
    if let Some(script) = script {
        let probe = dir.join("downbeat-audit-probe");
        std::fs::write(&probe, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    downbeat
}

fn audit(downbeat: &Path, args: &[&str]) -> Output {
    output(Command::new(downbeat).arg("audit").args(args))
}

#[test]
fn a_probe_killed_by_a_signal_is_reported_as_a_crash_with_exit_2() {
    let downbeat = with_probe("crash", Some("kill -SEGV $$"));
    let out = audit(&downbeat, &["some.clap"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("some.clap: the plugin crashed (signal 11)"),
        "{err}"
    );
}

#[test]
fn the_probes_output_arguments_and_exit_code_are_relayed() {
    // The stand-in prints its arguments on stdout and a line on stderr, and exits 3.
    let downbeat = with_probe(
        "relay",
        Some("echo \"args: $*\"; echo 'on stderr' >&2; exit 3"),
    );
    let out = audit(&downbeat, &["gain.clap", "--blocks", "7", "--json"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_eq!(
        stdout,
        "args: --blocks 7 --block 256 --sample-rate 48000 --json -- gain.clap\n"
    );
    // Only the probe speaks: `downbeat` adds no line of its own.
    assert_eq!(stderr, "on stderr\n");
}

#[test]
fn a_missing_probe_is_named() {
    let downbeat = with_probe("missing", None);
    let out = audit(&downbeat, &["gain.clap"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("downbeat-audit-probe") && err.contains("is missing"),
        "{err}"
    );
}
