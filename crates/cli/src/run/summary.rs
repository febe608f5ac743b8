//! What `downbeat run` says at the end: the summary (text or `--json`), the warnings about
//! work a node lost, and the HTML load report (`--report`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use downbeat::record::Recorded;
use downbeat::{Engine, LoadSummary};
use downbeat_cli::Failure;
use downbeat_graph::{NodeCount, SharedMonitor};
use serde::Serialize;

/// A node's level over the run (`--meters`).
#[derive(Serialize)]
pub(crate) struct NodeLevelLine {
    pub(crate) node: String,
    pub(crate) peak: f32,
    pub(crate) rms: f32,
}

/// A node's counters (see `downbeat_graph::NodeMonitor`) at the end of a run.
#[derive(Serialize)]
pub(crate) struct NodeCountsLine {
    node: String,
    counts: BTreeMap<&'static str, u64>,
    /// The counters of something lost (dropped input, skipped work) that are not zero.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    losses: Vec<&'static str>,
    /// Every counter in the node's own order, for the text summary.
    #[serde(skip)]
    ordered: Vec<NodeCount>,
}

impl NodeCountsLine {
    /// The counters `monitor` holds now.
    pub(crate) fn read(node: String, monitor: &SharedMonitor) -> Self {
        let ordered = monitor.counts();
        Self {
            node,
            counts: ordered.iter().map(|c| (c.name, c.value)).collect(),
            losses: ordered
                .iter()
                .filter(|c| c.loss && c.value > 0)
                .map(|c| c.name)
                .collect(),
            ordered,
        }
    }
}

/// A file the run wrote (`--out`, `--record-input`).
#[derive(Serialize)]
pub(crate) struct RecordingLine {
    path: PathBuf,
    /// Frames in the file, the lost ones included.
    frames: u64,
    seconds: f64,
    /// Frames the disk did not take in time: silence in the file.
    lost_frames: u64,
}

impl RecordingLine {
    pub(crate) fn new(r: &Recorded, rate: f64) -> Self {
        Self {
            path: r.path.clone(),
            frames: r.frames,
            seconds: r.frames as f64 / rate,
            lost_frames: r.lost_frames,
        }
    }
}

/// The summary of a run, as printed (`--json`: this object).
#[derive(Serialize)]
pub(crate) struct Summary {
    pub(crate) project: String,
    pub(crate) device: &'static str,
    pub(crate) sample_rate: u32,
    pub(crate) block_size: usize,
    pub(crate) channels: usize,
    pub(crate) nodes: usize,
    /// Frames by which the output lags the graph's sources (see `Schedule::latency`).
    pub(crate) latency_frames: usize,
    pub(crate) threads: usize,
    pub(crate) pool_wakes: u64,
    pub(crate) seconds: f64,
    pub(crate) wall_seconds: f64,
    pub(crate) late_wakeups: u64,
    pub(crate) xruns: u64,
    /// The device the run fell back to when its own was lost, and when (in seconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fallback: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fallback_at_seconds: Option<f64>,
    /// OSC messages applied and packets refused, with `--osc`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) osc_applied: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) osc_rejected: Option<u64>,
    /// With `--meters`: every node's peak and RMS over the run (linear, 1.0 = full scale).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) node_levels: Option<Vec<NodeLevelLine>>,
    /// The files written, with the frames lost to a slow disk.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) recordings: Vec<RecordingLine>,
    /// The counters of the nodes that keep some (an `echoes` node's taps and drops).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) node_counts: Vec<NodeCountsLine>,
    /// With `--save-state`: where the nodes' states went, and how many.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) saved_states: Option<SavedStatesLine>,
    #[serde(flatten)]
    pub(crate) load: LoadSummary,
}

/// The states `--save-state` wrote.
#[derive(Serialize)]
pub(crate) struct SavedStatesLine {
    pub(crate) dir: PathBuf,
    pub(crate) nodes: usize,
}

/// Says on stderr, whatever the format, what any node dropped: nothing goes unmentioned.
pub(crate) fn warn_losses(s: &Summary) {
    for line in s.node_counts.iter().filter(|l| !l.losses.is_empty()) {
        let lost: Vec<String> = line
            .losses
            .iter()
            .map(|name| format!("{name} {}", line.counts[name]))
            .collect();
        eprintln!(
            "warning: node `{}` lost part of its work: {} (see `downbeat nodes` for what its \
             counters mean)",
            line.node,
            lost.join(", ")
        );
    }
}

/// Says on stderr, whatever the format, how much of a recording the disk did not take in
/// time.
pub(crate) fn warn_lost_frames(s: &Summary) {
    for r in s.recordings.iter().filter(|r| r.lost_frames > 0) {
        eprintln!(
            "warning: recording `{}` lost {} frame(s) ({:.3} s): the disk did not keep up, \
             so they are silence in the file",
            r.path.display(),
            r.lost_frames,
            r.lost_frames as f64 / f64::from(s.sample_rate)
        );
    }
}

/// Writes the HTML load report: load over time, histogram, time per node.
pub(crate) fn write_report(path: &Path, s: &Summary, engine: &Engine) -> Result<(), Failure> {
    let schedule = engine.schedule();
    let blocks = s.load.blocks.max(1) as f64;
    let node_us = (0..schedule.len())
        .map(|i| {
            let us = schedule.node_time(i).as_secs_f64() * 1e6 / blocks;
            (schedule.names()[i].clone(), us)
        })
        .collect();
    let subtitle = format!(
        "{} device, {} thread(s), {} nodes, {} Hz, {} frames per block, {:.1} s of audio",
        s.device, s.threads, s.nodes, s.sample_rate, s.block_size, s.seconds
    );
    let data = super::report::ReportData {
        title: &s.project,
        subtitle: &subtitle,
        summary: s.load,
        samples: engine.load().samples(),
        node_us,
        budget_us: s.block_size as f64 / s.sample_rate as f64 * 1e6,
    };
    super::report::write(path, &data)
        .map_err(|e| Failure::Runtime(format!("cannot write `{}`: {e}", path.display())))
}

/// Prints the summary: as one JSON object with `json`, else as text.
pub(crate) fn print(s: &Summary, json: bool) {
    if json {
        println!("{}", serde_json::to_string(s).expect("summary serializes"));
    } else {
        print_text(s);
    }
}

fn print_text(s: &Summary) {
    let l = &s.load;
    println!(
        "{} on the {} device: {} nodes on {} thread(s), {} Hz, {} frames per block, {:.2} s of audio in {:.2} s",
        s.project, s.device, s.nodes, s.threads, s.sample_rate, s.block_size, s.seconds, s.wall_seconds
    );
    println!(
        "blocks {}  load P0 {:.3}  P25 {:.3}  P50 {:.3}  P75 {:.3}  P99 {:.3}  P99.9 {:.3}  max {:.3}",
        l.blocks, l.load_p0, l.load_p25, l.load_p50, l.load_p75, l.load_p99, l.load_p999, l.load_max
    );
    println!(
        "deadline misses {} (load above 1.0){}",
        l.missed,
        match s.device {
            "virtual" => format!(", late wake-ups {}", s.late_wakeups),
            "jack" => format!(", JACK xruns {}", s.xruns),
            "system" => format!(", xruns {} (underruns, overruns, stream errors)", s.xruns),
            _ => String::new(),
        }
    );
    if let Some(levels) = &s.node_levels {
        print_levels(levels);
    }
    if !s.node_counts.is_empty() {
        print_counts(&s.node_counts);
    }
    if let (Some(applied), Some(rejected)) = (s.osc_applied, s.osc_rejected) {
        println!("osc: {applied} message(s) applied, {rejected} packet(s) rejected");
    }
    for r in &s.recordings {
        let lost = match r.lost_frames {
            0 => String::new(),
            n => format!(", {n} frame(s) lost to a slow disk"),
        };
        println!("wrote {} ({:.2} s{lost})", r.path.display(), r.seconds);
    }
    if let Some(saved) = &s.saved_states {
        println!(
            "saved the state of {} node(s) to {}",
            saved.nodes,
            saved.dir.display()
        );
    }
}

fn print_levels(levels: &[NodeLevelLine]) {
    println!("node levels over the run (dBFS):");
    let width = levels.iter().map(|l| l.node.len()).max().unwrap_or(0);
    for l in levels {
        println!(
            "  {:width$}  peak {:>7.1}  rms {:>7.1}",
            l.node,
            20.0 * l.peak.log10(),
            20.0 * l.rms.log10()
        );
    }
}

fn print_counts(lines: &[NodeCountsLine]) {
    println!("node counters:");
    let width = lines.iter().map(|l| l.node.len()).max().unwrap_or(0);
    for l in lines {
        let counts: Vec<String> = l
            .ordered
            .iter()
            .map(|c| format!("{} {}", c.name, c.value))
            .collect();
        println!("  {:width$}  {}", l.node, counts.join("  "));
    }
}
