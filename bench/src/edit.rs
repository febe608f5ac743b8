//! Live edits (issue 37): how soon an edit is heard, what applying it costs the audio
//! thread, and both against Firewheel.
//!
//! Every edit adds one node (a DC of [`nodes::LEVEL`], far above anything the graph sums to)
//! connected to the graph's mix, or removes it again; the graphs are N oscillators into a
//! mix into the output, at 48 kHz in 64-frame blocks (a budget of 1333 µs per block).
//!
//! * `audible` ([`audible`]): graphs of 10 and 1000 nodes play on the virtual device
//!   (`downbeat::start`, its callback thread at `SCHED_FIFO` where allowed) with a
//!   [`LiveEditor`](downbeat::edit::LiveEditor) on this thread. A `Watch` node between the
//!   mix and the output stamps the end of its work in the first block whose output carries
//!   the DC (a clock read, no allocation); the figure is that stamp less the instant
//!   `commit()` returned. It includes the wait for the next block boundary (the device's
//!   blocks are paced in real time, so that wait is spread over a whole block period) and
//!   the block's work up to the watch.
//! * `apply` ([`harness`], [`systems`]): a 1000-node graph of Downbeat's own `sine`s into
//!   a `mix`, an [`Editor`](downbeat_graph::Editor) compiling on a control thread, the
//!   [`Schedule`](downbeat_graph::Schedule) driven directly on an audio thread pinned to a
//!   core at `SCHED_FIFO` 80: `take_over` timed alone, the block it happens in, and the
//!   cost of the edit: that block less the ordinary block just before it.
//! * `firewheel` ([`harness`], [`firewheel`]): Downbeat's whole path (`LiveEditor::commit`,
//!   `Engine::process`) against Firewheel's (`FirewheelContext::update`, which compiles its
//!   schedule, and `FirewheelProcessor::process`, which swaps it in), with the same
//!   oscillator, mix and DC kernels in both ([`nodes`]), the same threads, pinning and
//!   priority, the same block size and rate, runs in alternating order; every block's
//!   output is checked (the graph audible, the DC present exactly after an add).

mod audible;
mod firewheel;
mod harness;
mod nodes;
mod systems;

use std::fmt;

use downbeat_graph::CompileConfig;

use crate::report::{quantile, Better, Report, Row};
use harness::{Kind, Samples};

/// The format of every graph here: the 64 frames at 48 kHz.
pub const RATE: u32 = 48_000;
pub const BLOCK: usize = 64;
pub const CFG: CompileConfig = CompileConfig {
    sample_rate: RATE,
    max_block: BLOCK,
};
/// The graph sizes, in nodes (the oscillators, the mix, the output and, on the device, the
/// watch).
pub const SIZES: [usize; 2] = [10, 1000];
/// A block's duration in µs: the audio thread's whole budget.
const BUDGET_US: f64 = BLOCK as f64 / RATE as f64 * 1e6;
/// Issue 37's target for applying an edit: 5% of the budget.
const TARGET_SHARE: f64 = 0.05;
/// The suite's cases.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// Edit to audible on the virtual device, 10 and 1000 nodes.
    Audible,
    /// Audio-thread cost of applying an edit to 1000 nodes: take_over and its block.
    Apply,
    /// Downbeat against Firewheel: compile time and audio-thread cost, 10 and 1000 nodes.
    Firewheel,
}

/// Options of `downbeat-bench edit`.
#[derive(clap::Args, Clone, Debug)]
pub struct EditArgs {
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Smoke mode: 20 edits per size and system instead of --edits (numbers meaningless).
    #[arg(long)]
    pub quick: bool,
    /// Edits per graph size and system, half adding the node and half removing it.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(4..=100_000))]
    pub edits: u32,
    /// Run only this case (repeatable); all cases when absent.
    #[arg(long = "case", value_enum, value_name = "CASE")]
    pub cases: Vec<Case>,
}

impl EditArgs {
    fn wants(&self, case: Case) -> bool {
        self.cases.is_empty() || self.cases.contains(&case)
    }

    /// Edits per size and system: an even number, so that the graph ends as it began.
    fn edits(&self) -> usize {
        let n = if self.quick { 20 } else { self.edits as usize };
        n.next_multiple_of(2)
    }
}

/// Why the suite stopped.
#[derive(Debug)]
pub enum Error {
    Graph(downbeat_graph::GraphError),
    Edit(downbeat_graph::EditError),
    Commit(downbeat::edit::CommitError),
    Device(downbeat::device::DeviceError),
    /// Firewheel refused a call; its errors are of several types, kept as text.
    Firewheel(String),
    /// A block's output was not what the graph plays (see `harness::check`).
    Check {
        system: &'static str,
        size: usize,
        what: String,
    },
    /// Something the suite waits for did not happen in time.
    Timeout(String),
    /// A ring between the threads was full or a thread is gone.
    Thread(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Graph(e) => write!(f, "the graph does not compile: {e}"),
            Error::Edit(e) => write!(f, "an edit was refused: {e}"),
            Error::Commit(e) => write!(f, "a commit failed: {e}"),
            Error::Device(e) => write!(f, "the virtual device failed: {e}"),
            Error::Firewheel(e) => write!(f, "Firewheel: {e}"),
            Error::Check { system, size, what } => {
                write!(f, "{system}, {size} nodes: wrong output: {what}")
            }
            Error::Timeout(what) => write!(f, "timed out: {what}"),
            Error::Thread(what) => write!(f, "{what}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<downbeat_graph::GraphError> for Error {
    fn from(e: downbeat_graph::GraphError) -> Self {
        Error::Graph(e)
    }
}

impl From<downbeat_graph::EditError> for Error {
    fn from(e: downbeat_graph::EditError) -> Self {
        Error::Edit(e)
    }
}

impl From<downbeat::edit::CommitError> for Error {
    fn from(e: downbeat::edit::CommitError) -> Self {
        Error::Commit(e)
    }
}

impl From<downbeat::device::DeviceError> for Error {
    fn from(e: downbeat::device::DeviceError) -> Self {
        Error::Device(e)
    }
}

/// Runs the suite and prints its report; the exit code: 1 when a case failed (an output
/// that is not what it should be, an edit that never arrived).
pub fn main(args: &EditArgs) -> i32 {
    match run(args) {
        Ok(report) => {
            report.print(args.json);
            0
        }
        Err(e) => {
            eprintln!("downbeat-bench edit: {e}");
            1
        }
    }
}

fn run(args: &EditArgs) -> Result<Report, Error> {
    let mut report = Report::new("edit");
    let edits = args.edits();
    report.notes.push(format!(
        "{RATE} Hz, {BLOCK}-frame blocks: {BUDGET_US:.1} µs budget per block; {edits} edits \
         per size and system (half add the DC node, half remove it); load average at the \
         start: {}",
        load_average()
    ));
    if args.wants(Case::Audible) {
        for size in SIZES {
            let (latencies, notes) = audible::measure(size, edits)?;
            add_with_p99(
                &mut report,
                &format!("audible_{size}"),
                "downbeat",
                &latencies,
            );
            report.notes.extend(notes);
        }
        report.notes.push(format!(
            "audible: virtual device, sines into a mix into a watch into the output; from \
             `LiveEditor::commit` returning to the end of the watch's work in the first block \
             carrying the DC; includes the wait for the next block boundary (uniform over \
             the {BUDGET_US:.0} µs period) and that block's work up to the watch"
        ));
    }
    let mut plan: Vec<(usize, Vec<Kind>)> = Vec::new();
    for size in SIZES {
        let mut kinds = Vec::new();
        if args.wants(Case::Apply) && size == 1000 {
            kinds.push(Kind::Schedule);
        }
        if args.wants(Case::Firewheel) {
            kinds.extend([Kind::Engine, Kind::Firewheel]);
        }
        if !kinds.is_empty() {
            plan.push((size, kinds));
        }
    }
    if !plan.is_empty() {
        let (samples, notes) = harness::measure(&plan, edits)?;
        report.notes.extend(notes);
        for s in &samples {
            match s.kind {
                Kind::Schedule => apply_rows(&mut report, s),
                Kind::Engine | Kind::Firewheel => rival_rows(&mut report, s),
            }
        }
        if args.wants(Case::Firewheel) {
            rival_ratios(&mut report);
        }
    }
    Ok(report)
}

fn us(seconds: &[f64]) -> Vec<f64> {
    seconds.iter().map(|s| s * 1e6).collect()
}

/// A row (median, min, max) and its p10–p90 in the notes.
fn add_spread(report: &mut Report, case: &str, implementation: &str, samples_us: &[f64]) {
    report.add(case, implementation, "us", samples_us);
    let mut sorted = samples_us.to_vec();
    sorted.sort_by(f64::total_cmp);
    report.notes.push(format!(
        "{case} ({implementation}): p10 {:.2} µs, p90 {:.2} µs",
        quantile(&sorted, 0.1),
        quantile(&sorted, 0.9)
    ));
}

/// [`add_spread`] and a `_p99` row: the 99th percentile of the same samples, with their
/// count as its runs.
fn add_with_p99(report: &mut Report, case: &str, implementation: &str, samples_us: &[f64]) {
    add_spread(report, case, implementation, samples_us);
    let mut sorted = samples_us.to_vec();
    sorted.sort_by(f64::total_cmp);
    // Two decimals, as the table prints them: the clock's resolution is tens of ns.
    let p99 = (quantile(&sorted, 0.99) * 100.0).round() / 100.0;
    report.results.push(Row {
        case: format!("{case}_p99"),
        implementation: implementation.to_owned(),
        unit: "us".to_owned(),
        median: p99,
        min: p99,
        max: p99,
        runs: sorted.len(),
    });
}

fn apply_rows(report: &mut Report, s: &Samples) {
    let n = s.size;
    let cost = us(&s.cost);
    add_spread(
        report,
        &format!("apply_{n}_compile"),
        "downbeat",
        &us(&s.compile),
    );
    add_with_p99(
        report,
        &format!("apply_{n}_take_over"),
        "downbeat",
        &us(&s.apply),
    );
    add_spread(
        report,
        &format!("apply_{n}_edit_block"),
        "downbeat",
        &us(&s.edit),
    );
    add_spread(
        report,
        &format!("apply_{n}_plain_block"),
        "downbeat",
        &us(&s.plain),
    );
    add_with_p99(report, &format!("apply_{n}_cost"), "downbeat", &cost);
    let share: Vec<f64> = cost.iter().map(|c| 100.0 * c / BUDGET_US).collect();
    report.add(
        &format!("apply_{n}_cost_share"),
        "downbeat",
        "% of budget",
        &share,
    );
    let target = TARGET_SHARE * BUDGET_US;
    if let Some(median) = report.median(&format!("apply_{n}_cost"), "downbeat") {
        if median > 0.0 {
            report.ratios.insert(
                format!("apply_{n}_cost_vs_5%_budget"),
                (target / median * 1000.0).round() / 1000.0,
            );
        }
    }
    let mut sorted = cost.clone();
    sorted.sort_by(f64::total_cmp);
    let (median, p99) = (quantile(&sorted, 0.5), quantile(&sorted, 0.99));
    let verdict = |x: f64| if x < target { "met" } else { "NOT met" };
    report.notes.push(format!(
        "apply: {n} nodes (sines into a mix), Editor::commit on the control thread, the \
         Schedule driven on the audio thread; cost = the block with take_over less the \
         ordinary block before it. Target < {target:.1} µs (5% of {BUDGET_US:.0} µs): median \
         {median:.2} µs {} ({:.2}% of the budget), p99 {p99:.2} µs {}",
        verdict(median),
        100.0 * median / BUDGET_US,
        verdict(p99),
    ));
}

fn rival_rows(report: &mut Report, s: &Samples) {
    let n = s.size;
    let name = s.kind.name();
    add_spread(report, &format!("compile_{n}"), name, &us(&s.compile));
    add_spread(report, &format!("edit_block_{n}"), name, &us(&s.edit));
    add_spread(report, &format!("plain_block_{n}"), name, &us(&s.plain));
    add_with_p99(report, &format!("apply_{n}"), name, &us(&s.cost));
}

fn rival_ratios(report: &mut Report) {
    for n in SIZES {
        for case in ["compile", "edit_block", "plain_block", "apply"] {
            let case = format!("{case}_{n}");
            let (Some(ours), Some(theirs)) = (
                report.median(&case, "downbeat"),
                report.median(&case, "firewheel"),
            ) else {
                continue;
            };
            // A difference of two block times can be at or below zero when the edit costs
            // less than the noise; a ratio of such medians would mean nothing.
            if ours > 0.0 && theirs > 0.0 {
                report.ratio(&case, &case, "downbeat", "firewheel", Better::Lower);
            } else {
                report.notes.push(format!(
                    "{case}: no ratio, a median is not positive (downbeat {ours:.2} µs, \
                     firewheel {theirs:.2} µs)"
                ));
            }
        }
    }
    report.notes.push(
        "firewheel: the same oscillator, mix and DC kernels in both engines; compile = \
         LiveEditor::commit vs FirewheelContext::update (after the edit calls, with what the \
         audio side handed back already freed); edit_block = the block that applies the new \
         schedule (Engine::process vs FirewheelProcessor::process); apply = that block less \
         the ordinary block before it. Firewheel's graph also holds its graph-input node."
            .to_owned(),
    );
}

/// `/proc/loadavg`'s first three figures: how busy the machine was when the run began.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".to_owned())
}
