//! `downbeat audit` when a tracker cannot run (the guide, "Audit a plugin"; docs/AUDIT.md):
//! run where `seccomp(2)` is refused, as in a container's sandbox, the system-call tracker
//! cannot start, so the audit proves nothing. One plugin exits 1 with an "incomplete"
//! verdict naming what was not watched; in a folder, the plugin is a `refused` row (exit 2)
//! whose reason says so. The same plugin is clean without the sandbox.

#![cfg(feature = "clap")]

#[path = "../../plugin/tests/clap_support/mod.rs"]
mod clap_support;

use std::os::unix::process::CommandExt;
use std::process::{Command, Output};

use clap_support::{test_plugins, GAIN_ID};

/// Makes `seccomp(2)` fail with EPERM in the calling process and everything it starts (a
/// seccomp filter is inherited across `fork` and kept across `exec`), like a container
/// sandbox would; every other system call is allowed.
///
/// Runs between `fork` and `exec`, so it only makes system calls (no allocation, no lock)
/// and reports a failure as the `io::Error` `spawn` returns.
fn forbid_seccomp() -> std::io::Result<()> {
    let load_nr = libc::sock_filter {
        code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
        jt: 0,
        jf: 0,
        k: 0, // offsetof(struct seccomp_data, nr)
    };
    let is_seccomp = libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt: 0,
        jf: 1,
        k: libc::SYS_seccomp as u32,
    };
    let deny = libc::sock_filter {
        code: (libc::BPF_RET | libc::BPF_K) as u16,
        jt: 0,
        jf: 0,
        k: libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
    };
    let allow = libc::sock_filter {
        code: (libc::BPF_RET | libc::BPF_K) as u16,
        jt: 0,
        jf: 0,
        k: libc::SECCOMP_RET_ALLOW,
    };
    let filter = [load_nr, is_seccomp, deny, allow];
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: plain system calls on this (single-threaded, just forked) process; `prog`
    // points at `filter`, both alive across the call, and the kernel copies the program.
    unsafe {
        // An unprivileged process may install a filter only with no_new_privs set.
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &prog as *const libc::sock_fprog,
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `downbeat audit` with `args`, in a process where `seccomp(2)` is refused when `sandboxed`.
fn audit(args: &[&str], sandboxed: bool) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_downbeat"));
    command.arg("audit").args(args);
    if sandboxed {
        // SAFETY: the hook makes system calls only (see `forbid_seccomp`), as is allowed
        // between `fork` and `exec`.
        unsafe { command.pre_exec(forbid_seccomp) };
    }
    command.output().expect("downbeat runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_tracker_that_cannot_run_makes_the_audit_incomplete_with_exit_1() {
    let plugin = format!("{}#{GAIN_ID}", test_plugins().display());
    // Without the sandbox the gain is clean: whatever changes below is the sandbox's doing.
    let out = audit(&[&plugin, "--blocks", "20"], false);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let out = audit(&[&plugin, "--blocks", "20"], true);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.ends_with("result: incomplete (not every tracker ran)\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("not watched: system calls"),
        "the report names the tracker: {stdout}"
    );
    assert!(
        stderr.contains("the audit is incomplete, not watched: system calls"),
        "{stderr}"
    );
}

#[test]
fn in_a_folder_a_plugin_that_could_not_be_watched_is_refused_saying_why() {
    let dir =
        std::env::temp_dir().join(format!("downbeat-audit-incomplete-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(test_plugins(), dir.join("downbeat-test.clap")).unwrap();
    let out = audit(&[dir.to_str().unwrap(), "--blocks", "20", "--json"], true);
    std::fs::remove_dir_all(&dir).unwrap();
    let stderr = text(&out.stderr);
    // Exit 2 for a refused row; the file's crashing test plugins would give 2 on their own,
    // so the gain's row below is what shows the sandbox's effect.
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let gain = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == GAIN_ID)
        .unwrap_or_else(|| panic!("no row for the gain: {rows:#}"));
    assert_eq!(gain["result"], "refused", "{gain:#}");
    let reason = gain["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("not watched: system calls"), "{gain:#}");
}
