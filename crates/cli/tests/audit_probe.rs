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

/// Removes the folder [`with_probe`] made (a 40 MB copy of `downbeat`, in a debug build).
fn remove(downbeat: &Path) {
    let _files = FILES.lock().unwrap_or_else(|e| e.into_inner());
    let _ = std::fs::remove_dir_all(downbeat.parent().expect("a folder of its own"));
}

fn audit(downbeat: &Path, args: &[&str]) -> Output {
    output(Command::new(downbeat).arg("audit").args(args))
}

#[test]
fn a_probe_killed_by_a_signal_is_reported_as_a_crash_with_exit_2() {
    let downbeat = with_probe("crash", Some("kill -SEGV $$"));
    let out = audit(&downbeat, &["some.clap"]);
    remove(&downbeat);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "some.clap: the plugin crashed before loading it began with SIGSEGV (signal 11)"
        ),
        "{err}"
    );
}

#[test]
fn a_crash_names_the_last_phase_the_probe_announced_and_the_announcements_are_not_relayed() {
    let downbeat = with_probe(
        "phases",
        Some(
            "echo 'downbeat-audit-phase: load' >&2; echo 'loading' >&2; \
             echo 'downbeat-audit-phase: activate' >&2; echo 'downbeat-audit-phase: process' >&2; \
             kill -ABRT $$",
        ),
    );
    let out = audit(&downbeat, &["some.clap"]);
    remove(&downbeat);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err,
        "loading\nerror: some.clap: the plugin crashed in process with SIGABRT (signal 6)\n"
    );
}

/// A stand-in probe for `downbeat audit DIR`: `--list` names two plugins, `one` and `two`;
/// auditing `FILE#one` prints a JSON report of `$1` violations and exits `$2`, `FILE#two`
/// of `$3` violations, exiting `$4`.
fn dir_probe(name: &str, one: (u32, u32), two: (u32, u32)) -> PathBuf {
    with_probe(
        name,
        Some(&format!(
            "if [ \"$1\" = --list ]; then echo one; echo two; exit 0; fi
for last; do :; done
case \"$last\" in
  *#one) echo '{{\"violations\": {}}}'; exit {};;
  *#two) echo '{{\"violations\": {}}}'; exit {};;
esac
exit 1",
            one.0, one.1, two.0, two.1
        )),
    )
}

/// A folder with one file named like a CLAP plugin.
fn plugin_folder(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("downbeat-probe-dir-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("x.clap"), "").unwrap();
    dir
}

#[test]
fn a_folder_exits_0_when_every_plugin_is_clean_and_3_with_violations_alone() {
    let dir = plugin_folder("codes");
    let d = dir.to_str().unwrap();
    let clean = dir_probe("all-clean", (0, 0), (0, 0));
    let out = audit(&clean, &[d, "--json"]);
    remove(&clean);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["id"], "one");
    assert_eq!(v[1]["result"], "clean");

    let some = dir_probe("some-violations", (0, 0), (7, 3));
    let out = audit(&some, &[d, "--json"]);
    remove(&some);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[1]["result"], "violations");
    assert_eq!(v[1]["violations"], 7);

    // One refused (exit 2 from its probe) among violations: exit 2.
    let refused = dir_probe("one-refused", (0, 2), (7, 3));
    let out = audit(&refused, &[d]);
    remove(&refused);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_probes_output_arguments_and_exit_code_are_relayed() {
    // The stand-in prints its arguments on stdout and a line on stderr, and exits 3.
    let downbeat = with_probe(
        "relay",
        Some("echo \"args: $*\"; echo 'on stderr' >&2; exit 3"),
    );
    let out = audit(&downbeat, &["gain.clap", "--blocks", "7", "--json"]);
    remove(&downbeat);
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
    remove(&downbeat);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("downbeat-audit-probe") && err.contains("is missing"),
        "{err}"
    );
}

#[test]
fn a_probe_that_hangs_is_killed_at_the_time_limit_and_reported_where_it_hung() {
    let downbeat = with_probe(
        "hang",
        Some("if [ \"$1\" = --list ]; then echo one; exit 0; fi\necho 'downbeat-audit-phase: process' >&2; exec sleep 60"),
    );
    let started = std::time::Instant::now();
    let out = audit(&downbeat, &["some.clap", "--timeout", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err,
        "error: some.clap: the plugin did not finish in process within 1 s; killed\n"
    );
    // In a folder, the hanging plugin is a crashed row, killed where it hung.
    let dir = plugin_folder("hang");
    let out = audit(
        &downbeat,
        &[dir.to_str().unwrap(), "--timeout", "1", "--json"],
    );
    remove(&downbeat);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["result"], "crashed", "{v:#}");
    assert_eq!(v[0]["phase"], "process");
    assert_eq!(v[0]["signal"], 9);
    assert_eq!(v[0]["reason"], "did not finish within 1 s: killed");
    // Two children of one second each, not the stand-in's minute.
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
}

/// `downbeat audit`'s wait for a child's pipes once the child has ended
/// (`audit_child::LINGER`): docs/AUDIT.md says a process left behind holding them holds the
/// audit up "for 2 s at most".
const LINGER_SECS: f64 = 2.0;

#[test]
fn a_process_left_behind_holding_the_pipes_does_not_hold_the_audit() {
    // The stand-in starts a process that inherits its stdout and stderr and outlives it, as
    // a plugin's helper process could, then reports a clean audit and exits. Its pid goes to
    // a file, so that the test ends it rather than leaving it for a minute.
    let pid_file =
        std::env::temp_dir().join(format!("downbeat-probe-linger-{}.pid", std::process::id()));
    let audit_script = |linger: &str| {
        format!(
            "if [ \"$1\" = --list ]; then echo one; exit 0; fi\n{linger}echo '{{\"violations\": 0}}'; exit 0"
        )
    };
    let lingering = with_probe(
        "linger",
        Some(&audit_script(&format!(
            "sleep 60 & echo $! > '{}'\n",
            pid_file.display()
        ))),
    );
    // The same stand-in without the process left behind: what an audit takes on this machine
    // now, so that the comparison below judges the wait, not the machine's speed.
    let baseline = with_probe("linger-baseline", Some(&audit_script("")));
    let dir = plugin_folder("linger");
    let timed = |downbeat: &Path| {
        let started = std::time::Instant::now();
        let out = audit(downbeat, &[dir.to_str().unwrap(), "--json"]);
        (out, started.elapsed())
    };
    let (base_out, base_time) = timed(&baseline);
    let (out, time) = timed(&lingering);
    remove(&lingering);
    remove(&baseline);
    std::fs::remove_dir_all(&dir).unwrap();
    if let Ok(pid) = std::fs::read_to_string(&pid_file) {
        let _ = Command::new("kill").arg(pid.trim()).status();
        let _ = std::fs::remove_file(&pid_file);
    }
    assert_eq!(base_out.status.code(), Some(0), "{base_out:?}");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["result"], "clean", "{v:#}");
    let extra = time.as_secs_f64() - base_time.as_secs_f64();
    // The left-behind process did hold the pipes: the audit waited for them (a timed wait
    // never ends early), so the bound below is measured on a real hold-up.
    assert!(
        time.as_secs_f64() >= LINGER_SECS,
        "{time:?}: the audit did not wait for the pipes, the test no longer tests the hold-up"
    );
    // At most the 2 s wait, plus 2 s for two runs of the same small audit differing in
    // scheduling on a loaded machine (each takes well under a second when idle).
    assert!(
        extra <= LINGER_SECS + 2.0,
        "held up {extra:.2} s beyond the run without it ({time:?} against {base_time:?})"
    );
}
