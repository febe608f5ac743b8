//! How the audit probe tells `downbeat audit` the phase of a plugin's life it is entering
//! ([`Phase`], the plugin hosts' own: load, create, activate, process, deactivate), so that a
//! plugin crashing the probe is reported with the phase it died in.
//!
//! The probe announces a phase with one line on its stderr, `downbeat-audit-phase: NAME`,
//! written before the phase starts: stderr is unbuffered, so the line is in the pipe before
//! the plugin runs and survives the probe dying. The probe announces only when
//! [`ANNOUNCE_ENV`] is set, which `downbeat audit` does; it strips these lines from what it
//! relays and reports the last one when the probe dies by a signal. It announces `load`,
//! `process` and `deactivate` itself; `create` and `activate` happen inside one host call,
//! so the hosts announce them as they mark them ([`observe_hosts`]).

pub use downbeat_plugin::crash::Phase;

/// Set (to any value) in the probe's environment: announce each phase on stderr.
pub const ANNOUNCE_ENV: &str = "DOWNBEAT_AUDIT_PHASES";

/// What starts an announcement line.
pub const PREFIX: &str = "downbeat-audit-phase: ";

/// The announcement line for `phase` (without the line end).
///
/// ```
/// use downbeat_cli::audit_phase::{line, parse_line, Phase};
/// assert_eq!(line(Phase::Process), "downbeat-audit-phase: process");
/// assert_eq!(parse_line(&line(Phase::Create)), Some(Phase::Create));
/// ```
pub fn line(phase: Phase) -> String {
    format!("{PREFIX}{}", phase.name())
}

/// The phase a line announces, or `None` for any other line (which is relayed).
///
/// ```
/// use downbeat_cli::audit_phase::{parse_line, Phase};
/// assert_eq!(parse_line("downbeat-audit-phase: load\n"), Some(Phase::Load));
/// assert_eq!(parse_line("error: no such file"), None);
/// ```
pub fn parse_line(line: &str) -> Option<Phase> {
    let name = line.strip_prefix(PREFIX)?.trim_end();
    Phase::ALL.into_iter().find(|p| p.name() == name)
}

/// Announces `phase` on stderr when [`ANNOUNCE_ENV`] is set (the probe's side).
pub fn announce(phase: Phase) {
    if std::env::var_os(ANNOUNCE_ENV).is_some() {
        // One write of the whole line, so that it cannot interleave with another thread's;
        // a failed write only loses the phase, not the audit.
        use std::io::Write;
        let _ = std::io::stderr().write_all(format!("{}\n", line(phase)).as_bytes());
    }
}

/// Makes the plugin hosts announce the phases they enter on the main thread (`create` and
/// `activate` inside a node's `load`, and the others), through
/// [`downbeat_plugin::crash::observe`]. The probe's side, before it loads the plugin.
pub fn observe_hosts() {
    // The audit knows the plugin: it names it on its command line.
    downbeat_plugin::crash::observe(|_, phase| announce(phase));
}
