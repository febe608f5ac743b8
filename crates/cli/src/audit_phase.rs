//! The phases of a plugin's life that the audit probe announces to `downbeat audit` before
//! entering each, so that a plugin crashing the probe is reported with the phase it died in.
//!
//! The probe announces a phase with one line on its stderr, `downbeat-audit-phase: NAME`,
//! written before the phase starts: stderr is unbuffered, so the line is in the pipe before
//! the plugin runs and survives the probe dying. The probe announces only when
//! [`ANNOUNCE_ENV`] is set, which `downbeat audit` does; it strips these lines from what it
//! relays and reports the last one when the probe dies by a signal.

use std::fmt;

use serde::Serialize;

/// Set (to any value) in the probe's environment: announce each phase on stderr.
pub const ANNOUNCE_ENV: &str = "DOWNBEAT_AUDIT_PHASES";

/// What starts an announcement line.
pub const PREFIX: &str = "downbeat-audit-phase: ";

/// A phase of the audited plugin's life, in the order the probe goes through them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Opening the plugin: for CLAP, loading the library, its entry's `init` and its
    /// factory's list of plugins; for LV2, reading the plugin's description.
    Load,
    /// Creating the instance, initialising and activating it (one call of the host,
    /// `ClapNode::load` or `Lv2Node::load`, which does the three).
    Activate,
    /// The audited process calls (a CLAP plugin's `start_processing` is in the first).
    Process,
    /// Tearing the node down: `stop_processing`, `deactivate`, destroying the instance and
    /// unloading the library, up to the probe's exit.
    Deactivate,
}

impl Phase {
    /// Every phase, in order.
    pub const ALL: [Phase; 4] = [
        Phase::Load,
        Phase::Activate,
        Phase::Process,
        Phase::Deactivate,
    ];

    /// The phase's name, as announced and as `--json` prints it.
    ///
    /// ```
    /// use downbeat_cli::audit_phase::Phase;
    /// assert_eq!(Phase::Deactivate.name(), "deactivate");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Phase::Load => "load",
            Phase::Activate => "activate",
            Phase::Process => "process",
            Phase::Deactivate => "deactivate",
        }
    }

    /// The announcement line for this phase (without the line end).
    ///
    /// ```
    /// use downbeat_cli::audit_phase::Phase;
    /// assert_eq!(Phase::Process.line(), "downbeat-audit-phase: process");
    /// assert_eq!(Phase::parse_line(&Phase::Process.line()), Some(Phase::Process));
    /// ```
    pub fn line(self) -> String {
        format!("{PREFIX}{}", self.name())
    }

    /// The phase a line announces, or `None` for any other line (which is relayed).
    ///
    /// ```
    /// use downbeat_cli::audit_phase::Phase;
    /// assert_eq!(Phase::parse_line("downbeat-audit-phase: load\n"), Some(Phase::Load));
    /// assert_eq!(Phase::parse_line("error: no such file"), None);
    /// ```
    pub fn parse_line(line: &str) -> Option<Phase> {
        let name = line.strip_prefix(PREFIX)?.trim_end();
        Phase::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Announces this phase on stderr when [`ANNOUNCE_ENV`] is set (the probe's side).
    pub fn announce(self) {
        if std::env::var_os(ANNOUNCE_ENV).is_some() {
            // One write of the whole line, so that it cannot interleave with another
            // thread's; a failed write only loses the phase, not the audit.
            use std::io::Write;
            let _ = std::io::stderr().write_all(format!("{}\n", self.line()).as_bytes());
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
