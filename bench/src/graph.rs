//! The experiment of "Real-Time Safe Multi-Threaded DAW Audio": serial, rayon
//! spawn-per-node, rayon broadcast + `ArrayQueue`, and Downbeat's pool, on the same graph in
//! one process; an uneven synthetic graph (a heavy chain among light nodes); synthetic graphs
//! of 1000 trivial nodes for the scheduling overhead; the engines suite's `sines` and `fanin`
//! as graphs of small real nodes ([`small`]); and the CPU workers burn while idle.
//!
//! Downbeat's workers run at `SCHED_FIFO` and pinned. So that the table separates the
//! scheduler from the priority, rayon is also run with its threads set up the same way
//! (`rayon_*_rt`, through `ThreadPoolBuilder::start_handler`), and Downbeat without real-time
//! priority (`downbeat_nort`) and without warm workers (`downbeat_cold`).
//!
//! Every paced case also reports the limit ([`limit`]): per callback, the ideal time on N
//! cores from the per-node timings, and where the rest went.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crossbeam_queue::ArrayQueue;
use downbeat::nodes::{Gain, Output};
use downbeat::project::Project;
use downbeat_graph::{
    AudioMut, AudioRef, CompileConfig, Graph, Node, NodeRunner, ProcessContext, Schedule,
};
use downbeat_rt::guard::{self, Allow, Options, Report as GuardReport};
use downbeat_rt::pool::{
    available_cores, pin_current_thread, set_current_thread_realtime, Pool, PoolConfig,
};

use crate::report::{alternating, Better, Report};

mod cells;
mod limit;
mod small;
mod uneven;
use crate::Common;
use cells::Cells;
use limit::Limit;

/// `SCHED_FIFO` priority of every helper thread that gets one (Downbeat's workers, and
/// rayon's in the `_rt` rows); the audio thread runs above it.
const WORKER_PRIORITY: i32 = 70;
/// `SCHED_FIFO` priority of the thread that plays the driver's callback.
const AUDIO_PRIORITY: i32 = 80;

/// The schedulers compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scheduler {
    Serial,
    /// Rayon's threads as rayon makes them: normal priority, unpinned.
    RayonSpawn,
    RayonBroadcast,
    /// Rayon's threads set up like Downbeat's workers: pinned, and `SCHED_FIFO` where the
    /// case gives Downbeat's workers real-time priority.
    RayonSpawnRt,
    RayonBroadcastRt,
    Downbeat,
    /// Downbeat's pool with its workers pinned but at normal priority.
    DownbeatNoRt,
    /// Downbeat's pool without warm workers (`PoolConfig::lead` zero): they park between
    /// callbacks and each callback wakes one, as before the workers predicted callbacks.
    DownbeatCold,
}

/// Every scheduler, for the fanin84 project.
const ALL: [Scheduler; 8] = [
    Scheduler::Serial,
    Scheduler::RayonSpawn,
    Scheduler::RayonBroadcast,
    Scheduler::RayonSpawnRt,
    Scheduler::RayonBroadcastRt,
    Scheduler::Downbeat,
    Scheduler::DownbeatNoRt,
    Scheduler::DownbeatCold,
];

/// The unpaced overhead case runs no helper at real-time priority, so there `downbeat_nort`
/// would repeat `downbeat`, and the `_rt` rayon rows are rayon pinned (`_pinned`).
const UNPACED: [Scheduler; 6] = [
    Scheduler::Serial,
    Scheduler::RayonSpawn,
    Scheduler::RayonBroadcast,
    Scheduler::RayonSpawnRt,
    Scheduler::RayonBroadcastRt,
    Scheduler::Downbeat,
];

/// The original four, for the idle-CPU case.
const IDLE: [Scheduler; 4] = [
    Scheduler::Serial,
    Scheduler::RayonSpawn,
    Scheduler::RayonBroadcast,
    Scheduler::Downbeat,
];

impl Scheduler {
    /// The row name; `realtime` says whether the case gives helpers real-time priority.
    fn name(self, realtime: bool) -> &'static str {
        match (self, realtime) {
            (Scheduler::Serial, _) => "serial",
            (Scheduler::RayonSpawn, _) => "rayon_spawn",
            (Scheduler::RayonBroadcast, _) => "rayon_broadcast",
            (Scheduler::RayonSpawnRt, true) => "rayon_spawn_rt",
            (Scheduler::RayonBroadcastRt, true) => "rayon_broadcast_rt",
            (Scheduler::RayonSpawnRt, false) => "rayon_spawn_pinned",
            (Scheduler::RayonBroadcastRt, false) => "rayon_broadcast_pinned",
            (Scheduler::Downbeat, _) => "downbeat",
            (Scheduler::DownbeatNoRt, _) => "downbeat_nort",
            (Scheduler::DownbeatCold, _) => "downbeat_cold",
        }
    }

    fn is_rayon(self) -> bool {
        matches!(
            self,
            Scheduler::RayonSpawn
                | Scheduler::RayonBroadcast
                | Scheduler::RayonSpawnRt
                | Scheduler::RayonBroadcastRt
        )
    }

    fn is_downbeat(self) -> bool {
        matches!(
            self,
            Scheduler::Downbeat | Scheduler::DownbeatNoRt | Scheduler::DownbeatCold
        )
    }
}

/// Everything a scheduler needs, allocated before the measurement.
struct Runner {
    kind: Scheduler,
    pool: Option<Pool>,
    rayon: Option<rayon::ThreadPool>,
    indegree: Vec<AtomicUsize>,
    queue: ArrayQueue<usize>,
    /// Cores of the machine, read before any thread is pinned (a pinned thread sees one).
    cores: usize,
}

impl Runner {
    /// `realtime`: helpers at `SCHED_FIFO`, as in an audio application (Downbeat's workers,
    /// and rayon's in the `_rt` rows). Unpaced microbenchmarks keep both threads busy all the
    /// time, which real-time throttling (`sched_rt_runtime_us`) punishes, so they run without
    /// it. Returns the runner and what could not be set up as asked.
    fn new(kind: Scheduler, nodes: usize, realtime: bool) -> (Self, Vec<String>) {
        let cores = available_cores();
        let mut notes = Vec::new();
        let pool = kind.is_downbeat().then(|| {
            let pool = Pool::new(PoolConfig {
                workers: Some(cores.saturating_sub(1).max(1)),
                realtime_priority: (realtime && kind != Scheduler::DownbeatNoRt)
                    .then_some(WORKER_PRIORITY),
                pin: true,
                lead: if kind == Scheduler::DownbeatCold {
                    Duration::ZERO
                } else {
                    PoolConfig::default().lead
                },
                ..PoolConfig::default()
            });
            notes.extend(pool.notes().iter().cloned());
            pool
        });
        // Rayon's caller blocks instead of working, so it gets a thread per core.
        let threads = cores.max(2);
        let rayon = kind.is_rayon().then(|| {
            let builder = rayon::ThreadPoolBuilder::new().num_threads(threads);
            if matches!(kind, Scheduler::RayonSpawnRt | Scheduler::RayonBroadcastRt) {
                // As Downbeat's pool does for worker k: core k + 1, so the first thread
                // takes the core the audio thread leaves free; the second shares core 0 with
                // the audio thread, which blocks while rayon works.
                let (tx, rx) = mpsc::channel();
                let pool = builder
                    .start_handler(move |i| {
                        let mut why = Vec::new();
                        if realtime {
                            if let Err(e) = set_current_thread_realtime(WORKER_PRIORITY) {
                                why.push(format!("rayon thread {i}: no real-time priority ({e})"));
                            }
                        }
                        if cores > 1 {
                            if let Err(e) = pin_current_thread((i + 1) % cores) {
                                why.push(format!("rayon thread {i}: not pinned ({e})"));
                            }
                        }
                        let _ = tx.send(why);
                    })
                    .build()
                    .expect("rayon pool");
                // Wait until every thread is set up, so none is measured half configured.
                notes.extend(rx.iter().take(threads).flatten());
                pool
            } else {
                builder.build().expect("rayon pool")
            }
        });
        let runner = Self {
            kind,
            pool,
            rayon,
            indegree: (0..nodes).map(|_| AtomicUsize::new(0)).collect(),
            queue: ArrayQueue::new(nodes.max(1)),
            cores,
        };
        (runner, notes)
    }

    fn block(&self, s: &mut Schedule, frames: usize) {
        match self.kind {
            Scheduler::Serial => s.process(frames),
            Scheduler::Downbeat | Scheduler::DownbeatNoRt | Scheduler::DownbeatCold => {
                s.process_parallel(frames, self.pool.as_ref().unwrap())
            }
            Scheduler::RayonSpawn | Scheduler::RayonSpawnRt => {
                s.with_runner(frames, |r| self.rayon_spawn(r))
            }
            Scheduler::RayonBroadcast | Scheduler::RayonBroadcastRt => {
                s.with_runner(frames, |r| self.rayon_broadcast(r))
            }
        }
    }

    fn reset(&self, r: &NodeRunner<'_>) {
        for i in 0..r.len() {
            self.indegree[i].store(r.predecessors(i).len(), Ordering::Relaxed);
        }
    }

    /// The post's attempt 1 with its race fixed: sources are spawned without the claim
    /// decrement, so only the thread that takes a node's in-degree to zero spawns it.
    fn rayon_spawn(&self, r: &NodeRunner<'_>) {
        self.reset(r);
        fn run_node<'s>(
            s: &rayon::Scope<'s>,
            r: &'s NodeRunner<'s>,
            deg: &'s [AtomicUsize],
            mut i: usize,
        ) {
            loop {
                // SAFETY: `i` is handed out once, after its last predecessor's AcqRel
                // decrement (or, for a source, before anything runs).
                unsafe { r.run(i) };
                match release_successors(r, deg, i, |n| s.spawn(move |s| run_node(s, r, deg, n))) {
                    Some(n) => i = n,
                    None => return,
                }
            }
        }
        let deg = &self.indegree[..];
        let pool = self.rayon.as_ref().unwrap();
        pool.in_place_scope(|s| {
            let mut reserved = None;
            for i in 0..r.len() {
                if r.predecessors(i).is_empty() {
                    if reserved.is_none() {
                        reserved = Some(i);
                    } else {
                        s.spawn(move |s| run_node(s, r, deg, i));
                    }
                }
            }
            if let Some(i) = reserved {
                run_node(s, r, deg, i);
            }
        });
    }

    /// The post's attempt 2: one broadcast per block; threads pop ready nodes from a shared
    /// `ArrayQueue`, reserving one successor each.
    fn rayon_broadcast(&self, r: &NodeRunner<'_>) {
        self.reset(r);
        for i in 0..r.len() {
            if r.predecessors(i).is_empty() {
                let _ = self.queue.push(i);
            }
        }
        let deg = &self.indegree[..];
        let queue = &self.queue;
        let left = AtomicUsize::new(r.len());
        self.rayon.as_ref().unwrap().broadcast(|_| {
            while left.load(Ordering::Acquire) > 0 {
                let Some(mut i) = queue.pop() else {
                    std::hint::spin_loop();
                    continue;
                };
                loop {
                    // SAFETY: as in `rayon_spawn`.
                    unsafe { r.run(i) };
                    let reserved = release_successors(r, deg, i, |n| {
                        let _ = queue.push(n);
                    });
                    left.fetch_sub(1, Ordering::AcqRel);
                    match reserved {
                        Some(n) => i = n,
                        None => break,
                    }
                }
            }
        });
    }
}

/// After node `i` ran: counts it off each successor's in-degree and returns the first
/// successor that became ready, to run next on this thread; every further ready one goes to
/// `elsewhere` (the two rayon baselines differ only in where that is).
fn release_successors(
    r: &NodeRunner<'_>,
    deg: &[AtomicUsize],
    i: usize,
    mut elsewhere: impl FnMut(usize),
) -> Option<usize> {
    let mut reserved = None;
    for &n in r.successors(i) {
        if deg[n].fetch_sub(1, Ordering::AcqRel) == 1 {
            if reserved.is_none() {
                reserved = Some(n);
            } else {
                elsewhere(n);
            }
        }
    }
    reserved
}

/// Sets the calling thread up like a driver's audio thread: `SCHED_FIFO` above every helper
/// and pinned to core 0, where the system allows. Every scheduler is measured from such a
/// thread: a plain thread can be starved by real-time workers spinning on its core.
fn become_audio_thread() {
    let _ = set_current_thread_realtime(AUDIO_PRIORITY);
    let _ = pin_current_thread(0);
}

/// Runs `f` on a fresh thread set up by [`become_audio_thread`].
fn on_audio_thread<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                become_audio_thread();
                f()
            })
            .join()
            .expect("measurement thread")
    })
}

/// What a run of callbacks gave: the load of each, how often the pacing slept, and the
/// limit each callback could have reached.
struct Paced {
    loads: Vec<f64>,
    sleeps: u64,
    limit: Limit,
}

/// Loads per callback, paced like a sound card at the project's block period.
fn paced(runner: &Runner, s: &mut Schedule, callbacks: usize, pace: bool) -> Paced {
    on_audio_thread(|| paced_here(runner, s, callbacks, pace))
}

fn paced_here(runner: &Runner, s: &mut Schedule, callbacks: usize, pace: bool) -> Paced {
    let cfg = s.config();
    let period = Duration::from_secs_f64(cfg.max_block as f64 / cfg.sample_rate as f64);
    let mut loads = Vec::with_capacity(callbacks);
    let mut limit = Limit::new(s, runner.cores, callbacks);
    let mut sleeps = 0;
    let mut deadline = Instant::now();
    for _ in 0..callbacks {
        if pace {
            let now = Instant::now();
            if deadline > now {
                std::thread::sleep(deadline - now);
                sleeps += 1;
            }
            deadline += period;
        }
        let t = Instant::now();
        runner.block(s, cfg.max_block);
        let load = t.elapsed().as_secs_f64() / period.as_secs_f64();
        loads.push(load);
        limit.observe(s, load);
    }
    Paced {
        loads,
        sleeps,
        limit,
    }
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    crate::report::quantile(sorted, q)
}

/// The LV2 plugin that replaces each spectral compressor in the `plugin` case: x42's stereo
/// compressor (Debian: x42-plugins), a compressor for a compressor.
#[cfg(feature = "lv2")]
const PLUGIN_URI: &str = "http://gareus.org/oss/lv2/darc#stereo";

/// Registers the `lv2`, `clap` and `vst3` node types, once per process.
#[cfg(feature = "lv2")]
fn register_plugins() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        downbeat::register_node_type(downbeat_plugin::lv2::Lv2Factory).unwrap();
        downbeat::register_node_type(downbeat_plugin::clap::ClapFactory).unwrap();
        downbeat::register_node_type(downbeat_plugin::vst3::Vst3Factory).unwrap();
    });
}

/// fanin84 with every spectral compressor replaced by [`PLUGIN_URI`] (threshold -30 dB as
/// in the original; darc has no FFT, so each node costs far less): the same graph, sources
/// and fan-in, with plugin nodes.
#[cfg(feature = "lv2")]
fn fanin84_lv2() -> Project {
    register_plugins();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/projects/fanin84.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let compressor = "type = \"spectral_compressor\"\nfft_size = 2048\noverlap = 8\n\
                      threshold_db = -30.0\nratio = 4.0\nattack_ms = 5.0\nrelease_ms = 80.0\n";
    let plugin = format!(
        "type = \"lv2\"\nuri = \"{PLUGIN_URI}\"\nthreshold = -30.0\nRatio = 0.5\n\
         attack = 0.005\nrelease = 0.08\n"
    );
    assert_eq!(
        text.matches(compressor).count(),
        84,
        "fanin84.toml changed shape"
    );
    Project::parse(
        &text.replace(compressor, &plugin),
        "fanin84 with LV2 compressors",
    )
    .unwrap()
}

/// The effect of the `plugin` case's format rows: zam-plugins' stereo multiband compressor
/// (Debian: zam-plugins), whose CLAP, VST3 and LV2 builds render bit for bit the same
/// (crates/plugin/tests/clap_zam.rs, vst3_zam.rs), at its default settings.
#[cfg(feature = "lv2")]
const ZAM_NAME: &str = "ZaMultiCompX2";

/// fanin84 with every spectral compressor replaced by [`ZAM_NAME`] in one plugin format
/// (`"clap"`: `/usr/lib/clap/ZaMultiCompX2.clap`; `"vst3"`:
/// `/usr/lib/vst3/ZaMultiCompX2.vst3`; `"lv2"`: `urn:zamaudio:ZaMultiCompX2`): the same graph
/// and the same DSP code, so that the rows differ only by the host's format.
#[cfg(feature = "lv2")]
fn fanin84_zam(format: &str) -> Project {
    register_plugins();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/projects/fanin84.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let compressor = "type = \"spectral_compressor\"\nfft_size = 2048\noverlap = 8\n\
                      threshold_db = -30.0\nratio = 4.0\nattack_ms = 5.0\nrelease_ms = 80.0\n";
    let plugin = match format {
        "clap" => format!("type = \"clap\"\npath = \"/usr/lib/clap/{ZAM_NAME}.clap\"\n"),
        "vst3" => format!("type = \"vst3\"\npath = \"/usr/lib/vst3/{ZAM_NAME}.vst3\"\n"),
        _ => format!("type = \"lv2\"\nuri = \"urn:zamaudio:{ZAM_NAME}\"\n"),
    };
    assert_eq!(
        text.matches(compressor).count(),
        84,
        "fanin84.toml changed shape"
    );
    Project::parse(
        &text.replace(compressor, &plugin),
        format!("fanin84 with {ZAM_NAME} as {format}"),
    )
    .unwrap()
}

fn fanin84() -> Project {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/projects/fanin84.toml");
    Project::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// What the audio thread asked of the kernel and the allocator, per callback.
struct AudioCalls {
    /// System calls per callback, the harness' own (priority, pinning, pacing sleeps) left out.
    syscalls: f64,
    /// Allocations per callback; NaN when this build does not track them.
    allocations: f64,
    /// The same system calls by kind (`futex wake`, ...), per callback.
    by_kind: Vec<(String, f64)>,
}

/// The guard's view of the audio thread over `callbacks` callbacks, paced like the timed
/// pass (when `pace`) but separate from it: each traced system call is a trap into a signal
/// handler, which would add to the loads of exactly the schedulers that make calls.
fn audio_thread_calls(
    runner: &Runner,
    s: &mut Schedule,
    callbacks: usize,
    pace: bool,
) -> AudioCalls {
    let opts = Options::new()
        .allow(Allow::FutexWake)
        .allow_allocations(true);
    let (sleeps, report) = guard::check_with(&opts, || {
        become_audio_thread();
        paced_here(runner, s, callbacks, pace).sleeps
    });
    let by_kind = without_harness_calls(syscalls_by_kind(&report), sleeps);
    let total: u64 = by_kind.iter().map(|(_, c)| c).sum::<u64>() + report.other_syscalls;
    // The bench binary does not install the guard's allocator (it would tax the allocator
    // suites), so allocations are only known when some build does.
    let allocations = match report.allocation_tracking {
        Ok(()) => report.allocations.count as f64 / callbacks as f64,
        Err(_) => f64::NAN,
    };
    let n = callbacks as f64;
    AudioCalls {
        syscalls: total as f64 / n,
        allocations,
        by_kind: by_kind
            .into_iter()
            .map(|(kind, count)| (kind, count as f64 / n))
            .collect(),
    }
}

/// `by_kind` without the harness' own calls: one priority change, one pinning, and one
/// sleep per paced wait (std's sleep is one `clock_nanosleep`, or `nanosleep` on older
/// libcs, unless a signal interrupts it, which nothing here sends). Only as many as the
/// harness made are taken off, so a scheduler's own calls of the same kinds still count.
fn without_harness_calls(mut by_kind: Vec<(String, u64)>, sleeps: u64) -> Vec<(String, u64)> {
    for (names, mut n) in [
        (&["sched_setscheduler"][..], 1),
        (&["sched_setaffinity"][..], 1),
        (&["clock_nanosleep", "nanosleep"][..], sleeps),
    ] {
        for (kind, count) in by_kind.iter_mut() {
            if names.contains(&kind.as_str()) {
                let take = n.min(*count);
                *count -= take;
                n -= take;
            }
        }
    }
    by_kind.retain(|(_, count)| *count > 0);
    by_kind
}

/// Every system call the guard saw, allowed or not, by name (futex by operation).
fn syscalls_by_kind(report: &GuardReport) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for c in report.syscalls.iter().chain(&report.allowed_syscalls) {
        let kind = match c.futex_op.map(|op| op & 0x7f) {
            Some(0) => "futex wait".to_owned(),
            Some(1) => "futex wake".to_owned(),
            Some(9) => "futex wait_bitset".to_owned(),
            Some(10) => "futex wake_bitset".to_owned(),
            Some(op) => format!("futex op {op}"),
            None => c.name.to_string(),
        };
        match out.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += c.count,
            None => out.push((kind, c.count)),
        }
    }
    out
}

/// A node that does almost nothing, to expose scheduling overhead.
struct Trivial;

impl Node for Trivial {
    fn input_channels(&self) -> usize {
        1
    }
    fn output_channels(&self) -> usize {
        1
    }
    fn process(&mut self, _: &ProcessContext, input: AudioRef<'_>, mut output: AudioMut<'_>) {
        output.channel_mut(0)[0] = input.channel(0)[0] + 1.0;
    }
}

fn synthetic(shape: &str, n: usize) -> Schedule {
    synthetic_with_block(shape, n, 16)
}

/// [`synthetic`] compiled for blocks of `max_block` frames at 48 kHz.
fn synthetic_with_block(shape: &str, n: usize, max_block: usize) -> Schedule {
    let mut g = Graph::new();
    let ids: Vec<_> = (0..n).map(|i| g.add(format!("n{i}"), Trivial)).collect();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = |m: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % m as u64) as usize
    };
    let sink = g.add("sink", Gain::new(1, 1.0));
    match shape {
        "wide" => {
            for &id in &ids {
                g.connect(id, sink);
            }
        }
        "chain" => {
            for w in ids.windows(2) {
                g.connect(w[0], w[1]);
            }
            g.connect(ids[n - 1], sink);
        }
        _ => {
            // Random DAG: each node takes 1-3 inputs from earlier nodes.
            for i in 1..n {
                let mut from: Vec<usize> = (0..1 + rnd(3)).map(|_| rnd(i)).collect();
                from.sort_unstable();
                from.dedup();
                for f in from {
                    g.connect(ids[f], ids[i]);
                }
            }
            g.connect(ids[n - 1], sink);
        }
    }
    let out = g.add("out", Output::new(1));
    g.connect(sink, out);
    g.set_output(out);
    g.compile(CompileConfig {
        sample_rate: 48_000,
        max_block,
    })
    .unwrap()
}

/// CPU time of the whole process minus the calling thread's, per second of wall time, while
/// the caller runs paced blocks: what the scheduler's helpers burn around callbacks.
fn helper_cpu(kind: Scheduler, seconds: f64) -> f64 {
    let mut s = synthetic("wide", 64);
    let (runner, _) = Runner::new(kind, s.len(), true);
    let period = Duration::from_millis(10);
    let cpu = |who| {
        // SAFETY: `rusage` is plain old data, for which all-zero bytes are a valid value.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: plain FFI call filling a struct we own and pass by valid pointer.
        unsafe { libc::getrusage(who, &mut u) };
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        tv(u.ru_utime) + tv(u.ru_stime)
    };
    for _ in 0..10 {
        runner.block(&mut s, 16);
    }
    let (p0, t0, w0) = (
        cpu(libc::RUSAGE_SELF),
        cpu(libc::RUSAGE_THREAD),
        Instant::now(),
    );
    let mut deadline = Instant::now();
    while w0.elapsed().as_secs_f64() < seconds {
        deadline += period;
        let now = Instant::now();
        if deadline > now {
            std::thread::sleep(deadline - now);
        }
        runner.block(&mut s, 16);
    }
    let wall = w0.elapsed().as_secs_f64();
    ((cpu(libc::RUSAGE_SELF) - p0) - (cpu(libc::RUSAGE_THREAD) - t0)) / wall
}

pub fn run(common: &Common) -> Report {
    let mut report = Report::new("graph");
    let project = fanin84();
    let runs = common.runs();
    let callbacks = if common.quick { 40 } else { 1000 };
    let traced = if common.quick { 10 } else { 300 };
    let pace = !common.quick;
    let cores = available_cores();
    report.notes.push(format!(
        "fanin84.toml: {} nodes, {} Hz / {} frames; {runs} run(s) of {callbacks} callbacks \
         per scheduler{}, in alternating order; load rows: median, min and max over the runs \
         of each run's percentile; downbeat: audio thread + {} worker(s); rayon: {} threads; \
         syscalls: a separate{} pass of {traced} callbacks under the guard",
        project.nodes.len(),
        project.sample_rate,
        project.block_size,
        if pace {
            ", paced in real time"
        } else {
            ", unpaced (--quick)"
        },
        cores.saturating_sub(1).max(1),
        cores.max(2),
        if pace { ", paced" } else { " unpaced" },
    ));

    let mut notes = Vec::new();
    if common.wants("fanin84") {
        let mut cells = Cells::new("fanin84", &ALL);
        for run in 0..runs {
            for kind in alternating(&ALL, run) {
                let mut s = project.build().unwrap();
                let (runner, why) = Runner::new(kind, s.len(), true);
                notes.extend(why);
                s.set_profiling(true);
                paced(&runner, &mut s, 20, false);
                cells.record(kind, paced(&runner, &mut s, callbacks, pace));
            }
        }
        let mut calls = Vec::new();
        for kind in alternating(&ALL, runs) {
            let mut s = project.build().unwrap();
            let (runner, _) = Runner::new(kind, s.len(), true);
            paced(&runner, &mut s, 20, false);
            calls.push((kind, audio_thread_calls(&runner, &mut s, traced, pace)));
        }
        cells.report(&mut report);
        for &kind in &ALL {
            let (_, c) = calls.iter().find(|(k, _)| *k == kind).unwrap();
            let name = kind.name(true);
            report.add(
                "fanin84_audio_syscalls",
                name,
                "per callback",
                &[c.syscalls],
            );
            if c.allocations.is_finite() {
                report.add(
                    "fanin84_audio_allocs",
                    name,
                    "per callback",
                    &[c.allocations],
                );
            }
            let kinds: Vec<String> = c
                .by_kind
                .iter()
                .map(|(kind, n)| format!("{kind} {n:.3}"))
                .collect();
            report.notes.push(format!(
                "{name}: audio-thread syscalls per callback: {}",
                if kinds.is_empty() {
                    "none".to_owned()
                } else {
                    kinds.join(", ")
                }
            ));
        }
    }

    if common.wants("uneven") {
        uneven_case(common, &mut report, &mut notes, callbacks, pace);
    }

    #[cfg(feature = "lv2")]
    if common.wants("plugin") {
        plugin_case(common, &mut report, &mut notes, callbacks, pace);
    }

    if common.wants("overhead") {
        let nodes = 1000;
        let blocks = if common.quick { 20 } else { 2000 };
        for shape in ["wide", "chain", "random"] {
            let mut per_run = vec![Vec::new(); UNPACED.len()];
            for run in 0..runs {
                for kind in alternating(&UNPACED, run) {
                    let k = UNPACED.iter().position(|&x| x == kind).unwrap();
                    let mut s = synthetic(shape, nodes);
                    let (runner, why) = Runner::new(kind, s.len(), false);
                    notes.extend(why);
                    for _ in 0..20 {
                        runner.block(&mut s, 16);
                    }
                    let mut times: Vec<f64> = (0..blocks)
                        .map(|_| {
                            let t = Instant::now();
                            runner.block(&mut s, 16);
                            t.elapsed().as_nanos() as f64 / (nodes + 2) as f64
                        })
                        .collect();
                    times.sort_by(f64::total_cmp);
                    per_run[k].push(quantile(&times, 0.5));
                }
            }
            let case = format!("overhead_{shape}");
            for (k, &kind) in UNPACED.iter().enumerate() {
                report.add(&case, kind.name(false), "ns/node", &per_run[k]);
            }
            for rival in UNPACED.iter().filter(|&&k| k != Scheduler::Downbeat) {
                report.ratio(&case, &case, "downbeat", rival.name(false), Better::Lower);
            }
        }
    }

    if common.wants("small") {
        small_case(common, &mut report, &mut notes);
    }

    if common.wants("idle") {
        let seconds = if common.quick { 0.3 } else { 2.0 };
        let mut shares = vec![Vec::new(); IDLE.len()];
        for run in 0..runs {
            for kind in alternating(&IDLE, run) {
                let k = IDLE.iter().position(|&x| x == kind).unwrap();
                shares[k].push(helper_cpu(kind, seconds) * 100.0);
            }
        }
        for (k, &kind) in IDLE.iter().enumerate() {
            report.add(
                "idle_helper_cpu",
                kind.name(true),
                "% of a core",
                &shares[k],
            );
        }
        report.ratio(
            "idle_helper_cpu",
            "idle_helper_cpu",
            "downbeat",
            "rayon_spawn",
            Better::Lower,
        );
    }
    notes.sort();
    notes.dedup();
    report.notes.extend(notes);
    report
}

/// The small-nodes case ([`small`]): microseconds per block of `sines` and `fanin`,
/// unpaced, serial against Downbeat's pool (audio thread + one worker, pinned, normal
/// priority, as in the overhead case); `small_<shape>_2t_vs_serial` is serial's time over
/// the pool's (2 would be perfect on two cores). A note gives the largest node's share of
/// the node time, which no scheduler of whole nodes can split.
fn small_case(common: &Common, report: &mut Report, notes: &mut Vec<String>) {
    const KINDS: [Scheduler; 2] = [Scheduler::Serial, Scheduler::Downbeat];
    let blocks = if common.quick { 50 } else { 3000 };
    report.notes.push(format!(
        "small: sines (1000 sines into the output) and fanin (32 branches of a sine and 8 \
         low-pass + gain stages), {} Hz / {} frames, {blocks} unpaced blocks per run",
        small::SAMPLE_RATE,
        small::BLOCK
    ));
    for shape in small::SHAPES {
        let mut per_run = vec![Vec::new(); KINDS.len()];
        // Input sums the pool split across threads at the end of each pooled run.
        let mut split = Vec::new();
        for run in 0..common.runs() {
            for kind in alternating(&KINDS, run) {
                let k = KINDS.iter().position(|&x| x == kind).unwrap();
                let mut s = small::schedule(shape);
                let (runner, why) = Runner::new(kind, s.len(), false);
                notes.extend(why);
                // Enough blocks for the nodes to be timed (one per 2048 frames) and warm.
                for _ in 0..64 {
                    runner.block(&mut s, small::BLOCK);
                }
                let mut times: Vec<f64> = (0..blocks)
                    .map(|_| {
                        let t = Instant::now();
                        runner.block(&mut s, small::BLOCK);
                        t.elapsed().as_nanos() as f64 / 1000.0
                    })
                    .collect();
                times.sort_by(f64::total_cmp);
                per_run[k].push(quantile(&times, 0.5));
                if kind == Scheduler::Downbeat {
                    split.push(s.split_sums());
                }
            }
        }
        report.notes.push(format!(
            "small_{shape}: input sums split across the pool's threads, per run: {split:?}"
        ));
        let case = format!("small_{shape}");
        for (k, &kind) in KINDS.iter().enumerate() {
            report.add(&case, kind.name(false), "us/block", &per_run[k]);
        }
        // The serial part: the largest node (the output, summing every input) against the
        // summed node time, from one profiled serial block.
        let mut s = small::schedule(shape);
        s.set_profiling(true);
        for _ in 0..64 {
            s.process(small::BLOCK);
        }
        let times: Vec<f64> = (0..s.len())
            .map(|i| s.node_sample(i).time.as_secs_f64() * 1e6)
            .collect();
        let largest = times.iter().copied().fold(0.0, f64::max);
        report.notes.push(format!(
            "small_{shape}: {} nodes, {:.1} us of node time per block (profiled, serial), the \
             largest node {largest:.1} us",
            s.len(),
            times.iter().sum::<f64>()
        ));
        report.ratio(
            &format!("small_{shape}_2t"),
            &case,
            "downbeat",
            "serial",
            Better::Lower,
        );
    }
}

/// The schedulers of the uneven case: serial, the same-priority rayon rows and Downbeat.
const UNEVEN: [Scheduler; 4] = [
    Scheduler::Serial,
    Scheduler::RayonSpawnRt,
    Scheduler::RayonBroadcastRt,
    Scheduler::Downbeat,
];

/// The `uneven` case ([`uneven`]): paced like fanin84, with the same columns.
fn uneven_case(
    common: &Common,
    report: &mut Report,
    notes: &mut Vec<String>,
    callbacks: usize,
    pace: bool,
) {
    report.notes.push(format!(
        "uneven: {} light nodes and a chain of {} heavy ones (added last) into a mix, {} Hz / \
         {} frames",
        uneven::LIGHT,
        uneven::HEAVY,
        uneven::SAMPLE_RATE,
        uneven::BLOCK
    ));
    let mut cells = Cells::new("uneven", &UNEVEN);
    for run in 0..common.runs() {
        for kind in alternating(&UNEVEN, run) {
            let mut s = uneven::schedule();
            let (runner, why) = Runner::new(kind, s.len(), true);
            notes.extend(why);
            s.set_profiling(true);
            paced(&runner, &mut s, 20, false);
            cells.record(kind, paced(&runner, &mut s, callbacks, pace));
        }
    }
    cells.report(report);
}

/// The `plugin` case: fanin84 with LV2 compressors, serial against Downbeat's pool, paced
/// like `fanin84_load_*` and with the same percentiles.
#[cfg(feature = "lv2")]
fn plugin_case(
    common: &Common,
    report: &mut Report,
    notes: &mut Vec<String>,
    callbacks: usize,
    pace: bool,
) {
    const KINDS: [Scheduler; 2] = [Scheduler::Serial, Scheduler::Downbeat];
    let project = fanin84_lv2();
    report.notes.push(format!(
        "plugin: fanin84 with {PLUGIN_URI} in place of each of the 84 spectral compressors \
         ({} nodes), serial against downbeat",
        project.nodes.len()
    ));
    let mut cells = Cells::new("plugin", &KINDS);
    let mut identical = true;
    for run in 0..common.runs() {
        let mut first_output: Option<Vec<f32>> = None;
        for kind in alternating(&KINDS, run) {
            let mut s = project.build().unwrap();
            let (runner, why) = Runner::new(kind, s.len(), true);
            notes.extend(why);
            s.set_profiling(true);
            paced(&runner, &mut s, 20, false);
            cells.record(kind, paced(&runner, &mut s, callbacks, pace));
            // Parallel output must stay bit-identical to serial: both ran the same blocks.
            let out = s.output();
            let block: Vec<f32> = (0..out.channels())
                .flat_map(|c| out.channel(c).to_vec())
                .collect();
            match &first_output {
                None => first_output = Some(block),
                Some(other) => identical &= *other == block,
            }
        }
    }
    assert!(
        identical,
        "plugin case: parallel output differs from serial"
    );
    cells.report(report);
    plugin_formats(common, report, notes, callbacks, pace);
}

/// The `plugin` case's format rows: fanin84 with [`ZAM_NAME`] as CLAP (`plugin_clap_*`),
/// as VST3 (`plugin_vst3_*`) and as LV2 (`plugin_lv2_*`), on Downbeat's pool, the formats
/// in a rotating order run by run; their outputs must be bit-identical (same DSP code, same
/// input).
#[cfg(feature = "lv2")]
fn plugin_formats(
    common: &Common,
    report: &mut Report,
    notes: &mut Vec<String>,
    callbacks: usize,
    pace: bool,
) {
    const KINDS: [Scheduler; 1] = [Scheduler::Downbeat];
    const FORMATS: [&str; 3] = ["clap", "vst3", "lv2"];
    let projects = FORMATS.map(fanin84_zam);
    report.notes.push(format!(
        "plugin_clap / plugin_vst3 / plugin_lv2: fanin84 with zam-plugins' {ZAM_NAME} in \
         place of each of the 84 spectral compressors, as CLAP, as VST3 and as LV2 (the same \
         DSP code), on downbeat's pool"
    ));
    let mut cells = ["plugin_clap", "plugin_vst3", "plugin_lv2"].map(|c| Cells::new(c, &KINDS));
    let mut identical = true;
    for run in 0..common.runs() {
        let mut outputs: [Option<Vec<f32>>; 3] = [None, None, None];
        // Each format first, second and last in turn.
        let order: Vec<usize> = (0..3).map(|k| (k + run) % 3).collect();
        for f in order {
            let mut s = projects[f].build().unwrap();
            let (runner, why) = Runner::new(KINDS[0], s.len(), true);
            notes.extend(why);
            s.set_profiling(true);
            paced(&runner, &mut s, 20, false);
            cells[f].record(KINDS[0], paced(&runner, &mut s, callbacks, pace));
            let out = s.output();
            outputs[f] = Some(
                (0..out.channels())
                    .flat_map(|c| out.channel(c).to_vec())
                    .collect(),
            );
        }
        identical &= outputs[0] == outputs[1] && outputs[1] == outputs[2];
    }
    assert!(
        identical,
        "plugin case: {ZAM_NAME} as {FORMATS:?} rendered different outputs"
    );
    for c in cells {
        c.report(report);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(v: &[(&str, u64)]) -> Vec<(String, u64)> {
        v.iter().map(|&(k, n)| (k.to_owned(), n)).collect()
    }

    #[test]
    fn only_the_harness_calls_are_taken_off() {
        let seen = owned(&[
            ("sched_setscheduler", 1),
            ("clock_nanosleep", 7),
            ("futex wake", 3),
            ("sched_setaffinity", 2),
            ("nanosleep", 4),
        ]);
        // 9 sleeps: 7 clock_nanosleep and 2 of the 4 nanosleep are the harness'; the second
        // affinity call is not.
        assert_eq!(
            without_harness_calls(seen, 9),
            owned(&[
                ("futex wake", 3),
                ("sched_setaffinity", 1),
                ("nanosleep", 2)
            ])
        );
    }

    /// The syscall rows come from a paced pass: there Downbeat's workers without a lead
    /// (`downbeat_cold`) park between callbacks and each callback wakes one, which a
    /// back-to-back pass (workers still spinning) would hide; and the pacing itself is not
    /// counted. Warm workers need no wake when callbacks come on time, and whatever they
    /// cost is a counted futex wake.
    #[test]
    fn paced_guard_pass_counts_the_wake_and_not_the_pacing() {
        let callbacks = 20;
        // 480 frames at 48 kHz: 10 ms between callbacks, ample for a worker to park.
        let mut s = synthetic_with_block("wide", 64, 480);
        let (serial, _) = Runner::new(Scheduler::Serial, s.len(), true);
        let calls = audio_thread_calls(&serial, &mut s, callbacks, true);
        assert_eq!(calls.syscalls, 0.0, "serial: {:?}", calls.by_kind);

        let (pool, _) = Runner::new(Scheduler::DownbeatCold, s.len(), true);
        paced(&pool, &mut s, 5, true);
        let calls = audio_thread_calls(&pool, &mut s, callbacks, true);
        // Every callback but possibly the first (workers may still be awake from the warm-up).
        assert!(
            calls.syscalls >= (callbacks - 1) as f64 / callbacks as f64 && calls.syscalls <= 1.0,
            "downbeat_cold: {} per callback, {:?}",
            calls.syscalls,
            calls.by_kind
        );
        assert_eq!(calls.by_kind.len(), 1, "{:?}", calls.by_kind);
        assert_eq!(calls.by_kind[0].0, "futex wake");

        let (warm, _) = Runner::new(Scheduler::Downbeat, s.len(), true);
        paced(&warm, &mut s, 20, true);
        let calls = audio_thread_calls(&warm, &mut s, callbacks, true);
        assert!(calls.syscalls <= 1.0, "downbeat: {:?}", calls.by_kind);
        assert!(
            calls.by_kind.iter().all(|(kind, _)| kind == "futex wake"),
            "downbeat: {:?}",
            calls.by_kind
        );
    }
}
