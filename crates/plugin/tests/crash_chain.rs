//! `crash::install` hands a fatal signal raised outside every marked plugin call to the
//! handler that was there before it (the Rust runtime's stack-overflow report, in `downbeat`),
//! without a word about plugins; inside a marked call it reports the plugin and dies of the
//! signal. A handled signal ends the process, so each case runs in a child: this test binary
//! run again with `DOWNBEAT_CRASH_CHAIN` naming the case.

use std::process::{Command, Output};

use downbeat_plugin::crash::{self, Label, Phase};

const CASE: &str = "DOWNBEAT_CRASH_CHAIN";
/// What the handler installed before `crash::install` writes, then the signal's number.
const MARKER: &str = "previous handler: signal ";
/// How that handler ends the process: a status no signal death or test failure gives.
const PREVIOUS_EXIT: i32 = 42;

/// Writes the marker and the signal's number with `write(2)` and exits, as a handler may.
fn previous(signal: libc::c_int) -> ! {
    // The fatal signals' numbers are below 100.
    let digits = [
        b'0' + (signal / 10) as u8,
        b'0' + (signal % 10) as u8,
        b'\n',
    ];
    let number = &digits[usize::from(signal < 10)..];
    for bytes in [MARKER.as_bytes(), number] {
        // SAFETY: a live slice; `write` and `_exit` are async-signal-safe.
        unsafe { libc::write(libc::STDERR_FILENO, bytes.as_ptr().cast(), bytes.len()) };
    }
    // SAFETY: ends the process at once, which is what a handler of a fatal signal does.
    unsafe { libc::_exit(PREVIOUS_EXIT) }
}

extern "C" fn previous_siginfo(
    signal: libc::c_int,
    _info: *mut libc::siginfo_t,
    _context: *mut libc::c_void,
) {
    previous(signal)
}

extern "C" fn previous_plain(signal: libc::c_int) {
    previous(signal)
}

/// Installs [`previous`] for `signal`, with the three-argument signature (as the Rust
/// runtime's is) or the one-argument one: the crash handler calls each its own way.
fn install_previous(signal: libc::c_int, siginfo: bool) {
    // SAFETY: a zeroed `sigaction` is "no flags, empty mask", filled in before use.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        if siginfo {
            action.sa_sigaction = previous_siginfo as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO;
        } else {
            action.sa_sigaction = previous_plain as *const () as libc::sighandler_t;
        }
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(libc::sigaction(signal, &action, std::ptr::null_mut()), 0);
    }
}

/// The child's side, run only by the tests below (hence ignored): does nothing unless
/// `DOWNBEAT_CRASH_CHAIN` is set.
#[test]
#[ignore = "child-process entry point of the crash-chaining tests"]
fn case() {
    let Ok(which) = std::env::var(CASE) else {
        return;
    };
    install_previous(libc::SIGSEGV, true);
    install_previous(libc::SIGABRT, false);
    crash::install().unwrap();
    let label = Label::new("Chained", "chained.clap");
    // A call marked and left: the thread is outside again, as between two blocks.
    drop(crash::enter(label, Phase::Process));
    let signal = match which.as_str() {
        "segv" => libc::SIGSEGV,
        "abrt" => libc::SIGABRT,
        "marked" => {
            let _inside = crash::enter(label, Phase::Process);
            // SAFETY: raising a signal on this thread; the handlers above take it.
            unsafe { libc::raise(libc::SIGSEGV) };
            unreachable!("the marked SIGSEGV returned");
        }
        other => panic!("unknown {CASE}={other}"),
    };
    // SAFETY: as above.
    unsafe { libc::raise(signal) };
    unreachable!("signal {signal} returned");
}

fn run(which: &str) -> (Output, String) {
    let exe = std::env::current_exe().expect("test binary path");
    let output = Command::new(exe)
        .args([
            "--exact",
            "case",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CASE, which)
        .output()
        .expect("re-run the test binary");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output, stderr)
}

#[test]
fn a_signal_outside_a_marked_call_goes_to_the_handler_that_was_there() {
    for (which, signal) in [("segv", libc::SIGSEGV), ("abrt", libc::SIGABRT)] {
        let (output, stderr) = run(which);
        assert_eq!(
            output.status.code(),
            Some(PREVIOUS_EXIT),
            "{which}: {:?}\n{stderr}",
            output.status
        );
        assert!(
            stderr.contains(&format!("{MARKER}{signal}\n")),
            "{which}: the previous handler did not run:\n{stderr}"
        );
        assert!(
            !stderr.contains("the plugin"),
            "{which}: blamed on a plugin:\n{stderr}"
        );
    }
}

#[test]
fn a_signal_inside_a_marked_call_names_the_plugin_and_kills_the_process() {
    use std::os::unix::process::ExitStatusExt;
    let (output, stderr) = run("marked");
    assert_eq!(
        output.status.signal(),
        Some(libc::SIGSEGV),
        "{:?}\n{stderr}",
        output.status
    );
    assert!(
        stderr.contains(
            "error: the plugin `Chained` (chained.clap) crashed in process with SIGSEGV (signal 11)\n"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains(MARKER), "chained as well:\n{stderr}");
}
