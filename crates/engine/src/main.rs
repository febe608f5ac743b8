//! The `downbeat` command-line tool.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use downbeat::device::RunLength;
use downbeat::project::Project;
use downbeat::{Engine, LoadSummary};
use serde::Serialize;

use cli_device::{DeviceArgs, DeviceKind, FallbackKind};

mod audit_cmd;
mod cli_device;
mod jitter;
mod latency;

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
    Run {
        /// The project file (.toml).
        project: PathBuf,
        /// Where the audio goes.
        #[arg(long, value_enum, default_value_t = DeviceKind::Virtual)]
        device: DeviceKind,
        /// With `--device system`: play on this output device (see `downbeat devices`)
        /// instead of the default one.
        #[arg(long, value_name = "NAME")]
        output_device: Option<String>,
        /// With `--device system`: capture from this input device instead of the default one.
        #[arg(long, value_name = "NAME")]
        input_device: Option<String>,
        /// With `--device offline` or `virtual`: what the project's `input` nodes hear.
        #[arg(long, value_name = "FILE.wav")]
        input: Option<PathBuf>,
        /// With `--device system` or `jack`: also write what the `input` nodes heard to this
        /// WAV file (replay it with `--device offline --input`).
        #[arg(long, value_name = "FILE.wav")]
        record_input: Option<PathBuf>,
        /// With `--device jack`: connect the input ports, in order, to the JACK output ports
        /// whose names start with this (e.g. `system:capture`).
        #[arg(long, value_name = "PORT")]
        connect_in: Option<String>,
        /// With `--device system` or `jack`: when the device or its server goes away mid-run,
        /// go on on this device instead of stopping.
        #[arg(long, value_enum, value_name = "DEVICE")]
        fallback: Option<FallbackKind>,
        /// Seconds of audio to produce [default: 10; with `--midi`, to the file's last event
        /// plus the longest release of the project's instruments].
        #[arg(long, value_parser = parse_seconds)]
        seconds: Option<f64>,
        /// Play this Standard MIDI file (format 0 or 1) into every node that plays notes,
        /// each event at the frame its tick falls on through the file's tempo map. A
        /// malformed file exits 2 naming the byte offset and what was expected there.
        #[arg(long, value_name = "FILE.mid")]
        midi: Option<PathBuf>,
        /// With `--device jack`: register a MIDI input port and connect it from the first
        /// JACK MIDI output port whose name starts with this (e.g. `a2j:` or a sequencer's
        /// client name); its notes, pedal and pitch bend reach every node that plays notes at
        /// the frame JACK gives them.
        #[arg(long, value_name = "PORT")]
        midi_in: Option<String>,
        /// With `--device jack`: connect the outputs, in order, to the JACK input ports whose
        /// names start with this (e.g. `system:playback`).
        #[arg(long, value_name = "PORT")]
        connect: Option<String>,
        /// Also write the audio to this WAV file (32-bit float).
        #[arg(long, value_name = "FILE.wav")]
        out: Option<PathBuf>,
        /// Threads processing the graph, the audio thread included (1 = serial).
        /// Default: every core.
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
        threads: Option<u16>,
        /// Print the summary as one JSON object on stdout.
        #[arg(long)]
        json: bool,
        /// Write an HTML load report with plots (load over time, histogram, time per node).
        #[arg(long, value_name = "FILE.html")]
        report: Option<PathBuf>,
        /// Write every parameter event the run applied, with the frame it took effect at,
        /// to this file (JSON lines), for `--replay`.
        #[arg(long, value_name = "FILE")]
        record_events: Option<PathBuf>,
        /// Apply the events recorded in this file (by `--record-events`) at their frames:
        /// with `--device offline --out`, the recorded run again, bit for bit.
        #[arg(long, value_name = "FILE")]
        replay: Option<PathBuf>,
        /// Serve Open Sound Control on this UDP address (e.g. 127.0.0.1:9000):
        /// `/node/<node>/<param> value`, `.../step value`, `.../ramp target seconds`,
        /// `.../exp target seconds`; bundles apply at their timetag. Refused packets are
        /// logged and counted in the summary (`osc_rejected`), and the run goes on.
        #[arg(long, value_name = "ADDR")]
        osc: Option<String>,
        /// Meter every node (peak and RMS over the run, through a watcher) and add the
        /// levels to the summary (`node_levels` in `--json`).
        #[arg(long)]
        meters: bool,
    },
    /// Checks a project file and its graph without running it.
    Check {
        /// The project file (.toml).
        project: PathBuf,
    },
    /// Lists the node types and their parameters.
    Nodes,
    /// Runs a plugin's process call under the real-time guard while moving its parameters
    /// and sending notes; reports allocations, frees, locks, system calls and page faults
    /// per callback. Exit 0 clean, 3 violations, 2 cannot load the plugin.
    Audit(audit_cmd::Args),
    /// Lists the computer's sound devices with their channels and sample rates (build with
    /// `--features system`).
    Devices,
    /// Measures the round-trip latency: plays clicks, finds them in the capture, and shows
    /// the result next to what the audio API claims.
    Latency(latency::Args),
    /// Measures how late a periodic tick wakes up on this machine (a cyclictest-like meter).
    Jitter {
        /// Tick period, e.g. 16ms, 1.45ms or 500us.
        #[arg(long, default_value = "16ms", value_parser = jitter::parse_period)]
        period: std::time::Duration,
        /// How long to measure.
        #[arg(long, default_value_t = 10.0, value_parser = parse_seconds)]
        seconds: f64,
        /// Background threads that sleep 1 ms in a loop, to load the scheduler.
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..=5000))]
        load: u16,
        /// Do not ask for real-time priority (what a user without permission gets; setting
        /// DOWNBEAT_NO_RT=1 does the same).
        #[arg(long)]
        no_rt: bool,
        /// How the last stretch before each deadline is waited for.
        #[arg(long, value_enum, default_value_t = jitter::SpinMode::Adaptive)]
        spin: jitter::SpinMode,
        /// Pin the ticking thread to this core.
        #[arg(long, value_name = "CORE")]
        pin: Option<usize>,
        /// Print the result as one JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
}

/// Puts the events of the MIDI file at `path` on the engine's timeline; returns how many
/// frames a run playing it lasts (its last event plus the longest release).
fn play_midi(
    path: &std::path::Path,
    project: &downbeat::project::Project,
    engine: &mut Engine,
) -> Result<u64, Failure> {
    use downbeat::midi::{play, MidiFile};
    let file = MidiFile::read(path)
        .map_err(|e| Failure::Input(format!("--midi `{}`: {e}", path.display())))?;
    let rate = engine.sample_rate();
    let table = engine.schedule().param_table();
    let cc = project
        .cc_mappings(&table)
        .map_err(|e| Failure::Input(e.to_string()))?;
    let events = play::events(&file, &table, &cc, rate)
        .map_err(|e| Failure::Input(format!("--midi `{}`: {e}", path.display())))?;
    engine
        .schedule_mut()
        .add_to_timeline(events)
        .expect("the events name nodes that play notes");
    Ok(play::run_frames(&file, &table, rate))
}

pub(crate) fn parse_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if v.is_finite() && v > 0.0 && v <= 86_400.0 {
        Ok(v)
    } else {
        Err(format!(
            "`{s}` is out of range: give seconds above 0 and at most 86400"
        ))
    }
}

/// A failure and the exit code it maps to: 2 for bad input, 3 for real-time violations
/// found by `downbeat audit`, 1 for anything else.
pub(crate) enum Failure {
    Input(String),
    Runtime(String),
    Violations(String),
}

#[derive(Serialize)]
struct NodeLevelLine {
    node: String,
    peak: f32,
    rms: f32,
}

/// A node's counters (see `downbeat_graph::NodeMonitor`) at the end of a run.
#[derive(Serialize)]
struct NodeCountsLine {
    node: String,
    counts: std::collections::BTreeMap<&'static str, u64>,
    /// The counters of something lost (dropped input, skipped work) that are not zero.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    losses: Vec<&'static str>,
    /// Every counter in the node's own order, for the text summary.
    #[serde(skip)]
    ordered: Vec<downbeat_graph::NodeCount>,
}

impl NodeCountsLine {
    fn read(node: String, monitor: &downbeat_graph::SharedMonitor) -> Self {
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

#[derive(Serialize)]
struct Summary {
    project: String,
    device: &'static str,
    sample_rate: u32,
    block_size: usize,
    channels: usize,
    nodes: usize,
    /// Frames by which the output lags the graph's sources (see `Schedule::latency`).
    latency_frames: usize,
    threads: usize,
    pool_wakes: u64,
    seconds: f64,
    wall_seconds: f64,
    late_wakeups: u64,
    xruns: u64,
    /// The device the run fell back to when its own was lost, and when (in seconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    fallback: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fallback_at_seconds: Option<f64>,
    /// OSC messages applied and packets refused, with `--osc`.
    #[serde(skip_serializing_if = "Option::is_none")]
    osc_applied: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    osc_rejected: Option<u64>,
    /// With `--meters`: every node's peak and RMS over the run (linear, 1.0 = full scale).
    #[serde(skip_serializing_if = "Option::is_none")]
    node_levels: Option<Vec<NodeLevelLine>>,
    /// The counters of the nodes that keep some (an `echoes` node's taps and drops).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    node_counts: Vec<NodeCountsLine>,
    #[serde(flatten)]
    load: LoadSummary,
}

fn main() -> ExitCode {
    // Plugin node types and the collected-heap ones (`echoes`) join the registry before any
    // project is read.
    #[cfg(feature = "lv2")]
    if let Err(e) = downbeat_plugin::lv2::register() {
        eprintln!("error: {e}");
        return ExitCode::from(1);
    }
    #[cfg(feature = "clap")]
    if let Err(e) = downbeat_plugin::clap::register() {
        eprintln!("error: {e}");
        return ExitCode::from(1);
    }
    if let Err(e) = downbeat_gc_nodes::register() {
        eprintln!("error: {e}");
        return ExitCode::from(1);
    }
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Input(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(2)
        }
        Err(Failure::Runtime(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(1)
        }
        Err(Failure::Violations(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(3)
        }
    }
}

fn load(path: &PathBuf) -> Result<(Project, downbeat_graph::Schedule), Failure> {
    load_adapted(path, |_| Ok(()))
}

/// Loads a project, lets `adapt` change it (e.g. to a server's sample rate), and builds it.
fn load_adapted(
    path: &PathBuf,
    adapt: impl FnOnce(&mut Project) -> Result<(), Failure>,
) -> Result<(Project, downbeat_graph::Schedule), Failure> {
    let mut project = Project::load(path).map_err(|e| Failure::Input(e.to_string()))?;
    adapt(&mut project)?;
    let schedule = project.build().map_err(|e| Failure::Input(e.to_string()))?;
    Ok((project, schedule))
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Check { project } => {
            let (p, s) = load(&project)?;
            println!(
                "{}: ok, {} nodes, {} edges, {} Hz, {} frames per block, {} output channels, \
                 latency {} frames",
                p.file,
                s.len(),
                p.edges.len(),
                p.sample_rate,
                p.block_size,
                s.channels(),
                s.latency()
            );
            Ok(())
        }
        Command::Audit(args) => audit_cmd::run(&args),
        Command::Nodes => {
            print!("{}", downbeat::project::node_reference());
            Ok(())
        }
        Command::Jitter {
            period,
            seconds,
            load,
            no_rt,
            spin,
            pin,
            json,
        } => {
            if pin.is_some_and(|c| c >= downbeat_rt::pool::available_cores()) {
                return Err(Failure::Input(format!(
                    "--pin {}: this machine has cores 0 to {}",
                    pin.unwrap_or_default(),
                    downbeat_rt::pool::available_cores() - 1
                )));
            }
            let args = jitter::Args {
                period,
                seconds,
                load: usize::from(load),
                no_rt,
                spin,
                pin,
                json,
            };
            if !json {
                println!(
                    "downbeat jitter: period {:.3} ms for {seconds} s, {load} load thread(s)",
                    period.as_secs_f64() * 1e3
                );
            }
            let summary = jitter::run(&args).map_err(Failure::Runtime)?;
            for note in &summary.notes {
                eprintln!("note: {note}");
            }
            if json {
                println!(
                    "{}",
                    serde_json::to_string(&summary).expect("summary serializes")
                );
            } else {
                println!("scheduling: {}", summary.realtime);
                print!("{}", jitter::render(&summary, spin));
            }
            Ok(())
        }
        Command::Devices => devices(),
        Command::Latency(args) => latency::run(&args),
        Command::Run {
            project,
            device,
            output_device,
            input_device,
            input,
            record_input,
            connect_in,
            fallback,
            seconds,
            out,
            threads,
            json,
            report,
            record_events,
            replay,
            connect,
            osc,
            meters,
            midi,
            midi_in,
        } => {
            let args = DeviceArgs {
                device,
                connect,
                connect_in,
                midi_in,
                output_device,
                input_device,
                input,
                record_input,
                fallback,
                out: out.clone(),
            };
            args.check()?;
            cli_device::check_dir("--report", report.as_deref())?;
            let built = cli_device::build(&project, &args)?;
            let p = built.project;
            let nodes = built.schedule.len();
            let latency_frames = built.schedule.latency();
            // Taken before the schedule moves to the audio thread; read after the run.
            let monitors = built.schedule.monitors();
            let mut engine = Engine::new(built.schedule);
            if let Some(path) = &replay {
                let table = engine.schedule().param_table();
                let events = downbeat::control::record::read_events(path, &table)
                    .map_err(|e| Failure::Input(format!("--replay `{}`: {e}", path.display())))?;
                engine
                    .schedule_mut()
                    .set_timeline(events)
                    .map_err(|e| Failure::Input(format!("--replay: {e}")))?;
            }
            let midi_frames = midi
                .as_deref()
                .map(|path| play_midi(path, &p, &mut engine))
                .transpose()?;
            cli_device::check_dir("--record-events", record_events.as_deref())?;
            let recorder = record_events
                .as_ref()
                .map(|_| Recorder::spawn(engine.record_events()));
            if let Some(capture) = built.capture {
                engine.set_capture(capture);
            }
            let osc = osc.map(|addr| serve_osc(&addr, &mut engine)).transpose()?;
            let mut watcher = meters.then(|| engine.watch());
            let threads = threads.map_or_else(downbeat_rt::pool::available_cores, usize::from);
            for note in engine.set_threads(threads) {
                eprintln!("note: {note}");
            }
            engine.schedule().set_profiling(report.is_some());
            let length = match (seconds, midi_frames) {
                (None, Some(frames)) => RunLength {
                    frames: frames.max(1),
                },
                (seconds, _) => RunLength::seconds(seconds.unwrap_or(10.0), engine.sample_rate()),
            };
            let mut dev = cli_device::make(&args, built.input)?;
            let progress = cli_device::Progress::attach(&mut engine, length.frames, json);
            let run = match dev.run(engine, length) {
                Ok(run) => run,
                Err(e) => {
                    progress.abandon();
                    return Err(cli_device::device_failure(e));
                }
            };
            let engine = run.engine;
            let osc = osc.map(downbeat::control::osc::OscServer::stop);
            // The watcher keeps sums since the start and the peak since its last look: one
            // look after the run gives the whole run's levels.
            let node_levels = watcher.as_mut().map(|w| {
                w.wait(std::time::Duration::from_secs(1));
                w.run_levels()
                    .into_iter()
                    .map(|(node, l)| NodeLevelLine {
                        node,
                        peak: l.peak,
                        rms: l.rms,
                    })
                    .collect()
            });
            if let (Some(path), Some(recorder)) = (&record_events, recorder) {
                let reader = recorder.finish();
                if engine.unrecorded_events() > 0 {
                    return Err(Failure::Runtime(format!(
                        "--record-events: {} events could not be recorded (the recorder fell \
                         behind); `{}` would be incomplete",
                        engine.unrecorded_events(),
                        path.display()
                    )));
                }
                reader.write(path).map_err(|e| {
                    Failure::Runtime(format!("cannot write `{}`: {e}", path.display()))
                })?;
            }
            progress.finish();
            let rate = engine.sample_rate() as f64;
            if let Some(f) = &run.report.fallback {
                eprintln!(
                    "note: {} at {:.3} s; the run went on on the virtual device from that block \
                     on, none dropped or repeated",
                    f.reason,
                    f.at_frame as f64 / rate
                );
            }
            let summary = Summary {
                project: p.file.clone(),
                device: dev.name(),
                sample_rate: engine.sample_rate(),
                block_size: engine.block_size(),
                channels: engine.channels(),
                nodes,
                latency_frames,
                threads: engine.threads(),
                pool_wakes: engine.pool_wakes(),
                seconds: run.report.frames as f64 / rate,
                wall_seconds: run.report.wall_seconds,
                late_wakeups: run.report.late_wakeups,
                xruns: run.report.xruns,
                fallback: run.report.fallback.as_ref().map(|_| "virtual"),
                fallback_at_seconds: run
                    .report
                    .fallback
                    .as_ref()
                    .map(|f| f.at_frame as f64 / rate),
                osc_applied: osc.map(|c| c.applied),
                osc_rejected: osc.map(|c| c.rejected),
                node_levels,
                node_counts: monitors
                    .into_iter()
                    .map(|(node, m)| NodeCountsLine::read(node, &m))
                    .collect(),
                load: engine.summary(),
            };
            // Said on stderr whatever the format: nothing a node drops goes unmentioned.
            for line in summary.node_counts.iter().filter(|l| !l.losses.is_empty()) {
                let lost: Vec<String> = line
                    .losses
                    .iter()
                    .map(|name| format!("{name} {}", line.counts[name]))
                    .collect();
                eprintln!(
                    "warning: node `{}` lost part of its work: {} (see `downbeat nodes` for \
                     what its counters mean)",
                    line.node,
                    lost.join(", ")
                );
            }
            if let Some(path) = &report {
                write_report(path, &summary, &engine)?;
            }
            if json {
                println!(
                    "{}",
                    serde_json::to_string(&summary).expect("summary serializes")
                );
            } else {
                print_summary(&summary, out.as_ref());
            }
            Ok(())
        }
    }
}

/// Events an OSC server's controller can hold before the audio thread takes them: far more
/// than a network burst between two blocks.
const OSC_QUEUE: usize = 4096;

/// Starts the `--osc` server; it logs every refused packet to stderr and goes on.
fn serve_osc(
    addr: &str,
    engine: &mut Engine,
) -> Result<downbeat::control::osc::OscServer, Failure> {
    let server = downbeat::control::osc::serve(addr, engine.controller(OSC_QUEUE), |from, why| {
        eprintln!("osc: rejected a packet from {from}: {why}")
    })
    .map_err(|e| Failure::Input(format!("--osc {addr}: cannot listen there: {e}")))?;
    eprintln!("osc: listening on udp {}", server.local_addr());
    Ok(server)
}

/// Drains a recording on a thread of its own while the run goes on.
struct Recorder {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<downbeat::control::record::RecordReader>,
}

impl Recorder {
    fn spawn(mut reader: downbeat::control::record::RecordReader) -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopping = std::sync::Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            while !stopping.load(std::sync::atomic::Ordering::Acquire) {
                reader.read();
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            reader.read();
            reader
        });
        Self { stop, thread }
    }

    fn finish(self) -> downbeat::control::record::RecordReader {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        self.thread
            .join()
            .expect("the recorder thread does not panic")
    }
}

fn write_report(path: &std::path::Path, s: &Summary, engine: &Engine) -> Result<(), Failure> {
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
    let data = downbeat::report::ReportData {
        title: &s.project,
        subtitle: &subtitle,
        summary: s.load,
        samples: engine.load().samples(),
        node_us,
        budget_us: s.block_size as f64 / s.sample_rate as f64 * 1e6,
    };
    downbeat::report::write(path, &data)
        .map_err(|e| Failure::Runtime(format!("cannot write `{}`: {e}", path.display())))
}

fn print_summary(s: &Summary, out: Option<&PathBuf>) {
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
    if !s.node_counts.is_empty() {
        println!("node counters:");
        let width = s
            .node_counts
            .iter()
            .map(|l| l.node.len())
            .max()
            .unwrap_or(0);
        for l in &s.node_counts {
            let counts: Vec<String> = l
                .ordered
                .iter()
                .map(|c| format!("{} {}", c.name, c.value))
                .collect();
            println!("  {:width$}  {}", l.node, counts.join("  "));
        }
    }
    if let (Some(applied), Some(rejected)) = (s.osc_applied, s.osc_rejected) {
        println!("osc: {applied} message(s) applied, {rejected} packet(s) rejected");
    }
    if let Some(out) = out {
        println!("wrote {}", out.display());
    }
}

#[cfg(feature = "system")]
fn devices() -> Result<(), Failure> {
    let list = downbeat::device::list_devices().map_err(cli_device::device_failure)?;
    if list.is_empty() {
        println!("no sound devices found");
    }
    for d in list {
        let default = match (d.default_output, d.default_input) {
            (true, true) => " (default output and input)",
            (true, false) => " (default output)",
            (false, true) => " (default input)",
            _ => "",
        };
        let rates: Vec<String> = d
            .sample_rates
            .iter()
            .map(|&(lo, hi)| {
                if lo == hi {
                    format!("{lo}")
                } else {
                    format!("{lo}-{hi}")
                }
            })
            .collect();
        println!(
            "{}{default}: {}\n    out {} ch, in {} ch, {} Hz",
            d.name,
            d.description,
            d.output_channels,
            d.input_channels,
            if rates.is_empty() {
                "?".to_string()
            } else {
                rates.join(", ")
            }
        );
    }
    Ok(())
}

#[cfg(not(feature = "system"))]
fn devices() -> Result<(), Failure> {
    Err(Failure::Input(cli_device::NO_SYSTEM.into()))
}
