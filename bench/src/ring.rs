//! The ring suite: Downbeat's ring against rtrb, ringbuf and crossbeam's `ArrayQueue`, with
//! the machine's floor beside them.
//!
//! Each library runs in **its own binary** (`bench/src/bin/ring-*.rs`), which links that
//! library and no other ring: in one binary that links every library, where each loop lands
//! (alignment, what shares its cache lines and branch-predictor entries) depends on
//! everything else linked in, which moved the contended and round-trip cases by 20-30% with
//! no change to any ring. A child of this same binary would still carry every library, so
//! the children are separate `[[bin]]` targets built from the same loops
//! (`ring_child/queues.rs`), each with one library's trait impls. `ring-floor` measures
//! the limits in the same harness: one atomic ping-ponged between the two cores, and a
//! same-core `memcpy` of the bulk cases' bytes.
//!
//! Before measuring, this suite asks Cargo to build the children in this binary's profile,
//! so they are never stale; without Cargo, or with `DOWNBEAT_BENCH_PREBUILT` set, it uses
//! the ones next to this binary and says so in a note.
//! Every run starts each child once per case, the children of one case back to back in
//! alternating order (forward on even runs, backward on odd ones), and the ratios are medians
//! of the per-run ratios of those pairs, so drift in what the machine does (on this VM, the
//! host) lands on both halves of a pair.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::slice;

use crate::report::{Better, Report, Summary};
use crate::Common;

const OURS: &str = "downbeat";
const RIVALS: [&str; 3] = ["rtrb", "ringbuf", "crossbeam"];
/// Row name of the round-trip floor.
const FLOOR: &str = "floor: one atomic";
/// Row name of the bulk ceiling.
const MEMCPY: &str = "memcpy (same core)";
/// Set (to anything) to skip the build and use the `ring-*` binaries next to this one, e.g.
/// when they were copied together to another machine.
const PREBUILT: &str = "DOWNBEAT_BENCH_PREBUILT";
/// Repetitions when `--runs` is not given: each run is a few seconds.
const RUNS: usize = 15;

/// One child binary and the implementation name its rows carry.
struct Child {
    implementation: &'static str,
    binary: &'static str,
}

const CHILDREN: [Child; 5] = [
    Child {
        implementation: OURS,
        binary: "ring-downbeat",
    },
    Child {
        implementation: "rtrb",
        binary: "ring-rtrb",
    },
    Child {
        implementation: "ringbuf",
        binary: "ring-ringbuf",
    },
    Child {
        implementation: "crossbeam",
        binary: "ring-crossbeam",
    },
    // Its rows are named per case (`FLOOR`, `MEMCPY`).
    Child {
        implementation: "",
        binary: "ring-floor",
    },
];

/// Cases with their units, in table order, and whether more is better.
const CASES: [(&str, &str, Better); 6] = [
    ("uncontended", "Mitems/s", Better::Higher),
    ("contended", "Mitems/s", Better::Higher),
    ("bulk", "GB/s", Better::Higher),
    ("bulk_480", "GB/s", Better::Higher),
    ("roundtrip", "ns", Better::Lower),
    ("roundtrip_p99", "ns", Better::Lower),
];

/// How much work each case does in one run.
struct Sizes {
    uncontended_items: u64,
    contended_items: u64,
    bulk_blocks: u64,
    bulk_480_blocks: u64,
    round_trips: u64,
}

impl Sizes {
    fn new(quick: bool) -> Self {
        if quick {
            Self {
                uncontended_items: 10_000,
                contended_items: 10_000,
                bulk_blocks: 200,
                bulk_480_blocks: 200,
                round_trips: 1_000,
            }
        } else {
            Self {
                uncontended_items: 100_000_000,
                contended_items: 10_000_000,
                bulk_blocks: 1 << 18,
                bulk_480_blocks: 1 << 18,
                round_trips: 1_000_000,
            }
        }
    }

    /// The `case=size` arguments of the cases `common` asks for (`roundtrip` also yields
    /// `roundtrip_p99`).
    fn arguments(&self, common: &Common) -> Vec<String> {
        [
            ("uncontended", self.uncontended_items),
            ("contended", self.contended_items),
            ("bulk", self.bulk_blocks),
            ("bulk_480", self.bulk_480_blocks),
            ("roundtrip", self.round_trips),
        ]
        .into_iter()
        .filter(|(case, _)| common.wants(case))
        .map(|(case, size)| format!("{case}={size}"))
        .collect()
    }
}

/// Why the suite could not measure.
#[derive(Debug)]
pub enum RingError {
    /// Cargo ran but could not build the child binaries.
    Build(String),
    /// A child binary could not be started.
    Spawn {
        /// The child's path.
        binary: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A child ended with a failure (a check on the data failed, or it was killed).
    Child {
        /// The child's path.
        binary: PathBuf,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// What it printed on stderr.
        stderr: String,
    },
    /// A child printed a line this suite does not understand.
    Output {
        /// The child's path.
        binary: PathBuf,
        /// The line.
        line: String,
    },
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RingError::Build(why) => write!(f, "building the ring child binaries failed: {why}"),
            RingError::Spawn { binary, source } => {
                write!(f, "cannot start {}: {source}", binary.display())
            }
            RingError::Child {
                binary,
                status,
                stderr,
            } => write!(
                f,
                "{} failed ({status}): {}",
                binary.display(),
                stderr.trim_end()
            ),
            RingError::Output { binary, line } => {
                write!(
                    f,
                    "{} printed an unexpected line: {line:?}",
                    binary.display()
                )
            }
        }
    }
}

impl std::error::Error for RingError {}

/// Runs the suite; on failure prints what went wrong and exits with status 1.
pub fn run(common: &Common) -> Report {
    match measure(common) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("downbeat-bench ring: {e}");
            std::process::exit(1);
        }
    }
}

fn measure(common: &Common) -> Result<Report, RingError> {
    let sizes = Sizes::new(common.quick);
    let runs = common
        .runs
        .unwrap_or(if common.quick { 1 } else { RUNS })
        .max(1);
    let mut report = Report::new("ring");
    let (binaries, build_note) = child_binaries()?;
    report.notes.extend(build_note);
    let arguments = sizes.arguments(common);

    // (case, implementation) -> one figure per run, in run order, so that the i-th figures
    // of two libraries were measured back to back.
    let mut samples: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    let mut notes = Vec::new();
    let floor_binary = &binaries[CHILDREN.len() - 1];
    let mut gate = (!common.quick).then(HostGate::default);
    for run in 0..runs {
        for argument in &arguments {
            let round = loop {
                if let Some(gate) = &mut gate {
                    gate.before(floor_binary)?;
                }
                let mut round = Vec::new();
                for k in child_order(run) {
                    let (values, child_notes) = run_child(&binaries[k], slice::from_ref(argument))?;
                    notes.extend(child_notes);
                    round.push((k, values));
                }
                let keep = match &mut gate {
                    Some(gate) => gate.after(floor_binary)?,
                    None => true,
                };
                if keep {
                    break round;
                }
            };
            for (k, values) in round {
                for (case, value) in values {
                    let implementation = match CHILDREN[k].implementation {
                        "" if case.starts_with("roundtrip") => FLOOR,
                        "" => MEMCPY,
                        name => name,
                    };
                    samples
                        .entry((case, implementation.to_owned()))
                        .or_default()
                        .push(value);
                }
            }
        }
    }
    if let Some(gate) = &gate {
        notes.push(gate.note());
    }

    let names = CHILDREN
        .iter()
        .map(|c| c.implementation)
        .filter(|n| !n.is_empty())
        .chain([MEMCPY, FLOOR]);
    for (case, unit, _) in CASES {
        for name in names.clone() {
            if let Some(values) = samples.get(&(case.to_owned(), name.to_owned())) {
                report.add(case, name, unit, values);
            }
        }
    }
    for rival in RIVALS {
        for (case, _, better) in CASES {
            let pair = |name: &str| samples.get(&(case.to_owned(), name.to_owned()));
            if let (Some(ours), Some(theirs)) = (pair(OURS), pair(rival)) {
                if let Some(r) = paired_ratio(ours, theirs, better) {
                    report
                        .ratios
                        .insert(format!("{case}_vs_{rival}"), (r * 1000.0).round() / 1000.0);
                }
            }
        }
    }
    // How close each ring comes to the machine: floor / ring, so 1.0 would be the floor.
    let mut closeness = Vec::new();
    for case in ["roundtrip", "roundtrip_p99"] {
        let Some(floor) = report.median(case, FLOOR) else {
            continue;
        };
        if let Some(ours) = report.median(case, OURS) {
            let r = floor / ours;
            if r.is_finite() {
                report
                    .ratios
                    .insert(format!("{case}_vs_floor"), (r * 1000.0).round() / 1000.0);
            }
        }
        if case == "roundtrip" {
            for name in names.clone().filter(|n| *n != MEMCPY && *n != FLOOR) {
                if let Some(ring) = report.median(case, name) {
                    closeness.push(format!("{name} {:.2}x", ring / floor));
                }
            }
        }
    }
    if !closeness.is_empty() {
        report.notes.push(format!(
            "round trip over the floor (median / floor median): {}",
            closeness.join(", ")
        ));
    }
    notes.sort();
    notes.dedup();
    report.notes.extend(notes);
    report.notes.push(format!(
        "each library in its own binary (ring-downbeat, ring-rtrb, ring-ringbuf, \
         ring-crossbeam; ring-floor for the limits), started once per case and run, \
         {runs} run(s), each case's binaries back to back in alternating order; ratios are \
         medians of the per-run ratios of those back-to-back pairs; producer pinned to CPU \
         0, consumer to CPU 1. \
         uncontended: queue of 65536 u64, {} items; contended: capacity 4, {} items; \
         bulk: ring of 8 blocks, {} blocks of 512 stereo f32 frames (4 KiB); \
         bulk_480: ring of 3000 samples, {} blocks of 480 stereo frames (3840 B); \
         roundtrip: {} trips over two queues of 64. {MEMCPY} copies the same bytes on one \
         core; {FLOOR} is one atomic ping-ponged between the two cores, timed like the rings.",
        sizes.uncontended_items,
        sizes.contended_items,
        sizes.bulk_blocks,
        sizes.bulk_480_blocks,
        sizes.round_trips
    ));
    Ok(report)
}

/// Keeps rounds measured while the host had our two vCPUs close together.
///
/// On the VM these figures come from, the host moves the vCPUs for seconds at a time to
/// where a cache line takes three to four times as long to cross (the floor's round trip goes
/// from 120-140 ns to 400-650 ns; a same-core `memcpy` does not change): every ring is then
/// several times slower and ranks differently, and a round that straddles a move compares two
/// machines. So each round (every library once, one case) is bracketed by a short floor
/// probe, and a round whose probes are not both within twice the fastest probe seen is
/// measured again, at most [`HostGate::RETRIES`] times in a row.
#[derive(Default)]
struct HostGate {
    /// The fastest probe so far, ns.
    best: Option<f64>,
    /// The probe before the current round, ns.
    before_ns: f64,
    /// Rounds measured again, and rounds kept after the last retry anyway.
    repeated: usize,
    kept_far: usize,
    /// Retries of the current round.
    retries: usize,
}

impl HostGate {
    const RETRIES: usize = 20;
    const TRIPS: &'static str = "roundtrip=20000";

    /// The probe before a round.
    fn before(&mut self, floor: &Path) -> Result<(), RingError> {
        self.before_ns = self.probe(floor)?;
        Ok(())
    }

    /// The probe after a round: whether to keep it (`false`: measure it again).
    fn after(&mut self, floor: &Path) -> Result<bool, RingError> {
        let after = self.probe(floor)?;
        Ok(self.keep(after))
    }

    /// Whether a round whose probes were `self.before_ns` and `after` counts.
    fn keep(&mut self, after: f64) -> bool {
        let limit = 2.0 * self.best.unwrap_or(f64::INFINITY);
        if self.before_ns.max(after) <= limit {
            self.retries = 0;
            return true;
        }
        if self.retries == Self::RETRIES {
            self.retries = 0;
            self.kept_far += 1;
            return true;
        }
        self.retries += 1;
        self.repeated += 1;
        false
    }

    /// The floor's median round trip over a short run, ns.
    fn probe(&mut self, floor: &Path) -> Result<f64, RingError> {
        let (values, _) = run_child(floor, &[Self::TRIPS.to_owned()])?;
        let ns = values
            .iter()
            .find(|(case, _)| case == "roundtrip")
            .map(|&(_, v)| v)
            .ok_or_else(|| RingError::Output {
                binary: floor.to_owned(),
                line: "(no roundtrip figure from the probe)".to_owned(),
            })?;
        self.seen(ns);
        Ok(ns)
    }

    fn seen(&mut self, ns: f64) {
        self.best = Some(self.best.map_or(ns, |b| b.min(ns)));
    }

    fn note(&self) -> String {
        format!(
            "host gate: each round bracketed by a {} floor probe; {} round(s) measured again \
             because a probe was above twice the fastest ({:.0} ns); {} kept after {} retries",
            Self::TRIPS,
            self.repeated,
            self.best.unwrap_or(f64::NAN),
            self.kept_far,
            Self::RETRIES
        )
    }
}

/// The order in which run `run` starts the children: forward on even runs, backward on odd
/// ones, so no library always goes first.
fn child_order(run: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..CHILDREN.len()).collect();
    if run % 2 == 1 {
        order.reverse();
    }
    order
}

/// Ours against a rival as the median of per-run ratios (`> 1` means ours is better), from
/// figures where the i-th of each was measured back to back. Pairing is what makes the ratio
/// survive this VM's swings: for minutes at a time every ring runs several times slower
/// (the host, not the guest, moves), so a ratio of medians compares one library's fast runs
/// with another's slow ones whenever the swing lands between them, where the two halves of
/// a pair nearly always share it.
fn paired_ratio(ours: &[f64], theirs: &[f64], better: Better) -> Option<f64> {
    if ours.len() != theirs.len() {
        return None;
    }
    let ratios: Vec<f64> = ours
        .iter()
        .zip(theirs)
        .map(|(&a, &b)| match better {
            Better::Higher => a / b,
            Better::Lower => b / a,
        })
        .collect();
    // The median of the finite ratios; NaN when there are none.
    let median = Summary::of(&ratios).median;
    median.is_finite().then_some(median)
}

/// Starts one child and collects its figures and notes.
#[allow(clippy::type_complexity)]
fn run_child(
    binary: &Path,
    arguments: &[String],
) -> Result<(Vec<(String, f64)>, Vec<String>), RingError> {
    let out = Command::new(binary)
        .args(arguments)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| RingError::Spawn {
            binary: binary.to_owned(),
            source,
        })?;
    if !out.status.success() {
        return Err(RingError::Child {
            binary: binary.to_owned(),
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    parse_child_output(binary, &String::from_utf8_lossy(&out.stdout))
}

/// Parses `value CASE NUMBER` and `note TEXT` lines.
#[allow(clippy::type_complexity)]
fn parse_child_output(
    binary: &Path,
    text: &str,
) -> Result<(Vec<(String, f64)>, Vec<String>), RingError> {
    let mut values = Vec::new();
    let mut notes = Vec::new();
    for line in text.lines() {
        let bad = || RingError::Output {
            binary: binary.to_owned(),
            line: line.to_owned(),
        };
        if let Some(note) = line.strip_prefix("note ") {
            notes.push(note.to_owned());
        } else if let Some(rest) = line.strip_prefix("value ") {
            let (case, number) = rest.split_once(' ').ok_or_else(bad)?;
            if !CASES.iter().any(|(c, _, _)| *c == case) {
                return Err(bad());
            }
            let number: f64 = number.parse().map_err(|_| bad())?;
            values.push((case.to_owned(), number));
        } else {
            return Err(bad());
        }
    }
    Ok((values, notes))
}

/// The children's paths, in `CHILDREN` order, built fresh by Cargo in this binary's
/// profile; without Cargo (or the sources), the binaries next to this one, with a note.
fn child_binaries() -> Result<(Vec<PathBuf>, Option<String>), RingError> {
    let here = std::env::current_exe().ok();
    let dir = here.as_deref().and_then(Path::parent);
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(&cargo);
    build
        .args([
            "build",
            "--quiet",
            "--message-format=json-render-diagnostics",
        ])
        .arg("--manifest-path")
        .arg(&manifest)
        .args(["-p", "downbeat-bench"]);
    for child in &CHILDREN {
        build.args(["--bin", child.binary]);
    }
    // The profile this binary was built with: its directory is named after it.
    match dir.and_then(Path::file_name).and_then(|n| n.to_str()) {
        Some("debug") | None => {}
        Some("release") => {
            build.arg("--release");
        }
        Some(profile) => {
            build.args(["--profile", profile]);
        }
    }
    let siblings = || {
        CHILDREN
            .iter()
            .map(|c| dir.unwrap_or(Path::new(".")).join(c.binary))
            .collect::<Vec<_>>()
    };
    if std::env::var_os(PREBUILT).is_some() {
        return Ok((
            siblings(),
            Some(format!(
                "{PREBUILT} set: using the ring-* binaries next to this one as built"
            )),
        ));
    }
    if !manifest.exists() {
        return Ok((
            siblings(),
            Some("sources not found: using the ring-* binaries next to this one as built".into()),
        ));
    }
    let out = match build.stderr(Stdio::inherit()).output() {
        Ok(out) => out,
        Err(e) => {
            return Ok((
                siblings(),
                Some(format!(
                    "cargo could not be run ({e}): using the ring-* binaries next to this \
                     one as built"
                )),
            ))
        }
    };
    if !out.status.success() {
        return Err(RingError::Build(format!(
            "{} exited with {}",
            Path::new(&cargo).display(),
            out.status
        )));
    }
    let mut found: BTreeMap<String, PathBuf> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if let (Some(name), Some(exe)) =
            (msg["target"]["name"].as_str(), msg["executable"].as_str())
        {
            found.insert(name.to_owned(), PathBuf::from(exe));
        }
    }
    let paths = CHILDREN
        .iter()
        .map(|c| {
            found.remove(c.binary).ok_or_else(|| {
                RingError::Build(format!("cargo reported no executable for {}", c.binary))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((paths, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_measures_again_rounds_the_host_slowed() {
        let mut gate = HostGate::default();
        let round = |gate: &mut HostGate, before: f64, after: f64| {
            gate.seen(before);
            gate.before_ns = before;
            gate.seen(after);
            gate.keep(after)
        };
        assert!(round(&mut gate, 130.0, 120.0));
        // Started near, ended far: the host moved during the round.
        assert!(!round(&mut gate, 130.0, 450.0));
        assert!(!round(&mut gate, 600.0, 130.0));
        assert!(
            round(&mut gate, 240.0, 140.0),
            "within twice the fastest (120)"
        );
        assert_eq!((gate.repeated, gate.kept_far), (2, 0));
        // A host that never comes back: the round is kept after the last retry, and counted.
        for _ in 0..HostGate::RETRIES {
            assert!(!round(&mut gate, 500.0, 500.0));
        }
        assert!(round(&mut gate, 500.0, 500.0));
        assert_eq!(gate.kept_far, 1);
        assert!(
            gate.note().contains("22 round(s) measured again"),
            "{}",
            gate.note()
        );
    }

    #[test]
    fn ratios_pair_runs_so_a_swing_between_them_does_not_count() {
        // Run 3 is slow for us and fast for the rival: the host swung between the two halves
        // of a pair only there. A ratio of medians (2 / 9) would report us at a fifth.
        let ours = [10.0, 10.0, 2.0, 2.0, 2.0];
        let theirs = [9.0, 9.0, 9.0, 1.8, 1.8];
        let r = paired_ratio(&ours, &theirs, Better::Higher).unwrap();
        assert!((r - 10.0 / 9.0).abs() < 1e-9, "{r}");
        // Times: less is better, so the rival's time over ours.
        let r = paired_ratio(
            &[140.0, 150.0, 600.0],
            &[150.0, 150.0, 620.0],
            Better::Lower,
        );
        assert!((r.unwrap() - 620.0 / 600.0).abs() < 1e-9, "{r:?}");
        assert_eq!(paired_ratio(&[1.0, 2.0], &[1.0], Better::Higher), None);
        assert_eq!(paired_ratio(&[], &[], Better::Higher), None);
    }

    #[test]
    fn child_lines_parse_and_bad_ones_are_named() {
        let bin = Path::new("ring-x");
        let (values, notes) = parse_child_output(
            bin,
            "note not pinned\nvalue bulk 8.5\nvalue roundtrip 160\n",
        )
        .unwrap();
        assert_eq!(
            values,
            vec![("bulk".to_owned(), 8.5), ("roundtrip".to_owned(), 160.0)]
        );
        assert_eq!(notes, vec!["not pinned".to_owned()]);
        for bad in [
            "value bulk fast",
            "value nosuchcase 1",
            "bulk 8.5",
            "value bulk",
        ] {
            let e = parse_child_output(bin, bad).unwrap_err();
            assert!(e.to_string().contains(bad), "{e}");
        }
    }
}
