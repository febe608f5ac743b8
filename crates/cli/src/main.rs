//! The `downbeat` command-line tool: one module per command.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use downbeat_cli::audit_args;

mod audit;
mod audit_child;
mod audit_dir;
mod check;
mod devices;
mod jitter;
mod latency;
mod nodes;
mod reference;
mod run;
mod values;

/// Downbeat: a real-time audio runtime. Runs audio graphs described in project files.
#[derive(Parser)]
#[command(name = "downbeat", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size of the `run` variant's many options costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Runs a project on a device and prints a load summary.
    Run(run::Args),
    /// Checks a project file and its graph without running it.
    Check(check::Args),
    /// Lists the node types and their parameters (as Markdown with `--markdown`, as JSON with
    /// `--json`).
    Nodes(nodes::Args),
    /// Runs a plugin's process call under the real-time guard while moving its parameters
    /// and sending notes; reports allocations, frees, locks, system calls and page faults
    /// per callback. Exit 0 clean, 3 violations, 2 cannot load the plugin (or it crashed:
    /// the phase and the signal are named). Given a folder, audits every CLAP file and LV2
    /// bundle under it, each plugin in a process of its own, and prints a row per plugin:
    /// exit 0 all clean, 3 some with violations (none crashed or refused), 2 otherwise.
    Audit(audit_args::Args),
    /// Lists the computer's sound devices with their channels and sample rates (build with
    /// `--features system`).
    Devices,
    /// Measures the round-trip latency: plays clicks, finds them in the capture, and shows
    /// the result next to what the audio API claims.
    Latency(latency::Args),
    /// Measures how late a periodic tick wakes up on this machine (a cyclictest-like meter).
    Jitter(jitter::Args),
    /// Prints a reference chapter of the guide (`docs/guide/src/reference/`), generated from
    /// the code: the command line, the OSC addresses or the keys of a project file.
    #[command(hide = true)]
    Reference(reference::Args),
}

fn main() -> ExitCode {
    // First, while the process has one thread: both change process-wide settings.
    downbeat_cli::heap::one_heap();
    let offscreen = downbeat_plugin::headless::offscreen_qt_if_headless();
    let cli = Cli::parse();
    if matches!(cli.command, Command::Run(_) | Command::Check(_)) {
        // `audit` names a crashing plugin's phase through its probe instead.
        if let Err(e) = downbeat_plugin::crash::install() {
            eprintln!("note: a crashing plugin will not be named: {e}");
        }
    }
    let result = downbeat_cli::register_node_types().and_then(|()| match cli.command {
        Command::Run(args) => run::run(args, offscreen),
        Command::Check(args) => check::run(&args),
        Command::Nodes(args) => nodes::run(&args),
        Command::Audit(args) => audit::run(&args),
        Command::Devices => devices::run(),
        Command::Latency(args) => latency::run(&args),
        Command::Jitter(args) => jitter::run(&args),
        Command::Reference(args) => reference::run(&args),
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}
