use std::path::PathBuf;
use std::time::Instant;

use super::takes::prepare;
use super::{Device, DeviceError, DeviceReport, InputFile, RecordTo, Run, RunLength};
use crate::record::{RecordOptions, WhenFull};
use crate::Engine;

/// Renders as fast as the machine allows, optionally to a WAV file, which a writer thread
/// writes as the render goes (so any length fits). The render waits for the writer when
/// the disk falls behind, so nothing is lost and the file is the same however slow the
/// disk.
///
/// With [`input`](Offline::input) the `input` nodes hear a WAV file block by block, exactly
/// as they would have heard it on a live device: a live run's input recorded with
/// `--record-input` replays here into the same output.
///
/// ```
/// use downbeat::device::{Device, Offline, RunLength};
/// use downbeat::{project::Project, Engine};
///
/// let project = Project::parse(
///     "edges = [\"n -> out\"]\n[nodes.n]\ntype = \"noise\"\n[nodes.out]\ntype = \"output\"\n",
///     "inline.toml",
/// ).unwrap();
/// let engine = Engine::new(project.build().unwrap());
/// let run = Offline::new(None).run(engine, RunLength { frames: 1000 }).unwrap();
/// assert_eq!(run.report.frames, 1000);
/// ```
#[derive(Debug, Default)]
pub struct Offline {
    record_to: RecordTo,
    input: Option<InputFile>,
}

impl Offline {
    /// An offline device writing to `out` (32-bit float WAV) when given.
    pub fn new(out: Option<PathBuf>) -> Self {
        Self {
            record_to: RecordTo {
                out,
                ..RecordTo::default()
            },
            input: None,
        }
    }

    /// How the file is buffered and synced.
    pub fn record_options(mut self, options: RecordOptions) -> Self {
        self.record_to.options = options;
        self
    }

    /// Feeds the `input` nodes from `file`, which must have the engine's sample rate and
    /// as many channels as its capture.
    pub fn input(mut self, file: InputFile) -> Self {
        self.input = Some(file);
        self
    }
}

impl Device for Offline {
    fn name(&self) -> &'static str {
        "offline"
    }

    fn run(&mut self, engine: Engine, length: RunLength) -> Result<Run, DeviceError> {
        let block = engine.block_size();
        let input = self.input.as_ref();
        let mut engine = engine;
        // Nodes fed by other threads (a file player's reader) wait for them here instead of
        // playing silence: an offline render is the same however slow those threads are.
        engine.schedule_mut().set_offline(true);
        let (mut renderer, takes) =
            prepare(engine, length, &self.record_to, input, WhenFull::Wait)?;
        let started = Instant::now();
        while !renderer.done() {
            let frames = (block as u64).min(renderer.remaining()) as usize;
            renderer.render(frames);
        }
        let frames = renderer.frames().min(length.frames);
        let (mut engine, recorded) = takes.finish(renderer)?;
        engine.schedule_mut().set_offline(false);
        Ok(Run {
            engine,
            report: DeviceReport {
                frames,
                wall_seconds: started.elapsed().as_secs_f64(),
                recorded,
                ..DeviceReport::default()
            },
        })
    }
}
