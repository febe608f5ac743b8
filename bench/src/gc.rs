//! The gc suite: the measurements of K. S. Matheussen, "Realtime Audio with Garbage
//! Collection" (2010), chapter 11 (Tables 11.2–11.6), on a model of its benchmark program
//! ([`song`]) at 5.8 ms blocks, self-paced with absolute deadlines. The same song runs under
//! the snapshot collector and under a stop-the-world mark-and-sweep on the audio thread, both
//! with a 4 MiB pointer heap and the thesis' 18,584 bytes of roots, in alternating order.
//!
//! Blocking is measured two ways:
//!
//! * **blocking** (the headline, the thesis' measure): per collection, the time the collector
//!   holds the heap so that audio cannot run: for the snapshot collector the roots copy plus
//!   the heap copy, forced full snapshots included (Table 11.5 books them as blocking); for
//!   mark-and-sweep its mark and sweep on the audio thread.
//! * **waited**: per block, what the audio thread actually lost in `begin_block`/`end_block`:
//!   a snapshot copy that had not finished when the next block was due, or mark and sweep.

mod sections;
mod song;

use std::hint::black_box;
use std::time::{Duration, Instant};

use downbeat_gc::{measure_copy_rate, start, Config, Mode, MutatorStats, Stats};

use crate::report::{quantile, Report};
use crate::Common;
use sections::Sections;
use song::{Song, BLOCK_SECONDS, ROOTS};

/// Options of the gc suite.
#[derive(clap::Args, Clone, Debug)]
pub struct GcArgs {
    #[command(flatten)]
    pub common: Common,
    /// Seconds of audio per collector and run (default 60, the thesis' song; 3 with --quick).
    #[arg(long)]
    pub seconds: Option<f64>,
    /// CPU for the snapshot and mark-and-sweep threads; the audio thread runs on CPU 0 (the
    /// thesis' Table 11.1). 0 shows what sharing the audio thread's CPU costs.
    #[arg(long, default_value_t = 1)]
    pub collector_cpu: usize,
}

const BLOCK: Duration = Duration::from_nanos((BLOCK_SECONDS * 1e9) as u64);
const HEAP_BYTES: usize = 4 << 20;
/// The thesis ran each collector 5 times.
const RUNS: usize = 5;
const PRIORITY: i32 = 70;

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

fn play(mode: Mode, seconds: f64, copy_rate: f64, collector_cpu: usize) -> Outcome {
    let config = Config {
        mode,
        heap_bytes: HEAP_BYTES,
        atomic_bytes: 64 << 20,
        roots: ROOTS,
        copy_rate: Some(copy_rate),
        snapshot_priority: Some(PRIORITY),
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
    if mode == Mode::Snapshot {
        match pin_collector_threads(collector_cpu) {
            Ok(2) => {}
            Ok(n) => pin_notes.push(format!("{n} collector threads pinned, expected 2")),
            Err(e) => pin_notes.push(format!("collector threads not pinned: {e}")),
        }
    }
    let mut sections = Sections::with_capacity(blocks / 2 + 16);
    let (audio, m, song) = std::thread::scope(|s| {
        let audio = s.spawn(move || {
            let mut notes = Vec::new();
            if !crate::report::pin_to_cpu(0) {
                notes.push("audio thread not pinned to CPU 0".to_owned());
            }
            if let Err(e) = downbeat_rt::pool::set_current_thread_realtime(PRIORITY) {
                notes.push(format!("audio thread at normal priority: {e}"));
            }
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
        // Stop-the-world collects inside end_block, so a block that lost time collected.
        Mode::StopTheWorld => {
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
fn record(runs: &mut Runs, name: &'static str, o: &Outcome, seconds: f64) {
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
    let (critical, parallel) = match name {
        "snapshot" => (
            ms(s.roots_snapshot.total + s.partial_snapshot.total + s.full_snapshot.total),
            ms(s.mark.total + s.sweep.total),
        ),
        _ => (ms(s.mark.total + s.sweep.total), 0.0),
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
    let common = &args.common;
    let seconds = args
        .seconds
        .unwrap_or(if common.quick { 3.0 } else { 60.0 })
        .max(0.5);
    let n_runs = common
        .runs
        .unwrap_or(if common.quick { 1 } else { RUNS })
        .max(1);
    let mut report = Report::new("gc");
    let copy_rate = measure_copy_rate(64 << 20, 8);
    let mut runs = Runs::default();
    let mut notes = Vec::new();
    let mut longest: Vec<(&str, f64)> = Vec::new();
    for r in 0..n_runs {
        // Alternate which collector goes first, so drift in the machine's load spreads over both.
        let order = if r % 2 == 0 {
            [Mode::Snapshot, Mode::StopTheWorld]
        } else {
            [Mode::StopTheWorld, Mode::Snapshot]
        };
        for mode in order {
            let o = play(mode, seconds, copy_rate, args.collector_cpu);
            let name = match mode {
                Mode::Snapshot => "snapshot",
                Mode::StopTheWorld => "mark-sweep",
            };
            record(&mut runs, name, &o, seconds);
            let max = o.blocking_us.iter().copied().fold(0.0, f64::max);
            longest.push((name, max));
            for n in o.notes {
                if !notes.contains(&n) {
                    notes.push(n);
                }
            }
            if o.unsampled > 0 {
                notes.push(format!(
                    "run {}: {} snapshots finished between two readings and are missing \
                     from the blocking rows",
                    r + 1,
                    o.unsampled
                ));
            }
            if mode == Mode::Snapshot {
                let s = &o.stats;
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
        }
        let (obj_ns, atomic_ns) = alloc_ns(copy_rate);
        runs.put("alloc_object", "snapshot", "ns", obj_ns);
        runs.put("alloc_atomic", "snapshot", "ns", atomic_ns);
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

    // Ratios (> 1 favours the snapshot collector).
    let get = |case: &str, imp: &str| report.median(case, imp).unwrap_or(f64::NAN);
    let mut ratios = Vec::new();
    for case in ["blocking_avg", "blocking_max"] {
        let r = get(case, "mark-sweep") / get(case, "snapshot");
        ratios.push((format!("{case}_vs_stop_the_world"), r));
    }
    for q in ["avg", "max"] {
        let r = get(&format!("blocking_{q}"), "mark-sweep")
            / get(&format!("blocking_without_full_{q}"), "snapshot");
        ratios.push((format!("blocking_without_full_{q}_vs_stop_the_world"), r));
    }
    for case in ["waited_p99", "waited_max"] {
        let r = get(case, "mark-sweep") / get(case, "snapshot");
        ratios.push((format!("{case}_vs_stop_the_world"), r));
    }
    ratios.push((
        "full_snapshot_avg_over_predicted".into(),
        get("full_snapshot_avg", "snapshot") / predicted,
    ));
    for (k, v) in ratios {
        if v.is_finite() {
            report.ratios.insert(k, (v * 1000.0).round() / 1000.0);
        }
    }
    report.notes.push(format!(
        "{n_runs} run(s) of {seconds} s per collector, alternating which goes first; \
         5.8 ms blocks (256 frames, 44.1 kHz), 4 MiB pointer heap, {ROOTS} root slots \
         ({} B); audio thread pinned to CPU 0 at SCHED_FIFO {PRIORITY}, snapshot thread at \
         the same priority, snapshot and mark-and-sweep threads pinned to CPU {}. blocking = per collection, the collector's critical section \
         (snapshot: roots + heap copy, forced full snapshots included, padded to the \
         prediction; mark-sweep: mark + sweep on the audio thread); blocking_without_full = \
         the same without full snapshots; waited = per block, what the audio thread lost in \
         begin_block/end_block. cpu_* = share of audio + collector time, booked as the \
         thesis does (cpu_blocking, cpu_parallel; cpu_free = frees applied by the audio \
         thread) and by what was waited for (*_waited). Ratios of a zero are omitted as \
         infinite; full_snapshot_avg_over_predicted is a ratio, not a > 1-is-better figure. \
         missed_deadlines = blocks that started on time and ended after their deadline; \
         blocks_started_late = woken over half a block late by the OS. \
         full_copy_unpadded = memcpy of a 4 MiB buffer by the bench, once per 10 ms.",
        ROOTS * 8,
        args.collector_cpu
    ));
    for imp in ["snapshot", "mark-sweep"] {
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

#[cfg(test)]
mod tests {
    use super::*;

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
