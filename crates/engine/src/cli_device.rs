//! Which device a `downbeat run` (or `latency`) uses and how it is set up: the input the
//! `input` nodes hear, the sample rate the project is rebuilt at, and the watcher's progress
//! line.

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use downbeat::device::{Device, DeviceError, InputFile, Offline, Virtual};
use downbeat::project::Project;
use downbeat::watch::{WatchThread, Watcher};
use downbeat::Engine;
use downbeat_graph::nodes::Capture;
use downbeat_graph::{ParamValue, Schedule};
use indicatif::{ProgressBar, ProgressStyle};

use crate::Failure;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum DeviceKind {
    /// Real time, paced by the system clock, no sound card needed.
    Virtual,
    /// As fast as possible (use with --out to render a file).
    Offline,
    /// A JACK server's real-time callback (build with `--features jack`).
    Jack,
    /// The computer's own sound output and input (build with `--features system`).
    System,
}

impl DeviceKind {
    fn flag(self) -> &'static str {
        match self {
            DeviceKind::Virtual => "virtual",
            DeviceKind::Offline => "offline",
            DeviceKind::Jack => "jack",
            DeviceKind::System => "system",
        }
    }

    /// Whether the device has a live input of its own (else `--input FILE.wav` feeds it).
    fn live_input(self) -> bool {
        matches!(self, DeviceKind::Jack | DeviceKind::System)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum FallbackKind {
    /// Go on on the virtual device.
    Virtual,
}

/// The device options of `run`, as given on the command line.
#[derive(Clone, Debug)]
pub(crate) struct DeviceArgs {
    pub(crate) device: DeviceKind,
    pub(crate) connect: Option<String>,
    pub(crate) connect_in: Option<String>,
    pub(crate) midi_in: Option<String>,
    pub(crate) output_device: Option<String>,
    pub(crate) input_device: Option<String>,
    pub(crate) input: Option<PathBuf>,
    pub(crate) record_input: Option<PathBuf>,
    pub(crate) fallback: Option<FallbackKind>,
    pub(crate) out: Option<PathBuf>,
}

impl DeviceArgs {
    /// Refuses flags that do not apply to the chosen device.
    pub(crate) fn check(&self) -> Result<(), Failure> {
        let d = self.device;
        let only = |flag: &str, given: bool, ok: bool, devices: &str| {
            if given && !ok {
                Err(Failure::Input(format!(
                    "{flag} only applies to {devices}, not to `--device {}`",
                    d.flag()
                )))
            } else {
                Ok(())
            }
        };
        only(
            "--connect",
            self.connect.is_some(),
            d == DeviceKind::Jack,
            "`--device jack`",
        )?;
        only(
            "--connect-in",
            self.connect_in.is_some(),
            d == DeviceKind::Jack,
            "`--device jack`",
        )?;
        only(
            "--midi-in",
            self.midi_in.is_some(),
            d == DeviceKind::Jack,
            "`--device jack`",
        )?;
        only(
            "--output-device",
            self.output_device.is_some(),
            d == DeviceKind::System,
            "`--device system`",
        )?;
        only(
            "--input-device",
            self.input_device.is_some(),
            d == DeviceKind::System,
            "`--device system`",
        )?;
        only(
            "--input",
            self.input.is_some(),
            !d.live_input(),
            "`--device offline` and `--device virtual` (the others have inputs of their own)",
        )?;
        only(
            "--record-input",
            self.record_input.is_some(),
            d.live_input(),
            "`--device system` and `--device jack`",
        )?;
        only(
            "--fallback",
            self.fallback.is_some(),
            d.live_input(),
            "`--device system` and `--device jack`",
        )?;
        for (flag, path) in [("--out", &self.out), ("--record-input", &self.record_input)] {
            check_dir(flag, path.as_deref())?;
        }
        if let Some(file) = &self.input {
            if !file.is_file() {
                return Err(Failure::Input(format!(
                    "--input: `{}` does not exist",
                    file.display()
                )));
            }
        }
        Ok(())
    }

    #[cfg(any(feature = "jack", feature = "system"))]
    fn on_loss(&self) -> downbeat::device::OnLoss {
        use downbeat::device::OnLoss;
        match self.fallback {
            Some(FallbackKind::Virtual) => OnLoss::FallBackToVirtual,
            None => OnLoss::Stop,
        }
    }
}

/// Refuses an output path in a directory that does not exist.
pub(crate) fn check_dir(flag: &str, path: Option<&Path>) -> Result<(), Failure> {
    if let Some(dir) = path.and_then(Path::parent) {
        if !dir.as_os_str().is_empty() && !dir.is_dir() {
            return Err(Failure::Input(format!(
                "{flag}: directory `{}` does not exist",
                dir.display()
            )));
        }
    }
    Ok(())
}

/// The `input` nodes of a project, and the most channels any of them reads.
fn input_nodes(p: &Project) -> (Vec<&str>, usize) {
    let inputs: Vec<_> = p.nodes.iter().filter(|n| n.kind == "input").collect();
    let channels = inputs
        .iter()
        .map(|n| {
            n.params
                .iter()
                .find(|(k, _)| k == "channels")
                .and_then(|(_, v)| match v {
                    ParamValue::Int(c) => Some(*c as usize),
                    _ => None,
                })
                .unwrap_or(2)
        })
        .max()
        .unwrap_or(0);
    (inputs.iter().map(|n| n.name.as_str()).collect(), channels)
}

/// A project built for a device: its schedule, and the capture its `input` nodes read.
pub(crate) struct Built {
    pub(crate) project: Project,
    pub(crate) schedule: Schedule,
    pub(crate) capture: Option<Capture>,
    pub(crate) input: Option<InputFile>,
}

/// Loads `path` and builds it for the device: at the device's sample rate when it differs
/// (with a note), with a capture of as many channels as the device's input has.
pub(crate) fn build(path: &Path, args: &DeviceArgs) -> Result<Built, Failure> {
    let mut project = Project::load(path).map_err(|e| Failure::Input(e.to_string()))?;
    let (inputs, wanted_channels) = input_nodes(&project);
    let needs_input = !inputs.is_empty();
    if !needs_input && args.input.is_some() {
        return Err(Failure::Input(format!(
            "--input: `{}` has no `input` node to feed",
            project.file
        )));
    }
    if needs_input && !args.device.live_input() && args.input.is_none() {
        return Err(Failure::Input(format!(
            "`{}` reads an input (node `{}`), and the {} device has none: give it one with \
             `--input FILE.wav`, or run on a device with inputs (`--device system`, \
             `--device jack`)",
            project.file,
            inputs[0],
            args.device.flag()
        )));
    }
    let file = match &args.input {
        Some(path) => Some(InputFile::open(path).map_err(device_failure)?),
        None => None,
    };
    if let Some(f) = &file {
        if f.sample_rate() != project.sample_rate {
            return Err(Failure::Input(format!(
                "--input: `{}` is at {} Hz but `{}` runs at {} Hz; set the project's \
                 `sample_rate` to {} or resample the file",
                f.path().display(),
                f.sample_rate(),
                project.file,
                project.sample_rate,
                f.sample_rate()
            )));
        }
    }
    let rate = device_sample_rate(args, project.sample_rate, needs_input)?;
    if rate != project.sample_rate {
        eprintln!(
            "note: following the {} device's sample rate, {rate} Hz (the project asks for {} Hz)",
            args.device.flag(),
            project.sample_rate
        );
        project.sample_rate = rate;
    }
    let capture_channels = match (&file, args.device) {
        (Some(f), _) => f.channels(),
        (None, DeviceKind::System) if needs_input => system_input_channels(args)?,
        (None, _) => wanted_channels,
    };
    let capture = needs_input.then(|| Capture::new(capture_channels, project.block_size));
    let schedule = match &capture {
        Some(c) => c.connect(|| project.build()),
        None => project.build(),
    }
    .map_err(|e| Failure::Input(e.to_string()))?;
    Ok(Built {
        project,
        schedule,
        capture,
        input: file,
    })
}

/// How a device error maps to an exit code: 2 for what the user can fix in the command, 1
/// for the rest (a server that cannot be reached, a device lost mid-run, a file that cannot
/// be written).
pub(crate) fn device_failure(e: DeviceError) -> Failure {
    match e {
        DeviceError::Config(m) => Failure::Input(m),
        other => Failure::Runtime(other.to_string()),
    }
}

fn device_sample_rate(args: &DeviceArgs, wanted: u32, input: bool) -> Result<u32, Failure> {
    match args.device {
        DeviceKind::Jack => jack_rate(),
        DeviceKind::System => system_rate(args, wanted, input),
        _ => Ok(wanted),
    }
}

/// The device the arguments ask for, with the input file, recordings and loss policy.
pub(crate) fn make(
    args: &DeviceArgs,
    input: Option<InputFile>,
) -> Result<Box<dyn Device>, Failure> {
    Ok(match args.device {
        DeviceKind::Virtual => {
            let d = Virtual::new(args.out.clone());
            Box::new(match input {
                Some(f) => d.input(f),
                None => d,
            })
        }
        DeviceKind::Offline => {
            let d = Offline::new(args.out.clone());
            Box::new(match input {
                Some(f) => d.input(f),
                None => d,
            })
        }
        DeviceKind::Jack => jack_device(args)?,
        DeviceKind::System => system_device(args)?,
    })
}

#[cfg(feature = "jack")]
fn jack_device(args: &DeviceArgs) -> Result<Box<dyn Device>, Failure> {
    Ok(Box::new(
        downbeat::device::Jack::new("downbeat", args.connect.clone(), args.out.clone())
            .connect_inputs(args.connect_in.clone())
            .midi_in(args.midi_in.clone())
            .record_input(args.record_input.clone())
            .on_loss(args.on_loss()),
    ))
}

#[cfg(feature = "jack")]
fn jack_rate() -> Result<u32, Failure> {
    downbeat::device::Jack::server_sample_rate("downbeat")
        .map_err(|e| Failure::Runtime(e.to_string()))
}

#[cfg(not(feature = "jack"))]
const NO_JACK: &str = "this build has no JACK support; rebuild with the `jack` feature: \
    `cargo run --release --features jack -- run PROJECT --device jack` (needs libjack, \
    Debian: libjack-jackd2-dev)";

#[cfg(not(feature = "jack"))]
fn jack_device(_: &DeviceArgs) -> Result<Box<dyn Device>, Failure> {
    Err(Failure::Input(NO_JACK.into()))
}

#[cfg(not(feature = "jack"))]
fn jack_rate() -> Result<u32, Failure> {
    Err(Failure::Input(NO_JACK.into()))
}

#[cfg(feature = "system")]
fn system(args: &DeviceArgs) -> downbeat::device::System {
    downbeat::device::System::new(args.out.clone())
        .output_device(args.output_device.clone())
        .input_device(args.input_device.clone())
        .record_input(args.record_input.clone())
        .on_loss(args.on_loss())
}

#[cfg(feature = "system")]
fn system_device(args: &DeviceArgs) -> Result<Box<dyn Device>, Failure> {
    Ok(Box::new(system(args)))
}

#[cfg(feature = "system")]
fn system_rate(args: &DeviceArgs, wanted: u32, input: bool) -> Result<u32, Failure> {
    system(args)
        .sample_rate_for(wanted, input)
        .map_err(device_failure)
}

#[cfg(feature = "system")]
fn system_input_channels(args: &DeviceArgs) -> Result<usize, Failure> {
    system(args).input_channels().map_err(device_failure)
}

#[cfg(not(feature = "system"))]
pub(crate) const NO_SYSTEM: &str = "this build has no system sound device; rebuild with the \
    `system` feature: `cargo run --release --features system -- run PROJECT --device system` \
    (on Linux it needs ALSA's headers, Debian: libasound2-dev)";

#[cfg(not(feature = "system"))]
fn system_device(_: &DeviceArgs) -> Result<Box<dyn Device>, Failure> {
    Err(Failure::Input(NO_SYSTEM.into()))
}

#[cfg(not(feature = "system"))]
fn system_rate(_: &DeviceArgs, _: u32, _: bool) -> Result<u32, Failure> {
    Err(Failure::Input(NO_SYSTEM.into()))
}

#[cfg(not(feature = "system"))]
fn system_input_channels(_: &DeviceArgs) -> Result<usize, Failure> {
    Err(Failure::Input(NO_SYSTEM.into()))
}

/// The progress line, drawn from an engine watcher on a terminal: time played, highest
/// load, peak level. Every device's values arrive the same way.
pub(crate) struct Progress {
    bar: ProgressBar,
    thread: Option<WatchThread>,
}

impl Progress {
    /// Connects a progress line to a watcher of `engine` when stderr is a terminal (and `quiet`
    /// is off); does nothing otherwise.
    pub(crate) fn attach(engine: &mut Engine, frames: u64, quiet: bool) -> Self {
        let bar = ProgressBar::new(frames);
        if quiet || bar.is_hidden() {
            return Self {
                bar: ProgressBar::hidden(),
                thread: None,
            };
        }
        bar.set_style(ProgressStyle::with_template("{bar:30} {msg}").expect("template is valid"));
        let (line, rate) = (bar.clone(), engine.sample_rate() as f64);
        let total = frames as f64 / rate;
        let draw = move |w: &Watcher| {
            let m = w.output();
            line.set_position(m.frames);
            line.set_message(format!(
                "{:.1} / {total:.1} s   load {:.2}   peak {:+.1} dBFS",
                m.frames as f64 / rate,
                m.load,
                m.peak_dbfs()
            ));
        };
        let thread = engine.watch_output().follow(draw);
        Self {
            bar,
            thread: Some(thread),
        }
    }

    /// Clears the line after a run that ended in an error (the meters went with the engine).
    pub(crate) fn abandon(self) {
        if let Some(t) = self.thread {
            t.stop();
        }
        self.bar.finish_and_clear();
    }

    /// Stops the line's watcher and clears the line.
    pub(crate) fn finish(self) {
        if let Some(t) = self.thread {
            t.stop();
        }
        self.bar.finish_and_clear();
    }
}
