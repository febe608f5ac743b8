//! `downbeat audit DIR`: every plugin under a folder, each in a probe of its own, so that one
//! crash does not stop the rest; a table (or with `--json`, one JSON array) with a row per
//! plugin.
//!
//! CLAP files (`*.clap`), VST3 bundles (`*.vst3` folders) and LV2 bundles (`*.lv2` folders)
//! are found at any depth; other files are not plugins and are passed over. A probe first
//! lists a file's plugins (the ids in a CLAP file, the classes in a VST3 bundle, the URIs in
//! an LV2 bundle), then one probe audits each. An LV2 bundle is found
//! by the probe's lilv through `LV2_PATH`, which gets the bundle's folder in front.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use downbeat_cli::audit_args::Args;
use downbeat_cli::audit_phase::Phase;
use downbeat_cli::Failure;
use serde::Serialize;

use crate::audit_child::{self, describe_signal, Outcome, Output};

/// The plugin format of a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Format {
    Clap,
    Lv2,
    Vst3,
}

/// What the audit of one plugin came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Verdict {
    /// Every tracker ran and no callback did anything an audio thread must not.
    Clean,
    /// At least one callback did.
    Violations,
    /// The plugin killed its probe with a signal, or hung in it past `--timeout` and was
    /// killed (`SIGKILL`; the row's `reason` says so).
    Crashed,
    /// Not audited: the plugin cannot be loaded (or the audit could not watch it); the row's
    /// `reason` says why.
    Refused,
}

impl Verdict {
    fn name(self) -> &'static str {
        match self {
            Verdict::Clean => "clean",
            Verdict::Violations => "violations",
            Verdict::Crashed => "crashed",
            Verdict::Refused => "refused",
        }
    }
}

/// One plugin's row, as `--json` prints it.
#[derive(Clone, Debug, Serialize)]
struct Row {
    /// The CLAP file or LV2 bundle.
    path: PathBuf,
    /// The plugin's id (CLAP), class name (VST3) or URI (LV2); `null` when the file's
    /// plugins could not be listed.
    id: Option<String>,
    format: Format,
    result: Verdict,
    /// The phase a crashed plugin died in.
    phase: Option<Phase>,
    /// The signal a crashed plugin died of.
    signal: Option<i32>,
    /// Violating events over the audited callbacks, when they were audited (a plugin that
    /// crashes in `deactivate` was).
    violations: Option<u64>,
    /// Why a plugin was refused, or that a crashed one was killed for hanging.
    reason: Option<String>,
}

impl Row {
    fn new(path: &Path, id: Option<&str>, format: Format, result: Verdict) -> Self {
        Self {
            path: path.to_path_buf(),
            id: id.map(str::to_string),
            format,
            result,
            phase: None,
            signal: None,
            violations: None,
            reason: None,
        }
    }

    /// The row of a probe that crashed, or that could not do what it was asked.
    fn failed(path: &Path, id: Option<&str>, format: Format, out: &Outcome) -> Self {
        match out.signal() {
            Some(signal) => Self {
                phase: out.phase,
                signal: Some(signal),
                // A crash is its own reason; a child killed for hanging says so.
                reason: out.timed_out.map(|_| out.reason()),
                ..Self::new(path, id, format, Verdict::Crashed)
            },
            None => Self {
                reason: Some(out.reason()),
                ..Self::new(path, id, format, Verdict::Refused)
            },
        }
    }
}

/// A CLAP file, VST3 bundle or LV2 bundle found under the folder.
struct Found {
    path: PathBuf,
    format: Format,
}

/// Every `*.clap` file and `*.vst3` and `*.lv2` folder under `dir` (itself included, when it
/// is a bundle), in path order. Symbolic links to folders are not followed, so a link loop
/// cannot make the walk endless.
fn find(dir: &Path) -> Result<Vec<Found>, Failure> {
    let mut found = Vec::new();
    for (ext, format) in [("lv2", Format::Lv2), ("vst3", Format::Vst3)] {
        if has_extension(dir, ext) {
            found.push(Found {
                path: dir.to_path_buf(),
                format,
            });
            return Ok(found);
        }
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        let entries = std::fs::read_dir(&folder)
            .map_err(|e| Failure::Input(format!("{}: cannot read: {e}", folder.display())))?;
        for entry in entries {
            let entry = entry
                .map_err(|e| Failure::Input(format!("{}: cannot read: {e}", folder.display())))?;
            let path = entry.path();
            // `is_dir` follows a link; the entry's own type does not.
            let is_dir = path.is_dir();
            let is_link = entry.file_type().is_ok_and(|t| t.is_symlink());
            if is_dir && has_extension(&path, "lv2") {
                found.push(Found {
                    path,
                    format: Format::Lv2,
                });
            } else if is_dir && has_extension(&path, "vst3") {
                found.push(Found {
                    path,
                    format: Format::Vst3,
                });
            } else if is_dir && !is_link {
                stack.push(path);
            } else if !is_dir && has_extension(&path, "clap") {
                found.push(Found {
                    path,
                    format: Format::Clap,
                });
            }
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

fn has_extension(path: &Path, ext: &str) -> bool {
    path.extension().is_some_and(|e| e == ext)
}

/// The environment a probe needs for a plugin of this bundle or file: for LV2, the bundle's
/// folder first on `LV2_PATH` (then what was there, or lilv's default), so that lilv finds
/// a bundle outside the installed ones.
fn env_for(found: &Found) -> Vec<(&'static str, OsString)> {
    if found.format != Format::Lv2 {
        return Vec::new();
    }
    let parent = std::fs::canonicalize(&found.path)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."));
    let rest = std::env::var_os("LV2_PATH")
        .unwrap_or_else(|| "~/.lv2:/usr/local/lib/lv2:/usr/lib/lv2".into());
    let mut path = parent.into_os_string();
    path.push(":");
    path.push(rest);
    vec![("LV2_PATH", path)]
}

/// Audits every plugin under `dir`, prints the table or the JSON array, and exits 0 when
/// every plugin is clean, 3 when some have violations and none crashed or was refused, 2
/// otherwise.
pub(crate) fn run(args: &Args, probe: &Path) -> Result<(), Failure> {
    let dir = Path::new(&args.plugin);
    let found = find(dir)?;
    if found.is_empty() {
        return Err(Failure::Input(format!(
            "{}: no CLAP file (*.clap), VST3 bundle (*.vst3) or LV2 bundle (*.lv2) in this \
             folder",
            dir.display()
        )));
    }
    let mut rows = Vec::new();
    for f in &found {
        rows.extend(audit_found(args, probe, f)?);
    }
    if args.json {
        let json = serde_json::to_string_pretty(&rows)
            .map_err(|e| Failure::Runtime(format!("writing the report: {e}")))?;
        emit(&format!("{json}\n"))?;
    } else {
        emit(&table(&rows))?;
    }
    let count = |v: Verdict| rows.iter().filter(|r| r.result == v).count();
    let (violations, crashed, refused) = (
        count(Verdict::Violations),
        count(Verdict::Crashed),
        count(Verdict::Refused),
    );
    let summary = format!(
        "{}: {} plugins, {} clean, {violations} with violations, {crashed} crashed, \
         {refused} refused",
        dir.display(),
        rows.len(),
        count(Verdict::Clean)
    );
    if crashed + refused > 0 {
        Err(Failure::Input(summary))
    } else if violations > 0 {
        Err(Failure::Violations(summary))
    } else {
        Ok(())
    }
}

/// The rows of one CLAP file or LV2 bundle: its plugins listed by one probe, then each
/// audited by one probe.
fn audit_found(args: &Args, probe: &Path, found: &Found) -> Result<Vec<Row>, Failure> {
    if found.format == Format::Lv2 && !cfg!(feature = "lv2") {
        return Ok(vec![Row {
            reason: Some(
                "an LV2 bundle, and this downbeat was built without the `lv2` feature (build \
                 it with `--features lv2`)"
                    .into(),
            ),
            ..Row::new(&found.path, None, Format::Lv2, Verdict::Refused)
        }]);
    }
    let env = env_for(found);
    let list_argv: Vec<OsString> = vec!["--list".into(), "--".into(), found.path.clone().into()];
    let limit = crate::audit::time_limit(args);
    let listed = audit_child::run(probe, &list_argv, &env, Output::Capture, limit)?;
    if !listed.status.success() {
        return Ok(vec![Row::failed(&found.path, None, found.format, &listed)]);
    }
    let ids: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    let mut rows = Vec::new();
    for id in &ids {
        let plugin = match found.format {
            Format::Clap | Format::Vst3 => format!("{}#{id}", found.path.display()),
            Format::Lv2 => id.clone(),
        };
        let child_args = Args {
            plugin,
            json: true,
            ..args.clone()
        };
        let out = audit_child::run(probe, &child_args.to_argv(), &env, Output::Capture, limit)?;
        rows.push(row(found, id, &out));
    }
    Ok(rows)
}

/// The row of one audited plugin, from its probe's exit and JSON report.
fn row(found: &Found, id: &str, out: &Outcome) -> Row {
    let report: Option<serde_json::Value> = serde_json::from_slice(&out.stdout).ok();
    let violations = report
        .as_ref()
        .and_then(|r| r.get("violations"))
        .and_then(serde_json::Value::as_u64);
    let verdict = match out.status.code() {
        Some(0) => Verdict::Clean,
        Some(3) => Verdict::Violations,
        _ => {
            return Row {
                violations,
                ..Row::failed(&found.path, Some(id), found.format, out)
            }
        }
    };
    match violations {
        Some(n) => Row {
            violations: Some(n),
            ..Row::new(&found.path, Some(id), found.format, verdict)
        },
        None => Row {
            reason: Some(format!(
                "the audit probe's report could not be read: {}",
                out.reason()
            )),
            ..Row::new(&found.path, Some(id), found.format, Verdict::Refused)
        },
    }
}

/// The table: a row per plugin, then the reasons of the refused ones (and of those killed
/// for hanging).
fn table(rows: &[Row]) -> String {
    let head = [
        "path",
        "id",
        "format",
        "result",
        "phase",
        "signal",
        "violations",
    ];
    let dash = || "-".to_string();
    let cells: Vec<[String; 7]> = rows
        .iter()
        .map(|r| {
            [
                r.path.display().to_string(),
                r.id.clone().unwrap_or_else(dash),
                match r.format {
                    Format::Clap => "clap".into(),
                    Format::Lv2 => "lv2".into(),
                    Format::Vst3 => "vst3".into(),
                },
                r.result.name().into(),
                r.phase.map_or_else(dash, |p| p.name().into()),
                r.signal.map_or_else(dash, describe_signal),
                r.violations.map_or_else(dash, |v| v.to_string()),
            ]
        })
        .collect();
    let mut out = String::new();
    downbeat_plugin::audit::write_table(&mut out, head, &cells);
    for r in rows.iter().filter(|r| r.reason.is_some()) {
        let id = r.id.as_deref().map_or(String::new(), |id| format!(" {id}"));
        let _ = writeln!(
            out,
            "{}: {}{id}: {}",
            r.result.name(),
            r.path.display(),
            r.reason.as_deref().unwrap_or_default()
        );
    }
    out
}

/// Writes to stdout; a closed pipe (`| head`) is an error, not a panic.
fn emit(text: &str) -> Result<(), Failure> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Failure::Runtime(format!("writing the report: {e}")))
}
