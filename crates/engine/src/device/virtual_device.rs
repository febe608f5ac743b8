use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use downbeat_rt::clock::{Ticker, TickerOptions};
use indicatif::{ProgressBar, ProgressStyle};

use super::{Device, DeviceError, DeviceReport, Recording, RunLength};
use crate::meters::{self, MeterSnapshot};
use crate::Engine;

/// Receives meter snapshots on the meter thread while the device runs.
type Watcher = Box<dyn FnMut(MeterSnapshot) + Send>;

/// Longest recording the virtual device keeps in memory, in seconds.
pub const MAX_RECORD_SECONDS: f64 = 600.0;

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
/// afterwards.
///
/// While it runs, the level and load of every block reach the message side through
/// [`meters`](crate::meters) (a notifier the callback triggers, never a lock): on a terminal
/// they drive a progress line (time played, load, peak level), and
/// [`watch`](Virtual::watch) hands them to your own code instead.
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
#[derive(Default)]
pub struct Virtual {
    out: Option<PathBuf>,
    quiet: bool,
    watcher: Option<Watcher>,
}

impl Virtual {
    /// A virtual device, recording what it plays to `out` when given.
    pub fn new(out: Option<PathBuf>) -> Self {
        Self {
            out,
            ..Self::default()
        }
    }

    /// Turns the progress line off (it is also hidden when stderr is not a terminal).
    pub fn without_progress(mut self) -> Self {
        self.quiet = true;
        self
    }

    /// Calls `watcher` on a thread of its own with the meters (frames played, highest load
    /// and peak level since the previous call) a few times a second while the device runs,
    /// instead of drawing the progress line.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use downbeat::device::{Device, RunLength, Virtual};
    /// use downbeat::{project::Project, Engine};
    ///
    /// let project = Project::parse(
    ///     "block_size = 480\nedges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n",
    ///     "inline.toml",
    /// ).unwrap();
    /// let mut engine = Engine::new(project.build().unwrap());
    /// let last = Arc::new(Mutex::new(None));
    /// let seen = Arc::clone(&last);
    /// let mut device = Virtual::new(None).watch(move |m| *seen.lock().unwrap() = Some(m));
    /// device.run(&mut engine, RunLength { frames: 48_00 }).unwrap();
    /// let last = last.lock().unwrap().expect("meters arrived");
    /// assert_eq!(last.frames, 4800); // the final values are always delivered
    /// ```
    pub fn watch(mut self, watcher: impl FnMut(MeterSnapshot) + Send + 'static) -> Self {
        self.watcher = Some(Box::new(watcher));
        self
    }

    /// Where the meters go for this run: the watcher, the progress line, or nowhere.
    fn meter_sink(&mut self, length: RunLength, rate: u32) -> Option<(Watcher, ProgressBar)> {
        if let Some(watcher) = self.watcher.take() {
            return Some((watcher, ProgressBar::hidden()));
        }
        let bar = ProgressBar::new(length.frames);
        if self.quiet || bar.is_hidden() {
            return None;
        }
        bar.set_style(ProgressStyle::with_template("{bar:30} {msg}").expect("template is valid"));
        let line = bar.clone();
        let total = length.frames as f64 / rate as f64;
        let draw = move |m: MeterSnapshot| {
            line.set_position(m.frames);
            line.set_message(format!(
                "{:.1} / {total:.1} s   load {:.2}   peak {:+.1} dBFS",
                m.frames as f64 / rate as f64,
                m.load,
                m.peak_dbfs()
            ));
        };
        Some((Box::new(draw), bar))
    }
}

impl fmt::Debug for Virtual {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Virtual")
            .field("out", &self.out)
            .field("quiet", &self.quiet)
            .field("watched", &self.watcher.is_some())
            .finish()
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
        let recording = match &self.out {
            Some(_) if length.frames as f64 > MAX_RECORD_SECONDS * rate as f64 => {
                return Err(DeviceError::Config(format!(
                    "the virtual device records at most {MAX_RECORD_SECONDS} s; \
                     use `--device offline` to render longer files"
                )))
            }
            Some(_) => Some(Recording::new(length.frames as usize, ch)),
            None => None,
        };
        let mut buf = downbeat_graph::prefaulted(block * ch);
        let period = Duration::from_secs_f64(block as f64 / rate as f64);
        let sink = self.meter_sink(length, rate);
        let (mut tap, meter_thread, bar) = match sink {
            Some((watcher, bar)) => {
                let (tap, thread) = meters::spawn(ch, 1, watcher);
                (Some(tap), Some(thread), bar)
            }
            None => (None, None, ProgressBar::hidden()),
        };
        let callback = || {
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
                if let Some(tap) = &mut tap {
                    tap.block(buf, engine.load().last());
                }
                if let Some(r) = &recording {
                    r.append(buf);
                }
                left -= frames as u64;
            }
            (started.elapsed().as_secs_f64(), late)
        };
        let (wall_seconds, late) = std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("downbeat-virtual".into())
                .spawn_scoped(scope, callback)
                .expect("spawn the virtual device's callback thread")
                .join()
        })
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        drop(tap);
        if let Some(thread) = meter_thread {
            thread.stop();
        }
        bar.finish_and_clear();
        if let (Some(path), Some(r)) = (&self.out, &recording) {
            r.write_wav(path, rate)?;
        }
        Ok(DeviceReport {
            frames: length.frames,
            wall_seconds,
            late_wakeups: late,
        })
    }
}
