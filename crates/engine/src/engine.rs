//! [`Engine`]: runs a [`Schedule`] for a device callback and measures its load.

use downbeat_graph::Schedule;
use downbeat_nodes::Capture;
use downbeat_rt::pool::{Pool, PoolConfig};
use downbeat_rt::reclaim::Reclaimer;

use crate::control::record::{self, RecordReader, RecordTap};
use crate::control::{ControlInputs, Controller};
use crate::load::{LoadMeter, LoadSummary};
use crate::midi::{MidiInput, MIDI_CAPACITY};
use crate::swap::{self, ScheduleSender, Swapper};
#[cfg(not(target_arch = "wasm32"))]
use crate::watch::{Watcher, Watchers};

/// Blocks of load history kept exactly by default: about 10 minutes at 48 kHz / 256.
pub const DEFAULT_HISTORY: usize = 120_000;

/// The audio-thread side of Downbeat: owns the running [`Schedule`] and measures the load
/// of every callback.
///
/// [`process`](Engine::process) is what a device calls from its audio callback. It does not
/// allocate, free, lock or make system calls (reading the clock goes through the vDSO).
///
/// The engine is the only way events reach the running schedule (see
/// [`control`](crate::control#one-inbox)): at the start of each `process` call it takes any
/// schedule swapped in, then delivers the device's MIDI handed to [`midi`](Engine::midi) and
/// every [`Controller`]'s queue, in that order, to the schedule that runs then.
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
///
/// Events from a control thread and from a device, across a hot swap:
///
/// ```
/// use downbeat::{control::When, project::Project, Engine};
///
/// let p = Project::parse(
///     "edges = [\"s -> out\"]\n[nodes.s]\ntype = \"synth\"\n[nodes.out]\ntype = \"output\"\n",
///     "x.toml",
/// ).unwrap();
/// let mut engine = Engine::new(p.build().unwrap());
/// let (mut sender, _reclaimer) = engine.swap_channel(2);
/// let mut control = engine.controller(64);
/// let mut block = vec![0.0f32; 256 * 2];
/// engine.process(&mut block);
/// // A note for frame 1000, taken into the running schedule at the next block...
/// control.note_on(When::Frame(1000), 0, 69.0, 0.8).unwrap();
/// engine.process(&mut block);
/// assert_eq!(engine.schedule().pending_events(), 1);
/// // ...survives a swap to a schedule that keeps the node `s`.
/// sender.send(p.build().unwrap()).unwrap();
/// engine.midi(10, &[0x90, 72, 100]); // a device's note, 10 frames into this callback
/// engine.process(&mut block);
/// assert_eq!((engine.swaps(), engine.schedule().pending_events()), (1, 1));
/// assert_eq!(engine.schedule().position(), 3 * 256); // the timeline goes on
/// assert_eq!(engine.undelivered_events(), 0);
/// ```
pub struct Engine {
    schedule: Schedule,
    pool: Option<Pool>,
    swapper: Option<Swapper>,
    meter: LoadMeter,
    seconds_per_frame: f64,
    capture: Option<Capture>,
    control: ControlInputs,
    midi: MidiInput,
    record: Option<RecordTap>,
    #[cfg(not(target_arch = "wasm32"))]
    watch: Watchers,
    stop: Stopper,
}

/// Asks a run to end at its next block boundary: [`Engine::stopper`] makes one for a
/// control thread, and [`start`](crate::start)'s [`Running`](crate::Running) holds one.
/// Devices check it between blocks (one atomic load), as they check the run's length.
///
/// ```
/// use downbeat::device::{Device, Offline, RunLength};
/// use downbeat::{project::Project, Engine};
///
/// let p = Project::parse("edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n", "x.toml").unwrap();
/// let engine = Engine::new(p.build().unwrap());
/// let stopper = engine.stopper();
/// stopper.stop(); // before the run: it ends before its first block
/// let run = Offline::new(None).run(engine, RunLength::UNTIL_STOPPED).unwrap();
/// assert_eq!(run.report.frames, 0);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Stopper(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Stopper {
    /// Asks the run to end at its next block boundary. Real-time safe (one atomic store).
    pub fn stop(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Whether [`stop`](Stopper::stop) was called.
    pub fn is_stopped(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Acquire)
    }
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
        let control = ControlInputs::new();
        control.anchor.instruments.store(
            schedule.instrument_count(),
            std::sync::atomic::Ordering::Relaxed,
        );
        Self {
            schedule,
            pool: None,
            swapper: None,
            meter: LoadMeter::new(blocks),
            seconds_per_frame,
            capture: None,
            control,
            midi: MidiInput::new(MIDI_CAPACITY),
            record: None,
            #[cfg(not(target_arch = "wasm32"))]
            watch: Watchers::default(),
            stop: Stopper::default(),
        }
    }

    /// A [`Stopper`] for this engine's runs: once stopped, a device's run ends at its next
    /// block boundary (and every later run at once) and hands the engine back.
    pub fn stopper(&self) -> Stopper {
        self.stop.clone()
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn stopper_ref(&self) -> &Stopper {
        &self.stop
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
    /// let (mut sender, mut reclaimer) = engine.swap_channel(4);
    /// sender.send(p.build().unwrap()).unwrap();
    /// let mut block = vec![0.0; engine.block_size() * 2];
    /// engine.process(&mut block); // swaps at the block boundary
    /// assert_eq!(engine.swaps(), 1);
    /// assert_eq!(reclaimer.collect(), 1); // the old schedule, freed here
    /// ```
    pub fn swap_channel(&mut self, capacity: usize) -> (ScheduleSender, Reclaimer) {
        let (sender, swapper, reclaimer) = swap::channel(&self.schedule, capacity);
        self.swapper = Some(swapper);
        (sender, reclaimer)
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

    /// A [`Controller`] for a control thread, with a queue of `capacity` events of its own
    /// into the audio thread (see [`control`](crate::control)). Make controllers before the
    /// run: the audio thread polls a list fixed then. Frees the slots of the controllers
    /// dropped since (once the audio thread has taken all their events), here, off the
    /// audio thread.
    ///
    /// # Panics
    /// When [`MAX_CONTROLLERS`](crate::control::MAX_CONTROLLERS) controllers are alive (or
    /// dropped with events still queued).
    pub fn controller(&mut self, capacity: usize) -> Controller {
        let table = std::sync::Arc::new(self.schedule.param_table());
        Controller::new(table, &mut self.control, capacity)
    }

    /// How many more controllers the engine can hold now.
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn controller_room(&mut self) -> usize {
        self.control.room()
    }

    /// Starts recording every applied event with the frame it took effect at; the reader
    /// writes them to a file that [`control::record::read_events`](crate::control::record::read_events)
    /// reads back for a replay. Drain the reader regularly during the run.
    pub fn record_events(&mut self) -> RecordReader {
        self.schedule.set_recording(true);
        let (tap, reader) = record::channel();
        self.record = Some(tap);
        reader
    }

    /// Events the recording could not keep because its reader fell behind: a recording
    /// with any is incomplete.
    pub fn unrecorded_events(&self) -> u64 {
        self.record.as_ref().map_or(0, |r| r.lost)
    }

    /// A [`Watcher`] for a control thread: the latest values of the live parameters (those
    /// ramps and automation move included), every node's peak and RMS, the output's peak and
    /// the callback load, published after each block through [`downbeat_rt::notify`], on
    /// whatever device runs the engine (see [`watch`](mod@crate::watch)): the one path by
    /// which the audio thread's values reach a display. Turns on the schedule's level
    /// metering. Make watchers before the run; each sees every block, and a dropped one costs
    /// the audio thread one atomic load. After a schedule swap, make a new one.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn watch(&mut self) -> Watcher {
        self.watch.add(&mut self.schedule, true)
    }

    /// A [`Watcher`] like [`watch`](Engine::watch)'s that meters no node: the output's peak,
    /// the load and the parameter values only, without the schedule reading every sample of
    /// every node. What a progress line needs.
    ///
    /// ```
    /// # use downbeat::{project::Project, Engine};
    /// # let p = Project::parse("edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n\
    /// #     [nodes.out]\ntype = \"output\"\n", "x.toml").unwrap();
    /// let mut engine = Engine::new(p.build().unwrap());
    /// let mut watcher = engine.watch_output();
    /// engine.process(&mut [0.0; 512]);
    /// assert!(watcher.poll());
    /// assert_eq!(watcher.output().frames, 256);
    /// assert!(watcher.levels().is_empty());
    /// ```
    #[cfg(not(target_arch = "wasm32"))]
    pub fn watch_output(&mut self) -> Watcher {
        self.watch.add(&mut self.schedule, false)
    }

    /// Events for a node the running schedule does not have (a node a swap removed, or
    /// changed into another kind of node), refused and counted since the engine started.
    pub fn stale_events(&self) -> u64 {
        self.schedule.event_stats().stale
    }

    /// Every event that did not reach a node, since the engine started: the
    /// [stale](Self::stale_events) ones, those a swapped-in schedule had no room for, notes
    /// to the instruments of a schedule without any, and device MIDI the
    /// [`MidiInput`] could not hold.
    pub fn undelivered_events(&self) -> u64 {
        let stats = self.schedule.event_stats();
        stats.stale + stats.dropped + self.control.undelivered + self.midi.dropped()
    }

    /// Hands the engine a MIDI message a device received during the current callback,
    /// `offset` frames after its first frame, before the [`process`](Self::process) call
    /// that renders that callback: the engine delivers it, once it has taken any schedule
    /// swapped in, to every node that plays notes in the schedule it runs. Real-time safe
    /// (see [`MidiInput`], which counts what it ignores and drops).
    ///
    /// ```
    /// use downbeat::{project::Project, Engine};
    ///
    /// let p = Project::parse(
    ///     "edges = [\"s -> out\"]\n[nodes.s]\ntype = \"synth\"\n[nodes.out]\ntype = \"output\"\n",
    ///     "x.toml",
    /// ).unwrap();
    /// let mut engine = Engine::new(p.build().unwrap());
    /// let mut block = vec![0.0f32; 256 * 2];
    /// engine.process(&mut block);
    /// engine.midi(100, &[0x90, 69, 100]); // A4, 100 frames into this callback
    /// engine.process(&mut block);
    /// assert!(block[..200].iter().all(|&x| x == 0.0));
    /// assert!(block[200..].iter().any(|&x| x != 0.0));
    /// ```
    pub fn midi(&mut self, offset: u32, bytes: &[u8]) {
        self.midi
            .push(self.schedule.position() + u64::from(offset), bytes);
    }

    /// The intake of device MIDI, for its counters.
    pub fn midi_input(&self) -> &MidiInput {
        &self.midi
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
        let ch = self.channels();
        assert_eq!(out.len() % ch, 0, "buffer is not a whole number of frames");
        let in_ch = self.capture.as_ref().map_or(0, Capture::channels);
        assert!(
            input.is_empty() || self.capture.is_none() || input.len() == out.len() / ch * in_ch,
            "input and output hold different numbers of frames"
        );
        let frames = out.len() / ch;
        self.process_pieces(
            frames,
            out,
            |capture, done, n| match input.get(done * in_ch..(done + n) * in_ch) {
                Some(captured) if !input.is_empty() => capture.write_interleaved(captured),
                _ => capture.write_silence(n),
            },
            |schedule, out, done, n| {
                schedule.output_interleaved(&mut out[done * ch..(done + n) * ch])
            },
        );
    }

    /// Like [`process_with_input`](Engine::process_with_input), for planar buffers: channel
    /// `c` of the input is `input[c * frames..][..frames]` and of the output
    /// `out[c * frames..][..frames]`, one buffer per channel, back to back (a `(channels,
    /// frames)` array, as numpy holds one). Saves a caller whose audio is planar the two
    /// interleavings. An empty `input` is silence.
    ///
    /// ```
    /// use downbeat::{project::Project, Engine};
    ///
    /// let p = Project::parse(
    ///     "edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n",
    ///     "x.toml",
    /// ).unwrap();
    /// let (mut a, mut b) = (Engine::new(p.build().unwrap()), Engine::new(p.build().unwrap()));
    /// let (mut planar, mut interleaved) = (vec![0.0; 2 * 100], vec![0.0; 2 * 100]);
    /// a.process_planar(&[], &mut planar, 100);
    /// b.process(&mut interleaved);
    /// assert_eq!(planar[..100], interleaved.iter().step_by(2).copied().collect::<Vec<_>>()[..]);
    /// ```
    ///
    /// # Panics
    /// If `out` does not hold `frames` frames of [`channels`](Engine::channels) channels, or
    /// a non-empty `input` does not hold `frames` frames of [`Capture::channels`] channels.
    pub fn process_planar(&mut self, input: &[f32], out: &mut [f32], frames: usize) {
        let ch = self.channels();
        assert_eq!(out.len(), frames * ch, "output is not `frames` frames");
        let in_ch = self.capture.as_ref().map_or(0, Capture::channels);
        assert!(
            input.is_empty() || self.capture.is_none() || input.len() == frames * in_ch,
            "input and output hold different numbers of frames"
        );
        self.process_pieces(
            frames,
            out,
            |capture, done, n| {
                if input.is_empty() {
                    capture.write_silence(n);
                } else {
                    capture.write_planar(input, frames, done, n);
                }
            },
            |schedule, out, done, n| {
                let block = schedule.output();
                for c in 0..ch {
                    out[c * frames + done..c * frames + done + n]
                        .copy_from_slice(&block.channel(c)[..n]);
                }
            },
        );
    }

    /// The body of a callback of `frames` frames, whatever the buffers' layout: swaps and
    /// events taken, then pieces of at most the block size, each fed by `capture_in(capture,
    /// done, n)` and read out by `take_out(schedule, out, done, n)`; the load and the
    /// watchers after.
    fn process_pieces(
        &mut self,
        frames: usize,
        out: &mut [f32],
        mut capture_in: impl FnMut(&Capture, usize, usize),
        mut take_out: impl FnMut(&Schedule, &mut [f32], usize, usize),
    ) {
        let start = crate::clock::Stopwatch::start();
        // Every device calls here on its own thread: flush subnormals for the callback and
        // give the thread back as it came (the pool's workers flush for their whole life).
        let _flush = downbeat_rt::denormals::FlushDenormals::new();
        let max = self.schedule.config().max_block;
        if let Some(swapper) = self.swapper.as_mut() {
            swapper.take(&mut self.schedule);
        }
        // Every event reaches the schedule here, after the swap: device MIDI, then the
        // controllers' queues (OSC included).
        self.midi.deliver(&mut self.schedule);
        self.control.drain(&mut self.schedule);
        // In pieces of at most the block size, cut where the song's position must be
        // recomputed (a tempo point, a loop wrap, a transport command).
        let mut done = 0;
        while done < frames {
            let n = self.schedule.piece((frames - done).min(max));
            if let Some(capture) = &self.capture {
                capture_in(capture, done, n);
            }
            match &self.pool {
                Some(pool) => self.schedule.process_parallel(n, pool),
                None => self.schedule.process(n),
            }
            take_out(&self.schedule, out, done, n);
            if let Some(r) = &mut self.record {
                r.take(&self.schedule);
            }
            done += n;
        }
        if let (true, Some(seconds)) = (frames > 0, start.seconds()) {
            let budget = frames as f64 * self.seconds_per_frame;
            self.meter.record(seconds / budget);
        }
        #[cfg(not(target_arch = "wasm32"))]
        self.watch.block(&mut self.schedule, out, self.meter.last());
    }

    /// Output channels.
    pub fn channels(&self) -> usize {
        self.schedule.channels()
    }

    /// Sample rate in Hz.
    pub fn sample_rate(&self) -> u32 {
        self.schedule.config().sample_rate
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
