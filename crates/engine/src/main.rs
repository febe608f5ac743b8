//! The `downbeat` command-line tool.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use downbeat::device::{Device, DeviceError, Offline, RunLength, Virtual};
use downbeat::project::Project;
use downbeat::{Engine, LoadSummary};
use serde::Serialize;

mod jitter;

/// Downbeat: a real-time audio runtime. Runs audio graphs described in project files.
#[derive(Parser)]
#[command(name = "downbeat", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs a project on a device and prints a load summary.
    Run {
        /// The project file (.toml).
        project: PathBuf,
        /// Where the audio goes.
        #[arg(long, value_enum, default_value_t = DeviceKind::Virtual)]
        device: DeviceKind,
        /// Seconds of audio to produce.
        #[arg(long, default_value_t = 10.0, value_parser = parse_seconds)]
        seconds: f64,
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
    },
    /// Checks a project file and its graph without running it.
    Check {
        /// The project file (.toml).
        project: PathBuf,
    },
    /// Lists the node types and their parameters.
    Nodes,
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

#[derive(Clone, Copy, ValueEnum)]
enum DeviceKind {
    /// Real time, paced by the system clock, no sound card needed.
    Virtual,
    /// As fast as possible (use with --out to render a file).
    Offline,
    /// A JACK server's real-time callback (build with `--features jack`).
    Jack,
}

fn parse_seconds(s: &str) -> Result<f64, String> {
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

/// A failure and the exit code it maps to: 2 for bad input, 1 for anything else.
enum Failure {
    Input(String),
    Runtime(String),
}

#[derive(Serialize)]
struct Summary {
    project: String,
    device: &'static str,
    sample_rate: u32,
    block_size: usize,
    channels: usize,
    nodes: usize,
    threads: usize,
    pool_wakes: u64,
    seconds: f64,
    wall_seconds: f64,
    late_wakeups: u64,
    xruns: u64,
    #[serde(flatten)]
    load: LoadSummary,
}

fn main() -> ExitCode {
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
                "{}: ok, {} nodes, {} edges, {} Hz, {} frames per block, {} output channels",
                p.file,
                s.len(),
                p.edges.len(),
                p.sample_rate,
                p.block_size,
                s.channels()
            );
            Ok(())
        }
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
        Command::Run {
            project,
            device,
            seconds,
            out,
            threads,
            json,
            report,
            connect,
        } => {
            if connect.is_some() && !matches!(device, DeviceKind::Jack) {
                return Err(Failure::Input(
                    "--connect only applies to `--device jack`".into(),
                ));
            }
            for (flag, path) in [("--out", &out), ("--report", &report)] {
                if let Some(dir) = path.as_ref().and_then(|o| o.parent()) {
                    if !dir.as_os_str().is_empty() && !dir.is_dir() {
                        return Err(Failure::Input(format!(
                            "{flag}: directory `{}` does not exist",
                            dir.display()
                        )));
                    }
                }
            }
            let (p, schedule) = match device {
                DeviceKind::Jack => load_adapted(&project, follow_jack_rate)?,
                _ => load(&project)?,
            };
            let nodes = schedule.len();
            let mut engine = Engine::new(schedule);
            let threads = threads.map_or_else(downbeat_rt::pool::available_cores, usize::from);
            for note in engine.set_threads(threads) {
                eprintln!("note: {note}");
            }
            engine.schedule().set_profiling(report.is_some());
            let length = RunLength::seconds(seconds, engine.sample_rate());
            let mut dev: Box<dyn Device> = match device {
                DeviceKind::Virtual => Box::new(Virtual::new(out.clone())),
                DeviceKind::Offline => Box::new(Offline::new(out.clone())),
                DeviceKind::Jack => jack_device(connect.clone(), out.clone())?,
            };
            let run_report = dev.run(&mut engine, length).map_err(|e| match e {
                DeviceError::Config(m) => Failure::Input(m),
                DeviceError::Unavailable(m) => Failure::Runtime(m),
                other => Failure::Runtime(other.to_string()),
            })?;
            let summary = Summary {
                project: p.file.clone(),
                device: dev.name(),
                sample_rate: engine.sample_rate(),
                block_size: engine.block_size(),
                channels: engine.channels(),
                nodes,
                threads: engine.threads(),
                pool_wakes: engine.pool_wakes(),
                seconds: run_report.frames as f64 / engine.sample_rate() as f64,
                wall_seconds: run_report.wall_seconds,
                late_wakeups: run_report.late_wakeups,
                xruns: dev.xruns(),
                load: engine.summary(),
            };
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

#[cfg(feature = "jack")]
fn jack_device(connect: Option<String>, out: Option<PathBuf>) -> Result<Box<dyn Device>, Failure> {
    Ok(Box::new(downbeat::device::Jack::new(
        "downbeat", connect, out,
    )))
}

#[cfg(not(feature = "jack"))]
fn jack_device(_: Option<String>, _: Option<PathBuf>) -> Result<Box<dyn Device>, Failure> {
    Err(Failure::Input(NO_JACK.into()))
}

#[cfg(not(feature = "jack"))]
const NO_JACK: &str = "this build has no JACK support; rebuild with the `jack` feature: \
    `cargo run --release --features jack -- run PROJECT --device jack` (needs libjack, \
    Debian: libjack-jackd2-dev)";

/// Sets the project to the JACK server's sample rate, which the device must follow.
#[cfg(feature = "jack")]
fn follow_jack_rate(project: &mut Project) -> Result<(), Failure> {
    let rate = downbeat::device::Jack::server_sample_rate("downbeat")
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    if rate != project.sample_rate {
        eprintln!(
            "note: following the JACK server's sample rate, {rate} Hz (the project asks for {} Hz)",
            project.sample_rate
        );
        project.sample_rate = rate;
    }
    Ok(())
}

#[cfg(not(feature = "jack"))]
fn follow_jack_rate(_: &mut Project) -> Result<(), Failure> {
    Err(Failure::Input(NO_JACK.into()))
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
            _ => String::new(),
        }
    );
    if let Some(out) = out {
        println!("wrote {}", out.display());
    }
}
