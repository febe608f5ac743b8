//! `downbeat audit PLUGIN`: runs the audit in the probe executable next to this one
//! (`downbeat-audit-probe`, whose `malloc` counts the plugin's allocations), relays its output
//! and exit code, and survives the plugin crashing it, naming the phase it crashed in.
//! `downbeat audit DIR` audits every plugin under a folder ([`crate::audit_dir`]).

use std::path::Path;

use downbeat_cli::audit_args::Args;
use downbeat_cli::audit_phase::Phase;
use downbeat_cli::Failure;

use crate::audit_child::{self, describe_signal, Output};

/// Runs the audit of one plugin in a child process, whose stdout is this process's and
/// whose stderr is relayed without its phase announcements: exit 0 clean, 3 with
/// violations, 2 when the plugin cannot be loaded or crashes the probe, 1 when a tracker
/// could not run. A folder is audited plugin by plugin instead.
pub(crate) fn run(args: &Args) -> Result<(), Failure> {
    let probe = audit_child::probe()?;
    if Path::new(&args.plugin).is_dir() {
        return crate::audit_dir::run(args, &probe);
    }
    let outcome = audit_child::run(
        &probe,
        &args.to_argv(),
        &[],
        Output::Relay,
        time_limit(args),
    )?;
    if let Some(limit) = outcome.timed_out {
        let during = outcome.phase.map_or(String::new(), |p| format!(" in {p}"));
        return Err(Failure::Input(format!(
            "{}: the plugin did not finish{during} within {} s; killed",
            args.plugin,
            limit.as_secs_f64()
        )));
    }
    match (outcome.status.code(), outcome.signal()) {
        (Some(0), _) => Ok(()),
        (Some(code), _) => Err(Failure::Relayed(u8::try_from(code).unwrap_or(1))),
        (None, Some(signal)) => Err(crashed(&args.plugin, signal, outcome.phase)),
        (None, None) => Err(Failure::Runtime(format!(
            "{}: the audit probe ended with {}",
            args.plugin, outcome.status
        ))),
    }
}

/// `--timeout` as a limit for each child (`None` for 0, no limit).
pub(crate) fn time_limit(args: &Args) -> Option<std::time::Duration> {
    (args.timeout > 0).then(|| std::time::Duration::from_secs(u64::from(args.timeout)))
}

/// The message for a plugin that killed the probe with `signal` in `phase` (exit 2).
fn crashed(plugin: &str, signal: i32, phase: Option<Phase>) -> Failure {
    let when = match phase {
        Some(phase) => format!("in {phase}"),
        None => "before loading it began".to_string(),
    };
    Failure::Input(format!(
        "{plugin}: the plugin crashed {when} with {}",
        describe_signal(signal)
    ))
}
