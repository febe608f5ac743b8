//! With the `rtsan` feature, `guard::check` also runs the closure in
//! RealtimeSanitizer's real-time context. RTSan aborts the process on the
//! first violation, so each scenario runs in a child process: this test
//! binary re-executed with `DOWNBEAT_RTSAN_SCENARIO` naming the scenario.
//!
//! Build with `RTSAN_ENABLE=1 RTSAN_LIB_PATH=<libclang_rt.rtsan-x86_64.a>`
//! (see the `guard` module docs); without `RTSAN_ENABLE` RTSan is compiled
//! out and the offender test fails, saying so.
#![cfg(feature = "rtsan")]

use std::hint::black_box;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};

use downbeat_rt::guard;

downbeat_rt::install_guard_allocator!();

const SCENARIO: &str = "DOWNBEAT_RTSAN_SCENARIO";
const AFTER_CHECK: &str = "downbeat-rtsan: check returned";

/// The child's side, run only by the tests below (hence ignored): does nothing unless
/// `DOWNBEAT_RTSAN_SCENARIO` is set.
#[test]
#[ignore = "child-process entry point of the RTSan tests"]
fn scenario() {
    let Ok(which) = std::env::var(SCENARIO) else {
        return;
    };
    match which.as_str() {
        // Allocates inside the scope: RTSan must abort in `malloc`.
        "offender" => {
            let report = guard::check(|| black_box(Box::new(7_u64)));
            println!("{AFTER_CHECK}: {} violations", report.violation_count());
        }
        // Arithmetic on a borrowed block and an atomic: nothing to report.
        "clean" => {
            let mut block = [0.25_f32; 256];
            let frames = AtomicU64::new(0);
            let report = guard::check(|| {
                block.iter_mut().for_each(|s| *s = *s * 0.5 + 0.125);
                frames.fetch_add(block.len() as u64, Ordering::Relaxed);
            });
            assert!(report.is_clean(), "{report}");
            assert!(!report.notes.contains(&guard::Note::RtsanOff), "{report}");
            assert_eq!(frames.load(Ordering::Relaxed), 256);
            println!("{AFTER_CHECK}: clean");
        }
        other => panic!("unknown {SCENARIO}={other}"),
    }
}

fn run(which: &str) -> (Output, String, String) {
    let exe = std::env::current_exe().expect("test binary path");
    let output = Command::new(exe)
        .args([
            "--exact",
            "scenario",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(SCENARIO, which)
        .output()
        .expect("re-run the test binary");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output, stdout, stderr)
}

#[test]
fn rtsan_reports_an_allocation_inside_check() {
    assert!(
        option_env!("RTSAN_ENABLE").is_some(),
        "built without RTSAN_ENABLE: RealtimeSanitizer is compiled out"
    );
    let (output, stdout, stderr) = run("offender");
    assert!(
        !output.status.success(),
        "the offender exited cleanly: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert!(
        stderr.contains("ERROR: RealtimeSanitizer: unsafe-library-call"),
        "no RTSan report: {:?}\nstderr:\n{stderr}",
        output.status
    );
    assert!(
        stderr.contains("`malloc`"),
        "RTSan flagged something other than malloc:\n{stderr}"
    );
    assert!(
        !stdout.contains(AFTER_CHECK),
        "the check returned after the violation:\n{stdout}"
    );
}

#[test]
fn rtsan_is_silent_for_clean_code() {
    let (output, stdout, stderr) = run("clean");
    assert!(
        output.status.success(),
        "clean scenario failed: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert!(!stderr.contains("RealtimeSanitizer"), "{stderr}");
    assert!(
        stdout.contains(&format!("{AFTER_CHECK}: clean")),
        "{stdout}"
    );
}
