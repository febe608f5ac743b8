//! Opening a device from a description of it: [`DeviceSpec`] names the device and its
//! options, [`open`] makes it, and a device this build left out (its cargo feature is off) is
//! [`OpenError::NotBuilt`], the same way for every device and every caller.

use std::fmt;

use super::{
    Device, DeviceError, InputFile, Offline, OnLoss, RecordTo, TransportRequests, TransportSync,
    Virtual,
};

/// Which device drives the engine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// Real time, paced by the system clock, no sound card needed ([`Virtual`]).
    #[default]
    Virtual,
    /// As fast as possible ([`Offline`]), to render a file.
    Offline,
    /// A JACK server's real-time callback (cargo feature `jack`).
    Jack,
    /// The computer's own sound output and input (cargo feature `system`).
    System,
}

impl DeviceKind {
    /// Its short name, as `--device` takes it and [`Device::name`] gives it.
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Virtual => "virtual",
            DeviceKind::Offline => "offline",
            DeviceKind::Jack => "jack",
            DeviceKind::System => "system",
        }
    }

    /// Whether the device has a live input of its own (else an [`InputFile`] feeds it).
    pub fn live_input(self) -> bool {
        matches!(self, DeviceKind::Jack | DeviceKind::System)
    }

    /// Whether this build has the device (its cargo feature was on).
    pub fn is_built(self) -> bool {
        match self {
            DeviceKind::Virtual | DeviceKind::Offline => true,
            DeviceKind::Jack => cfg!(feature = "jack"),
            DeviceKind::System => cfg!(feature = "system"),
        }
    }
}

/// A device and its options. The options a device has no use for are ignored by [`open`];
/// a command line refuses them before (see `downbeat run`).
///
/// ```
/// use downbeat::device::{open, DeviceKind, DeviceSpec};
///
/// let device = open(&DeviceSpec::new(DeviceKind::Offline)).unwrap();
/// assert_eq!(device.name(), "offline");
/// ```
#[derive(Clone, Debug, Default)]
pub struct DeviceSpec {
    /// Which device.
    pub kind: DeviceKind,
    /// The files the run's audio is also written to (`input` only on devices with a live
    /// input).
    pub record_to: RecordTo,
    /// What the `input` nodes hear on the offline and virtual devices.
    pub input: Option<InputFile>,
    /// JACK: the client's name (`downbeat` when empty).
    pub client_name: String,
    /// JACK: connect the outputs, in order, to the input ports whose names start with this.
    pub connect: Option<String>,
    /// JACK: connect the input ports, in order, to the output ports starting with this.
    pub connect_in: Option<String>,
    /// JACK: register a MIDI input port connected from the first MIDI output port starting
    /// with this.
    pub midi_in: Option<String>,
    /// System: play on this output device (as [`devices`] names it) instead of the default.
    pub output_device: Option<String>,
    /// System: capture from this input device instead of the default.
    pub input_device: Option<String>,
    /// JACK and system: what to do when the device goes away mid-run.
    pub on_loss: OnLoss,
    /// JACK: whose transport the song plays by (its own unless told otherwise).
    pub transport: TransportSync,
    /// JACK, following JACK's transport: play, stop and locate to send to JACK's transport
    /// instead of the song's (OSC's `/transport/...` with `--transport jack`).
    pub transport_requests: Option<TransportRequests>,
}

/// Why a device could not be opened or asked about.
#[derive(Debug)]
pub enum OpenError {
    /// This build has no such device: its cargo feature was off.
    NotBuilt(DeviceKind),
    /// The device itself refused (no server, no such sound card, a bad option).
    Device(DeviceError),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::NotBuilt(kind) => {
                let (what, needs) = match kind {
                    DeviceKind::Jack => {
                        ("JACK device", "needs libjack, Debian: libjack-jackd2-dev")
                    }
                    _ => (
                        "system sound device",
                        "on Linux it needs ALSA's headers, Debian: libasound2-dev",
                    ),
                };
                write!(
                    f,
                    "this build has no {what}; rebuild with the `{0}` feature: `cargo run \
                     --release --features {0} -- run PROJECT --device {0}` ({needs})",
                    kind.name()
                )
            }
            OpenError::Device(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for OpenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OpenError::NotBuilt(_) => None,
            OpenError::Device(e) => Some(e),
        }
    }
}

impl From<DeviceError> for OpenError {
    fn from(e: DeviceError) -> Self {
        OpenError::Device(e)
    }
}

impl DeviceSpec {
    /// `kind` with no options: the default devices, nothing recorded, stop on loss.
    pub fn new(kind: DeviceKind) -> Self {
        Self {
            kind,
            ..Self::default()
        }
    }

    fn client_name(&self) -> &str {
        if self.client_name.is_empty() {
            "downbeat"
        } else {
            &self.client_name
        }
    }

    /// The sample rate to build a project at: `wanted` on the offline and virtual devices;
    /// the server's on JACK; on the system device `wanted` when the output (and the input,
    /// with `input`) can run at it, else the output's own.
    ///
    /// # Errors
    /// [`OpenError::NotBuilt`], or the device's error when it cannot be reached.
    pub fn sample_rate(&self, wanted: u32, input: bool) -> Result<u32, OpenError> {
        match self.kind {
            DeviceKind::Virtual | DeviceKind::Offline => Ok(wanted),
            DeviceKind::Jack => jack_rate(self.client_name()),
            DeviceKind::System => system_rate(self, wanted, input),
        }
    }

    /// The channels the device's own input captures, when it decides them (the system
    /// device); `None` when the device takes as many as the project reads.
    ///
    /// # Errors
    /// [`OpenError::NotBuilt`], or the device's error when it has no input.
    pub fn input_channels(&self) -> Result<Option<usize>, OpenError> {
        match self.kind {
            DeviceKind::System => system_input_channels(self).map(Some),
            _ => Ok(None),
        }
    }
}

/// The device `spec` describes, ready to [`run`](Device::run).
///
/// # Errors
/// [`OpenError::NotBuilt`] when this build has no such device.
pub fn open(spec: &DeviceSpec) -> Result<Box<dyn Device>, OpenError> {
    Ok(match spec.kind {
        DeviceKind::Virtual => {
            let d = Virtual::new(spec.record_to.out.clone())
                .record_options(spec.record_to.options.clone());
            Box::new(match &spec.input {
                Some(f) => d.input(f.clone()),
                None => d,
            })
        }
        DeviceKind::Offline => {
            let d = Offline::new(spec.record_to.out.clone())
                .record_options(spec.record_to.options.clone());
            Box::new(match &spec.input {
                Some(f) => d.input(f.clone()),
                None => d,
            })
        }
        DeviceKind::Jack => jack(spec)?,
        DeviceKind::System => Box::new(system(spec)?),
    })
}

#[cfg(feature = "jack")]
fn jack(spec: &DeviceSpec) -> Result<Box<dyn Device>, OpenError> {
    Ok(Box::new(
        super::Jack::new(
            spec.client_name(),
            spec.connect.clone(),
            spec.record_to.out.clone(),
        )
        .connect_inputs(spec.connect_in.clone())
        .midi_in(spec.midi_in.clone())
        .record_input(spec.record_to.input.clone())
        .record_options(spec.record_to.options.clone())
        .on_loss(spec.on_loss)
        .transport(spec.transport, spec.transport_requests.clone()),
    ))
}

#[cfg(not(feature = "jack"))]
fn jack(_: &DeviceSpec) -> Result<Box<dyn Device>, OpenError> {
    Err(OpenError::NotBuilt(DeviceKind::Jack))
}

/// The sample rate of the running JACK server, asked by the client called `client`, which
/// stays open for the run of that name that follows (see `Jack::server_sample_rate`).
///
/// # Errors
/// [`OpenError::NotBuilt`] without the `jack` feature, [`DeviceError::Unavailable`] when no
/// server runs.
pub fn jack_rate(client: &str) -> Result<u32, OpenError> {
    #[cfg(feature = "jack")]
    return Ok(super::Jack::server_sample_rate(client)?);
    #[cfg(not(feature = "jack"))]
    {
        let _ = client;
        Err(OpenError::NotBuilt(DeviceKind::Jack))
    }
}

#[cfg(feature = "system")]
fn system(spec: &DeviceSpec) -> Result<super::System, OpenError> {
    Ok(super::System::new(spec.record_to.out.clone())
        .output_device(spec.output_device.clone())
        .input_device(spec.input_device.clone())
        .record_input(spec.record_to.input.clone())
        .record_options(spec.record_to.options.clone())
        .on_loss(spec.on_loss))
}

#[cfg(feature = "system")]
fn system_rate(spec: &DeviceSpec, wanted: u32, input: bool) -> Result<u32, OpenError> {
    Ok(system(spec)?.sample_rate_for(wanted, input)?)
}

#[cfg(feature = "system")]
fn system_input_channels(spec: &DeviceSpec) -> Result<usize, OpenError> {
    Ok(system(spec)?.input_channels()?)
}

/// Stands for the system device in a build without it: every use says so.
#[cfg(not(feature = "system"))]
enum NoSystem {}

#[cfg(not(feature = "system"))]
impl Device for NoSystem {
    fn name(&self) -> &'static str {
        match *self {}
    }

    fn run(&mut self, _: crate::Engine, _: super::RunLength) -> Result<super::Run, DeviceError> {
        match *self {}
    }
}

#[cfg(not(feature = "system"))]
fn system(_: &DeviceSpec) -> Result<NoSystem, OpenError> {
    Err(OpenError::NotBuilt(DeviceKind::System))
}

#[cfg(not(feature = "system"))]
fn system_rate(_: &DeviceSpec, _: u32, _: bool) -> Result<u32, OpenError> {
    Err(OpenError::NotBuilt(DeviceKind::System))
}

#[cfg(not(feature = "system"))]
fn system_input_channels(_: &DeviceSpec) -> Result<usize, OpenError> {
    Err(OpenError::NotBuilt(DeviceKind::System))
}

/// A sound device as [`devices`] describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceInfo {
    /// The name `--output-device` / `--input-device` take.
    pub name: String,
    /// What the system calls it.
    pub description: String,
    /// Whether it is the default output.
    pub default_output: bool,
    /// Whether it is the default input.
    pub default_input: bool,
    /// The most output channels it offers (0: no output).
    pub output_channels: u16,
    /// The most input channels it offers (0: no input).
    pub input_channels: u16,
    /// The sample rate ranges it offers, in Hz, lowest first.
    pub sample_rates: Vec<(u32, u32)>,
}

/// Every sound device the system's audio API knows and can open, defaults first.
///
/// # Errors
/// [`OpenError::NotBuilt`] without the `system` feature; [`DeviceError::Unavailable`] when
/// the audio API cannot list its devices.
pub fn devices() -> Result<Vec<DeviceInfo>, OpenError> {
    #[cfg(feature = "system")]
    return Ok(super::system::list_devices()?);
    #[cfg(not(feature = "system"))]
    Err(OpenError::NotBuilt(DeviceKind::System))
}
