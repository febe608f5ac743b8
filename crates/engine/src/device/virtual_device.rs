#[cfg(doc)]
use downbeat_rt::clock::Ticker;

use super::pacing::pace;
use super::takes::prepare;
use super::{Device, DeviceError, DeviceReport, InputFile, RecordTo, Run, RunLength};
use crate::record::{RecordOptions, WhenFull};
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
/// The recording (with `out`) streams to a WAV file through a writer thread (see
/// [`record`](crate::record)): the callback pushes each block into a ring allocated and
/// touched before the run, so it neither allocates nor faults nor waits for the disk, and a
/// run of any length fits. With [`input`](Virtual::input), the `input` nodes hear a WAV file
/// as if it came in through the card.
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
    record_to: RecordTo,
    input: Option<InputFile>,
}

impl Virtual {
    /// A virtual device, recording what it plays to `out` when given.
    pub fn new(out: Option<std::path::PathBuf>) -> Self {
        Self {
            record_to: RecordTo {
                out,
                ..RecordTo::default()
            },
            input: None,
        }
    }

    /// How the recording is buffered and synced.
    pub fn record_options(mut self, options: RecordOptions) -> Self {
        self.record_to.options = options;
        self
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
        let input = self.input.as_ref();
        let (renderer, takes) =
            prepare(engine, length, &self.record_to, input, WhenFull::CountLost)?;
        let paced = pace(renderer, block, rate);
        let wall_seconds = paced.wall_seconds;
        let frames = paced.renderer.frames().min(length.frames);
        let (engine, recorded) = takes.finish(paced.renderer)?;
        Ok(Run {
            engine,
            report: DeviceReport {
                frames,
                wall_seconds,
                late_wakeups: paced.late,
                recorded,
                ..DeviceReport::default()
            },
        })
    }
}
