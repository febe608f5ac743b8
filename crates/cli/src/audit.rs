//! `downbeat audit PLUGIN`: runs the audit in the probe executable next to this one
//! (`downbeat-audit-probe`, whose `malloc` counts the plugin's allocations), relays its output
//! and exit code, and survives the plugin crashing it.

use std::path::PathBuf;
use std::process::Command;

use downbeat_cli::audit_args::Args;
use downbeat_cli::Failure;

/// The probe's file name (with the platform's executable suffix).
fn probe_name() -> String {
    format!("downbeat-audit-probe{}", std::env::consts::EXE_SUFFIX)
}

/// The probe next to the running executable, as cargo builds and installs them.
fn probe() -> Result<PathBuf, Failure> {
    let exe = std::env::current_exe()
        .map_err(|e| Failure::Runtime(format!("cannot find this executable's path: {e}")))?;
    let probe = exe.with_file_name(probe_name());
    if probe.is_file() {
        Ok(probe)
    } else {
        Err(Failure::Runtime(format!(
            "the audit probe `{}` is missing: build it with `cargo build -p downbeat-cli` (it \
             is installed next to `downbeat`)",
            probe.display()
        )))
    }
}

/// Runs the audit in a child process, whose stdout and stderr are this process's: exit 0
/// clean, 3 with violations, 2 when the plugin cannot be loaded or crashes the probe, 1 when
/// a tracker could not run.
pub(crate) fn run(args: &Args) -> Result<(), Failure> {
    let probe = probe()?;
    let status = Command::new(&probe)
        .args(args.to_argv())
        .status()
        .map_err(|e| Failure::Runtime(format!("cannot start `{}`: {e}", probe.display())))?;
    match status.code() {
        Some(0) => Ok(()),
        Some(code) => Err(Failure::Relayed(u8::try_from(code).unwrap_or(1))),
        None => Err(crashed(&args.plugin, status)),
    }
}

#[cfg(unix)]
fn crashed(plugin: &str, status: std::process::ExitStatus) -> Failure {
    use std::os::unix::process::ExitStatusExt;
    match status.signal() {
        Some(signal) => Failure::Input(format!("{plugin}: the plugin crashed (signal {signal})")),
        None => Failure::Runtime(format!("{plugin}: the audit probe ended with {status}")),
    }
}

#[cfg(not(unix))]
fn crashed(plugin: &str, status: std::process::ExitStatus) -> Failure {
    Failure::Input(format!("{plugin}: the plugin crashed ({status})"))
}
