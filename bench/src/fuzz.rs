//! `fuzz` (issue 42): the cargo-fuzz targets of `fuzz/` (project files, MIDI files, OSC
//! datagrams, audio files, `--input` WAV files, the wasm ABI's control records), each run
//! by `cargo +nightly fuzz run` for as long as asked, from its seeds and the corpus earlier
//! runs grew. Per target: executions, libFuzzer's coverage (`cov:`, edges reached) and
//! features (`ft:`), the inputs per second, the seconds it ran, and the findings (inputs that
//! crashed, panicked, ran over 1 s or took over 2 GB, left in `fuzz/artifacts/TARGET/`). Any
//! finding makes the run exit 1 after the report.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::report::Report;

/// The targets, in the order they run (`cargo fuzz list` gives the same names).
pub const TARGETS: [&str; 7] = [
    "project_parse",
    "project_build",
    "midi_file",
    "osc_packet",
    "audio_file",
    "wav_input",
    "wasm_events",
];

/// Seconds per target without `--seconds` or `--runs`.
const DEFAULT_SECONDS: u64 = 60;

/// What `bench fuzz` takes.
#[derive(clap::Args, Clone, Debug)]
pub struct FuzzArgs {
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Smoke mode: one second per target from the seeds alone, in a corpus folder of its own.
    #[arg(long)]
    pub quick: bool,
    /// Run only this target (repeatable); all of them when absent.
    #[arg(long = "target", value_name = "TARGET")]
    pub targets: Vec<String>,
    /// Seconds per target (default 60; 1 with --quick).
    #[arg(long, conflicts_with = "runs")]
    pub seconds: Option<u64>,
    /// Inputs per target instead of a time.
    #[arg(long)]
    pub runs: Option<u64>,
}

/// How long each target runs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Budget {
    Seconds(u64),
    Runs(u64),
}

impl FuzzArgs {
    fn budget(&self) -> Budget {
        match (self.runs, self.seconds) {
            (Some(n), _) => Budget::Runs(n.max(1)),
            (None, Some(s)) => Budget::Seconds(s.max(1)),
            (None, None) => Budget::Seconds(if self.quick { 1 } else { DEFAULT_SECONDS }),
        }
    }
}

/// What libFuzzer said about one run.
#[derive(Clone, Debug, Default, PartialEq)]
struct Outcome {
    executions: u64,
    coverage: u64,
    features: u64,
    /// Inputs written to `artifacts/` (libFuzzer stops at the first).
    findings: u64,
    /// The artifacts' paths, for the notes.
    artifacts: Vec<String>,
    /// libFuzzer was stopped by a signal (`run interrupted`, its exit code 72): the budget was
    /// not spent, but nothing was found either.
    interrupted: bool,
}

/// Reads libFuzzer's log: the last status line (`#N ... cov: C ft: F ...`), the final stats
/// (`stat::number_of_executed_units: N`, with `-print_final_stats=1`), every
/// `Test unit written to PATH`, and whether it says `libFuzzer: run interrupted`.
fn parse(log: &str) -> Outcome {
    let mut o = Outcome::default();
    let number_after = |line: &str, key: &str| -> Option<u64> {
        let rest = &line[line.find(key)? + key.len()..];
        rest.split_whitespace().next()?.parse().ok()
    };
    for line in log.lines() {
        if let Some(status) = line.strip_prefix('#') {
            if let Some(n) = status
                .split_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
            {
                o.executions = o.executions.max(n);
            }
            if let Some(c) = number_after(line, "cov: ") {
                o.coverage = c;
            }
            if let Some(f) = number_after(line, "ft: ") {
                o.features = f;
            }
        } else if let Some(n) = number_after(line, "stat::number_of_executed_units: ") {
            o.executions = n;
        } else if line.contains("libFuzzer: run interrupted") {
            o.interrupted = true;
        } else if let Some(at) = line.find("Test unit written to ") {
            o.findings += 1;
            o.artifacts
                .push(line[at + "Test unit written to ".len()..].trim().to_owned());
        }
    }
    o
}

/// The repository's `fuzz/` folder.
fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// Stops the suite with a message: it cannot measure anything.
fn give_up(why: &str) -> ! {
    eprintln!("bench fuzz: {why}");
    std::process::exit(2)
}

/// Runs the suite; exits 1 after printing the report when a target had a finding.
pub fn run(args: &FuzzArgs) -> Report {
    let dir = fuzz_dir();
    for t in &args.targets {
        if !TARGETS.contains(&t.as_str()) {
            give_up(&format!(
                "no target `{t}`; the targets are {}",
                TARGETS.join(", ")
            ));
        }
    }
    let has_fuzz = Command::new("cargo")
        .args(["+nightly", "fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_fuzz {
        give_up("`cargo +nightly fuzz` does not run: install nightly Rust and cargo-fuzz (scripts/deps.sh)");
    }
    // Debug assertions on, as fuzz/ci.sh builds them: an overflow is a finding.
    let built = Command::new("cargo")
        .args(["+nightly", "fuzz", "build", "-a"])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .status();
    if !built.is_ok_and(|s| s.success()) {
        give_up("`cargo +nightly fuzz build -a` failed in fuzz/");
    }
    let budget = args.budget();
    // Quick runs grow a corpus of their own and throw it away; long ones keep what they find
    // in fuzz/corpus/TARGET for the next run (git ignores it).
    let scratch = args
        .quick
        .then(|| std::env::temp_dir().join(format!("downbeat-bench-fuzz-{}", std::process::id())));
    let mut report = Report::new("fuzz");
    let mut found = false;
    let mut interrupted = Vec::new();
    for target in TARGETS {
        if !args.targets.is_empty() && !args.targets.iter().any(|t| t == target) {
            continue;
        }
        let corpus = match &scratch {
            Some(s) => s.join(target),
            None => dir.join("corpus").join(target),
        };
        if let Err(e) = std::fs::create_dir_all(&corpus) {
            give_up(&format!("cannot make {}: {e}", corpus.display()));
        }
        let limit = match budget {
            Budget::Seconds(s) => format!("-max_total_time={s}"),
            Budget::Runs(n) => format!("-runs={n}"),
        };
        eprintln!("bench fuzz: {target} ({limit})");
        let began = Instant::now();
        let output = Command::new("cargo")
            .args(["+nightly", "fuzz", "run", "-a", target])
            .arg(&corpus)
            .arg(dir.join("seeds").join(target))
            .args([
                "--",
                &limit,
                "-rss_limit_mb=2048",
                "-timeout=1",
                "-print_final_stats=1",
            ])
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .unwrap_or_else(|e| give_up(&format!("cannot run cargo fuzz: {e}")));
        let seconds = began.elapsed().as_secs_f64();
        let log = String::from_utf8_lossy(&output.stderr);
        let mut o = parse(&log);
        // A run stopped from outside (a SIGINT or SIGTERM to libFuzzer) found nothing, but
        // did not spend its budget either; any other failure without an input (a crash in the
        // harness, a signal libFuzzer did not catch) is a finding: its log says what happened.
        if o.interrupted && o.findings == 0 {
            interrupted.push(target.to_string());
            report.notes.push(format!(
                "{target}: interrupted by a signal after {seconds:.0} s, before its budget; \
                 nothing found in {} inputs",
                o.executions
            ));
        } else if !output.status.success() && o.findings == 0 {
            o.findings = 1;
            let tail: Vec<&str> = log.lines().rev().take(20).collect();
            report.notes.push(format!(
                "{target}: failed ({}) without an artifact; the log ends:\n{}",
                output.status,
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
        for a in &o.artifacts {
            report
                .notes
                .push(format!("{target}: finding written to {a}"));
        }
        found |= o.findings > 0;
        report.add(
            &format!("{target}_executions"),
            "downbeat",
            "inputs",
            &[o.executions as f64],
        );
        report.add(
            &format!("{target}_coverage"),
            "downbeat",
            "edges",
            &[o.coverage as f64],
        );
        report.add(
            &format!("{target}_features"),
            "downbeat",
            "features",
            &[o.features as f64],
        );
        report.add(
            &format!("{target}_exec_per_s"),
            "downbeat",
            "inputs/s",
            &[o.executions as f64 / seconds.max(1e-9)],
        );
        report.add(&format!("{target}_seconds"), "downbeat", "s", &[seconds]);
        report.add(
            &format!("{target}_findings"),
            "downbeat",
            "inputs",
            &[o.findings as f64],
        );
    }
    if let Some(s) = scratch {
        let _ = std::fs::remove_dir_all(s);
    }
    if found {
        report.print(args.json);
        eprintln!("bench fuzz: findings; the inputs are in fuzz/artifacts/");
        std::process::exit(1);
    }
    if !interrupted.is_empty() {
        report.print(args.json);
        eprintln!(
            "bench fuzz: {} interrupted before its budget (no finding)",
            interrupted.join(", ")
        );
        std::process::exit(1);
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_last_status_the_final_stats_and_the_artifacts() {
        let log = "\
INFO: Seed: 1
#2\tINITED cov: 120 ft: 130 corp: 2/10b exec/s: 0 rss: 30Mb
#1024\tpulse  cov: 150 ft: 200 corp: 5/40b lim: 4 exec/s: 512 rss: 31Mb
#2000\tDONE   cov: 160 ft: 210 corp: 6/44b lim: 4 exec/s: 1000 rss: 31Mb
Done 2000 runs in 2 second(s)
stat::number_of_executed_units: 2001
stat::peak_rss_mb:              31
";
        let o = parse(log);
        assert_eq!(
            (o.executions, o.coverage, o.features, o.findings),
            (2001, 160, 210, 0)
        );
        let crash = "\
#77\tNEW    cov: 99 ft: 101 corp: 3/9b lim: 4 exec/s: 0 rss: 30Mb L: 3/3 MS: 1 ChangeBit-
==1== ERROR: libFuzzer: deadly signal
artifact_prefix='/f/artifacts/t/'; Test unit written to /f/artifacts/t/crash-abc
";
        let o = parse(crash);
        assert_eq!(
            (o.executions, o.coverage, o.features, o.findings),
            (77, 99, 101, 1)
        );
        assert_eq!(o.artifacts, ["/f/artifacts/t/crash-abc"]);
        assert!(!o.interrupted);
        let stopped = "\
#1573732\tpulse  cov: 5376 ft: 14894 corp: 900/60Kb lim: 4096 exec/s: 1685 rss: 430Mb
==7== libFuzzer: run interrupted; exiting
stat::number_of_executed_units: 1573732
";
        let o = parse(stopped);
        assert!(o.interrupted);
        assert_eq!((o.executions, o.findings), (1573732, 0));
    }

    #[test]
    fn runs_win_over_seconds_and_quick_is_short() {
        let args = |quick, seconds, runs| FuzzArgs {
            json: false,
            quick,
            targets: Vec::new(),
            seconds,
            runs,
        };
        assert_eq!(args(false, None, None).budget(), Budget::Seconds(60));
        assert_eq!(args(true, None, None).budget(), Budget::Seconds(1));
        assert_eq!(args(false, Some(5), None).budget(), Budget::Seconds(5));
        assert_eq!(args(true, None, Some(9)).budget(), Budget::Runs(9));
    }
}
