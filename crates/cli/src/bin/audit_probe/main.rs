//! `downbeat-audit-probe`: the child process `downbeat audit PLUGIN` runs. It loads the
//! plugin and runs its process call under the guard (see `downbeat_plugin::audit`), with
//! the heap probe of [`malloc`] below Rust's allocator; `downbeat audit` relays its output
//! and exit code. The probe lives in this executable of its own so that the `malloc` it
//! defines is never under the `downbeat` binary's other commands.
//!
//! Before each phase of the plugin's life it announces the phase (see
//! `downbeat_cli::audit_phase`), so that `downbeat audit` can say where a crash happened.
//! With `--list` it only lists the plugins a CLAP file or an LV2 bundle holds, one a line,
//! for `downbeat audit DIR` (reading a CLAP file runs plugin code, so that happens here too).

mod malloc;

use std::process::ExitCode;

use clap::Parser;
use downbeat_cli::audit_args::Args;
use downbeat_cli::audit_phase::{announce, observe_hosts, Phase};
use downbeat_cli::Failure;
use downbeat_plugin::audit::{audit, AuditOptions};

use malloc::LibcProbe;

/// Audits one plugin (run by `downbeat audit`, which takes the same arguments).
#[derive(Parser)]
#[command(name = "downbeat audit", version)]
struct Probe {
    #[command(flatten)]
    args: Args,
    /// List the plugins of the CLAP file or LV2 bundle PLUGIN names, one a line, instead
    /// of auditing (what `downbeat audit DIR` asks first).
    #[arg(long, hide = true)]
    list: bool,
}

fn main() -> ExitCode {
    // The plugin's memory comes from the heap `downbeat run` would give it (see `heap`).
    downbeat_cli::heap::one_heap();
    let probe = Probe::parse();
    take_stdout();
    observe_hosts();
    let result = if probe.list {
        list(&probe.args.plugin)
    } else {
        run(&probe.args)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}

/// An LV2 URI rather than a file: a scheme and no file of that name.
fn is_uri(s: &str) -> bool {
    !std::path::Path::new(s).exists()
        && s.split_once(':').is_some_and(|(scheme, _)| {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        })
}

// Without a plugin feature nothing can be loaded, and `opts` goes unused.
#[cfg_attr(
    not(any(feature = "clap", feature = "lv2", feature = "vst3")),
    allow(unused_variables)
)]
fn load(args: &Args, opts: &AuditOptions) -> Result<Box<dyn downbeat_graph::Node>, Failure> {
    if is_uri(&args.plugin) {
        #[cfg(feature = "lv2")]
        {
            let cfg = downbeat_graph::NodeConfig {
                sample_rate: opts.sample_rate,
                max_block: opts.block,
            };
            announce(Phase::Load);
            downbeat_plugin::lv2::PluginInfo::find(&args.plugin, opts.sample_rate)
                .map_err(|e| Failure::Input(e.to_string()))?;
            // `create` and `activate` are announced by the host (`observe_hosts`).
            return downbeat_plugin::lv2::Lv2Node::load(&args.plugin, &[], &cfg)
                .map(|n| Box::new(n) as Box<dyn downbeat_graph::Node>)
                .map_err(|e| Failure::Input(e.to_string()));
        }
        #[cfg(not(feature = "lv2"))]
        return Err(Failure::Input(format!(
            "{} looks like an LV2 URI, but this downbeat was built without the `lv2` feature",
            args.plugin
        )));
    }
    let (path, id) = match args.plugin.rsplit_once('#') {
        Some((path, id)) if !std::path::Path::new(&args.plugin).exists() => (path, Some(id)),
        _ => (args.plugin.as_str(), None),
    };
    if is_vst3(std::path::Path::new(path)) {
        #[cfg(feature = "vst3")]
        {
            announce(Phase::Load);
            downbeat_plugin::audit::list::vst3_classes(path.as_ref())
                .map_err(|e| Failure::Input(e.to_string()))?;
            // `create` and `activate` are announced by the host (`observe_hosts`).
            return downbeat_plugin::vst3::Vst3Node::load(
                path.as_ref(),
                id,
                opts.sample_rate,
                opts.block,
                None,
            )
            .map(|n| Box::new(n) as Box<dyn downbeat_graph::Node>)
            .map_err(|e| Failure::Input(e.to_string()));
        }
        #[cfg(not(feature = "vst3"))]
        return Err(Failure::Input(format!(
            "{path} is a VST3 bundle, but this downbeat was built without the `vst3` feature"
        )));
    }
    #[cfg(feature = "clap")]
    {
        // Loading the library and reading its factory first, so that a crash there is
        // told from one in the plugin's creation or activation.
        announce(Phase::Load);
        downbeat_plugin::audit::list::clap_ids(path.as_ref())
            .map_err(|e| Failure::Input(e.to_string()))?;
        // `create` and `activate` are announced by the host (`observe_hosts`).
        downbeat_plugin::clap::ClapNode::load(path.as_ref(), id, opts.sample_rate, opts.block)
            .map(|n| Box::new(n) as Box<dyn downbeat_graph::Node>)
            .map_err(|e| Failure::Input(e.to_string()))
    }
    #[cfg(not(feature = "clap"))]
    Err(Failure::Input(format!(
        "cannot audit {}: this downbeat was built without the `clap` feature",
        args.plugin
    )))
}

/// A VST3 bundle (a `.vst3` folder, or a file of that name: the library itself).
fn is_vst3(path: &std::path::Path) -> bool {
    path.extension().is_some_and(|e| e == "vst3")
}

/// Prints the ids of the plugins in a CLAP file, the classes in a VST3 bundle, or the URIs
/// of the plugins in an LV2 bundle (a folder), one a line.
fn list(plugin: &str) -> Result<(), Failure> {
    let path = std::path::Path::new(plugin);
    let names = if is_vst3(path) {
        announce(Phase::Load);
        list_vst3(path)?
    } else if path.is_dir() {
        list_lv2(path)?
    } else {
        announce(Phase::Load);
        list_clap(path)?
    };
    emit(&names.iter().map(|n| format!("{n}\n")).collect::<String>())
}

#[cfg(feature = "clap")]
fn list_clap(path: &std::path::Path) -> Result<Vec<String>, Failure> {
    downbeat_plugin::audit::list::clap_ids(path).map_err(|e| Failure::Input(e.to_string()))
}

#[cfg(not(feature = "clap"))]
fn list_clap(path: &std::path::Path) -> Result<Vec<String>, Failure> {
    Err(Failure::Input(format!(
        "{}: a CLAP file, but this downbeat was built without the `clap` feature",
        path.display()
    )))
}

#[cfg(feature = "vst3")]
fn list_vst3(path: &std::path::Path) -> Result<Vec<String>, Failure> {
    downbeat_plugin::audit::list::vst3_classes(path).map_err(|e| Failure::Input(e.to_string()))
}

#[cfg(not(feature = "vst3"))]
fn list_vst3(path: &std::path::Path) -> Result<Vec<String>, Failure> {
    Err(Failure::Input(format!(
        "{}: a VST3 bundle, but this downbeat was built without the `vst3` feature",
        path.display()
    )))
}

#[cfg(feature = "lv2")]
fn list_lv2(path: &std::path::Path) -> Result<Vec<String>, Failure> {
    downbeat_plugin::audit::list::lv2_uris(path).map_err(|e| Failure::Input(e.to_string()))
}

#[cfg(not(feature = "lv2"))]
fn list_lv2(path: &std::path::Path) -> Result<Vec<String>, Failure> {
    Err(Failure::Input(format!(
        "{}: an LV2 bundle, but this downbeat was built without the `lv2` feature",
        path.display()
    )))
}

/// Where the report goes: the probe's stdout as it started, which [`take_stdout`] keeps
/// for it alone.
static REPORT: std::sync::OnceLock<std::fs::File> = std::sync::OnceLock::new();

/// Keeps the process's stdout for the report and points file descriptor 1 at stderr, before
/// any plugin is loaded: plugins print to stdout (guitarix's "munlock N bytes", lilv's
/// warnings), which would land inside the report `downbeat audit` parses; on stderr they are
/// relayed like the plugin's other messages. Without a report stream (the calls fail) the
/// report goes to stdout as before.
fn take_stdout() {
    // SAFETY: `dup` and `dup2` on the standard descriptors, which are open for the whole
    // process; the duplicate is owned by the `File` made from it and by nothing else.
    unsafe {
        let report = libc::dup(libc::STDOUT_FILENO);
        if report < 0 {
            return;
        }
        if libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) < 0 {
            libc::close(report);
            return;
        }
        let _ = REPORT.set(std::os::fd::FromRawFd::from_raw_fd(report));
    }
}

/// Writes the report (see [`take_stdout`]); a closed pipe (`| head`) is an error, not a
/// panic.
fn emit(text: &str) -> Result<(), Failure> {
    use std::io::Write;
    let written = match REPORT.get() {
        Some(mut file) => file.write_all(text.as_bytes()).and_then(|()| file.flush()),
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes()).and_then(|()| out.flush())
        }
    };
    written.map_err(|e| Failure::Runtime(format!("writing the report: {e}")))
}

/// Runs the audit: exit 0 clean, 3 with violations, 2 when the plugin cannot be loaded, 1
/// when a tracker could not run (nothing found, but nothing proven either).
fn run(args: &Args) -> Result<(), Failure> {
    let opts = AuditOptions {
        blocks: args.blocks as usize,
        block: args.block as usize,
        sample_rate: args.sample_rate,
    };
    let mut node = load(args, &opts)?;
    announce(Phase::Process);
    let report = audit(&args.plugin, node.as_mut(), &opts, Some(&LibcProbe));
    // The report goes out before the teardown: a plugin that crashes there has had its
    // process calls audited, and `downbeat audit` keeps what they did.
    if args.json {
        let json = serde_json::to_string_pretty(&report)
            .map_err(|e| Failure::Runtime(format!("writing the report: {e}")))?;
        emit(&format!("{json}\n"))?;
    } else {
        emit(&report.table())?;
    }
    announce(Phase::Deactivate);
    drop(node);
    if report.violations > 0 {
        Err(Failure::Violations(format!(
            "{}: {} real-time violations in {} callbacks",
            args.plugin, report.violations, report.blocks
        )))
    } else if !report.clean {
        Err(Failure::Runtime(format!(
            "{}: the audit is incomplete, not watched: {}",
            args.plugin,
            report.missing_trackers.join(", ")
        )))
    } else {
        Ok(())
    }
}
