//! The system device: the computer's own sound output and input, through `cpal`.
//!
//! Built with the `system` cargo feature. On Linux that is ALSA (and through ALSA's plugins
//! PulseAudio or PipeWire, whichever the desktop runs), on macOS CoreAudio, on Windows
//! WASAPI.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};
use cpal::{BufferSize, ErrorKind, SampleFormat, SizedSample, StreamConfig};

use super::handoff::Handoff;
use super::pacing::pace;
use super::takes::prepare;
use super::{
    CaptureSender, ClaimedLatency, Device, DeviceError, DeviceInfo, DeviceReport, DeviceSample,
    Fallback, OnLoss, RecordTo, Renderer, Run, RunLength,
};
use crate::record::{RecordOptions, WhenFull};
use crate::Engine;

/// The operating system's sound output (the default one, or one picked by name), and its
/// input when the project has an `input` node.
///
/// The engine runs in the output stream's callback, which owns it for the run. Callbacks of
/// any size are rendered, in pieces when larger than the project's block. The input comes
/// in its own callback (the APIs `cpal` covers have no duplex stream): it is converted and
/// queued in a wait-free ring, and every output callback takes exactly as many frames as it
/// plays, so the `input` nodes hear the capture at a constant offset from the output. A
/// callback the queue cannot fill hears silence for what is missing and counts as an xrun,
/// as do the underruns and overruns the API reports.
///
/// When the device or the sound server goes away (a stream error, or callbacks that stop
/// for longer than [`System::STALL`]), the run ends with [`DeviceError::Lost`], or goes on on the
/// virtual device with [`OnLoss::FallBackToVirtual`]; the recording holds everything played
/// either way.
#[derive(Debug, Default)]
pub struct System {
    output: Option<String>,
    input: Option<String>,
    record_to: RecordTo,
    on_loss: OnLoss,
}

/// How long the control thread waits for a callback to hand the renderer back.
const TAKE_TIMEOUT: Duration = Duration::from_secs(2);

/// Capacity of the queue between the input and the output callbacks, in seconds.
const QUEUE_SECONDS: f64 = 1.0;

impl System {
    /// How long the output callbacks may stop before the device counts as lost: long enough
    /// for a sound server's slow start, short enough to notice a dead one.
    pub const STALL: Duration = Duration::from_secs(3);

    /// The default output (and input) device, recording what it plays to `out` when given.
    pub fn new(out: Option<std::path::PathBuf>) -> Self {
        Self {
            record_to: RecordTo {
                out,
                ..RecordTo::default()
            },
            ..Self::default()
        }
    }

    /// Plays on the output device called `name` (as [`devices`](super::devices) names it) instead of
    /// the default one.
    pub fn output_device(mut self, name: Option<String>) -> Self {
        self.output = name;
        self
    }

    /// Captures from the input device called `name` instead of the default one.
    pub fn input_device(mut self, name: Option<String>) -> Self {
        self.input = name;
        self
    }

    /// Also records what the `input` nodes received to this WAV file.
    pub fn record_input(mut self, path: Option<std::path::PathBuf>) -> Self {
        self.record_to.input = path;
        self
    }

    /// How the recordings (`out`, [`record_input`](Self::record_input)) are buffered and
    /// synced.
    pub fn record_options(mut self, options: RecordOptions) -> Self {
        self.record_to.options = options;
        self
    }

    /// What to do when the device goes away mid-run.
    pub fn on_loss(mut self, on_loss: OnLoss) -> Self {
        self.on_loss = on_loss;
        self
    }

    /// The sample rate to build a project at: `wanted` when the output device (and the
    /// input device, with `input`) can run at it, otherwise the output device's own.
    ///
    /// # Errors
    /// [`DeviceError::Unavailable`] when there is no such device.
    pub fn sample_rate_for(&self, wanted: u32, input: bool) -> Result<u32, DeviceError> {
        let host = cpal::default_host();
        let out = find(&host, self.output.as_deref(), Direction::Output)?;
        let mut ok = supports_rate(&out, Direction::Output, wanted);
        if input {
            let inp = find(&host, self.input.as_deref(), Direction::Input)?;
            ok &= supports_rate(&inp, Direction::Input, wanted);
        }
        if ok {
            return Ok(wanted);
        }
        out.default_output_config()
            .map(|c| c.sample_rate())
            .map_err(|e| unavailable("output", &e))
    }

    /// The channels the input device captures by default.
    ///
    /// # Errors
    /// [`DeviceError::Unavailable`] when there is no input device.
    pub fn input_channels(&self) -> Result<usize, DeviceError> {
        let host = cpal::default_host();
        let inp = find(&host, self.input.as_deref(), Direction::Input)?;
        inp.default_input_config()
            .map(|c| usize::from(c.channels()))
            .map_err(|e| unavailable("input", &e))
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Direction {
    Output,
    Input,
}

impl Direction {
    fn word(self) -> &'static str {
        match self {
            Direction::Output => "output",
            Direction::Input => "input",
        }
    }
}

fn unavailable(what: &str, e: &dyn std::fmt::Display) -> DeviceError {
    DeviceError::Unavailable(format!("the sound {what} device cannot be used: {e}"))
}

/// The name `--output-device` and `--input-device` take: the API's identifier (ALSA's PCM
/// name, for instance), falling back to what the device displays.
fn device_name(d: &cpal::Device) -> String {
    d.id()
        .map(|id| id.id().to_string())
        .unwrap_or_else(|_| d.to_string())
}

fn find(
    host: &cpal::Host,
    name: Option<&str>,
    direction: Direction,
) -> Result<cpal::Device, DeviceError> {
    let word = direction.word();
    let Some(name) = name else {
        let default = match direction {
            Direction::Output => host.default_output_device(),
            Direction::Input => host.default_input_device(),
        };
        return default.ok_or_else(|| {
            DeviceError::Unavailable(format!(
                "this computer has no default sound {word} device; `downbeat devices` lists \
                 the devices there are, or use `--device virtual` to run without one"
            ))
        });
    };
    let devices = match direction {
        Direction::Output => host.output_devices().map(|d| d.collect::<Vec<_>>()),
        Direction::Input => host.input_devices().map(|d| d.collect::<Vec<_>>()),
    }
    .map_err(|e| unavailable(word, &e))?;
    let names: Vec<String> = devices.iter().map(device_name).collect();
    match names.iter().position(|n| n == name) {
        Some(i) => Ok(devices
            .into_iter()
            .nth(i)
            .expect("index from the same list")),
        None => Err(DeviceError::Config(format!(
            "--{word}-device: there is no sound {word} device called `{name}`; there are: {}",
            if names.is_empty() {
                "none".to_string()
            } else {
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ))),
    }
}

fn ranges(
    d: &cpal::Device,
    direction: Direction,
) -> Result<Vec<cpal::SupportedStreamConfigRange>, cpal::Error> {
    match direction {
        Direction::Output => d.supported_output_configs().map(|c| c.collect()),
        Direction::Input => d.supported_input_configs().map(|c| c.collect()),
    }
}

fn supports_rate(d: &cpal::Device, direction: Direction, rate: u32) -> bool {
    ranges(d, direction).is_ok_and(|r| r.iter().any(|c| c.contains_rate(rate)))
}

/// The formats the callbacks convert, best first.
const FORMATS: [SampleFormat; 8] = [
    SampleFormat::F32,
    SampleFormat::I32,
    SampleFormat::I16,
    SampleFormat::F64,
    SampleFormat::U16,
    SampleFormat::I8,
    SampleFormat::U8,
    SampleFormat::U32,
];

/// A configuration at `rate` with `channels` channels when there is one (else the most
/// channels the device has at that rate), in the best format we convert.
fn pick_config(
    d: &cpal::Device,
    direction: Direction,
    rate: u32,
    channels: usize,
) -> Result<(StreamConfig, SampleFormat), DeviceError> {
    let word = direction.word();
    let all = ranges(d, direction).map_err(|e| unavailable(word, &e))?;
    let at_rate: Vec<_> = all
        .iter()
        .filter(|c| c.contains_rate(rate) && FORMATS.contains(&c.sample_format()))
        .collect();
    let rank = |c: &&cpal::SupportedStreamConfigRange| {
        let exact = usize::from(c.channels()) == channels;
        let format = FORMATS
            .iter()
            .position(|f| *f == c.sample_format())
            .unwrap_or(FORMATS.len());
        (!exact, usize::MAX - usize::from(c.channels()), format)
    };
    let Some(best) = at_rate.into_iter().min_by_key(rank) else {
        let offered: Vec<String> = all
            .iter()
            .map(|c| {
                format!(
                    "{} ch {}..{} Hz {}",
                    c.channels(),
                    c.min_sample_rate(),
                    c.max_sample_rate(),
                    c.sample_format()
                )
            })
            .collect();
        return Err(DeviceError::Config(format!(
            "the sound {word} device `{}` cannot run at {rate} Hz in a format Downbeat \
             converts (it offers: {})",
            device_name(d),
            offered.join("; ")
        )));
    };
    let config = StreamConfig {
        channels: best.channels(),
        sample_rate: rate,
        buffer_size: BufferSize::Default,
    };
    Ok((config, best.sample_format()))
}

/// What the stream callbacks tell the control thread: counters and flags, so that they
/// never allocate.
#[derive(Default)]
struct Status {
    frames: AtomicU64,
    xruns: AtomicU64,
    lost: AtomicBool,
    /// The [`ErrorKind`] that ended the run, as its position in [`LOST_KINDS`].
    lost_kind: AtomicU8,
    /// Frames played when the last error came, plus one (0: no error yet).
    error_at_frames: AtomicU64,
    output_latency_ns: AtomicU64,
    input_latency_ns: AtomicU64,
}

/// The errors after which the stream cannot go on; any other error is counted as an xrun
/// (a backend's transient failure, such as ALSA's PulseAudio plugin answering a query with
/// EIO now and then, costs a glitch at most), and a device that really stopped shows as
/// callbacks that stop coming, see [`System::STALL`].
const LOST_KINDS: [(ErrorKind, &str); 3] = [
    (ErrorKind::DeviceNotAvailable, "the sound device went away"),
    (ErrorKind::HostUnavailable, "the sound server went away"),
    (ErrorKind::StreamInvalidated, "the stream was invalidated"),
];

impl Status {
    /// Called on the stream's thread: counts, never allocates.
    fn error(&self, kind: ErrorKind) {
        match LOST_KINDS.iter().position(|(k, _)| *k == kind) {
            Some(i) => {
                self.lost_kind.store(i as u8, Ordering::Relaxed);
                self.lost.store(true, Ordering::Release);
            }
            // Rerouted, or no real-time priority: the stream goes on as it was.
            None if matches!(kind, ErrorKind::DeviceChanged | ErrorKind::RealtimeDenied) => {}
            // One xrun per episode: a backend that fails again and again without playing a
            // frame in between (its server just died, say) counts once.
            None => {
                let at = self.frames.load(Ordering::Relaxed) + 1;
                if self.error_at_frames.swap(at, Ordering::Relaxed) != at {
                    self.xruns.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    fn message(&self, stalled: bool) -> String {
        if stalled {
            return format!(
                "the sound device stopped asking for audio for {} s (the sound server or the \
                 device went away)",
                System::STALL.as_secs()
            );
        }
        let i = usize::from(self.lost_kind.load(Ordering::Relaxed));
        format!(
            "{} during the run",
            LOST_KINDS.get(i).map_or("the audio API failed", |(_, m)| m)
        )
    }
}

fn nanos(d: Option<Duration>) -> u64 {
    d.map_or(0, |d| d.as_nanos().min(u64::MAX as u128) as u64)
}

/// Builds the output stream for sample type `T`.
fn output_stream<T: DeviceSample + SizedSample>(
    device: &cpal::Device,
    config: &StreamConfig,
    renderer: Arc<Handoff<Renderer>>,
    status: Arc<Status>,
) -> Result<cpal::Stream, cpal::Error> {
    let channels = usize::from(config.channels);
    let errors = Arc::clone(&status);
    device.build_output_stream::<T, _, _>(
        *config,
        move |data: &mut [T], info: &cpal::OutputCallbackInfo| {
            // The whole body is `fill_interleaved`, which the guard checks in the tests;
            // once the control thread has taken the renderer back, silence.
            // Past the run's length (while the last frames play out) it is silence too.
            let played = renderer.with(|r| {
                if !r.done() {
                    r.fill_interleaved(data, channels);
                }
                !r.done()
            });
            if played != Some(true) {
                data.fill(T::from_f32(0.0));
            }
            let t = info.timestamp();
            status.output_latency_ns.store(
                nanos(t.playback.checked_duration_since(t.callback)),
                Ordering::Relaxed,
            );
            status
                .frames
                .fetch_add((data.len() / channels) as u64, Ordering::Release);
        },
        move |e: cpal::Error| errors.error(e.kind()),
        None,
    )
}

/// Builds the input stream for sample type `T`, which queues what it captures.
fn input_stream<T: DeviceSample + SizedSample>(
    device: &cpal::Device,
    config: &StreamConfig,
    mut sender: CaptureSender,
    status: Arc<Status>,
) -> Result<cpal::Stream, cpal::Error> {
    let errors = Arc::clone(&status);
    device.build_input_stream::<T, _, _>(
        *config,
        move |data: &[T], info: &cpal::InputCallbackInfo| {
            // `push` is the whole body, which the guard checks in the tests.
            if sender.push(data) > 0 {
                status.xruns.fetch_add(1, Ordering::Relaxed);
            }
            let t = info.timestamp();
            status.input_latency_ns.store(
                nanos(t.callback.checked_duration_since(t.capture)),
                Ordering::Relaxed,
            );
        },
        move |e: cpal::Error| errors.error(e.kind()),
        None,
    )
}

macro_rules! by_format {
    ($format:expr, $build:ident, $($arg:expr),*) => {
        match $format {
            SampleFormat::F32 => $build::<f32>($($arg),*),
            SampleFormat::F64 => $build::<f64>($($arg),*),
            SampleFormat::I32 => $build::<i32>($($arg),*),
            SampleFormat::I16 => $build::<i16>($($arg),*),
            SampleFormat::I8 => $build::<i8>($($arg),*),
            SampleFormat::U32 => $build::<u32>($($arg),*),
            SampleFormat::U16 => $build::<u16>($($arg),*),
            SampleFormat::U8 => $build::<u8>($($arg),*),
            other => unreachable!("{other} is not among FORMATS"),
        }
    };
}

/// Drops streams on a thread of their own: a stream whose server died may block in its
/// destructor, and the run must end (or fall back) regardless.
fn drop_detached(streams: Vec<cpal::Stream>) {
    let _ = std::thread::Builder::new()
        .name("downbeat-stream-drop".into())
        .spawn(move || drop(streams));
}

impl Device for System {
    fn name(&self) -> &'static str {
        "system"
    }

    fn run(&mut self, engine: Engine, length: RunLength) -> Result<Run, DeviceError> {
        let rate = engine.sample_rate();
        let block = engine.block_size();
        let host = cpal::default_host();
        let out_dev = find(&host, self.output.as_deref(), Direction::Output)?;
        let (out_cfg, out_format) =
            pick_config(&out_dev, Direction::Output, rate, engine.channels())?;
        let stopper = engine.stopper();
        let (renderer, recorded) =
            prepare(engine, length, &self.record_to, None, WhenFull::CountLost)?;
        let in_ch = renderer.input_channels();
        let status = Arc::new(Status::default());
        let mut streams = Vec::new();
        let renderer = if in_ch > 0 {
            let in_dev = find(&host, self.input.as_deref(), Direction::Input)?;
            let (in_cfg, in_format) = pick_config(&in_dev, Direction::Input, rate, in_ch)?;
            if usize::from(in_cfg.channels) != in_ch {
                return Err(DeviceError::Config(format!(
                    "the sound input device `{}` has no {in_ch}-channel mode at {rate} Hz",
                    device_name(&in_dev)
                )));
            }
            let (sender, reader) =
                CaptureSender::new(in_ch, (QUEUE_SECONDS * f64::from(rate)) as usize);
            let stream = by_format!(
                in_format,
                input_stream,
                &in_dev,
                &in_cfg,
                sender,
                Arc::clone(&status)
            )
            .map_err(|e| unavailable("input", &e))?;
            streams.push(stream);
            renderer.input_queue(reader)
        } else {
            renderer
        };
        let handoff = Handoff::new(renderer);
        let stream = by_format!(
            out_format,
            output_stream,
            &out_dev,
            &out_cfg,
            Arc::clone(&handoff),
            Arc::clone(&status)
        )
        .map_err(|e| unavailable("output", &e))?;
        streams.push(stream);
        let started = Instant::now();
        // Input first, so that its first capture is under way when the output asks.
        for s in &streams {
            s.play().map_err(|e| unavailable("output", &e))?;
        }

        let need = length.frames;
        let (mut seen, mut since) = (0, Instant::now());
        let stalled = loop {
            if status.lost.load(Ordering::Acquire) {
                break false;
            }
            let frames = status.frames.load(Ordering::Acquire);
            if frames >= need || stopper.is_stopped() {
                break false;
            }
            if frames != seen {
                (seen, since) = (frames, Instant::now());
            } else if since.elapsed() > System::STALL {
                break true;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let lost = stalled || status.lost.load(Ordering::Acquire);
        if !lost {
            // The last frames were handed over, not yet heard: let them play out (the
            // latency the API reports, and a little more) before the stream stops.
            let latency = Duration::from_nanos(status.output_latency_ns.load(Ordering::Relaxed));
            std::thread::sleep(latency.min(Duration::from_secs(1)) + Duration::from_millis(50));
        }
        let renderer = handoff.take(TAKE_TIMEOUT);
        if lost {
            drop_detached(streams);
        } else {
            for s in &streams {
                let _ = s.pause();
            }
            drop(streams);
        }
        let message = status.message(stalled);
        let Some(renderer) = renderer else {
            recorded.close()?;
            return Err(DeviceError::Lost(format!(
                "{message} (and its callback never returned)"
            )));
        };
        let mut report = DeviceReport {
            frames: renderer.frames().min(need),
            xruns: status.xruns.load(Ordering::Relaxed),
            claimed_latency: Some(ClaimedLatency {
                output: status.output_latency_ns.load(Ordering::Relaxed) * u64::from(rate)
                    / 1_000_000_000,
                input: status.input_latency_ns.load(Ordering::Relaxed) * u64::from(rate)
                    / 1_000_000_000,
            }),
            ..DeviceReport::default()
        };
        let renderer = match (lost, self.on_loss) {
            (false, _) => renderer,
            (true, OnLoss::Stop) => {
                recorded.close()?;
                // The count lets the user (and a test) check the recording against it.
                let frames = renderer.frames();
                return Err(DeviceError::Lost(format!(
                    "{message}, after {frames} frames played ({:.2} s), every one of them \
                     in the recording when one was asked for",
                    frames as f64 / f64::from(rate)
                )));
            }
            (true, OnLoss::FallBackToVirtual) => {
                report.fallback = Some(Fallback {
                    at_frame: renderer.frames(),
                    reason: message,
                });
                let paced = pace(renderer, block, rate);
                report.late_wakeups = paced.late;
                paced.renderer
            }
        };
        report.xruns += renderer.input_gaps();
        report.frames = renderer.frames().min(need);
        report.wall_seconds = started.elapsed().as_secs_f64();
        let (engine, files) = recorded.finish(renderer)?;
        report.recorded = files;
        Ok(Run { engine, report })
    }
}

/// Every sound device the system's audio API knows and can open, defaults first.
///
/// # Errors
/// [`DeviceError::Unavailable`] when the audio API cannot list its devices.
pub(crate) fn list_devices() -> Result<Vec<DeviceInfo>, DeviceError> {
    let host = cpal::default_host();
    let default_out = host.default_output_device().map(|d| device_name(&d));
    let default_in = host.default_input_device().map(|d| device_name(&d));
    let devices = host
        .devices()
        .map_err(|e| DeviceError::Unavailable(format!("cannot list sound devices: {e}")))?;
    let mut list: Vec<DeviceInfo> = devices
        .map(|d| {
            let name = device_name(&d);
            let outs = ranges(&d, Direction::Output).unwrap_or_default();
            let ins = ranges(&d, Direction::Input).unwrap_or_default();
            let mut sample_rates: Vec<(u32, u32)> = outs
                .iter()
                .chain(&ins)
                .map(|c| (c.min_sample_rate(), c.max_sample_rate()))
                .collect();
            sample_rates.sort_unstable();
            sample_rates.dedup();
            DeviceInfo {
                description: d
                    .description()
                    .map(|x| x.name().to_string())
                    .unwrap_or_else(|_| name.clone()),
                default_output: default_out.as_ref() == Some(&name),
                default_input: default_in.as_ref() == Some(&name),
                output_channels: outs.iter().map(|c| c.channels()).max().unwrap_or(0),
                input_channels: ins.iter().map(|c| c.channels()).max().unwrap_or(0),
                sample_rates,
                name,
            }
        })
        .collect();
    // Plugins that cannot be opened on their own (rate converters, say) are not devices.
    list.retain(|d| d.output_channels > 0 || d.input_channels > 0);
    list.sort_by_key(|d| !(d.default_output || d.default_input));
    Ok(list)
}
