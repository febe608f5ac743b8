//! The gc suite: the measurements of K. S. Matheussen, "Realtime Audio with Garbage
//! Collection" (2010), chapters 11 and 12, for three collectors: the snapshot collector, the
//! replicating collector (complementary stacks with the block as fallback) and a
//! stop-the-world mark-and-sweep on the audio thread, in alternating order.
//!
//! * **The song** ([`song`]): a model of the thesis' benchmark program at 5.8 ms blocks,
//!   self-paced with absolute deadlines, with a 4 MiB pointer heap and the thesis' 18,584
//!   bytes of roots (Tables 11.2–11.6). Blocking is measured two ways:
//!   * **blocking** (the thesis' measure): per collection, the time the collector holds the
//!     heap so that audio cannot run: for the snapshot collector the roots copy plus the heap
//!     copy, forced full snapshots included (Table 11.5 books them as blocking); for the
//!     replicating collector the swap of the complementary blocks and the roots copy; for
//!     stop-the-world its mark and sweep on the audio thread.
//!   * **waited**: per block, what the audio thread actually lost in
//!     `begin_block`/`end_block` (the pause per block).
//! * **The write barrier** ([`barrier`]): nanoseconds per `set_ref` under each collector.
//! * **Memory**: what each collector holds for a 4 MiB pointer heap.
//! * **The largest live heap** each collector sustains at 64 and 256 frames (48 kHz) with the
//!   audio thread loaded to half of every block ([`largest`], on the [`trial`] workload), and
//!   the pause per block on that workload at one live size for all.

mod barrier;
mod largest;
mod sections;
mod song;
mod trial;

use std::hint::black_box;
use std::time::{Duration, Instant};

use downbeat_gc::{measure_copy_rate, start, Barrier, Config, Mode, MutatorStats, Stats};

use crate::report::{quantile, Report};
use crate::Common;
use sections::Sections;
use song::{Song, BLOCK_SECONDS, ROOTS};

/// Options of the gc suite.
#[derive(clap::Args, Clone, Debug)]
pub struct GcArgs {
    #[command(flatten)]
    pub common: Common,
    /// Seconds of the song per collector and run (default 5, the thesis' 60 s song scaled
    /// down so that the whole default run fits in 10 minutes; 3 with --quick).
    #[arg(long)]
    pub seconds: Option<f64>,
    /// CPU for the collector threads (snapshot, mark-and-sweep); the audio thread runs on
    /// CPU 0 (the thesis' Table 11.1). 0 shows what sharing the audio thread's CPU costs.
    #[arg(long, default_value_t = 1)]
    pub collector_cpu: usize,
    /// Seconds per short trial of the largest-heap search (default 1.5; 0.2 with --quick).
    #[arg(long)]
    pub trial_seconds: Option<f64>,
    /// Seconds of the confirmation of each largest heap (default 60; none with --quick; 0
    /// skips it).
    #[arg(long)]
    pub confirm_seconds: Option<f64>,
    /// Largest live heap the search tries, MiB (default 256; 4 with --quick).
    #[arg(long)]
    pub heap_cap_mib: Option<usize>,
}

const BLOCK: Duration = Duration::from_nanos((BLOCK_SECONDS * 1e9) as u64);
const HEAP_BYTES: usize = 4 << 20;
/// The thesis ran each collector 5 times.
const RUNS: usize = 5;
/// Seconds of the song per run by default: 5 runs x 3 collectors x 5 s leave the default run
/// room for the largest-heap confirmations within 10 minutes.
const SONG_SECONDS: f64 = 5.0;
const PRIORITY: i32 = 70;
/// The whole default run's budget: a largest-heap confirmation starts only if it can end
/// before it, so the default run ends within 10 minutes.
const BUDGET: Duration = Duration::from_secs(585);
/// Live size of the pause measurement on the trial workload, the same for every collector.
const PAUSE_LIVE_KIB: usize = 1024;

/// The collectors compared, under their names in the report.
const COLLECTORS: [(&str, Mode); 3] = [
    ("snapshot", Mode::Snapshot),
    ("replicating", Mode::Replicating(Barrier::Stacks)),
    ("stop-the-world", Mode::StopTheWorld),
];

/// Threads a collector starts besides the audio thread.
fn collector_threads(mode: Mode) -> usize {
    match mode {
        Mode::StopTheWorld => 0,
        Mode::Snapshot => 2,
        _ => 1,
    }
}

/// What one collector did over one song.
struct Outcome {
    /// Per block: time `begin_block`/`end_block` waited for the collector or did its work.
    waited_us: Vec<f64>,
    /// Per block: the song's own work (block time without waits and applied frees).
    audio_us: Vec<f64>,
    /// Per collection: the critical section, full snapshots included.
    blocking_us: Vec<f64>,
    /// Per collection, forced full snapshots left out (the thesis' Table 11.4).
    partial_blocking_us: Vec<f64>,
    unsampled: u64,
    missed: u64,
    late_starts: u64,
    waits_without_gap: u64,
    stats: Stats,
    mutator: MutatorStats,
    heap_used: usize,
    song: (u64, u64, usize),
    notes: Vec<String>,
}

/// Adds each of `new` to `notes` unless it is there already: every trial reports the same
/// pinning or priority trouble.
fn add_notes(notes: &mut Vec<String>, new: impl IntoIterator<Item = String>) {
    for n in new {
        if !notes.contains(&n) {
            notes.push(n);
        }
    }
}

/// Pins the calling thread to CPU 0 at SCHED_FIFO [`PRIORITY`], as the audio thread of the
/// song, of every trial and of the machine's floor; returns what could not be had.
fn become_audio_thread() -> Vec<String> {
    let mut notes = Vec::new();
    if downbeat_rt::pool::pin_current_thread(0).is_err() {
        notes.push("audio thread not pinned to CPU 0".to_owned());
    }
    if let Err(e) = downbeat_rt::pool::set_current_thread_realtime(PRIORITY) {
        notes.push(format!("audio thread at normal priority: {e}"));
    }
    notes
}

fn play(mode: Mode, seconds: f64, copy_rate: f64, collector_cpu: usize) -> Outcome {
    let config = Config {
        mode,
        heap_bytes: HEAP_BYTES,
        atomic_bytes: 64 << 20,
        roots: ROOTS,
        copy_rate: Some(copy_rate),
        snapshot_priority: Some(PRIORITY),
        collector_cpu: Some(collector_cpu),
        ..Config::default()
    };
    let (mut m, collector) = start(config).expect("collector");
    let blocks = (seconds / BLOCK_SECONDS).ceil() as usize;
    let mut song = Song::new(seconds, true);
    song.setup(&mut m)
        .expect("the song's fixed state fits the heaps");
    // Let the set-up block's collection finish before the clock starts.
    std::thread::sleep(Duration::from_millis(20));
    drop(m.begin_block());
    let mut pin_notes = Vec::new();
    let expected = collector_threads(mode);
    if expected > 0 {
        match pin_collector_threads(collector_cpu) {
            Ok(n) if n == expected => {}
            Ok(n) => pin_notes.push(format!("{n} collector threads pinned, expected {expected}")),
            Err(e) => pin_notes.push(format!("collector threads not pinned: {e}")),
        }
    }
    let mut sections = Sections::with_capacity(blocks / 2 + 16);
    let (audio, m, song) = std::thread::scope(|s| {
        let audio = s.spawn(move || {
            let notes = become_audio_thread();
            // Filled by index: the audio loop must not grow a vector.
            let mut waited = vec![0.0; blocks];
            let mut audio = vec![0.0; blocks];
            let (mut missed, mut late_starts, mut waits_without_gap) = (0, 0, 0);
            let t0 = Instant::now() + Duration::from_millis(10);
            let mut prev_end = t0;
            for n in 0..blocks {
                let due = t0 + BLOCK * n as u32;
                let now = Instant::now();
                if now < due {
                    std::thread::sleep(due - now);
                }
                let start = Instant::now();
                // Woken (or done with the previous block) so late that this block cannot make
                // its deadline whatever the collector does.
                let started_late = start > due + BLOCK / 2;
                late_starts += u64::from(started_late);
                // No idle time between the previous block and this one: a snapshot requested
                // at the end of the previous block had no gap to run in.
                let no_gap = prev_end + Duration::from_micros(50) > due;
                let freed_before = m.stats().free_time;
                let mut b = m.begin_block();
                song.block(&mut b, n as u64);
                drop(b);
                let end = Instant::now();
                black_box(song.out());
                let st = m.stats();
                let lost = st.last_blocking;
                let freeing = st.free_time - freed_before;
                waited[n] = lost.as_secs_f64() * 1e6;
                audio[n] = (end - start).saturating_sub(lost + freeing).as_secs_f64() * 1e6;
                if end > due + BLOCK && !started_late {
                    missed += 1;
                }
                if !lost.is_zero() && no_gap {
                    waits_without_gap += 1;
                }
                prev_end = end;
            }
            let counts = (missed, late_starts, waits_without_gap);
            ((waited, audio, counts, notes), m, song)
        });
        // Read the collector's totals far more often than it snapshots (at most every 11.6 ms).
        while !audio.is_finished() {
            let st = collector.stats();
            sections.observe(st.roots_snapshot, st.partial_snapshot, st.full_snapshot);
            std::thread::sleep(Duration::from_micros(500));
        }
        audio.join().expect("audio thread")
    });
    // Let the last collection finish before reading the counters.
    std::thread::sleep(Duration::from_millis(50));
    let stats = collector.stats();
    sections.observe(
        stats.roots_snapshot,
        stats.partial_snapshot,
        stats.full_snapshot,
    );
    let (waited_us, audio_us, (missed, late_starts, waits_without_gap), mut notes) = audio;
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let (blocking_us, partial_blocking_us) = match mode {
        Mode::Snapshot => (
            sections.taken.iter().map(|s| us(s.time)).collect(),
            sections
                .taken
                .iter()
                .filter(|s| !s.full)
                .map(|s| us(s.time))
                .collect(),
        ),
        // Stop-the-world collects inside end_block, and the replicating collector hands over
        // there (and never makes begin_block wait), so a block that lost time collected.
        _ => {
            let v: Vec<f64> = waited_us.iter().copied().filter(|&w| w > 0.0).collect();
            (v.clone(), v)
        }
    };
    if let Some(n) = &stats.priority_note {
        notes.push(n.clone());
    }
    notes.extend(pin_notes);
    Outcome {
        waited_us,
        audio_us,
        blocking_us,
        partial_blocking_us,
        unsampled: sections.unsampled,
        missed,
        late_starts,
        waits_without_gap,
        mutator: m.stats(),
        heap_used: m.heap_used(),
        stats,
        song: (song.dropped, song.failed, song.peak_voices),
        notes,
    }
}

/// Pins the collector's threads (snapshot, mark-and-sweep) to `cpu`, as the thesis' setup did
/// (Table 11.1: audio thread on CPU 0, snapshot and mark-and-sweep threads on CPU 1). With the
/// snapshot thread free to land on the audio thread's CPU at the same SCHED_FIFO priority, a
/// copy can wait behind an audio thread that spins in `begin_block` for it. `downbeat_gc`
/// starts the threads itself, so they are found by name; returns how many were pinned.
#[cfg(target_os = "linux")]
fn pin_collector_threads(cpu: usize) -> std::io::Result<usize> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::other(format!("CPU {cpu} out of range")));
    }
    let mut pinned = 0;
    for task in std::fs::read_dir("/proc/self/task")? {
        let task = task?;
        let Some(tid) = task
            .file_name()
            .to_str()
            .and_then(|t| t.parse::<i32>().ok())
        else {
            continue;
        };
        // Thread names are cut to 15 bytes: "downbeat-gc-sna", "downbeat-gc-swe".
        let name = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !name.starts_with("downbeat-gc-") {
            continue;
        }
        // SAFETY: `cpu_set_t` is plain data and zero is the empty set; `cpu` was checked
        // against the set's capacity; the call only reads the set, for thread `tid`.
        let rc = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set)
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        pinned += 1;
    }
    Ok(pinned)
}

#[cfg(not(target_os = "linux"))]
fn pin_collector_threads(_cpu: usize) -> std::io::Result<usize> {
    Err(std::io::Error::other(
        "pinning is only implemented on Linux",
    ))
}

/// What a full snapshot costs without the padding: `memcpy` of a heap-sized buffer, the
/// collector's own copy, on a thread at the snapshot thread's priority, once per 10 ms. The
/// collector records full snapshots padded to the prediction only.
fn unpadded_full_copy(rounds: usize) -> Vec<f64> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let _ = downbeat_rt::pool::set_current_thread_realtime(PRIORITY);
            let words = HEAP_BYTES / 8;
            let src: Vec<u64> = (0..words as u64).collect();
            let mut dst = vec![0u64; words];
            dst.copy_from_slice(&src); // faults the destination in
            let mut ms = vec![0.0; rounds];
            for t in ms.iter_mut() {
                std::thread::sleep(Duration::from_millis(10));
                let t0 = Instant::now();
                dst.copy_from_slice(black_box(&src));
                black_box(&mut dst);
                *t = t0.elapsed().as_secs_f64() * 1e3;
            }
            ms
        })
        .join()
        .expect("copy thread")
    })
}

/// Average nanoseconds per allocation: 1000 voice-sized objects per block, 200 blocks,
/// unrooted so the collector frees them between blocks.
fn alloc_ns(copy_rate: f64) -> (f64, f64) {
    let (mut m, _c) = start(Config {
        copy_rate: Some(copy_rate),
        ..Config::default()
    })
    .expect("collector");
    let (mut obj, mut atomic) = (vec![0.0; 200], vec![0.0; 200]);
    for (o, a) in obj.iter_mut().zip(atomic.iter_mut()) {
        let mut b = m.begin_block();
        let t = Instant::now();
        for _ in 0..1000 {
            black_box(b.alloc(2, 2).unwrap());
        }
        *o = t.elapsed().as_nanos() as f64 / 1000.0;
        let t = Instant::now();
        for i in 0..100 {
            black_box(b.alloc_atomic(440 + 32 * i).unwrap());
        }
        *a = t.elapsed().as_nanos() as f64 / 100.0;
        drop(b);
        std::thread::sleep(Duration::from_millis(3));
        drop(m.begin_block());
        std::thread::sleep(Duration::from_millis(3));
    }
    obj.sort_by(f64::total_cmp);
    atomic.sort_by(f64::total_cmp);
    (quantile(&obj, 0.5), quantile(&atomic, 0.5))
}

/// Minimum, average, 99th percentile and maximum.
fn summary(v: &[f64]) -> [f64; 4] {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let avg = s.iter().sum::<f64>() / s.len().max(1) as f64;
    [
        s.first().copied().unwrap_or(f64::NAN),
        avg,
        quantile(&s, 0.99),
        s.last().copied().unwrap_or(f64::NAN),
    ]
}

/// Each case's value in every run, in the order first seen.
#[derive(Default)]
struct Runs(Vec<(String, &'static str, &'static str, Vec<f64>)>);

impl Runs {
    fn put(&mut self, case: &str, imp: &'static str, unit: &'static str, v: f64) {
        match self.0.iter_mut().find(|r| r.0 == case && r.1 == imp) {
            Some(r) => r.3.push(v),
            None => self.0.push((case.to_owned(), imp, unit, vec![v])),
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One collector's rows for one run.
fn record(runs: &mut Runs, name: &'static str, mode: Mode, o: &Outcome, seconds: f64) {
    let mut put = |case: &str, unit: &'static str, v: f64| runs.put(case, name, unit, v);
    for (prefix, v) in [
        ("blocking", &o.blocking_us),
        ("blocking_without_full", &o.partial_blocking_us),
        ("waited", &o.waited_us),
    ] {
        for (q, x) in ["min", "avg", "p99", "max"].into_iter().zip(summary(v)) {
            put(&format!("{prefix}_{q}"), "us", x);
        }
    }
    put(
        "collections_timed",
        "collections",
        o.blocking_us.len() as f64,
    );
    let over = o.waited_us.iter().filter(|&&x| x > 100.0).count();
    put("blocks_waited_over_100us", "blocks", over as f64);
    let [amin, aavg, ap99, amax] = summary(&o.audio_us);
    put("audio_min", "us", amin);
    put("audio_avg", "us", aavg);
    put("audio_p99", "us", ap99);
    put("audio_max", "us", amax);
    put("missed_deadlines", "blocks", o.missed as f64);
    put("blocks_started_late", "blocks", o.late_starts as f64);
    put(
        "waits_with_no_gap_before",
        "blocks",
        o.waits_without_gap as f64,
    );
    put("blocks", "blocks", o.waited_us.len() as f64);
    let s = &o.stats;
    put("mark_avg", "us", s.mark.average().as_secs_f64() * 1e6);
    put("mark_max", "us", s.mark.max.as_secs_f64() * 1e6);
    put("sweep_avg", "us", s.sweep.average().as_secs_f64() * 1e6);
    put("collections", "cycles", s.cycles as f64);
    put("objects_freed", "objects", s.objects_freed as f64);
    put("bytes_freed", "MB", s.bytes_freed as f64 / 1e6);
    put(
        "atomic_bytes_freed",
        "MB",
        o.mutator.atomic_bytes_freed as f64 / 1e6,
    );
    put("heap_used", "KB", o.heap_used as f64 / 1e3);
    let allocations = o.mutator.objects_allocated + o.mutator.atomic_allocated;
    put(
        "allocations_per_minute",
        "allocations",
        allocations as f64 * 60.0 / seconds,
    );
    // Stop-the-world frees inside its sweep; only begin_block's frees are timed on their own.
    let freed = o.mutator.objects_freed + o.mutator.atomic_freed;
    if freed > 0 && !o.mutator.free_time.is_zero() {
        put(
            "free_avg",
            "ns",
            o.mutator.free_time.as_nanos() as f64 / freed as f64,
        );
    }
    let (dropped, failed, peak) = o.song;
    put("voices_peak", "voices", peak as f64);
    put("voices_dropped", "voices", dropped as f64);
    put("allocations_failed", "allocations", failed as f64);

    // Table 11.5: shares of audio + collector time. The thesis books the critical section as
    // blocking (full snapshots included) and mark and sweep on the other CPU as parallel; the
    // frees, which it ran on a thread of their own, are applied here by the audio thread in
    // begin_block and get a column of their own.
    let audio: f64 = o.audio_us.iter().sum::<f64>() / 1e3;
    let waited: f64 = o.waited_us.iter().sum::<f64>() / 1e3;
    let free = ms(o.mutator.free_time);
    let (critical, parallel) = match mode {
        Mode::Snapshot => (
            ms(s.roots_snapshot.total + s.partial_snapshot.total + s.full_snapshot.total),
            ms(s.mark.total + s.sweep.total),
        ),
        Mode::StopTheWorld => (ms(s.mark.total + s.sweep.total), 0.0),
        // The hand-over (swap and roots copy) is recorded as the roots snapshot.
        _ => (ms(s.roots_snapshot.total), ms(s.mark.total + s.sweep.total)),
    };
    let all = audio + free + critical + parallel;
    put("cpu_blocking", "%", 100.0 * critical / all);
    put("cpu_parallel", "%", 100.0 * parallel / all);
    put("cpu_free", "%", 100.0 * free / all);
    // The same time booked by what the audio thread waited for: a copy that ran while the
    // audio thread was idle between blocks counts as parallel.
    put("cpu_blocking_waited", "%", 100.0 * waited / all);
    put(
        "cpu_parallel_waited",
        "%",
        100.0 * (critical + parallel - waited).max(0.0) / all,
    );
}

pub fn run(args: &GcArgs) -> Report {
    let began = Instant::now();
    let common = &args.common;
    let quick = common.quick;
    let seconds = args
        .seconds
        .unwrap_or(if quick { 3.0 } else { SONG_SECONDS })
        .max(0.5);
    let n_runs = common.runs.unwrap_or(if quick { 1 } else { RUNS }).max(1);
    let mut report = Report::new("gc");
    let copy_rate = measure_copy_rate(64 << 20, 8);
    let mut runs = Runs::default();
    let mut notes = Vec::new();
    let mut longest: Vec<(&str, f64)> = Vec::new();
    for r in 0..n_runs {
        // Alternate the collectors' order, so drift in the machine's load spreads over all.
        for (name, mode) in crate::report::alternating(&COLLECTORS, r) {
            let o = play(mode, seconds, copy_rate, args.collector_cpu);
            record(&mut runs, name, mode, &o, seconds);
            let max = o.blocking_us.iter().copied().fold(0.0, f64::max);
            longest.push((name, max));
            add_notes(&mut notes, o.notes);
            if o.unsampled > 0 {
                notes.push(format!(
                    "run {}: {} snapshots finished between two readings and are missing \
                     from the blocking rows",
                    r + 1,
                    o.unsampled
                ));
            }
            if let Mode::Replicating(_) = mode {
                let s = &o.stats;
                runs.put(
                    "stack_overflows",
                    name,
                    "collections",
                    s.stack_overflows as f64,
                );
                runs.put("replicated_words", name, "words", s.replicated_words as f64);
            }
            if mode == Mode::Snapshot {
                snapshot_rows(&mut runs, &o.stats);
            }
        }
        let (obj_ns, atomic_ns) = alloc_ns(copy_rate);
        runs.put("alloc_object", "snapshot", "ns", obj_ns);
        runs.put("alloc_atomic", "snapshot", "ns", atomic_ns);
    }
    // The write barrier: every collector (and the barrier's other variant) in each round,
    // alternating the order; one median per round.
    let barrier_impls = [
        ("snapshot", Mode::Snapshot),
        ("replicating", Mode::Replicating(Barrier::Stacks)),
        ("replicating_block", Mode::Replicating(Barrier::Block)),
        ("stop-the-world", Mode::StopTheWorld),
    ];
    let barrier_blocks = if quick { 50 } else { 400 };
    for r in 0..n_runs {
        let mut round = Vec::new();
        for (name, mode) in crate::report::alternating(&barrier_impls, r) {
            let ns = barrier::set_ref_ns(mode, barrier_blocks, copy_rate, args.collector_cpu);
            runs.put("set_ref", name, "ns", ns);
            round.push((name, ns));
        }
        // The barrier's cost in this round: the replicating collector's write minus the
        // snapshot collector's, which has no barrier.
        let of = |imp: &str| round.iter().find(|x| x.0 == imp).map_or(f64::NAN, |x| x.1);
        for imp in ["replicating", "replicating_block"] {
            runs.put("set_ref_barrier_cost", imp, "ns", of(imp) - of("snapshot"));
        }
    }
    // Memory for the song's 4 MiB pointer heap and roots (fixed at start-up).
    for (name, mode) in barrier_impls {
        let (_m, c) = start(Config {
            mode,
            heap_bytes: HEAP_BYTES,
            atomic_bytes: 64 << 20,
            roots: ROOTS,
            copy_rate: Some(copy_rate),
            ..Config::default()
        })
        .expect("collector");
        let bytes = c.stats().memory_bytes as f64;
        runs.put("memory", name, "MiB", bytes / (1 << 20) as f64);
        runs.put("memory_over_heap", name, "x", bytes / HEAP_BYTES as f64);
    }
    pauses(&mut runs, &mut notes, quick, copy_rate, args.collector_cpu);
    let plan = largest::Plan {
        trial_seconds: args
            .trial_seconds
            .unwrap_or(if quick { 0.2 } else { 1.5 })
            .max(0.05),
        confirm_seconds: match args.confirm_seconds {
            Some(s) if s > 0.0 => Some(s),
            Some(_) => None,
            None => (!quick).then_some(60.0),
        },
        start_kib: if quick { 256 } else { 1024 },
        min_kib: 64,
        cap_kib: args
            .heap_cap_mib
            .unwrap_or(if quick { 4 } else { 256 })
            .max(1)
            << 10,
        bisect_steps: if quick { 1 } else { 4 },
        max_retries: 2,
        step_down: 0.8,
    };
    let searched = Instant::now();
    let mut searches: Vec<largest::Search> = [64, 256]
        .into_iter()
        .flat_map(|frames| COLLECTORS.map(|(name, mode)| largest::Search::new(name, mode, frames)))
        .collect();
    largest::run_all(
        &mut searches,
        &plan,
        copy_rate,
        args.collector_cpu,
        began + BUDGET,
    );
    let search_seconds = searched.elapsed().as_secs_f64();
    // Last, in what is left of the budget: when every confirmation passes there is no room,
    // and no failure for the floor to explain.
    machine_rows(&mut runs, &mut notes, &plan, began + BUDGET);
    notes.push(format!(
        "the largest-heap search took {search_seconds:.0} s ({} confirmations); the whole \
         suite {:.0} s",
        searches.iter().map(|s| s.confirmations).sum::<usize>(),
        began.elapsed().as_secs_f64()
    ));
    for s in &searches {
        largest_rows(&mut runs, &mut report.notes, s, &plan);
        add_notes(&mut notes, s.notes.iter().cloned());
    }

    for (case, imp, unit, values) in &runs.0 {
        report.add(case, imp, unit, values);
    }
    let predicted = HEAP_BYTES as f64 / copy_rate / 1e6;
    report.add("full_snapshot_predicted", "snapshot", "ms", &[predicted]);
    // Bytes per nanosecond are 10^6 bytes per millisecond: MB/ms as is.
    report.add("copy_rate_pM", "snapshot", "MB/ms", &[copy_rate]);
    // The thesis' MB is 2^20 bytes (appendix A.5 divides by 1024 * 1024).
    report.add(
        "copy_rate_pM_thesis_units",
        "snapshot",
        "MiB/ms",
        &[copy_rate * 1e6 / (1 << 20) as f64],
    );
    ratios(&mut report, predicted);
    report.notes.push(format!(
        "{n_runs} run(s) of {seconds} s of the song per collector, alternating the order; \
         5.8 ms blocks (256 frames, 44.1 kHz), 4 MiB pointer heap, {ROOTS} root slots \
         ({} B); audio thread pinned to CPU 0 at SCHED_FIFO {PRIORITY}, snapshot thread at \
         the same priority, collector threads pinned to CPU {}. replicating = \
         Mode::Replicating(Barrier::Stacks). blocking = per collection, the collector's \
         critical section (snapshot: roots + heap copy, forced full snapshots included, \
         padded to the prediction; replicating: swap of the complementary blocks + roots \
         copy; stop-the-world: mark + sweep on the audio thread); blocking_without_full = \
         the same without full snapshots; waited = per block, what the audio thread lost in \
         begin_block/end_block (the pause per block). cpu_* = share of audio + collector \
         time, booked as the thesis does (cpu_blocking, cpu_parallel; cpu_free = frees \
         applied by the audio thread) and by what was waited for (*_waited). Ratios compare \
         the same figure of two collectors (> 1: the concurrent one is better); those of a \
         zero are omitted as infinite. missed_deadlines = blocks that started on time and ended \
         after their deadline; blocks_started_late = woken over half a block late by the \
         OS. full_copy_unpadded = memcpy of a 4 MiB buffer by the bench, once per 10 ms.",
        ROOTS * 8,
        args.collector_cpu
    ));
    report.notes.push(format!(
        "set_ref = median ns per reference write over {barrier_blocks} blocks of {} writes \
         (each the first to its word since the last collection started), {n_runs} round(s) \
         alternating the order; set_ref_barrier_cost = per round, the replicating collector's \
         minus the snapshot collector's (no barrier). memory = Stats::memory_bytes for a 4 MiB pointer \
         heap.",
        barrier::WRITES
    ));
    for (imp, _) in COLLECTORS {
        let mut top: Vec<f64> = longest
            .iter()
            .filter(|l| l.0 == imp)
            .map(|l| (l.1 * 10.0).round() / 10.0)
            .collect();
        top.sort_by(|a, b| b.total_cmp(a));
        report
            .notes
            .push(format!("{imp}: longest blocking per run (us): {top:?}"));
    }
    report.notes.extend(notes);
    report
}

/// The snapshot collector's own rows: its roots, partial and full copies, the unpadded copy,
/// late full snapshots and safety warnings.
fn snapshot_rows(runs: &mut Runs, s: &Stats) {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    for (case, t) in [
        ("roots_snapshot", s.roots_snapshot),
        ("partial_snapshot", s.partial_snapshot),
    ] {
        runs.put(&format!("{case}_min"), "snapshot", "us", us(t.min));
        runs.put(&format!("{case}_avg"), "snapshot", "us", us(t.average()));
        runs.put(&format!("{case}_max"), "snapshot", "us", us(t.max));
    }
    let full = s.full_snapshot;
    runs.put("full_snapshot_min", "snapshot", "ms", ms(full.min));
    runs.put("full_snapshot_avg", "snapshot", "ms", ms(full.average()));
    runs.put("full_snapshot_max", "snapshot", "ms", ms(full.max));
    runs.put(
        "full_snapshot_count",
        "snapshot",
        "snapshots",
        full.count as f64,
    );
    let copies = unpadded_full_copy((full.count as usize).max(5));
    let [cmin, cavg, _, cmax] = summary(&copies);
    runs.put("full_copy_unpadded_min", "snapshot", "ms", cmin);
    runs.put("full_copy_unpadded_avg", "snapshot", "ms", cavg);
    runs.put("full_copy_unpadded_max", "snapshot", "ms", cmax);
    runs.put(
        "late_full_snapshots",
        "snapshot",
        "count",
        s.late_full_snapshots as f64,
    );
    runs.put(
        "safety_warnings",
        "snapshot",
        "count",
        s.safety_warnings as f64,
    );
}

/// The pause per block on the trial workload at one live size for every collector, at 64
/// and 256 frames, alternating the order; missed blocks are counted, not fatal.
fn pauses(runs: &mut Runs, notes: &mut Vec<String>, quick: bool, copy_rate: f64, cpu: usize) {
    let seconds = if quick { 0.3 } else { 4.0 };
    for (k, frames) in [64, 256].into_iter().enumerate() {
        for (name, mode) in crate::report::alternating(&COLLECTORS, k) {
            let setup = trial::Setup {
                mode,
                frames,
                live_bytes: PAUSE_LIVE_KIB << 10,
                seconds,
                copy_rate,
                collector_cpu: cpu,
                stop_on_miss: false,
            };
            match trial::run(&setup) {
                Ok(o) => {
                    for (q, x) in ["min", "avg", "p99", "max"]
                        .into_iter()
                        .zip(summary(&o.pause_us))
                    {
                        runs.put(&format!("pause_frames{frames}_{q}"), name, "us", x);
                    }
                    runs.put(
                        &format!("pause_frames{frames}_missed"),
                        name,
                        "blocks",
                        o.missed as f64,
                    );
                    runs.put(
                        &format!("pause_frames{frames}_late_starts"),
                        name,
                        "blocks",
                        o.late_starts as f64,
                    );
                    if let Some(
                        f @ (trial::Failure::OutOfMemory { .. } | trial::Failure::Access { .. }),
                    ) = &o.failure
                    {
                        notes.push(format!("pause_frames{frames}/{name} stopped early: {f}"));
                    }
                    add_notes(notes, o.notes);
                }
                Err(e) => notes.push(format!("pause_frames{frames}/{name}: {e}")),
            }
        }
    }
    notes.push(format!(
        "pause_frames<F>_* = per block, what the collector held the audio thread for, on the \
         largest-heap trial workload with {PAUSE_LIVE_KIB} KiB live for every collector, \
         {seconds} s at F frames (48 kHz), the audio thread busy half of every block"
    ));
}

/// One search's rows and its trail of trials.
fn largest_rows(
    runs: &mut Runs,
    notes: &mut Vec<String>,
    s: &largest::Search,
    plan: &largest::Plan,
) {
    let case = format!("largest_heap_frames{}", s.frames);
    let kib = s.result_kib(plan);
    runs.put(&case, s.name, "KiB", kib as f64);
    runs.put(
        &format!("{case}_search"),
        s.name,
        "KiB",
        s.passed_kib as f64,
    );
    // 0 says "not confirmed" in the JSON, which has no notes.
    let sustained = s.confirmed.as_ref().map_or(0.0, |c| c.seconds);
    runs.put(&format!("{case}_sustained"), s.name, "s", sustained);
    if let Some(c) = &s.confirmed {
        let [_, avg, p99, max] = summary(&c.pause_us);
        runs.put(&format!("{case}_pause_avg"), s.name, "us", avg);
        runs.put(&format!("{case}_pause_p99"), s.name, "us", p99);
        runs.put(&format!("{case}_pause_max"), s.name, "us", max);
        runs.put(
            &format!("{case}_memory"),
            s.name,
            "MiB",
            c.memory_bytes as f64 / (1 << 20) as f64,
        );
        runs.put(
            &format!("{case}_late_starts"),
            s.name,
            "blocks",
            c.late_starts as f64,
        );
    }
    let verdict = match (&s.confirmed, plan.confirm_seconds) {
        (Some(c), _) if c.kib >= plan.cap_kib => format!(
            ">= cap: the cap itself ({} KiB) was sustained for {:.0} s",
            plan.cap_kib, c.seconds
        ),
        (Some(c), _) => format!("{} KiB sustained for {:.0} s", c.kib, c.seconds),
        (None, None) if kib >= plan.cap_kib => format!(
            ">= cap: the cap ({} KiB) passed its short trial; not confirmed (--quick or \
             --confirm-seconds 0)",
            plan.cap_kib
        ),
        (None, None) => format!(
            "{kib} KiB from short trials only, not confirmed (--quick or --confirm-seconds 0)"
        ),
        (None, Some(_)) if s.confirmations == 0 && s.out_of_time => format!(
            "not confirmed, the suite's budget had no room for its confirmation: reported as \
             0 (the search's short trials passed {} KiB)",
            s.passed_kib
        ),
        (None, Some(secs)) => format!(
            "no size sustained {secs} s without a missed block{}: reported as 0 (the \
             search's short trials passed {} KiB)",
            if s.out_of_time {
                " (no time left for another step down)"
            } else {
                ""
            },
            s.passed_kib
        ),
    };
    notes.push(format!(
        "{case}/{}: {verdict}. Trials: {}",
        s.name,
        s.log.join("; ")
    ));
}

/// The floor under the largest-heap confirmations: as many seconds of the trial's pacing
/// and half-block load with no collector at all, at each block size, 64 frames first, each
/// only if it can end by `deadline`. A machine that misses blocks on its own fails every
/// collector's confirmation, whatever the heap.
fn machine_rows(runs: &mut Runs, notes: &mut Vec<String>, plan: &largest::Plan, deadline: Instant) {
    let seconds = plan.confirm_seconds.unwrap_or(plan.trial_seconds);
    for frames in [64, 256] {
        if Instant::now() + Duration::from_secs_f64(seconds) > deadline {
            notes.push(format!(
                "machine_missed_frames{frames}: not measured, the suite's budget had no room \
                 for {seconds} s"
            ));
            continue;
        }
        let m = trial::machine(frames, seconds);
        let case = format!("machine_missed_frames{frames}");
        runs.put(&case, "no-collector", "blocks", m.missed as f64);
        runs.put(
            &format!("machine_blocks_frames{frames}"),
            "no-collector",
            "blocks",
            m.blocks as f64,
        );
        runs.put(
            &format!("machine_late_starts_frames{frames}"),
            "no-collector",
            "blocks",
            m.late_starts as f64,
        );
        notes.push(format!(
            "{case}: {} of {} blocks missed in {seconds} s with no collector{}",
            m.missed,
            m.blocks,
            m.first
                .map(|f| format!(", the first: {f}"))
                .unwrap_or_default()
        ));
        add_notes(notes, m.notes);
    }
}

/// Ratios, each between the same figure of two collectors and oriented so that > 1 favours
/// the snapshot or replicating collector over stop-the-world (the ARCHITECTURE convention).
/// The full snapshots' time over the prediction compares the machine with itself, so it is a
/// row (`full_snapshot_avg_over_predicted`), not a ratio.
fn ratios(report: &mut Report, predicted: f64) {
    let get = |case: &str, imp: &str| report.median(case, imp).unwrap_or(f64::NAN);
    let mut ratios = Vec::new();
    for (imp, prefix) in [("snapshot", ""), ("replicating", "replicating_")] {
        for case in [
            "blocking_avg",
            "blocking_max",
            "blocking_without_full_avg",
            "blocking_without_full_max",
            "waited_p99",
            "waited_max",
        ] {
            let r = get(case, "stop-the-world") / get(case, imp);
            ratios.push((format!("{prefix}{case}_vs_stop_the_world"), r));
        }
        for frames in [64, 256] {
            for q in ["p99", "max"] {
                let case = format!("pause_frames{frames}_{q}");
                let r = get(&case, "stop-the-world") / get(&case, imp);
                ratios.push((format!("{prefix}{case}_vs_stop_the_world"), r));
            }
            // Larger is better here.
            let case = format!("largest_heap_frames{frames}");
            let r = get(&case, imp) / get(&case, "stop-the-world");
            ratios.push((format!("{prefix}{case}_vs_stop_the_world"), r));
        }
    }
    let over_predicted = get("full_snapshot_avg", "snapshot") / predicted;
    for (k, v) in ratios {
        if v.is_finite() {
            report.ratios.insert(k, (v * 1000.0).round() / 1000.0);
        }
    }
    if over_predicted.is_finite() {
        report.add(
            "full_snapshot_avg_over_predicted",
            "snapshot",
            "ratio",
            &[over_predicted],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report in which every collector has `v(imp, case)` for every figure `ratios` reads.
    fn report_with(v: impl Fn(&str, &str) -> f64) -> Report {
        let mut r = Report::new("gc");
        for imp in ["snapshot", "replicating", "stop-the-world"] {
            let mut cases = vec!["full_snapshot_avg".to_owned()];
            for p in ["blocking", "blocking_without_full"] {
                cases.extend(["avg", "max"].map(|q| format!("{p}_{q}")));
            }
            cases.extend(["waited_p99".into(), "waited_max".into()]);
            for f in [64, 256] {
                cases.extend(["p99", "max"].map(|q| format!("pause_frames{f}_{q}")));
                cases.push(format!("largest_heap_frames{f}"));
            }
            for case in cases {
                r.add(&case, imp, "us", &[v(imp, &case)]);
            }
        }
        r
    }

    #[test]
    fn every_ratio_is_above_one_when_the_concurrent_collectors_are_better() {
        // Stop-the-world: 10 times the pauses and a tenth of the heap.
        let mut r = report_with(|imp, case| match (imp, case.starts_with("largest")) {
            ("stop-the-world", false) => 1000.0,
            ("stop-the-world", true) => 1.0,
            (_, false) => 100.0,
            (_, true) => 10.0,
        });
        ratios(&mut r, 100.0);
        assert_eq!(r.ratios.len(), 2 * (6 + 2 * 3));
        for (k, v) in &r.ratios {
            assert_eq!(*v, 10.0, "{k}");
        }
    }

    #[test]
    fn blocking_without_full_compares_like_with_like() {
        // Full snapshots make the snapshot collector's blocking 50 µs, without them 5 µs;
        // stop-the-world blocks 20 µs either way. Against stop-the-world's blocking the
        // snapshot's partial figure would look 4 times better; like with like, it is.
        let mut r = report_with(|imp, case| match (imp, case) {
            ("stop-the-world", c) if c.starts_with("blocking_without_full") => 20.0,
            ("stop-the-world", c) if c.starts_with("blocking") => 40.0,
            ("snapshot", c) if c.starts_with("blocking_without_full") => 5.0,
            ("snapshot", c) if c.starts_with("blocking") => 50.0,
            _ => 1.0,
        });
        ratios(&mut r, 1.0);
        assert_eq!(r.ratios["blocking_without_full_avg_vs_stop_the_world"], 4.0);
        assert_eq!(r.ratios["blocking_avg_vs_stop_the_world"], 0.8);
    }

    #[test]
    fn the_prediction_check_is_a_row_not_a_ratio() {
        let mut r = report_with(|_, case| {
            if case == "full_snapshot_avg" {
                3.0
            } else {
                1.0
            }
        });
        ratios(&mut r, 2.0);
        assert!(
            r.ratios.keys().all(|k| !k.contains("predicted")),
            "{:?}",
            r.ratios
        );
        assert_eq!(
            r.median("full_snapshot_avg_over_predicted", "snapshot"),
            Some(1.5)
        );
    }

    /// Tasks of this process whose name starts with `prefix`, with their allowed CPUs.
    fn tasks(prefix: &str) -> Vec<String> {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| {
                let path = t.ok()?.path();
                let name = std::fs::read_to_string(path.join("comm")).ok()?;
                let status = std::fs::read_to_string(path.join("status")).ok()?;
                let cpus = status
                    .lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
                name.starts_with(prefix).then(|| cpus.trim().to_owned())
            })
            .collect()
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn the_collector_threads_are_found_by_name_and_pinned() {
        let (_m, _c) = start(Config::small()).unwrap();
        // The threads name themselves once they run; give them a moment.
        let mut pinned = 0;
        for _ in 0..100 {
            pinned = pin_collector_threads(0).unwrap();
            if pinned >= 2 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // Other tests may run collectors in this process at the same time: at least ours.
        assert!(pinned >= 2, "{pinned} collector threads found");
        let cpus = tasks("downbeat-gc-");
        assert!(cpus.len() >= 2 && cpus.iter().all(|c| c == "0"), "{cpus:?}");
    }
}
