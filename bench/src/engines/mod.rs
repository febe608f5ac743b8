//! `bench engines` (issue 28): Downbeat against the engines users would pick instead —
//! SuperCollider's `scsynth` and `supernova` (non-real-time, `-N`) and the Web Audio API's
//! Rust implementation through Node (`node-web-audio-api`, an `OfflineAudioContext`) — on
//! the same workloads, each engine a child process whose CPU time (user + system, from
//! `wait4`) per second of audio is the figure, its start-up taken out: every run is made
//! twice, at the case's length and at a twentieth of it, and the difference is the steady
//! state (see [`child::Split`]). The start-up is reported apart, and the whole-process
//! figure the suite published before (start-up included) beside it, as `CASE_whole`.
//!
//! Every run of every engine is checked against Downbeat's output of the same case: RMS
//! within 1% and the same spectral peak, and in `sines` every oscillator in its own bin at
//! its level, so no engine is timed doing less. Engines run in
//! alternating order, pinned to the same CPUs at the same priority. The real-time case
//! (the most voices each engine plays on a JACK dummy server without an xrun) lives in
//! [`realtime`].

mod cases;
mod child;
mod downbeat;
mod floor;
mod jackd;
mod realtime;
mod sc;
mod signal;
mod sines_2t;
mod web;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::report::{alternating, Report};
use crate::Common;
use cases::{Case, Kind};
use signal::Signature;

/// Options of `downbeat-bench engines`.
#[derive(clap::Args, Clone, Debug)]
pub struct EnginesArgs {
    #[command(flatten)]
    pub common: Common,
    /// Seconds of audio each offline run renders (default 20; 1 with --quick).
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Seconds each trial of the real-time case plays (default 60; 2 with --quick).
    #[arg(long)]
    pub rt_seconds: Option<f64>,
    /// Instead of searching the real-time case for the most voices, play these numbers of
    /// voices (comma-separated) on each engine, `--runs` times (default 3), and report the
    /// xruns of each trial and when they came.
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    pub rt_voices: Vec<usize>,
    /// The `downbeat` binary, built with JACK: `cargo build --release -p downbeat-cli
    /// --features jack` [default: target/release/downbeat].
    #[arg(long, value_name = "PATH")]
    pub downbeat: Option<PathBuf>,
    /// Size of every case instead of its default (oscillators, voices, gains, branches).
    #[arg(long)]
    pub n: Option<usize>,
    /// Keep the scores, projects and outputs (in the temporary folder the run prints).
    #[arg(long)]
    pub keep: bool,
}

/// One engine as a rival in one case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Engine {
    Downbeat {
        threads: usize,
    },
    Scsynth,
    Supernova {
        threads: usize,
    },
    Web,
    /// The case computed by one loop with Downbeat's algorithm and no engine ([`floor`]).
    Floor,
}

impl Engine {
    fn name(self) -> String {
        match self {
            Engine::Downbeat { threads: 1 } => "downbeat".into(),
            Engine::Downbeat { threads } => format!("downbeat {threads} threads"),
            Engine::Scsynth => "scsynth".into(),
            Engine::Supernova { threads: 1 } => "supernova".into(),
            Engine::Supernova { threads } => format!("supernova {threads} threads"),
            Engine::Web => "node-web-audio-api".into(),
            Engine::Floor => "floor".into(),
        }
    }

    /// The priority of every thread of a run on two threads: `SCHED_FIFO` 70, the priority
    /// Downbeat's pool gives its worker by itself, so that in a two-thread comparison no
    /// engine's threads outrank another's (supernova's would otherwise run at the normal
    /// priority beside Downbeat's real-time worker). Runs on one thread keep the normal
    /// priority, which Downbeat's one thread has too.
    fn fifo(self) -> Option<i32> {
        match self {
            Engine::Downbeat { threads } | Engine::Supernova { threads } if threads > 1 => {
                Some(TWO_THREAD_PRIORITY)
            }
            _ => None,
        }
    }

    /// Every engine with one thread gets CPU 1 (CPU 0 takes interrupts), two threads both.
    fn cpus(self) -> Vec<usize> {
        match self {
            Engine::Downbeat { threads } | Engine::Supernova { threads } if threads > 1 => {
                (0..threads).collect()
            }
            _ => vec![1],
        }
    }
}

/// Where the inputs and outputs of runs live, and the tools.
struct Setup {
    dir: PathBuf,
    downbeat: PathBuf,
    node_dir: PathBuf,
}

/// The reason the suite stops: a tool missing or failing, or an engine's output that does
/// not carry the case's signal.
#[derive(Debug)]
pub enum EnginesError {
    Setup(String),
    Run(child::RunError),
    Read(signal::ReadError),
    Signal {
        case: String,
        engine: String,
        why: String,
    },
}

impl std::fmt::Display for EnginesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EnginesError::Setup(s) => write!(f, "{s}"),
            EnginesError::Run(e) => write!(f, "{e}"),
            EnginesError::Read(e) => write!(f, "reading an engine's output: {e}"),
            EnginesError::Signal { case, engine, why } => write!(
                f,
                "{case}: {engine}'s output does not carry the same signal as Downbeat's: {why}"
            ),
        }
    }
}

impl std::error::Error for EnginesError {}

impl From<child::RunError> for EnginesError {
    fn from(e: child::RunError) -> Self {
        EnginesError::Run(e)
    }
}

impl From<signal::ReadError> for EnginesError {
    fn from(e: signal::ReadError) -> Self {
        EnginesError::Read(e)
    }
}

/// Runs the suite; a failure (a missing tool, an output that differs) ends the process
/// with status 1 and the reason.
pub fn run(args: &EnginesArgs) -> Report {
    match try_run(args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("bench engines: {e}");
            std::process::exit(1);
        }
    }
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("bench/ sits in the workspace")
        .to_path_buf()
}

fn setup(args: &EnginesArgs) -> Result<Setup, EnginesError> {
    let root = workspace();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let downbeat = args
        .downbeat
        .clone()
        .unwrap_or_else(|| target.join("release/downbeat"));
    if !downbeat.is_file() {
        return Err(EnginesError::Setup(format!(
            "{} is missing: build it with `cargo build --release -p downbeat-cli --features jack` or pass --downbeat",
            downbeat.display()
        )));
    }
    for tool in ["scsynth", "supernova", "node", "npm"] {
        if Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .map(|o| !o.status.success())
            .unwrap_or(true)
        {
            return Err(EnginesError::Setup(format!(
                "{tool} is not installed (scripts/deps.sh installs it: Debian supercollider-server, supercollider-supernova, nodejs, npm)"
            )));
        }
    }
    let node_dir = root.join("bench/engines");
    if !node_dir.join("node_modules/node-web-audio-api").is_dir() {
        eprintln!(
            "bench engines: installing node-web-audio-api (npm ci in {})",
            node_dir.display()
        );
        let ok = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&node_dir)
            // npm's progress would land in the middle of `--json` on our stdout.
            .stdout(std::process::Stdio::from(std::io::stderr()))
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok {
            return Err(EnginesError::Setup(format!(
                "npm ci in {} failed",
                node_dir.display()
            )));
        }
    }
    let dir = std::env::temp_dir().join(format!("downbeat-bench-engines-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| EnginesError::Setup(format!("{}: {e}", dir.display())))?;
    Ok(Setup {
        dir,
        downbeat,
        node_dir,
    })
}

/// Writes the files `engine` needs for `case`, runs it and reads its output back.
fn render(s: &Setup, case: &Case, engine: Engine) -> Result<(child::Cost, Vec<f32>), EnginesError> {
    let io =
        |e: std::io::Error| EnginesError::Setup(format!("writing in {}: {e}", s.dir.display()));
    let stem = s.dir.join(format!(
        "{}-{}",
        case.kind.name(),
        engine.name().replace(' ', "-")
    ));
    let file = |ext: &str| stem.with_extension(ext);
    let log = file("log");
    let secs = format!("{}", case.seconds);
    match engine {
        Engine::Downbeat { threads } => {
            std::fs::write(file("toml"), downbeat::project(case)).map_err(io)?;
            let mut cmd = Command::new(&s.downbeat);
            cmd.arg("run")
                .arg(file("toml"))
                .args(["--device", "offline", "--seconds", &secs])
                .arg("--threads")
                .arg(threads.to_string())
                .arg("--out")
                .arg(file("wav"));
            if case.kind == Kind::Voices {
                std::fs::write(file("mid"), downbeat::notes(case.n)).map_err(io)?;
                cmd.arg("--midi").arg(file("mid"));
            }
            let cost = child::run(cmd, &engine.cpus(), engine.fifo(), &log)?;
            Ok((cost, signal::read_wav(&file("wav"))?))
        }
        Engine::Scsynth | Engine::Supernova { .. } => {
            let score = if case.kind == Kind::Sines
                && matches!(engine, Engine::Supernova { threads } if threads > 1)
            {
                sines_2t::score(case)
            } else {
                sc::score(case)
            };
            std::fs::write(file("osc"), score).map_err(io)?;
            let mut cmd = Command::new(if engine == Engine::Scsynth {
                "scsynth"
            } else {
                "supernova"
            });
            cmd.arg("-N")
                .arg(file("osc"))
                .arg("_")
                .arg(file("wav"))
                .args([&cases::SAMPLE_RATE.to_string(), "WAV", "float"])
                .args(["-i", "0", "-o", "1", "-z", &cases::BLOCK.to_string()])
                .args(["-n", "16384", "-w", "1024", "-m", "65536", "-D", "0"]);
            if let Engine::Supernova { threads } = engine {
                cmd.arg("-T").arg(threads.to_string());
            }
            let cost = child::run(cmd, &engine.cpus(), engine.fifo(), &log)?;
            // The servers go on when a SynthDef or a synth fails; their log says so.
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if let Some(line) = text.lines().find(|l| {
                ["corrupted", "Cannot create", "FAILURE", "not found", "rror"]
                    .iter()
                    .any(|w| l.contains(w))
            }) {
                return Err(EnginesError::Signal {
                    case: case.kind.name().into(),
                    engine: engine.name(),
                    why: format!("its log ({}) says: {line}", log.display()),
                });
            }
            Ok((cost, signal::read_wav(&file("wav"))?))
        }
        Engine::Floor => {
            let case = *case;
            // On a thread of its own pinned to CPU 1, as every one-thread engine is.
            let run = std::thread::spawn(move || {
                child::pin(&Engine::Floor.cpus()).map(|()| floor::render(&case))
            });
            run.join()
                .expect("the floor does not panic")
                .map_err(|e| EnginesError::Setup(format!("pinning the floor to CPU 1: {e}")))
        }
        Engine::Web => {
            let desc = web::description(case);
            std::fs::write(file("json"), desc.to_string()).map_err(io)?;
            let mut cmd = Command::new("node");
            cmd.current_dir(&s.node_dir)
                .arg("render.mjs")
                .arg(file("json"))
                .arg(file("f32"));
            let cost = child::run(cmd, &engine.cpus(), engine.fifo(), &log)?;
            Ok((cost, signal::read_f32(&file("f32"))?))
        }
    }
}

/// The engines of `case`, Downbeat first.
fn engines(kind: Kind) -> Vec<Engine> {
    let mut v = vec![
        Engine::Downbeat { threads: 1 },
        Engine::Scsynth,
        Engine::Supernova { threads: 1 },
        Engine::Web,
    ];
    if kind == Kind::Fanin {
        v.insert(1, Engine::Downbeat { threads: 2 });
        v[3] = Engine::Supernova { threads: 2 };
    }
    if kind == Kind::Sines {
        v.extend(sines_2t::engines());
    }
    v.push(Engine::Floor);
    v
}

/// Records `key` = rival / ours on `case` (> 1: Downbeat spends less), when both ran.
fn ratio(report: &mut Report, key: &str, case: &str, ours: &str, rival: &str) {
    if let (Some(a), Some(b)) = (report.median(case, ours), report.median(case, rival)) {
        if a > 0.0 && b > 0.0 && (b / a).is_finite() {
            report
                .ratios
                .insert(key.to_owned(), (b / a * 1000.0).round() / 1000.0);
        }
    }
}

const CPU_UNIT: &str = "cpu s per audio s";
/// `seconds` rounded up to whole render quanta of Web Audio (128 frames, two of the
/// other engines' blocks): supernova renders whole blocks only, and a length between two
/// would leave its output a block short.
fn whole_quanta(seconds: f64) -> f64 {
    let quantum = 2 * cases::BLOCK;
    let frames = (seconds * f64::from(cases::SAMPLE_RATE)).ceil() as u32;
    f64::from(frames.div_ceil(quantum) * quantum) / f64::from(cases::SAMPLE_RATE)
}

/// `SCHED_FIFO` priority of every thread of a two-thread run (see `Engine::fifo`).
const TWO_THREAD_PRIORITY: i32 = 70;
/// The short run of every case renders this part of the full run's seconds.
const SHORT_PART: f64 = 20.0;
const WALL_UNIT: &str = "wall s per audio s";

/// One engine's figures over the runs of a case, per second of audio unless named otherwise.
#[derive(Clone, Debug, Default)]
pub(crate) struct Figures {
    /// CPU seconds, steady state.
    pub(crate) cpu: Vec<f64>,
    /// Wall seconds, steady state.
    pub(crate) wall: Vec<f64>,
    /// CPU seconds of the whole process, start-up in.
    pub(crate) whole_cpu: Vec<f64>,
    /// Wall seconds of the whole process, start-up in.
    pub(crate) whole_wall: Vec<f64>,
    /// CPU seconds before the first block (not per second of audio).
    pub(crate) startup_cpu: Vec<f64>,
    /// Wall seconds before the first block (not per second of audio).
    pub(crate) startup_wall: Vec<f64>,
}

impl Figures {
    /// Adds a run of `seconds` of audio that cost `cost`, split as `split`.
    fn add(&mut self, cost: child::Cost, seconds: f64, split: child::Split) {
        self.cpu.push(split.cpu_per_second);
        self.wall.push(split.wall_per_second);
        self.startup_cpu.push(split.startup_cpu);
        self.startup_wall.push(split.startup_wall);
        self.whole_cpu.push(cost.cpu.as_secs_f64() / seconds);
        self.whole_wall.push(cost.wall.as_secs_f64() / seconds);
    }
}

fn try_run(args: &EnginesArgs) -> Result<Report, EnginesError> {
    let common = &args.common;
    let quick = common.quick;
    let runs = common.runs.unwrap_or(if quick { 1 } else { 5 }).max(1);
    let seconds = args.seconds.unwrap_or(if quick { 1.0 } else { 20.0 });
    let s = setup(args)?;
    let mut report = Report::new("engines");
    let sizes: [(Kind, usize, usize); 4] = [
        (Kind::Sines, 1000, 20),
        (Kind::Voices, 256, 32),
        (Kind::Chain, 1000, 20),
        (Kind::Fanin, 32, 4),
    ];
    for (kind, full, small) in sizes {
        if !common.wants(kind.name()) {
            continue;
        }
        let case = Case {
            kind,
            n: args.n.unwrap_or(if quick { small } else { full }),
            seconds,
        };
        let list = engines(kind);
        // The same case, shorter: the run whose difference from the full one is the steady
        // state.
        let short = Case {
            seconds: whole_quanta(seconds / SHORT_PART),
            ..case
        };
        let mut figures: Vec<Figures> = vec![Figures::default(); list.len()];
        let mut reference: Option<Signature> = None;
        // Downbeat's first output, which its floor must equal bit for bit.
        let mut ours: Option<Vec<f32>> = None;
        // The oscillators every output of `sines` must hold at their levels.
        let tones: Vec<(f64, f64)> = (0..case.n).map(cases::sine).collect();
        let mut signatures: Vec<Option<Signature>> = vec![None; list.len()];
        for k in 0..runs {
            // Downbeat's first run is the reference every other output is checked against.
            let order: Vec<usize> = if k == 0 {
                (0..list.len()).collect()
            } else {
                alternating(&(0..list.len()).collect::<Vec<_>>(), k)
            };
            for i in order {
                let engine = list[i];
                let (cost, out) = render(&s, &case, engine)?;
                if out.len() < case.frames() {
                    return Err(EnginesError::Signal {
                        case: kind.name().into(),
                        engine: engine.name(),
                        why: format!("{} frames, expected {}", out.len(), case.frames()),
                    });
                }
                let sig = signal::signature(&out, case.frames(), cases::SAMPLE_RATE as usize);
                let want = *reference.get_or_insert(sig);
                if let Some(why) = signal::mismatch(&want, &sig, case.lead_hz().is_some()) {
                    return Err(EnginesError::Signal {
                        case: kind.name().into(),
                        engine: engine.name(),
                        why,
                    });
                }
                if engine == (Engine::Downbeat { threads: 1 }) && ours.is_none() {
                    ours = Some(out[..case.frames()].to_vec());
                }
                if engine == Engine::Floor {
                    // Downbeat runs before its floor in the first run, whose order is the list's.
                    let want = ours.as_deref().expect("Downbeat rendered first");
                    let got = &out[..case.frames()];
                    if let Some(k) = (0..got.len()).find(|&k| got[k].to_bits() != want[k].to_bits())
                    {
                        return Err(EnginesError::Signal {
                            case: kind.name().into(),
                            engine: engine.name(),
                            why: format!(
                                "its frame {k} is {}, Downbeat's {}: a floor must compute the \
                                 same output",
                                got[k], want[k]
                            ),
                        });
                    }
                }
                if kind == Kind::Sines {
                    let rate = cases::SAMPLE_RATE as usize;
                    if let Some(why) = signal::missing_tones(&out, case.frames(), rate, &tones) {
                        return Err(EnginesError::Signal {
                            case: kind.name().into(),
                            engine: engine.name(),
                            why,
                        });
                    }
                }
                signatures[i] = Some(sig);
                let (lead, lead_out) = render(&s, &short, engine)?;
                if lead_out.len() < short.frames() {
                    return Err(EnginesError::Signal {
                        case: kind.name().into(),
                        engine: engine.name(),
                        why: format!(
                            "{} frames in its short run, expected {}",
                            lead_out.len(),
                            short.frames()
                        ),
                    });
                }
                figures[i].add(
                    cost,
                    seconds,
                    child::Split::of(cost, seconds, lead, short.seconds),
                );
            }
        }
        let name = kind.name();
        for (i, e) in list.iter().enumerate() {
            let f = &figures[i];
            report.add(name, &e.name(), CPU_UNIT, &f.cpu);
            report.add(&format!("{name}_whole"), &e.name(), CPU_UNIT, &f.whole_cpu);
            report.add(
                &format!("{name}_startup_cpu"),
                &e.name(),
                "cpu s",
                &f.startup_cpu,
            );
            report.add(
                &format!("{name}_startup_wall"),
                &e.name(),
                "wall s",
                &f.startup_wall,
            );
            if kind == Kind::Fanin {
                report.add("fanin_wall", &e.name(), WALL_UNIT, &f.wall);
                report.add("fanin_wall_whole", &e.name(), WALL_UNIT, &f.whole_wall);
            }
            if let Some(sig) = signatures[i] {
                report
                    .notes
                    .push(format!("{name} (n = {}): {}: {sig}", case.n, e.name()));
            }
        }
        if kind == Kind::Sines {
            sines_2t::report(&mut report, &list, &figures);
        }
        let ours = Engine::Downbeat { threads: 1 }.name();
        // Downbeat over its floor: what the engine costs beyond the work itself (issue 43's
        // target: at most 1.10). The floor is the side the ratio divides by.
        let over_floor = format!("{name}_downbeat_over_floor");
        ratio(
            &mut report,
            &over_floor,
            name,
            Engine::Floor.name().as_str(),
            &ours,
        );
        for e in [
            Engine::Scsynth,
            Engine::Supernova { threads: 1 },
            Engine::Web,
        ] {
            let rival = e.name();
            ratio(
                &mut report,
                &format!("{name}_vs_{rival}"),
                name,
                &ours,
                &rival,
            );
            let whole = format!("{name}_whole");
            ratio(
                &mut report,
                &format!("{whole}_vs_{rival}"),
                &whole,
                &ours,
                &rival,
            );
        }
        if kind == Kind::Fanin {
            // Two threads finish sooner but spend at least as much CPU: wall time per
            // second of audio is the figure.
            let two = Engine::Downbeat { threads: 2 }.name();
            for (rival, key) in [
                (Engine::Scsynth, "scsynth"),
                (Engine::Supernova { threads: 2 }, "supernova"),
            ] {
                let r = rival.name();
                ratio(
                    &mut report,
                    &format!("fanin_2t_vs_{key}"),
                    "fanin_wall",
                    &two,
                    &r,
                );
                let whole = format!("fanin_2t_whole_vs_{key}");
                ratio(&mut report, &whole, "fanin_wall_whole", &two, &r);
            }
        }
    }
    if common.wants("realtime") {
        realtime::run(args, &s, &mut report)?;
    }
    report.notes.push(format!(
        "{runs} runs per engine and case, {seconds} s of audio each and {} s for the start-up, \
         48 kHz, mono, 64-frame blocks (Web Audio: 128, fixed by the spec); CPU = user + system \
         time of the whole process; CASE is the steady state (start-up out), CASE_whole the \
         whole process, CASE_startup_* the start-up; every thread of a two-thread run at \
         SCHED_FIFO {TWO_THREAD_PRIORITY}, of a one-thread run at the normal priority",
        whole_quanta(seconds / SHORT_PART)
    ));
    if args.keep {
        eprintln!("bench engines: the runs' files are in {}", s.dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&s.dir);
    }
    Ok(report)
}
