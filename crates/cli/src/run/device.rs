//! Which device a `downbeat run` (or `latency`) uses and how it is set up: the flags that
//! apply to it, the input the `input` nodes hear, and the sample rate and input channels the
//! project is built for.

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use downbeat::device::{
    DeviceKind, DeviceSpec, InputFile, OnLoss, RecordTo, TransportRequests, TransportSync,
};
use downbeat::nodes::Capture;
use downbeat::project::Project;
use downbeat_cli::Failure;
use downbeat_graph::{Editor, ParamValue, Schedule};

/// `--device`: the library's [`DeviceKind`] as a command-line choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum DeviceFlag {
    /// Real time, paced by the system clock, no sound card needed.
    Virtual,
    /// As fast as possible (use with --out to render a file).
    Offline,
    /// A JACK server's real-time callback (build with `--features jack`).
    Jack,
    /// The computer's own sound output and input (build with `--features system`).
    System,
}

impl From<DeviceFlag> for DeviceKind {
    fn from(flag: DeviceFlag) -> Self {
        match flag {
            DeviceFlag::Virtual => DeviceKind::Virtual,
            DeviceFlag::Offline => DeviceKind::Offline,
            DeviceFlag::Jack => DeviceKind::Jack,
            DeviceFlag::System => DeviceKind::System,
        }
    }
}

/// `--transport`: whose transport the song plays by (the library's [`TransportSync`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum TransportFlag {
    /// The song's own: the project's `[transport]`, OSC's /transport/...
    #[default]
    Internal,
    /// Follow JACK's transport: rolling or not, its frame, and the tempo its timebase master
    /// gives, when there is one (from where the song is; bar and beat stay the song's)
    Jack,
    /// Follow JACK's rolling and frame, and be its timebase master: every client reads bar,
    /// beat, tick, signature and tempo (quarter notes per minute) from the song's tempo map,
    /// live tempo changes included
    JackMaster,
}

impl From<TransportFlag> for TransportSync {
    fn from(flag: TransportFlag) -> Self {
        match flag {
            TransportFlag::Internal => TransportSync::Internal,
            TransportFlag::Jack => TransportSync::Jack,
            TransportFlag::JackMaster => TransportSync::JackMaster,
        }
    }
}

/// `--fallback`: where a run goes on when its device is lost.
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
    pub(crate) transport: TransportSync,
    /// Play, stop and locate from OSC for JACK's transport, when the song follows it.
    pub(crate) transport_requests: Option<TransportRequests>,
}

impl DeviceArgs {
    /// Refuses flags that do not apply to the chosen device.
    pub(crate) fn check(&self) -> Result<(), Failure> {
        let d = self.device;
        let only = |flag: &str, given: bool, ok: bool, devices: &str| {
            if given && !ok {
                Err(Failure::Input(format!(
                    "{flag} only applies to {devices}, not to `--device {}`",
                    d.name()
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
            &format!("--transport {}", self.transport.name()),
            self.transport.follows(),
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

    /// The library's description of the device, with `input` for the `input` nodes.
    pub(crate) fn spec(&self, input: Option<InputFile>) -> DeviceSpec {
        DeviceSpec {
            kind: self.device,
            record_to: RecordTo {
                out: self.out.clone(),
                input: self.record_input.clone(),
                ..RecordTo::default()
            },
            input,
            client_name: String::new(),
            connect: self.connect.clone(),
            connect_in: self.connect_in.clone(),
            midi_in: self.midi_in.clone(),
            output_device: self.output_device.clone(),
            input_device: self.input_device.clone(),
            on_loss: match self.fallback {
                Some(FallbackKind::Virtual) => OnLoss::FallBackToVirtual,
                None => OnLoss::Stop,
            },
            transport: self.transport,
            transport_requests: self.transport_requests.clone(),
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
    /// The sample rate the file asks for (`project` has the device's).
    pub(crate) file_rate: u32,
    pub(crate) schedule: Schedule,
    /// The editor of `schedule`, when it was built to be edited live.
    pub(crate) editor: Option<Editor>,
    pub(crate) capture: Option<Capture>,
    pub(crate) input: Option<InputFile>,
}

/// Loads `path` and builds it for the device: at the device's sample rate when it differs
/// (with a note), with a capture of as many channels as the device's input has; with an
/// editor for live edits when `editable`.
pub(crate) fn build(path: &Path, args: &DeviceArgs, editable: bool) -> Result<Built, Failure> {
    let mut project = Project::load(path).map_err(|e| Failure::Input(e.to_string()))?;
    let file_rate = project.sample_rate;
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
            args.device.name()
        )));
    }
    let file = match &args.input {
        Some(path) => Some(InputFile::open(path)?),
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
    let spec = args.spec(None);
    let rate = spec.sample_rate(project.sample_rate, needs_input)?;
    if rate != project.sample_rate {
        eprintln!(
            "note: following the {} device's sample rate, {rate} Hz (the project asks for {} Hz)",
            args.device.name(),
            project.sample_rate
        );
        project.sample_rate = rate;
    }
    let capture_channels = match &file {
        Some(f) => f.channels(),
        None if needs_input => spec.input_channels()?.unwrap_or(wanted_channels),
        None => wanted_channels,
    };
    let capture = needs_input.then(|| Capture::new(capture_channels, project.block_size));
    // A CLAP or VST3 node may change its latency (or a CLAP node its parameters) while it
    // runs, in a restart: the graph follows through an editor (see `downbeat::revise`).
    let editable = editable || project.may_revise();
    let make = || {
        if editable {
            project.editor().map(|(e, s)| (Some(e), s))
        } else {
            project.build().map(|s| (None, s))
        }
    };
    let (editor, schedule) = match &capture {
        Some(c) => c.connect(make),
        None => make(),
    }
    .map_err(|e| Failure::Input(e.to_string()))?;
    Ok(Built {
        project,
        file_rate,
        schedule,
        editor,
        capture,
        input: file,
    })
}
