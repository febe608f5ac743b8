use std::path::PathBuf;
use std::time::{Duration, Instant};

use downbeat_rt::clock::{Ticker, TickerOptions};

use super::{write_wav, Device, DeviceError, DeviceReport, RunLength};
use crate::Engine;

/// Longest recording the virtual device keeps in memory, in seconds.
pub const MAX_RECORD_SECONDS: f64 = 600.0;

/// A sound card without hardware: calls the engine once per block period in real time.
///
/// Blocks are paced by a [`Ticker`]: absolute deadlines on the monotonic clock, so lateness
/// never accumulates into drift, and sleep-then-spin with a learned margin, so callbacks start
/// within microseconds of their deadline instead of after the kernel's timer slack. The
/// thread's scheduling is left alone (only its timer slack is lowered); a callback that starts
/// more than a block late is counted in [`DeviceReport::late_wakeups`], and every block is
/// still produced.
///
/// The recording (with `out`) is preallocated before the run, so the callback never
/// allocates, and written to a WAV file afterwards.
///
/// ```
/// use downbeat::device::{Device, RunLength, Virtual};
/// use downbeat::{project::Project, Engine};
///
/// let project = Project::parse(
///     "block_size = 480\nedges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n",
///     "inline.toml",
/// ).unwrap();
/// let mut engine = Engine::new(project.build().unwrap());
/// // 4800 frames at 48 kHz: ten 10 ms callbacks, about 0.1 s of wall-clock time.
/// let report = Virtual::new(None).run(&mut engine, RunLength { frames: 4800 }).unwrap();
/// assert_eq!(engine.summary().blocks, 10);
/// assert!(report.wall_seconds >= 0.09);
/// ```
#[derive(Debug, Default)]
pub struct Virtual {
    out: Option<PathBuf>,
}

impl Virtual {
    /// A virtual device, recording what it plays to `out` when given.
    pub fn new(out: Option<PathBuf>) -> Self {
        Self { out }
    }
}

impl Device for Virtual {
    fn name(&self) -> &'static str {
        "virtual"
    }

    fn run(&mut self, engine: &mut Engine, length: RunLength) -> Result<DeviceReport, DeviceError> {
        let ch = engine.channels();
        let block = engine.block_size();
        let rate = engine.sample_rate();
        let mut recording = match &self.out {
            Some(_) if length.frames as f64 > MAX_RECORD_SECONDS * rate as f64 => {
                return Err(DeviceError::Config(format!(
                    "the virtual device records at most {MAX_RECORD_SECONDS} s; \
                     use `--device offline` to render longer files"
                )))
            }
            Some(_) => Vec::with_capacity(length.frames as usize * ch),
            None => Vec::new(),
        };
        let mut buf = vec![0.0f32; block * ch];
        let period = Duration::from_secs_f64(block as f64 / rate as f64);
        // Like a driver's callback thread: real-time priority above the pool's workers where
        // the system allows (silently an ordinary thread otherwise), so workers spinning for
        // work never starve the thread that hands it out.
        let options = TickerOptions {
            timer_slack: Some(Duration::from_nanos(1)),
            ..TickerOptions::default()
        };
        // Read before the ticker starts, so the wall time covers every period it waits.
        let started = Instant::now();
        // Burst (the default late policy): a late block is still due, like a real card's
        // buffer that must be filled; it is counted, not dropped.
        let mut ticker = Ticker::with_options(period, &options);
        let mut left = length.frames;
        let mut late = 0;
        let mut first = true;
        while left > 0 {
            // The first callback comes at once, as a sound card's does; each later one a
            // period after the one before.
            if !std::mem::take(&mut first) && ticker.wait().lateness > period {
                late += 1;
            }
            let frames = (block as u64).min(left) as usize;
            let buf = &mut buf[..frames * ch];
            engine.process(buf);
            if self.out.is_some() {
                recording.extend_from_slice(buf);
            }
            left -= frames as u64;
        }
        let wall_seconds = started.elapsed().as_secs_f64();
        if let Some(path) = &self.out {
            write_wav(path, &recording, ch, rate)?;
        }
        Ok(DeviceReport {
            frames: length.frames,
            wall_seconds,
            late_wakeups: late,
        })
    }
}
