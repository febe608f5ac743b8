use std::path::PathBuf;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use super::wav::{create, io};
use super::{Device, DeviceError, DeviceReport, RunLength};
use crate::Engine;

/// Renders as fast as the machine allows, optionally to a WAV file.
///
/// Shows a progress bar on a terminal when the render is longer than a second of audio.
///
/// ```
/// use downbeat::device::{Device, Offline, RunLength};
/// use downbeat::{project::Project, Engine};
///
/// let project = Project::parse(
///     "edges = [\"n -> out\"]\n[nodes.n]\ntype = \"noise\"\n[nodes.out]\ntype = \"output\"\n",
///     "inline.toml",
/// ).unwrap();
/// let mut engine = Engine::new(project.build().unwrap());
/// let report = Offline::new(None).run(&mut engine, RunLength { frames: 1000 }).unwrap();
/// assert_eq!(report.frames, 1000);
/// ```
#[derive(Debug, Default)]
pub struct Offline {
    out: Option<PathBuf>,
    progress: bool,
}

impl Offline {
    /// An offline device writing to `out` (32-bit float WAV) when given.
    pub fn new(out: Option<PathBuf>) -> Self {
        Self {
            out,
            progress: true,
        }
    }

    /// Turns the progress bar off (it is also hidden when stderr is not a terminal).
    pub fn without_progress(mut self) -> Self {
        self.progress = false;
        self
    }
}

impl Device for Offline {
    fn name(&self) -> &'static str {
        "offline"
    }

    fn run(&mut self, engine: &mut Engine, length: RunLength) -> Result<DeviceReport, DeviceError> {
        let ch = engine.channels();
        let block = engine.block_size();
        let mut writer = match &self.out {
            Some(path) => Some((create(path, ch, engine.sample_rate())?, path)),
            None => None,
        };
        let blocks = length.frames.div_ceil(block as u64);
        let bar = if self.progress && length.frames > engine.sample_rate() as u64 {
            let bar = ProgressBar::new(blocks);
            bar.set_style(
                ProgressStyle::with_template("{bar:40} {percent:>3}% rendered, {eta} left")
                    .expect("template is valid"),
            );
            bar
        } else {
            ProgressBar::hidden()
        };
        let mut buf = vec![0.0f32; block * ch];
        let started = Instant::now();
        let mut left = length.frames;
        let mut done = 0u64;
        while left > 0 {
            let frames = (block as u64).min(left) as usize;
            let buf = &mut buf[..frames * ch];
            engine.process(buf);
            if let Some((w, path)) = writer.as_mut() {
                for &s in buf.iter() {
                    w.write_sample(s).map_err(|e| io(path, e))?;
                }
            }
            left -= frames as u64;
            done += 1;
            if done % 64 == 0 {
                bar.set_position(done);
            }
        }
        bar.finish_and_clear();
        if let Some((w, path)) = writer {
            w.finalize().map_err(|e| io(path, e))?;
        }
        Ok(DeviceReport {
            frames: length.frames,
            wall_seconds: started.elapsed().as_secs_f64(),
            late_wakeups: 0,
        })
    }
}
