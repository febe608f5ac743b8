//! Watching the engine: parameter values (those a ramp or automation moves included), the
//! nodes' outputs (a plugin's meters and control outputs, see
//! [`Node::outputs`](downbeat_graph::Node::outputs): read by name like a parameter,
//! `value("node", "name")`, and never set), per-node meters (peak, RMS), and the output's
//! peak and the callback load, from the audio thread to any other thread, on every device.
//! This is the engine's one audio-to-UI channel: the CLI's progress line and `downbeat run
//! --meters` both read it.
//!
//! The audio side (taps held by the [`Engine`](crate::Engine), one per watcher) runs after each
//! callback: it stores the values that changed, each node's level, the output's peak and the
//! load in atomics, behind a sequence counter so that the control side reads one consistent
//! block, and triggers a [`Notifier`] of [`downbeat_rt::notify`] (the async updater of D.
//! Rowland's "Real-time Trade-offs"). No lock, no allocation, no system call: the dispatcher
//! polls ([`Strategy::Poll`]), so a trigger is atomics only.
//!
//! The control side ([`Watcher`]) owns the dispatcher: [`Watcher::wait`] or
//! [`Watcher::poll`] run the delivery on the calling thread, which copies the latest values
//! and folds the levels since the previous delivery; [`Watcher::follow`] runs them on a
//! thread of its own and calls back after each. Deliveries coalesce: a slow watcher sees the
//! latest values and the peak of every block since its last look, never a backlog.
//!
//! ```
//! use std::time::Duration;
//! use downbeat::{control::When, project::Project, Engine};
//! use downbeat_graph::Shape;
//!
//! let p = Project::parse(
//!     "edges = [\"s -> g -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.g]\ntype = \"gain\"\n\
//!      [nodes.out]\ntype = \"output\"\n",
//!     "x.toml",
//! ).unwrap();
//! let mut engine = Engine::new(p.build().unwrap());
//! let mut watcher = engine.watch();
//! let mut control = engine.controller(16);
//! control.ramp(When::Frame(0), "g", "gain", Shape::Linear, 0.0, 0.1).unwrap();
//! let mut block = vec![0.0f32; 256 * 2];
//! engine.process(&mut block); // the audio thread, usually a device's
//! assert!(watcher.wait(Duration::from_secs(1)));
//! let gain = watcher.value("g", "gain").unwrap();
//! assert!((gain - (1.0 - 256.0 / 4800.0)).abs() < 1e-6); // a tenth of a second at 48 kHz
//! let level = watcher.level("s").unwrap();
//! assert!(level.peak > 0.0 && level.rms > 0.0);
//! let output = watcher.output();
//! assert_eq!((output.frames, output.blocks), (256, 1));
//! assert!(output.peak > 0.0 && output.load > 0.0);
//! ```
//!
//! A display that redraws after each delivery, on a thread of its own:
//!
//! ```
//! use std::sync::mpsc;
//! use downbeat::{project::Project, Engine};
//!
//! let p = Project::parse(
//!     "edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n",
//!     "x.toml",
//! ).unwrap();
//! let mut engine = Engine::new(p.build().unwrap());
//! let (seen, frames) = mpsc::channel();
//! // The output and the load only: no node is metered.
//! let display = engine.watch_output().follow(move |w| {
//!     let _ = seen.send(w.output().frames);
//! });
//! let mut block = vec![0.0f32; 256 * 2];
//! engine.process(&mut block); // the audio thread
//! assert_eq!(frames.recv().unwrap(), 256);
//! let watcher = display.stop(); // the watcher comes back
//! assert_eq!(watcher.output().frames, 256);
//! ```

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use downbeat_graph::{NodeLevel, ParamId, ParamTable, Schedule};
use downbeat_rt::notify::{Dispatcher, Notifier, Strategy};

/// How often a [`Watcher`] waiting in [`wait`](Watcher::wait) looks for a delivery.
pub const WATCH_PERIOD: Duration = Duration::from_millis(10);

/// What the audio side publishes.
struct Shared {
    /// Odd while the audio side writes.
    seq: AtomicU64,
    /// The frame the values hold from.
    frame: AtomicU64,
    /// One per live parameter and output, in [`ParamTable::watched`] order, as `f32` bits.
    values: Box<[AtomicU32]>,
    /// Per node: the sum of squares (`f64` bits) and the samples, since the start.
    sums: Box<[AtomicU64]>,
    samples: Box<[AtomicU64]>,
    /// Per node: the highest peak since the publication the control side last took
    /// (`f32` bits).
    peaks: Box<[AtomicU32]>,
    /// Frames and callbacks since the watcher was made.
    frames: AtomicU64,
    blocks: AtomicU64,
    /// The output's highest absolute sample and the highest load, over the same window as
    /// `peaks` (`f32` bits).
    output_peak: AtomicU32,
    load: AtomicU32,
    /// The `seq` of the publication the control side took last: the audio side starts a
    /// new peak window after it.
    taken: AtomicU64,
}

/// The audio-thread side of one [`Watcher`].
struct WatchTap {
    shared: Arc<Shared>,
    notifier: Notifier,
    /// Whether this watcher meters every node ([`Engine::watch`](crate::Engine::watch)) or
    /// not ([`Engine::watch_output`](crate::Engine::watch_output)).
    nodes: bool,
    /// The live parameters and outputs, sorted, to find a value's slot without allocating.
    ids: Box<[ParamId]>,
    /// Their slots in `shared.values`.
    slots: Box<[usize]>,
    sums: Box<[f64]>,
    samples: Box<[u64]>,
    peaks: Box<[f32]>,
    frames: u64,
    blocks: u64,
    output_peak: f32,
    load: f32,
    /// The `seq` of this side's latest publication.
    published: u64,
    /// Whether its watcher is alive, as of this block.
    active: bool,
}

impl WatchTap {
    /// Opens this block's publication: folds the output's peak and the load into the window
    /// and marks the shared values as being written.
    fn begin(&mut self, frame: u64, frames: u64, output_peak: f32, load: f32) {
        // The dispatcher's callback holds the other reference: gone with the watcher.
        self.active = Arc::strong_count(&self.shared) > 1;
        if !self.active {
            return;
        }
        let s = &*self.shared;
        // A window ends when the control side has taken its last publication; until then
        // peaks pile up, so a peak is never lost (it may be shown twice, never missed).
        if s.taken.load(Ordering::Acquire) == self.published {
            self.peaks.fill(0.0);
            self.output_peak = 0.0;
            self.load = 0.0;
        }
        self.frames += frames;
        self.blocks += 1;
        self.output_peak = self.output_peak.max(output_peak);
        self.load = self.load.max(load);
        let seq = s.seq.load(Ordering::Relaxed);
        s.seq.store(seq + 1, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
        s.frame.store(frame, Ordering::Relaxed);
        s.frames.store(self.frames, Ordering::Relaxed);
        s.blocks.store(self.blocks, Ordering::Relaxed);
        s.output_peak
            .store(self.output_peak.to_bits(), Ordering::Relaxed);
        s.load.store(self.load.to_bits(), Ordering::Relaxed);
    }

    fn value(&self, id: ParamId, v: f32) {
        if let Ok(i) = self.ids.binary_search(&id) {
            self.shared.values[self.slots[i]].store(v.to_bits(), Ordering::Relaxed);
        }
    }

    fn level(&mut self, n: usize, level: &NodeLevel) {
        if n < self.sums.len() {
            let s = &*self.shared;
            self.sums[n] += level.sum_squares;
            self.samples[n] += level.samples;
            s.sums[n].store(self.sums[n].to_bits(), Ordering::Relaxed);
            s.samples[n].store(self.samples[n], Ordering::Relaxed);
            self.peaks[n] = self.peaks[n].max(level.peak.abs());
            s.peaks[n].store(self.peaks[n].to_bits(), Ordering::Relaxed);
        }
    }

    /// Closes the publication and triggers the delivery.
    fn end(&mut self) {
        let s = &*self.shared;
        let seq = s.seq.load(Ordering::Relaxed) + 1;
        s.seq.store(seq, Ordering::Release);
        self.published = seq;
        // The trigger's swap releases the stores above to the delivery that acquires it.
        self.notifier.trigger();
    }
}

/// Every watcher's tap, held by the [`Engine`](crate::Engine) and run after each callback.
#[derive(Default)]
pub(crate) struct Watchers {
    taps: Vec<WatchTap>,
}

impl Watchers {
    /// A new watcher of `schedule` (metering every node if `nodes`), on the control thread:
    /// taps whose watcher is gone are dropped here, off the audio thread.
    pub(crate) fn add(&mut self, schedule: &mut Schedule, nodes: bool) -> Watcher {
        self.taps.retain(|t| Arc::strong_count(&t.shared) > 1);
        let (tap, watcher) = pair(schedule, nodes);
        self.taps.push(tap);
        watcher
    }

    /// Publishes the block `schedule` just computed into `out` (interleaved) with load `load`
    /// to every live watcher. Real-time safe: atomics and one coalescing trigger per watcher;
    /// the schedule's changes and levels are taken once and handed to each.
    pub(crate) fn block(&mut self, schedule: &mut Schedule, out: &[f32], load: f64) {
        if self.taps.is_empty() {
            return;
        }
        let frames = (out.len() / schedule.channels().max(1)) as u64;
        let peak = out.iter().fold(0.0f32, |p, s| p.max(s.abs()));
        let position = schedule.position();
        let mut nodes = false;
        for t in &mut self.taps {
            t.begin(position, frames, peak, load as f32);
            nodes |= t.active && t.nodes;
        }
        let taps = &mut self.taps;
        schedule.take_param_changes(|id, v| {
            for t in taps.iter().filter(|t| t.active) {
                t.value(id, v);
            }
        });
        if nodes {
            schedule.take_levels(|n, level| {
                for t in taps.iter_mut().filter(|t| t.active && t.nodes) {
                    t.level(n, &level);
                }
            });
        }
        for t in taps.iter_mut().filter(|t| t.active) {
            t.end();
        }
    }
}

/// The engine's output over a stretch of blocks, and the load of the callbacks that made it.
///
/// ```
/// use downbeat::watch::Output;
/// let half = Output { peak: 0.5, ..Output::default() };
/// assert!((half.peak_dbfs() + 6.0206).abs() < 1e-3);
/// assert_eq!(Output::default().peak_dbfs(), f32::NEG_INFINITY);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Output {
    /// Frames the engine produced since the watcher was made.
    pub frames: u64,
    /// Callbacks since the watcher was made.
    pub blocks: u64,
    /// Highest absolute output sample, over every channel, between the two latest
    /// deliveries (1.0 is full scale).
    pub peak: f32,
    /// Highest load (callback time / the duration of the audio it produced) between the two
    /// latest deliveries.
    pub load: f32,
}

impl Output {
    /// The peak in dBFS (negative infinity for silence).
    pub fn peak_dbfs(&self) -> f32 {
        20.0 * self.peak.log10()
    }
}

/// A node's level over a stretch of blocks.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Level {
    /// Highest absolute sample value, over every channel (1.0 is full scale).
    pub peak: f32,
    /// Root mean square over every sample of every channel.
    pub rms: f32,
}

impl Level {
    /// The peak in dBFS (negative infinity for silence).
    pub fn peak_dbfs(&self) -> f32 {
        20.0 * self.peak.log10()
    }

    /// The RMS in dBFS (negative infinity for silence).
    pub fn rms_dbfs(&self) -> f32 {
        20.0 * self.rms.log10()
    }
}

/// What the deliveries have gathered.
#[derive(Clone, Debug, Default)]
struct Readings {
    deliveries: u64,
    frame: u64,
    values: Vec<f32>,
    /// Per node, cumulative at the latest delivery and at the one before.
    sums: Vec<(f64, u64)>,
    window: Vec<Level>,
    run_peak: Vec<f32>,
    output: Output,
}

/// The control side: the latest parameter and output values, node levels, output peak and
/// load. Made by
/// [`Engine::watch`](crate::Engine::watch) or
/// [`Engine::watch_output`](crate::Engine::watch_output); move it to any thread.
pub struct Watcher {
    dispatcher: Dispatcher,
    readings: Arc<Mutex<Readings>>,
    table: ParamTable,
    nodes: Vec<String>,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("deliveries", &self.deliveries())
            .finish_non_exhaustive()
    }
}

/// A watcher and its tap for `schedule`, whose levels it turns on if it meters the `nodes`.
fn pair(schedule: &mut Schedule, nodes: bool) -> (WatchTap, Watcher) {
    if nodes {
        schedule.set_levels(true);
    }
    let table = schedule.param_table();
    let live: Vec<ParamId> = table.watched().collect();
    let mut order: Vec<usize> = (0..live.len()).collect();
    order.sort_by_key(|&i| live[i]);
    let names = if nodes {
        schedule.names().to_vec()
    } else {
        Vec::new()
    };
    let n = names.len();
    let atomics32 = |len: usize, v: u32| (0..len).map(|_| AtomicU32::new(v)).collect();
    let atomics64 = |len: usize| (0..len).map(|_| AtomicU64::new(0)).collect();
    let initial: Vec<f32> = live.iter().map(|&id| table.initial(id)).collect();
    let shared = Arc::new(Shared {
        seq: AtomicU64::new(0),
        frame: AtomicU64::new(schedule.position()),
        values: initial
            .iter()
            .map(|v| AtomicU32::new(v.to_bits()))
            .collect(),
        sums: atomics64(n),
        samples: atomics64(n),
        peaks: atomics32(n, 0),
        frames: AtomicU64::new(0),
        blocks: AtomicU64::new(0),
        output_peak: AtomicU32::new(0),
        load: AtomicU32::new(0),
        taken: AtomicU64::new(0),
    });
    let readings = Arc::new(Mutex::new(Readings {
        frame: schedule.position(),
        values: initial,
        sums: vec![(0.0, 0); n],
        window: vec![Level::default(); n],
        run_peak: vec![0.0; n],
        ..Readings::default()
    }));
    let mut dispatcher = Dispatcher::new(
        Strategy::Poll {
            period: WATCH_PERIOD,
        },
        1,
    );
    let (seen, into) = (Arc::clone(&shared), Arc::clone(&readings));
    let notifier = dispatcher
        .register(move || deliver(&seen, &into))
        .expect("a fresh dispatcher has room for one callback");
    let tap = WatchTap {
        shared,
        notifier,
        nodes,
        ids: order.iter().map(|&i| live[i]).collect(),
        slots: order.into_boxed_slice(),
        sums: vec![0.0; n].into_boxed_slice(),
        samples: vec![0; n].into_boxed_slice(),
        peaks: vec![0.0; n].into_boxed_slice(),
        frames: 0,
        blocks: 0,
        output_peak: 0.0,
        load: 0.0,
        published: 0,
        active: true,
    };
    let watcher = Watcher {
        dispatcher,
        readings,
        table,
        nodes: names,
    };
    (tap, watcher)
}

/// The delivery, on the watcher's thread: copies one consistent block's worth.
fn deliver(s: &Shared, into: &Mutex<Readings>) {
    let mut r = into.lock().unwrap_or_else(|e| e.into_inner());
    let r = &mut *r;
    let n = r.sums.len();
    let mut sums = vec![(0.0, 0u64); n];
    let mut peaks = vec![0.0f32; n];
    let (taken, output) = loop {
        let before = s.seq.load(Ordering::Acquire);
        if before % 2 == 1 {
            std::hint::spin_loop();
            continue;
        }
        r.frame = s.frame.load(Ordering::Relaxed);
        let output = Output {
            frames: s.frames.load(Ordering::Relaxed),
            blocks: s.blocks.load(Ordering::Relaxed),
            peak: f32::from_bits(s.output_peak.load(Ordering::Relaxed)),
            load: f32::from_bits(s.load.load(Ordering::Relaxed)),
        };
        for (v, a) in r.values.iter_mut().zip(s.values.iter()) {
            *v = f32::from_bits(a.load(Ordering::Relaxed));
        }
        for (k, sum) in sums.iter_mut().enumerate() {
            *sum = (
                f64::from_bits(s.sums[k].load(Ordering::Relaxed)),
                s.samples[k].load(Ordering::Relaxed),
            );
            peaks[k] = f32::from_bits(s.peaks[k].load(Ordering::Relaxed));
        }
        std::sync::atomic::fence(Ordering::Acquire);
        if s.seq.load(Ordering::Relaxed) == before {
            break (before, output);
        }
    };
    s.taken.store(taken, Ordering::Release);
    for k in 0..n {
        let peak = peaks[k];
        let (sum, count) = sums[k];
        let (was_sum, was_count) = r.sums[k];
        let rms = if count > was_count {
            ((sum - was_sum).max(0.0) / (count - was_count) as f64).sqrt() as f32
        } else {
            0.0
        };
        r.window[k] = Level { peak, rms };
        r.run_peak[k] = r.run_peak[k].max(peak);
        r.sums[k] = sums[k];
    }
    r.output = output;
    r.deliveries += 1;
}

/// One live parameter's or output's latest value.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamReading {
    /// The node.
    pub node: String,
    /// The parameter or output.
    pub param: &'static str,
    /// Its value from [`Watcher::frame`] on (an output's: as of the block that ended there).
    pub value: f32,
}

impl Watcher {
    /// Runs a pending delivery, if any, without waiting. Returns whether one ran.
    pub fn poll(&mut self) -> bool {
        self.dispatcher.dispatch() > 0
    }

    /// Waits up to `timeout` for a delivery (checking every [`WATCH_PERIOD`]). Returns
    /// whether one ran.
    pub fn wait(&mut self, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        loop {
            if self.poll() {
                return true;
            }
            if Instant::now() >= end {
                return false;
            }
            if self.dispatcher.wait_and_dispatch() > 0 {
                return true;
            }
        }
    }

    fn readings(&self) -> std::sync::MutexGuard<'_, Readings> {
        self.readings.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Deliveries so far.
    pub fn deliveries(&self) -> u64 {
        self.readings().deliveries
    }

    /// The frame the latest delivered block ended at: the values hold from there on.
    pub fn frame(&self) -> u64 {
        self.readings().frame
    }

    /// The latest value of live parameter or output `param` of node `node`.
    pub fn value(&self, node: &str, param: &str) -> Option<f32> {
        let id = self.table.resolve_watched(node, param).ok()?;
        let slot = self.table.watched().position(|p| p == id)?;
        Some(self.readings().values[slot])
    }

    /// Every live parameter's and output's latest value, node by node in processing order
    /// (a node's parameters, then its outputs).
    pub fn values(&self) -> Vec<ParamReading> {
        let r = self.readings();
        self.table
            .watched()
            .zip(&r.values)
            .map(|(id, &value)| {
                let (node, param) = self.table.names(id);
                ParamReading {
                    node: node.to_string(),
                    param,
                    value,
                }
            })
            .collect()
    }

    /// The output's peak and the highest load between the two latest deliveries, and the
    /// frames and callbacks so far.
    pub fn output(&self) -> Output {
        self.readings().output
    }

    /// Runs the deliveries on a thread of its own, calling `on_delivery` after each with this
    /// watcher (at most one per [`WATCH_PERIOD`]), until [`WatchThread::stop`] hands it back.
    ///
    /// ```
    /// # use downbeat::{project::Project, Engine};
    /// # let p = Project::parse("edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n\
    /// #     [nodes.out]\ntype = \"output\"\n", "x.toml").unwrap();
    /// let mut engine = Engine::new(p.build().unwrap());
    /// let display = engine.watch_output().follow(|w| eprintln!("{:.2}", w.output().load));
    /// engine.process(&mut [0.0; 512]);
    /// assert_eq!(display.stop().output().blocks, 1);
    /// ```
    pub fn follow(mut self, mut on_delivery: impl FnMut(&Watcher) + Send + 'static) -> WatchThread {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("downbeat-watch".into())
            .spawn(move || {
                while !stopping.load(Ordering::Acquire) {
                    if self.wait(WATCH_PERIOD) {
                        on_delivery(&self);
                    }
                }
                // A last look, so the final values reach the display.
                if self.poll() {
                    on_delivery(&self);
                }
                self
            })
            .expect("spawn the watch thread");
        WatchThread {
            stop,
            thread: Some(thread),
        }
    }

    /// Node `node`'s level over the blocks between the two latest deliveries.
    pub fn level(&self, node: &str) -> Option<Level> {
        let n = self.nodes.iter().position(|m| m == node)?;
        Some(self.readings().window[n])
    }

    /// Every node's level over the blocks between the two latest deliveries, with its
    /// name, in processing order (none for a watcher made by
    /// [`Engine::watch_output`](crate::Engine::watch_output)).
    pub fn levels(&self) -> Vec<(String, Level)> {
        let r = self.readings();
        self.nodes
            .iter()
            .cloned()
            .zip(r.window.iter().copied())
            .collect()
    }

    /// Every node's level over everything delivered so far (the run's peak and RMS).
    pub fn run_levels(&self) -> Vec<(String, Level)> {
        let r = self.readings();
        self.nodes
            .iter()
            .enumerate()
            .map(|(k, name)| {
                let (sum, count) = r.sums[k];
                let rms = if count > 0 {
                    (sum / count as f64).sqrt() as f32
                } else {
                    0.0
                };
                (
                    name.clone(),
                    Level {
                        peak: r.run_peak[k],
                        rms,
                    },
                )
            })
            .collect()
    }
}

/// A [`Watcher`] running on a thread of its own, made by [`Watcher::follow`]. Dropping it
/// stops the thread too.
#[derive(Debug)]
pub struct WatchThread {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Watcher>>,
}

impl WatchThread {
    /// Stops the thread after it delivers what is pending, and hands the watcher back.
    ///
    /// # Panics
    /// If the callback given to [`Watcher::follow`] panicked.
    pub fn stop(mut self) -> Watcher {
        self.finish().expect("the watch thread's callback panicked")
    }

    fn finish(&mut self) -> Option<Watcher> {
        self.stop.store(true, Ordering::Release);
        self.thread.take().and_then(|t| t.join().ok())
    }
}

impl Drop for WatchThread {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::Project;

    /// A stereo schedule: a sine into the output.
    fn schedule() -> Schedule {
        Project::parse(
            "edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n",
            "t.toml",
        )
        .unwrap()
        .build()
        .unwrap()
    }

    #[test]
    fn output_maxima_cover_every_block_since_the_last_delivery_then_reset() {
        let mut schedule = schedule();
        let mut taps = Watchers::default();
        let mut watcher = taps.add(&mut schedule, false);
        taps.block(&mut schedule, &[0.1, -0.9], 0.2);
        taps.block(&mut schedule, &[0.3, 0.0], 0.7); // the spike in load
        taps.block(&mut schedule, &[0.0, 0.2, 0.0, 0.0], 0.1);
        assert!(watcher.poll());
        let first = watcher.output();
        assert_eq!((first.frames, first.blocks), (4, 3));
        assert_eq!((first.peak, first.load), (0.9, 0.7));
        taps.block(&mut schedule, &[0.05, 0.0], 0.05);
        taps.block(&mut schedule, &[0.05, 0.0], 0.05);
        taps.block(&mut schedule, &[-0.25, 0.0], 0.3);
        assert!(watcher.poll());
        let second = watcher.output();
        assert_eq!((second.frames, second.blocks), (7, 6));
        assert_eq!(
            (second.peak, second.load),
            (0.25, 0.3),
            "earlier maxima were reset"
        );
    }

    #[test]
    fn stereo_frames_are_counted_per_frame_and_silence_is_minus_infinity() {
        let mut schedule = schedule();
        let mut taps = Watchers::default();
        let mut watcher = taps.add(&mut schedule, false);
        taps.block(&mut schedule, &[0.0; 256], 0.5);
        assert!(watcher.poll());
        let s = watcher.output();
        assert_eq!(s.frames, 128);
        assert_eq!(s.peak_dbfs(), f32::NEG_INFINITY);
        assert!((Output { peak: 0.5, ..s }.peak_dbfs() + 6.0206).abs() < 1e-3);
        assert!(watcher.levels().is_empty(), "no node is metered");
    }

    #[test]
    fn blocks_faster_than_the_look_coalesce() {
        let mut schedule = schedule();
        let mut taps = Watchers::default();
        let mut watcher = taps.add(&mut schedule, false);
        for _ in 0..10_000 {
            taps.block(&mut schedule, &[0.5, 0.5], 0.1);
        }
        assert!(watcher.poll());
        assert!(!watcher.poll(), "one delivery for 10,000 blocks");
        assert_eq!(watcher.deliveries(), 1);
        assert_eq!(watcher.output().frames, 10_000);
    }

    #[test]
    fn every_watcher_sees_every_block_and_a_dropped_one_is_pruned() {
        let mut schedule = schedule();
        let mut taps = Watchers::default();
        let mut nodes = taps.add(&mut schedule, true);
        let mut output = taps.add(&mut schedule, false);
        let gone = taps.add(&mut schedule, false);
        drop(gone);
        taps.block(&mut schedule, &[0.5, -0.75], 0.25);
        assert!(nodes.poll() && output.poll());
        assert_eq!(nodes.output(), output.output());
        assert_eq!(output.output().peak, 0.75);
        assert_eq!(nodes.levels().len(), 2, "both nodes are metered");
        assert_eq!(taps.taps.len(), 3);
        let _third = taps.add(&mut schedule, false);
        assert_eq!(taps.taps.len(), 3, "the dropped watcher's tap is gone");
    }
}
