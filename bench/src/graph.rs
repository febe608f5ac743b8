//! The seed 001 experiment: serial, rayon spawn-per-node, rayon broadcast + `ArrayQueue`,
//! and Downbeat's pool, on the same graph in one process; plus synthetic graphs of 1000
//! trivial nodes for the scheduling overhead, and the CPU workers burn while idle.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_queue::ArrayQueue;
use downbeat::project::Project;
use downbeat_graph::nodes::{Gain, Output};
use downbeat_graph::{
    AudioMut, AudioRef, CompileConfig, Graph, Node, NodeRunner, ProcessContext, Schedule,
};
use downbeat_rt::guard::{self, Allow, Options};
use downbeat_rt::pool::{available_cores, Pool, PoolConfig};

use crate::report::{Better, Report};
use crate::Common;

/// The schedulers compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scheduler {
    Serial,
    RayonSpawn,
    RayonBroadcast,
    Downbeat,
}

const ALL: [Scheduler; 4] = [
    Scheduler::Serial,
    Scheduler::RayonSpawn,
    Scheduler::RayonBroadcast,
    Scheduler::Downbeat,
];

impl Scheduler {
    fn name(self) -> &'static str {
        match self {
            Scheduler::Serial => "serial",
            Scheduler::RayonSpawn => "rayon_spawn",
            Scheduler::RayonBroadcast => "rayon_broadcast",
            Scheduler::Downbeat => "downbeat",
        }
    }
}

/// Everything a scheduler needs, allocated before the measurement.
struct Runner {
    kind: Scheduler,
    pool: Option<Pool>,
    rayon: Option<rayon::ThreadPool>,
    indegree: Vec<AtomicUsize>,
    queue: ArrayQueue<usize>,
}

impl Runner {
    /// `realtime`: workers at `SCHED_FIFO`, as in an audio application. Unpaced
    /// microbenchmarks keep both threads busy all the time, which real-time throttling
    /// (`sched_rt_runtime_us`) punishes, so they run without it.
    fn new(kind: Scheduler, nodes: usize, realtime: bool) -> Self {
        let cores = available_cores();
        let pool = (kind == Scheduler::Downbeat).then(|| {
            Pool::new(PoolConfig {
                workers: Some(cores.saturating_sub(1).max(1)),
                realtime_priority: realtime.then_some(70),
                ..PoolConfig::default()
            })
        });
        // Rayon's caller blocks instead of working, so it gets a thread per core.
        let rayon = matches!(kind, Scheduler::RayonSpawn | Scheduler::RayonBroadcast).then(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(cores.max(2))
                .build()
                .expect("rayon pool")
        });
        Self {
            kind,
            pool,
            rayon,
            indegree: (0..nodes).map(|_| AtomicUsize::new(0)).collect(),
            queue: ArrayQueue::new(nodes.max(1)),
        }
    }

    fn block(&self, s: &mut Schedule, frames: usize) {
        match self.kind {
            Scheduler::Serial => s.process(frames),
            Scheduler::Downbeat => s.process_parallel(frames, self.pool.as_ref().unwrap()),
            Scheduler::RayonSpawn => s.with_runner(frames, |r| self.rayon_spawn(r)),
            Scheduler::RayonBroadcast => s.with_runner(frames, |r| self.rayon_broadcast(r)),
        }
    }

    fn reset(&self, r: &NodeRunner<'_>) {
        for i in 0..r.len() {
            self.indegree[i].store(r.predecessors(i).len(), Ordering::Relaxed);
        }
    }

    /// Seed 001's attempt 1 with its race fixed: sources are spawned without the claim
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

    /// Seed 001's attempt 2: one broadcast per block; threads pop ready nodes from a shared
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

/// Runs `f` on a thread set up like a driver's audio thread: `SCHED_FIFO` above the pool's
/// workers and pinned to core 0, where the system allows. Every scheduler is measured from
/// such a thread: a plain thread can be starved by real-time workers spinning on its core.
fn on_audio_thread<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let _ = downbeat_rt::pool::set_current_thread_realtime(80);
                let _ = downbeat_rt::pool::pin_current_thread(0);
                f()
            })
            .join()
            .expect("measurement thread")
    })
}

/// Loads per callback, paced like a sound card at the project's block period.
fn paced(runner: &Runner, s: &mut Schedule, callbacks: usize, pace: bool) -> Vec<f64> {
    on_audio_thread(|| paced_here(runner, s, callbacks, pace))
}

fn paced_here(runner: &Runner, s: &mut Schedule, callbacks: usize, pace: bool) -> Vec<f64> {
    let cfg = s.config();
    let period = Duration::from_secs_f64(cfg.max_block as f64 / cfg.sample_rate as f64);
    let mut loads = Vec::with_capacity(callbacks);
    let mut deadline = Instant::now();
    for _ in 0..callbacks {
        if pace {
            let now = Instant::now();
            if deadline > now {
                std::thread::sleep(deadline - now);
            }
            deadline += period;
        }
        let t = Instant::now();
        runner.block(s, cfg.max_block);
        loads.push(t.elapsed().as_secs_f64() / period.as_secs_f64());
    }
    loads
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    crate::report::quantile(sorted, q)
}

fn fanin84() -> Project {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/projects/fanin84.toml");
    Project::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Syscalls and allocations per callback on the audio thread, seen by the guard.
fn audio_thread_calls(kind: Scheduler, project: &Project, callbacks: usize) -> (f64, f64) {
    let mut s = project.build().unwrap();
    let runner = Runner::new(kind, s.len(), true);
    for _ in 0..20 {
        runner.block(&mut s, project.block_size);
    }
    let opts = Options::new()
        .allow(Allow::FutexWake)
        .allow_allocations(true);
    let (_, report) = guard::check_with(&opts, || {
        for _ in 0..callbacks {
            runner.block(&mut s, project.block_size);
        }
    });
    let syscalls: u64 = report.syscalls.iter().map(|c| c.count).sum::<u64>()
        + report.allowed_syscalls.iter().map(|c| c.count).sum::<u64>()
        + report.other_syscalls;
    // The bench binary does not install the guard's allocator (it would tax the allocator
    // suites), so allocations are only known when some build does.
    let allocs = match report.allocation_tracking {
        Ok(()) => report.allocations.count as f64 / callbacks as f64,
        Err(_) => f64::NAN,
    };
    (syscalls as f64 / callbacks as f64, allocs)
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
        sample_rate: 48_000.0,
        max_block: 16,
    })
    .unwrap()
}

/// CPU time of the whole process minus the calling thread's, per second of wall time, while
/// the caller runs paced blocks: what the scheduler's helpers burn around callbacks.
fn helper_cpu(kind: Scheduler, seconds: f64) -> f64 {
    let mut s = synthetic("wide", 64);
    let runner = Runner::new(kind, s.len(), true);
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
    let callbacks = if common.quick { 40 } else { 5000 };
    let pace = !common.quick;
    let cores = available_cores();
    report.notes.push(format!(
        "fanin84.toml: {} nodes, {} Hz / {} frames, {callbacks} callbacks per scheduler{}; \
         downbeat: audio thread + {} worker(s); rayon: {} threads",
        project.nodes.len(),
        project.sample_rate,
        project.block_size,
        if pace {
            ", paced in real time"
        } else {
            ", unpaced (--quick)"
        },
        cores.saturating_sub(1).max(1),
        cores.max(2)
    ));

    if common.wants("fanin84") {
        // Interleave repetitions across schedulers so machine noise hits all alike.
        let reps = if common.quick {
            1
        } else {
            common.runs.unwrap_or(1).max(1)
        };
        let mut loads: Vec<Vec<f64>> = vec![Vec::new(); ALL.len()];
        let mut notes = Vec::new();
        for _ in 0..reps {
            for (k, &kind) in ALL.iter().enumerate() {
                let mut s = project.build().unwrap();
                let runner = Runner::new(kind, s.len(), true);
                if let Some(p) = &runner.pool {
                    notes.extend(p.notes().iter().cloned());
                }
                paced(&runner, &mut s, 20, false);
                loads[k].extend(paced(&runner, &mut s, callbacks, pace));
            }
        }
        notes.sort();
        notes.dedup();
        report.notes.extend(notes);
        for (k, &kind) in ALL.iter().enumerate() {
            let mut sorted = loads[k].clone();
            sorted.sort_by(f64::total_cmp);
            for (q, label) in [
                (0.0, "P0"),
                (0.25, "P25"),
                (0.5, "P50"),
                (0.75, "P75"),
                (0.99, "P99"),
                (1.0, "P100"),
            ] {
                report.add(
                    &format!("fanin84_load_{label}"),
                    kind.name(),
                    "load",
                    &[quantile(&sorted, q)],
                );
            }
            let missed = loads[k].iter().filter(|&&l| l > 1.0).count() as f64;
            report.add("fanin84_missed", kind.name(), "callbacks", &[missed]);
            let (sys, alloc) =
                audio_thread_calls(kind, &project, if common.quick { 10 } else { 200 });
            report.add(
                "fanin84_audio_syscalls",
                kind.name(),
                "per callback",
                &[sys],
            );
            if alloc.is_finite() {
                report.add(
                    "fanin84_audio_allocs",
                    kind.name(),
                    "per callback",
                    &[alloc],
                );
            }
        }
        for rival in ["serial", "rayon_spawn", "rayon_broadcast"] {
            for label in ["P50", "P99", "P100"] {
                report.ratio(
                    &format!("fanin84_load_{label}"),
                    &format!("fanin84_load_{label}"),
                    "downbeat",
                    rival,
                    Better::Lower,
                );
            }
        }
    }

    if common.wants("overhead") {
        let nodes = 1000;
        let blocks = if common.quick { 20 } else { 2000 };
        for shape in ["wide", "chain", "random"] {
            for &kind in &ALL {
                let mut per_run = Vec::new();
                for _ in 0..common.runs() {
                    let mut s = synthetic(shape, nodes);
                    let runner = Runner::new(kind, s.len(), false);
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
                    per_run.push(quantile(&times, 0.5));
                }
                report.add(
                    &format!("overhead_{shape}"),
                    kind.name(),
                    "ns/node",
                    &per_run,
                );
            }
            for rival in ["rayon_spawn", "rayon_broadcast", "serial"] {
                let case = format!("overhead_{shape}");
                report.ratio(&case, &case, "downbeat", rival, Better::Lower);
            }
        }
    }

    if common.wants("idle") {
        let seconds = if common.quick { 0.3 } else { 5.0 };
        for &kind in &ALL {
            let share = helper_cpu(kind, seconds) * 100.0;
            report.add("idle_helper_cpu", kind.name(), "% of a core", &[share]);
        }
        report.ratio(
            "idle_helper_cpu",
            "idle_helper_cpu",
            "downbeat",
            "rayon_spawn",
            Better::Lower,
        );
    }
    report
}
