use std::time::{Duration, Instant};

use downbeat_rt::clock::{Ticker, TickerOptions};

use super::{
    Device, DeviceError, DeviceReport, InputFile, Recording, Recordings, Renderer, Run, RunLength,
    MAX_RECORD_SECONDS,
};
use crate::Engine;

/// A sound card without hardware: calls the engine once per block period in real time.
///
/// Like a driver, it calls the engine from a callback thread of its own, which lives for the
/// run: at real-time priority (`SCHED_FIFO` 80, above the pool's workers, so workers spinning
/// for work never starve the thread that hands it out) where the system allows, an ordinary
/// thread otherwise. The thread that calls [`run`](Device::run) keeps its scheduling as it
/// was.
///
/// Blocks are paced by a [`Ticker`]: absolute deadlines on the monotonic clock, so lateness
/// never accumulates into drift, and sleep-then-spin with a learned margin, so callbacks start
/// within microseconds of their deadline instead of after the kernel's timer slack. A callback
/// that starts more than a block late is counted in [`DeviceReport::late_wakeups`], and every
/// block is still produced.
///
/// The recording (with `out`) is a [`Recording`], allocated and touched before the run, so
/// the callback neither allocates nor takes a page fault; it is written to a WAV file
/// afterwards. With [`input`](Virtual::input), the `input` nodes hear a WAV file as if it
/// came in through the card.
///
/// ```
/// use downbeat::device::{Device, RunLength, Virtual};
/// use downbeat::{project::Project, Engine};
///
/// let project = Project::parse(
///     "block_size = 480\nedges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n",
///     "inline.toml",
/// ).unwrap();
/// let engine = Engine::new(project.build().unwrap());
/// // 4800 frames at 48 kHz: ten 10 ms callbacks, about 0.1 s of wall-clock time.
/// let run = Virtual::new(None).run(engine, RunLength { frames: 4800 }).unwrap();
/// assert_eq!(run.engine.summary().blocks, 10);
/// assert!(run.report.wall_seconds >= 0.09);
/// ```
#[derive(Debug, Default)]
pub struct Virtual {
    recordings: Recordings,
    input: Option<InputFile>,
}

impl Virtual {
    /// A virtual device, recording what it plays to `out` when given.
    pub fn new(out: Option<std::path::PathBuf>) -> Self {
        Self {
            recordings: Recordings { out, input: None },
            input: None,
        }
    }

    /// Feeds the `input` nodes from `file`, which must have the engine's sample rate and
    /// at least as many channels as its capture.
    pub fn input(mut self, file: InputFile) -> Self {
        self.input = Some(file);
        self
    }
}

impl Device for Virtual {
    fn name(&self) -> &'static str {
        "virtual"
    }

    fn run(&mut self, engine: Engine, length: RunLength) -> Result<Run, DeviceError> {
        let rate = engine.sample_rate();
        let block = engine.block_size();
        let mut renderer = prepare(engine, length, &self.recordings, "virtual")?;
        if let Some(file) = &self.input {
            check_input_file(file, &renderer)?;
            renderer = renderer.input_file(file);
        }
        let recordings = Recorded::of(&renderer, &self.recordings);
        let paced = pace(renderer, block, rate);
        let wall_seconds = paced.wall_seconds;
        let engine = recordings.finish(paced.renderer, rate)?;
        Ok(Run {
            engine,
            report: DeviceReport {
                frames: length.frames,
                wall_seconds,
                late_wakeups: paced.late,
                ..DeviceReport::default()
            },
        })
    }
}

/// Refuses a file the `input` nodes could not hear as it is.
pub(crate) fn check_input_file(file: &InputFile, renderer: &Renderer) -> Result<(), DeviceError> {
    let rate = renderer.engine().sample_rate();
    if file.sample_rate() != rate {
        return Err(DeviceError::Config(format!(
            "--input: `{}` is at {} Hz but the project runs at {rate} Hz; set the project's \
             `sample_rate` to {} or resample the file",
            file.path().display(),
            file.sample_rate(),
            file.sample_rate()
        )));
    }
    if file.channels() != renderer.input_channels() {
        return Err(DeviceError::Config(format!(
            "--input: `{}` has {} channel(s) but the input was set up with {}",
            file.path().display(),
            file.channels(),
            renderer.input_channels()
        )));
    }
    Ok(())
}

/// A renderer for `engine` with the recordings `recordings` asks for, allocated and touched
/// now. Real-time devices keep recordings in memory, so their length is bounded.
pub(crate) fn prepare(
    engine: Engine,
    length: RunLength,
    recordings: &Recordings,
    device: &str,
) -> Result<Renderer, DeviceError> {
    let rate = engine.sample_rate();
    let wanted = recordings.out.is_some() || recordings.input.is_some();
    if wanted && length.frames as f64 > MAX_RECORD_SECONDS * rate as f64 {
        return Err(DeviceError::Config(format!(
            "the {device} device records at most {MAX_RECORD_SECONDS} s; use `--device offline` \
             to render longer files, or run without `--out`"
        )));
    }
    let (out_ch, in_ch) = (
        engine.channels(),
        engine.capture().map_or(0, |c| c.channels()),
    );
    let mut renderer = Renderer::new(engine, length.frames);
    if recordings.out.is_some() {
        renderer = renderer.record(Recording::new(length.frames as usize, out_ch));
    }
    if recordings.input.is_some() {
        if in_ch == 0 {
            return Err(DeviceError::Config(
                "--record-input: the project has no `input` node, so there is nothing to record"
                    .into(),
            ));
        }
        renderer = renderer.record_input(Recording::new(length.frames as usize, in_ch));
    }
    Ok(renderer)
}

/// The recordings of a run, kept aside so that they can be written whatever becomes of the
/// renderer.
pub(crate) struct Recorded {
    out: Option<(std::path::PathBuf, std::sync::Arc<Recording>)>,
    input: Option<(std::path::PathBuf, std::sync::Arc<Recording>)>,
}

impl Recorded {
    pub(crate) fn of(renderer: &Renderer, recordings: &Recordings) -> Self {
        let (out, input) = renderer.recordings();
        Self {
            out: recordings.out.clone().zip(out),
            input: recordings.input.clone().zip(input),
        }
    }

    /// Writes the WAV files.
    pub(crate) fn write(&self, rate: u32) -> Result<(), DeviceError> {
        for (path, rec) in self.out.iter().chain(&self.input) {
            rec.write_wav(path, rate)?;
        }
        Ok(())
    }

    /// Writes the WAV files and hands the engine back.
    pub(crate) fn finish(&self, renderer: Renderer, rate: u32) -> Result<Engine, DeviceError> {
        self.write(rate)?;
        Ok(renderer.into_engine())
    }
}

/// What [`pace`] hands back.
pub(crate) struct Paced {
    pub(crate) renderer: Renderer,
    pub(crate) wall_seconds: f64,
    pub(crate) late: u64,
}

/// Runs `renderer` to its end in blocks of `block` frames, one per block period, on a
/// callback thread of its own: the virtual device, and where a lost device falls back to.
pub(crate) fn pace(mut renderer: Renderer, block: usize, rate: u32) -> Paced {
    let period = Duration::from_secs_f64(block as f64 / rate as f64);
    let callback = move || {
        // The callback thread's own settings: real-time priority where the system allows
        // (silently an ordinary thread otherwise) and a 1 ns timer slack, gone with the
        // thread.
        let options = TickerOptions {
            timer_slack: Some(Duration::from_nanos(1)),
            ..TickerOptions::default()
        };
        // Read before the ticker starts, so the wall time covers every period it waits.
        let started = Instant::now();
        // Burst (the default late policy): a late block is still due, like a real card's
        // buffer that must be filled; it is counted, not dropped.
        let mut ticker = Ticker::with_options(period, &options);
        let mut late = 0;
        let mut first = true;
        while !renderer.done() {
            // The first callback comes at once, as a sound card's does; each later one a
            // period after the one before.
            if !std::mem::take(&mut first) && ticker.wait().lateness > period {
                late += 1;
            }
            let frames = (block as u64).min(renderer.remaining()) as usize;
            renderer.render(frames);
        }
        Paced {
            renderer,
            wall_seconds: started.elapsed().as_secs_f64(),
            late,
        }
    };
    std::thread::Builder::new()
        .name("downbeat-virtual".into())
        .spawn(callback)
        .expect("spawn the virtual device's callback thread")
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}
