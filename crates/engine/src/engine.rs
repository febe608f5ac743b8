//! [`Engine`]: runs a [`Schedule`] for a device callback and measures its load.

use std::time::Instant;

use downbeat_graph::nodes::Capture;
use downbeat_graph::Schedule;
use downbeat_rt::pool::{Pool, PoolConfig};
use downbeat_rt::reclaim::Reclaimer;

use crate::control::record::{self, RecordReader, RecordTap};
use crate::control::{ControlInputs, Controller};
use crate::load::{LoadMeter, LoadSummary};
use crate::meters::MeterTap;
use crate::swap::{self, ScheduleSender, Swapper};
use crate::watch::{self, WatchTap, Watcher};

/// Blocks of load history kept exactly by default: about 10 minutes at 48 kHz / 256.
pub const DEFAULT_HISTORY: usize = 120_000;

/// The audio-thread side of Downbeat: owns the running [`Schedule`] and measures the load
/// of every callback.
///
/// [`process`](Engine::process) is what a device calls from its audio callback. It does not
/// allocate, free, lock or make system calls (reading the clock goes through the vDSO).
///
/// ```
/// use downbeat::{project::Project, Engine};
///
/// let project = Project::parse(r#"
///     edges = ["osc -> out"]
///     [nodes.osc]
///     type = "sine"
///     [nodes.out]
///     type = "output"
/// "#, "inline.toml").unwrap();
/// let mut engine = Engine::new(project.build().unwrap());
/// let mut block = vec![0.0f32; engine.block_size() * engine.channels()];
/// engine.process(&mut block);
/// assert_eq!(engine.load().summary().blocks, 1);
/// ```
pub struct Engine {
    schedule: Schedule,
    pool: Option<Pool>,
    swapper: Option<Swapper>,
    meter: LoadMeter,
    seconds_per_frame: f64,
    capture: Option<Capture>,
    meters: Option<MeterTap>,
    control: ControlInputs,
    record: Option<RecordTap>,
    watch: Option<WatchTap>,
}

impl Engine {
    /// An engine running `schedule`, keeping [`DEFAULT_HISTORY`] blocks of load history.
    pub fn new(schedule: Schedule) -> Self {
        Self::with_history(schedule, DEFAULT_HISTORY)
    }

    /// An engine keeping `blocks` blocks of exact load history (statistics cover every
    /// block regardless).
    pub fn with_history(schedule: Schedule, blocks: usize) -> Self {
        let seconds_per_frame = 1.0 / schedule.config().sample_rate as f64;
        Self {
            schedule,
            pool: None,
            swapper: None,
            meter: LoadMeter::new(blocks),
            seconds_per_frame,
            capture: None,
            meters: None,
            control: ControlInputs::new(),
            record: None,
            watch: None,
        }
    }

    /// Processes on `threads` threads: the audio thread plus `threads - 1` pool workers
    /// at real-time priority where permitted. `1` processes serially on the audio thread.
    /// Returns notes on what could not be set up (priority, pinning).
    pub fn set_threads(&mut self, threads: usize) -> Vec<String> {
        self.pool = None;
        if threads <= 1 {
            return Vec::new();
        }
        let pool = Pool::new(PoolConfig {
            workers: Some(threads - 1),
            ..PoolConfig::default()
        });
        let notes = pool.notes().to_vec();
        self.pool = Some(pool);
        notes
    }

    /// Threads processing each block, the audio thread included.
    pub fn threads(&self) -> usize {
        self.pool.as_ref().map_or(1, |p| p.workers() + 1)
    }

    /// Futex wakes of parked workers made from the audio thread so far.
    pub fn pool_wakes(&self) -> u64 {
        self.pool.as_ref().map_or(0, Pool::wakes)
    }

    /// Opens a hot-swap channel: schedules sent through the [`ScheduleSender`] replace the
    /// running one at the next block boundary (no block is dropped or repeated), and the
    /// replaced ones are freed when the [`Reclaimer`] collects, off the audio thread.
    /// `capacity` schedules may be in flight. A second call replaces the first channel.
    ///
    /// ```
    /// use downbeat::{project::Project, Engine};
    /// let p = Project::parse("edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n", "x.toml").unwrap();
    /// let mut engine = Engine::new(p.build().unwrap());
    /// let (mut sender, mut collector) = engine.swap_channel(4);
    /// sender.send(p.build().unwrap()).unwrap();
    /// let mut block = vec![0.0; engine.block_size() * 2];
    /// engine.process(&mut block); // swaps at the block boundary
    /// assert_eq!(engine.swaps(), 1);
    /// assert_eq!(collector.collect(), 1); // the old schedule, freed here
    /// ```
    pub fn swap_channel(&mut self, capacity: usize) -> (ScheduleSender, Reclaimer) {
        let (sender, swapper, collector) = swap::channel(&self.schedule, capacity);
        self.swapper = Some(swapper);
        (sender, collector)
    }

    /// Schedules swapped in so far.
    pub fn swaps(&self) -> u64 {
        self.swapper.as_ref().map_or(0, |s| s.swaps)
    }

    /// Connects the [`Capture`] that the schedule's `input` nodes read (the one the project
    /// was built inside [`Capture::connect`] with): from now on every block writes the
    /// device's input for its frames there first. Without a capture, input is ignored.
    pub fn set_capture(&mut self, capture: Capture) {
        self.capture = Some(capture);
    }

    /// The connected capture, if any.
    pub fn capture(&self) -> Option<&Capture> {
        self.capture.as_ref()
    }

    /// Hands every block's level and load to `tap` (see [`meters`](crate::meters)): the one
    /// path by which every device's meters reach the message side.
    pub fn set_meters(&mut self, tap: MeterTap) {
        self.meters = Some(tap);
    }

    /// A [`Controller`] for a control thread, with a queue of `capacity` events of its own
    /// into the audio thread (see [`control`](crate::control)). Make controllers before the
    /// run: the audio thread polls a list fixed then.
    ///
    /// # Panics
    /// Beyond [`MAX_CONTROLLERS`](crate::control::MAX_CONTROLLERS) controllers.
    pub fn controller(&mut self, capacity: usize) -> Controller {
        let table = std::sync::Arc::new(self.schedule.param_table());
        Controller::new(table, &mut self.control, capacity)
    }

    /// Starts recording every applied event with the frame it took effect at; the reader
    /// writes them to a file that [`control::record::read_events`](crate::control::record::read_events)
    /// reads back for a replay. Drain the reader regularly during the run.
    pub fn record_events(&mut self) -> RecordReader {
        self.schedule.set_recording(true);
        let (tap, reader) = record::channel(self.schedule.param_table());
        self.record = Some(tap);
        reader
    }

    /// Events the recording could not keep because its reader fell behind: a recording
    /// with any is incomplete.
    pub fn unrecorded_events(&self) -> u64 {
        self.record.as_ref().map_or(0, |r| r.lost)
    }

    /// A [`Watcher`] for a control thread: the latest values of the live parameters (those
    /// ramps and automation move included) and every node's peak and RMS, published after
    /// each block through [`downbeat_rt::notify`], on whatever device runs the engine (see
    /// [`watch`](mod@crate::watch)). Turns on the schedule's level metering. A second call
    /// replaces the first watcher; after a schedule swap, make a new one.
    pub fn watch(&mut self) -> Watcher {
        let (tap, watcher) = watch::pair(&mut self.schedule);
        self.watch = Some(tap);
        watcher
    }

    /// Events from a controller made for another schedule than the running one (refused).
    pub fn stale_events(&self) -> u64 {
        self.control.stale
    }

    /// Events waiting in the controllers' queues for room in the schedule's.
    pub fn waiting_events(&self) -> usize {
        self.control.waiting()
    }

    /// The running schedule, to change off the audio thread (its event timeline, event
    /// capacity, smoothing).
    pub fn schedule_mut(&mut self) -> &mut Schedule {
        &mut self.schedule
    }

    /// Disconnects the meters, handing the tap back.
    pub fn take_meters(&mut self) -> Option<MeterTap> {
        self.meters.take()
    }

    /// Fills `out` with the next `out.len() / channels` frames, interleaved, and records the
    /// callback's load. Any length that is a whole number of frames works; blocks longer
    /// than the schedule's block size are processed in pieces. The `input` nodes, if any,
    /// hear silence; see [`process_with_input`](Engine::process_with_input).
    ///
    /// # Panics
    /// If `out.len()` is not a multiple of [`channels`](Engine::channels).
    pub fn process(&mut self, out: &mut [f32]) {
        self.process_with_input(&[], out);
    }

    /// Like [`process`](Engine::process), with the device's input for the same frames:
    /// `input` holds them interleaved, [`Capture::channels`] per frame, and the `input` nodes
    /// hear them sample-aligned with `out`. An empty `input` is silence.
    ///
    /// # Panics
    /// If `out.len()` is not a multiple of [`channels`](Engine::channels), or a non-empty
    /// `input` does not hold as many frames as `out`.
    pub fn process_with_input(&mut self, input: &[f32], out: &mut [f32]) {
        let start = Instant::now();
        let ch = self.channels();
        assert_eq!(out.len() % ch, 0, "buffer is not a whole number of frames");
        let in_ch = self.capture.as_ref().map_or(0, Capture::channels);
        assert!(
            input.is_empty() || self.capture.is_none() || input.len() == out.len() / ch * in_ch,
            "input and output hold different numbers of frames"
        );
        let max = self.schedule.config().max_block;
        if let Some(swapper) = self.swapper.as_mut() {
            swapper.take(&mut self.schedule);
        }
        self.control.drain(&mut self.schedule);
        for (k, piece) in out.chunks_mut(max * ch).enumerate() {
            if let Some(capture) = &self.capture {
                let frames = piece.len() / ch;
                match input.get(k * max * in_ch..(k * max + frames) * in_ch) {
                    Some(captured) if !input.is_empty() => capture.write_interleaved(captured),
                    _ => capture.write_silence(frames),
                }
            }
            match &self.pool {
                Some(pool) => self.schedule.process_parallel(piece.len() / ch, pool),
                None => self.schedule.process(piece.len() / ch),
            }
            self.schedule.output_interleaved(piece);
            if let Some(r) = &mut self.record {
                r.take(&self.schedule);
            }
        }
        let frames = out.len() / ch;
        if frames > 0 {
            let budget = frames as f64 * self.seconds_per_frame;
            self.meter.record(start.elapsed().as_secs_f64() / budget);
        }
        if let Some(tap) = &mut self.meters {
            tap.block(out, self.meter.last());
        }
        if let Some(w) = &mut self.watch {
            w.block(&mut self.schedule);
        }
    }

    /// Output channels.
    pub fn channels(&self) -> usize {
        self.schedule.channels()
    }

    /// Sample rate in Hz.
    pub fn sample_rate(&self) -> u32 {
        self.schedule.config().sample_rate as u32
    }

    /// Frames per block the schedule was compiled for.
    pub fn block_size(&self) -> usize {
        self.schedule.config().max_block
    }

    /// The running schedule.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// The load history.
    pub fn load(&self) -> &LoadMeter {
        &self.meter
    }

    /// Forgets the load recorded so far (e.g. after a warm-up).
    pub fn reset_load(&mut self) {
        self.meter.reset();
    }

    /// Load statistics so far.
    pub fn summary(&self) -> LoadSummary {
        self.meter.summary()
    }
}
