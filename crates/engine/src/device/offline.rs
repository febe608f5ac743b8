use std::path::PathBuf;
use std::time::Instant;

use super::wav::{create, io};
use super::{Device, DeviceError, DeviceReport, InputFile, Renderer, Run, RunLength};
use crate::Engine;

/// Renders as fast as the machine allows, optionally to a WAV file, which is written as the
/// render goes (so any length fits).
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
    out: Option<PathBuf>,
    input: Option<InputFile>,
}

impl Offline {
    /// An offline device writing to `out` (32-bit float WAV) when given.
    pub fn new(out: Option<PathBuf>) -> Self {
        Self { out, input: None }
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
        let (ch, rate, block) = (engine.channels(), engine.sample_rate(), engine.block_size());
        let mut writer = match &self.out {
            Some(path) => Some((create(path, ch, rate)?, path)),
            None => None,
        };
        let mut engine = engine;
        // Nodes fed by other threads (a file player's reader) wait for them here instead of
        // playing silence: an offline render is the same however slow those threads are.
        engine.schedule_mut().set_offline(true);
        let mut renderer = Renderer::new(engine, length.frames);
        if let Some(file) = &self.input {
            file.check_for(&renderer)?;
            renderer = renderer.input_file(file);
        }
        let started = Instant::now();
        while !renderer.done() {
            let frames = (block as u64).min(renderer.remaining()) as usize;
            let out = renderer.render(frames);
            if let Some((w, path)) = writer.as_mut() {
                for &s in out {
                    w.write_sample(s).map_err(|e| io(path, e))?;
                }
            }
        }
        if let Some((w, path)) = writer {
            w.finalize().map_err(|e| io(path, e))?;
        }
        let mut engine = renderer.into_engine();
        engine.schedule_mut().set_offline(false);
        Ok(Run {
            engine,
            report: DeviceReport {
                frames: length.frames,
                wall_seconds: started.elapsed().as_secs_f64(),
                ..DeviceReport::default()
            },
        })
    }
}
