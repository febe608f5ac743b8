//! Watchers: parameter values (those a ramp or automation moves included) and per-node
//! meters (peak, RMS) from the audio thread to a control thread, on every device.
//!
//! The audio side (a tap held by the [`Engine`](crate::Engine)) runs after each
//! callback: it stores the values that changed and each node's level in atomics, behind a
//! sequence counter so that the control side reads one consistent block, and triggers a
//! [`Notifier`] of [`downbeat_rt::notify`] (the async updater of D. Rowland's "Real-time
//! Trade-offs"). No lock, no allocation, no system call: the dispatcher polls
//! ([`Strategy::Poll`]), so a trigger is atomics only.
//!
//! The control side ([`Watcher`]) owns the dispatcher: [`Watcher::wait`] or
//! [`Watcher::poll`] run the delivery on the calling thread, which copies the latest values
//! and folds the levels since the previous delivery. Deliveries coalesce: a slow watcher
//! sees the latest values and the peak of every block since its last look, never a backlog.
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
//! control.ramp("g", "gain", Shape::Linear, 0.0, 0.1, When::Frame(0)).unwrap();
//! let mut block = vec![0.0f32; 256 * 2];
//! engine.process(&mut block); // the audio thread, usually a device's
//! assert!(watcher.wait(Duration::from_secs(1)));
//! let gain = watcher.value("g", "gain").unwrap();
//! assert!((gain - (1.0 - 256.0 / 4800.0)).abs() < 1e-6); // a tenth of a second at 48 kHz
//! let level = watcher.level("s").unwrap();
//! assert!(level.peak > 0.0 && level.rms > 0.0);
//! ```

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use downbeat_graph::{ParamId, ParamTable, Schedule};
use downbeat_rt::notify::{Dispatcher, Notifier, Strategy};

/// How often a [`Watcher`] waiting in [`wait`](Watcher::wait) looks for a delivery.
pub const WATCH_PERIOD: Duration = Duration::from_millis(10);

/// What the audio side publishes.
struct Shared {
    /// Odd while the audio side writes.
    seq: AtomicU64,
    /// The frame the values hold from.
    frame: AtomicU64,
    /// One per live parameter, in [`ParamTable::live`] order, as `f32` bits.
    values: Box<[AtomicU32]>,
    /// Per node: the sum of squares (`f64` bits) and the samples, since the start.
    sums: Box<[AtomicU64]>,
    samples: Box<[AtomicU64]>,
    /// Per node: the highest peak since the publication the control side last took
    /// (`f32` bits).
    peaks: Box<[AtomicU32]>,
    /// The `seq` of the publication the control side took last: the audio side starts a
    /// new peak window after it.
    taken: AtomicU64,
}

/// The audio-thread side, installed by [`Engine::watch`](crate::Engine::watch).
pub(crate) struct WatchTap {
    shared: Arc<Shared>,
    notifier: Notifier,
    /// The live parameters, sorted, to find a value's slot without allocating.
    ids: Box<[ParamId]>,
    /// Their slots in `shared.values`.
    slots: Box<[usize]>,
    sums: Box<[f64]>,
    samples: Box<[u64]>,
    peaks: Box<[f32]>,
    /// The `seq` of this side's latest publication.
    published: u64,
}

impl WatchTap {
    /// Publishes the block `schedule` just computed. Real-time safe: atomics and one
    /// coalescing trigger.
    pub(crate) fn block(&mut self, schedule: &mut Schedule) {
        let s = &*self.shared;
        // A window ends when the control side has taken its last publication; until then
        // peaks pile up, so a peak is never lost (it may be shown twice, never missed).
        if s.taken.load(Ordering::Acquire) == self.published {
            self.peaks.fill(0.0);
        }
        let seq = s.seq.load(Ordering::Relaxed);
        s.seq.store(seq + 1, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
        s.frame.store(schedule.position(), Ordering::Relaxed);
        let (ids, slots) = (&self.ids, &self.slots);
        schedule.take_param_changes(|id, v| {
            if let Ok(i) = ids.binary_search(&id) {
                s.values[slots[i]].store(v.to_bits(), Ordering::Relaxed);
            }
        });
        let (sums, samples, peaks) = (&mut self.sums, &mut self.samples, &mut self.peaks);
        schedule.take_levels(|n, level| {
            if n < sums.len() {
                sums[n] += level.sum_squares;
                samples[n] += level.samples;
                s.sums[n].store(sums[n].to_bits(), Ordering::Relaxed);
                s.samples[n].store(samples[n], Ordering::Relaxed);
                peaks[n] = peaks[n].max(level.peak.abs());
                s.peaks[n].store(peaks[n].to_bits(), Ordering::Relaxed);
            }
        });
        s.seq.store(seq + 2, Ordering::Release);
        self.published = seq + 2;
        // The trigger's swap releases the stores above to the delivery that acquires it.
        self.notifier.trigger();
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
}

/// The control side: the latest parameter values and node levels. Made by
/// [`Engine::watch`](crate::Engine::watch); move it to any thread.
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

/// A watcher and its tap for `schedule`, whose levels it turns on.
pub(crate) fn pair(schedule: &mut Schedule) -> (WatchTap, Watcher) {
    schedule.set_levels(true);
    let table = schedule.param_table();
    let live: Vec<ParamId> = table.live().collect();
    let mut order: Vec<usize> = (0..live.len()).collect();
    order.sort_by_key(|&i| live[i]);
    let nodes = schedule.names().to_vec();
    let n = nodes.len();
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
        ids: order.iter().map(|&i| live[i]).collect(),
        slots: order.into_boxed_slice(),
        sums: vec![0.0; n].into_boxed_slice(),
        samples: vec![0; n].into_boxed_slice(),
        peaks: vec![0.0; n].into_boxed_slice(),
        published: 0,
    };
    let watcher = Watcher {
        dispatcher,
        readings,
        table,
        nodes,
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
    let taken = loop {
        let before = s.seq.load(Ordering::Acquire);
        if before % 2 == 1 {
            std::hint::spin_loop();
            continue;
        }
        r.frame = s.frame.load(Ordering::Relaxed);
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
            break before;
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
    r.deliveries += 1;
}

/// One live parameter's latest value.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamReading {
    /// The node.
    pub node: String,
    /// The parameter.
    pub param: &'static str,
    /// Its value from [`Watcher::frame`] on.
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

    /// The latest value of live parameter `param` of node `node`.
    pub fn value(&self, node: &str, param: &str) -> Option<f32> {
        let id = self.table.resolve(node, param).ok()?;
        let slot = self.table.live().position(|p| p == id)?;
        Some(self.readings().values[slot])
    }

    /// Every live parameter's latest value, node by node in processing order.
    pub fn values(&self) -> Vec<ParamReading> {
        let r = self.readings();
        self.table
            .live()
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

    /// Node `node`'s level over the blocks between the two latest deliveries.
    pub fn level(&self, node: &str) -> Option<Level> {
        let n = self.nodes.iter().position(|m| m == node)?;
        Some(self.readings().window[n])
    }

    /// Every node's level over the blocks between the two latest deliveries, with its
    /// name, in processing order.
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
