//! The gc suite: the thesis' benchmark structure (Tables 11.2-11.6) on a Rust model of its
//! benchmark program (appendix A.1): a MIDI-driven synth that allocates a small object graph
//! per note, a burst of triangle-wave grains, and a burst of plucked strings with random
//! delay-line lengths, at 5.8 ms blocks, self-paced with absolute deadlines. The same workload
//! runs under the snapshot collector and under a stop-the-world mark-and-sweep on the audio
//! thread, both with a 4 MiB pointer heap.

use std::hint::black_box;
use std::time::{Duration, Instant};

use downbeat_gc::{measure_copy_rate, start, Block, Config, Gc, Mode, Stats};

use crate::report::{quantile, Report};
use crate::rng::Rng;
use crate::Common;

/// Options of the gc suite.
#[derive(clap::Args, Clone, Debug)]
pub struct GcArgs {
    #[command(flatten)]
    pub common: Common,
    /// Seconds of audio per collector (default 60; 3 with --quick).
    #[arg(long)]
    pub seconds: Option<f64>,
}

const FRAMES: usize = 256;
const RATE: f64 = 44_100.0;
/// 256 frames at 44.1 kHz: the thesis' 5.8 ms.
const BLOCK: Duration = Duration::from_nanos(5_804_989);
const TABLE: usize = 256;

const SQUARE: u64 = 1;
const GRAIN: u64 = 2;
const PLUCK: u64 = 3;

/// The synth's state lives in the collected heap: root 0 holds the table of sounding
/// voices; a voice is a small graph (oscillator, envelope, panner, ...), a pluck owns a delay
/// line in the atomic heap.
struct Synth {
    rng: Rng,
    blocks_total: u64,
    out: [f32; 2 * FRAMES],
}

fn f(b: &Block<'_>, o: Gc, i: usize) -> f64 {
    f64::from_bits(b.data(o, i))
}
fn setf(b: &mut Block<'_>, o: Gc, i: usize, v: f64) {
    b.set_data(o, i, v.to_bits());
}

impl Synth {
    fn table(&self, b: &mut Block<'_>) -> Gc {
        match b.root(0) {
            Some(t) => t,
            None => {
                let t = b.alloc(TABLE, 0).expect("table");
                b.set_root(0, Some(t));
                t
            }
        }
    }

    fn free_slot(&mut self, b: &Block<'_>, table: Gc) -> Option<usize> {
        let start = (self.rng.next() % TABLE as u64) as usize;
        (0..TABLE)
            .map(|k| (start + k) % TABLE)
            .find(|&i| b.get_ref(table, i).is_none() && b.get_atomic(table, i).is_none())
    }

    /// A note-on: seven objects, like the thesis' DTMF estimate of about 7 per tone.
    fn note_on(&mut self, b: &mut Block<'_>, now: u64) -> Option<Gc> {
        let freq = 440.0 * 2f64.powf((self.rng.between(36.0, 96.0) - 69.0) / 12.0);
        let dur = self.rng.between(0.1, 1.0);
        let v = b.alloc(5, 3).ok()?;
        let osc = b.alloc(0, 2).ok()?;
        let adsr = b.alloc(1, 2).ok()?;
        let adsr_params = b.alloc(0, 4).ok()?;
        let pan = b.alloc(0, 2).ok()?;
        let vol = b.alloc(0, 1).ok()?;
        let event = b.alloc(0, 2).ok()?;
        setf(b, osc, 1, freq / RATE);
        for (i, x) in [0.02, 0.04, 0.2, 0.01].into_iter().enumerate() {
            setf(b, adsr_params, i, x);
        }
        b.set_ref(adsr, 0, Some(adsr_params));
        let c = self.rng.unit();
        let angle = std::f64::consts::FRAC_PI_4 - c * std::f64::consts::FRAC_PI_2;
        setf(
            b,
            pan,
            0,
            (angle.cos() + angle.sin()) * std::f64::consts::FRAC_1_SQRT_2,
        );
        setf(
            b,
            pan,
            1,
            (angle.cos() - angle.sin()) * std::f64::consts::FRAC_1_SQRT_2,
        );
        setf(b, vol, 0, self.rng.between(0.05, 0.2));
        b.set_data(event, 0, 0x90);
        for (i, o) in [osc, adsr, pan, vol, event].into_iter().enumerate() {
            b.set_ref(v, i, Some(o));
        }
        b.set_data(v, 0, SQUARE);
        b.set_data(v, 1, now + (dur * RATE / FRAMES as f64) as u64);
        Some(v)
    }

    fn grain(&mut self, b: &mut Block<'_>, now: u64) -> Option<Gc> {
        let dur = self.rng.between(0.4, 2.0);
        let v = b.alloc(3, 3).ok()?;
        let osc = b.alloc(0, 2).ok()?;
        let env = b.alloc(1, 2).ok()?;
        let points = b.alloc(0, 6).ok()?;
        setf(b, osc, 1, self.rng.between(50.0, 2000.0) / RATE);
        for (i, x) in [0.0, 0.0, 0.5, 0.05, 1.0, 0.0].into_iter().enumerate() {
            setf(b, points, i, x);
        }
        b.set_ref(env, 0, Some(points));
        b.set_ref(v, 0, Some(osc));
        b.set_ref(v, 1, Some(env));
        b.set_data(v, 0, GRAIN);
        b.set_data(v, 1, now + (dur * RATE / FRAMES as f64) as u64);
        b.set_data(v, 2, now);
        Some(v)
    }

    /// Jaffe-Smith plucked string: a delay line of 110-882 samples filled with noise.
    fn pluck(&mut self, b: &mut Block<'_>, now: u64) -> Option<Gc> {
        let dur = self.rng.between(0.1, 1.2);
        let len = (RATE / self.rng.between(50.0, 400.0)) as usize;
        let v = b.alloc(3, 4).ok()?;
        let line = b.alloc_atomic(len * 4).ok()?;
        for s in b.samples(line)?.iter_mut() {
            *s = (self.rng.unit() * 2.0 - 1.0) as f32;
        }
        let allp = b.alloc(0, 3).ok()?;
        let feedb = b.alloc(0, 3).ok()?;
        let lf = self.rng.between(0.9, 0.99);
        let wt = self.rng.between(0.2, 0.5);
        setf(b, allp, 0, lf * (1.0 - wt));
        setf(b, allp, 1, lf * wt);
        setf(b, feedb, 0, self.rng.between(-0.5, 0.5));
        b.set_atomic(v, 0, Some(line));
        b.set_ref(v, 1, Some(allp));
        b.set_ref(v, 2, Some(feedb));
        b.set_data(v, 0, PLUCK);
        b.set_data(v, 1, now + (dur * RATE / FRAMES as f64) as u64);
        setf(b, v, 3, self.rng.between(0.3, 0.8));
        Some(v)
    }

    fn block(&mut self, b: &mut Block<'_>, now: u64) {
        let table = self.table(b);
        let t = now as f64 / self.blocks_total as f64;
        // The song: about four note-ons a second all the way through.
        let mut births = Vec::<fn(&mut Self, &mut Block<'_>, u64) -> Option<Gc>>::new();
        if self.rng.unit() < 4.0 * BLOCK.as_secs_f64() {
            births.push(Self::note_on);
        }
        // 500 grains from 5 s to 15 s of a 60 s run (scaled to the run's length).
        if (5.0 / 60.0..15.0 / 60.0).contains(&t)
            && self.rng.unit() < 500.0 / (self.blocks_total as f64 * 10.0 / 60.0)
        {
            births.push(Self::grain);
        }
        // 2000 plucked strings from 40 s to 50 s.
        if (40.0 / 60.0..50.0 / 60.0).contains(&t) {
            let per_block = 2000.0 / (self.blocks_total as f64 * 10.0 / 60.0);
            let mut n = per_block.floor() as usize;
            if self.rng.unit() < per_block.fract() {
                n += 1;
            }
            for _ in 0..n {
                births.push(Self::pluck);
            }
        }
        for birth in births {
            if let Some(slot) = self.free_slot(b, table) {
                if let Some(v) = birth(self, b, now) {
                    b.set_ref(table, slot, Some(v));
                }
            }
        }
        self.out = [0.0; 2 * FRAMES];
        for slot in 0..TABLE {
            let Some(v) = b.get_ref(table, slot) else {
                continue;
            };
            if b.data(v, 1) <= now {
                b.set_ref(table, slot, None); // note-off: the graph becomes garbage
                continue;
            }
            match b.data(v, 0) {
                SQUARE => self.square(b, v),
                GRAIN => self.triangle(b, v, now),
                _ => self.string(b, v),
            }
        }
        black_box(&self.out);
    }

    fn square(&mut self, b: &mut Block<'_>, v: Gc) {
        let (osc, pan, vol) = (
            b.get_ref(v, 0).unwrap(),
            b.get_ref(v, 2).unwrap(),
            b.get_ref(v, 3).unwrap(),
        );
        let (mut phase, inc) = (f(b, osc, 0), f(b, osc, 1));
        let (l, r, g) = (f(b, pan, 0), f(b, pan, 1), f(b, vol, 0));
        for i in 0..FRAMES {
            let s = if phase < 0.5 { g } else { -g };
            self.out[2 * i] += (s * l) as f32;
            self.out[2 * i + 1] += (s * r) as f32;
            phase = (phase + inc).fract();
        }
        setf(b, osc, 0, phase);
    }

    fn triangle(&mut self, b: &mut Block<'_>, v: Gc, now: u64) {
        let osc = b.get_ref(v, 0).unwrap();
        let (mut phase, inc) = (f(b, osc, 0), f(b, osc, 1));
        let (born, end) = (b.data(v, 2), b.data(v, 1));
        let pos = (now - born) as f64 / (end - born).max(1) as f64;
        let amp = 0.05 * (1.0 - (2.0 * pos - 1.0).abs());
        for i in 0..FRAMES {
            let s = amp * (4.0 * (phase - 0.5).abs() - 1.0);
            self.out[2 * i] += s as f32;
            self.out[2 * i + 1] += s as f32;
            phase = (phase + inc).fract();
        }
        setf(b, osc, 0, phase);
    }

    fn string(&mut self, b: &mut Block<'_>, v: Gc) {
        let (allp, feedb) = (b.get_ref(v, 1).unwrap(), b.get_ref(v, 2).unwrap());
        let (a0, a1, c) = (
            f(b, allp, 0) as f32,
            f(b, allp, 1) as f32,
            f(b, feedb, 0) as f32,
        );
        let (mut x1, mut y1) = (f(b, allp, 2) as f32, f(b, feedb, 1) as f32);
        let amp = f(b, v, 3) as f32;
        let mut ctr = b.data(v, 2) as usize;
        let line = b.get_atomic(v, 0).unwrap();
        let tab = b.samples(line).unwrap();
        let mut out = [0f32; FRAMES];
        for o in out.iter_mut() {
            let val = tab[ctr];
            let ap = a0 * val + a1 * x1;
            x1 = val;
            let fb = c * ap + y1;
            y1 = ap;
            tab[ctr] = (1.0 - c) * fb;
            ctr = (ctr + 1) % tab.len();
            *o = amp * val;
        }
        for (i, s) in out.iter().enumerate() {
            self.out[2 * i] += s;
            self.out[2 * i + 1] += s;
        }
        setf(b, allp, 2, x1 as f64);
        setf(b, feedb, 1, y1 as f64);
        b.set_data(v, 2, ctr as u64);
    }
}

struct Outcome {
    blocking_us: Vec<f64>,
    audio_us: Vec<f64>,
    missed: u64,
    late_starts: u64,
    waits_without_gap: u64,
    stats: Stats,
    mutator: downbeat_gc::MutatorStats,
    heap_used: usize,
    rt_note: Option<String>,
}

fn realtime(priority: i32) -> Result<(), String> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: plain call on the calling thread with a valid parameter struct.
    let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!(
            "audio thread at normal priority: SCHED_FIFO refused ({})",
            std::io::Error::from_raw_os_error(rc)
        ))
    }
}

fn play(mode: Mode, seconds: f64, copy_rate: f64) -> Outcome {
    let config = Config {
        mode,
        heap_bytes: 4 << 20,
        atomic_bytes: 64 << 20,
        roots: 16,
        copy_rate: Some(copy_rate),
        snapshot_priority: Some(70),
        ..Config::default()
    };
    let (mut m, collector) = start(config).expect("collector");
    let blocks = (seconds / BLOCK.as_secs_f64()).ceil() as u64;
    let (blocking_us, audio_us, (missed, late_starts, waits_without_gap), rt_note, m) =
        std::thread::scope(|s| {
            s.spawn(move || {
                let rt_note = realtime(70).err();
                let mut synth = Synth {
                    rng: Rng(0x5eed_0500),
                    blocks_total: blocks,
                    out: [0.0; 2 * FRAMES],
                };
                let mut blocking = Vec::with_capacity(blocks as usize);
                let mut audio = Vec::with_capacity(blocks as usize);
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
                    // Woken (or finished the previous block) so late that this block cannot make
                    // its deadline whatever the collector does.
                    let started_late = start > due + BLOCK / 2;
                    late_starts += u64::from(started_late);
                    // No idle time between the previous block and this one: a snapshot requested
                    // at the end of the previous block had no gap to run in.
                    let no_gap = prev_end + Duration::from_micros(50) > due;
                    let mut b = m.begin_block();
                    synth.block(&mut b, n);
                    drop(b);
                    let end = Instant::now();
                    let waited = m.stats().last_blocking;
                    blocking.push(waited.as_secs_f64() * 1e6);
                    audio.push((end - start).saturating_sub(waited).as_secs_f64() * 1e6);
                    if end > due + BLOCK && !started_late {
                        missed += 1;
                    }
                    if !waited.is_zero() && no_gap {
                        waits_without_gap += 1;
                    }
                    prev_end = end;
                }
                (
                    blocking,
                    audio,
                    (missed, late_starts, waits_without_gap),
                    rt_note,
                    m,
                )
            })
            .join()
            .expect("audio thread")
        });
    // Let the last collection finish before reading the counters.
    std::thread::sleep(Duration::from_millis(50));
    Outcome {
        blocking_us,
        audio_us,
        missed,
        late_starts,
        waits_without_gap,
        stats: collector.stats(),
        mutator: m.stats(),
        heap_used: m.heap_used(),
        rt_note,
    }
}

/// Average nanoseconds per allocation: 1000 voice-sized objects per block, 200 blocks,
/// unrooted so the collector frees them between blocks.
fn alloc_ns(copy_rate: f64) -> (f64, f64) {
    let (mut m, _c) = start(Config {
        copy_rate: Some(copy_rate),
        ..Config::default()
    })
    .expect("collector");
    let (mut obj, mut atomic) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        let mut b = m.begin_block();
        let t = Instant::now();
        for _ in 0..1000 {
            black_box(b.alloc(2, 2).unwrap());
        }
        obj.push(t.elapsed().as_nanos() as f64 / 1000.0);
        let t = Instant::now();
        for i in 0..100 {
            black_box(b.alloc_atomic(440 + 32 * i).unwrap());
        }
        atomic.push(t.elapsed().as_nanos() as f64 / 100.0);
        drop(b);
        std::thread::sleep(Duration::from_millis(3));
        drop(m.begin_block());
        std::thread::sleep(Duration::from_millis(3));
    }
    obj.sort_by(f64::total_cmp);
    atomic.sort_by(f64::total_cmp);
    (quantile(&obj, 0.5), quantile(&atomic, 0.5))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn summary(v: &[f64]) -> (f64, f64, f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let avg = s.iter().sum::<f64>() / s.len().max(1) as f64;
    (
        s.first().copied().unwrap_or(f64::NAN),
        avg,
        quantile(&s, 0.99),
        s.last().copied().unwrap_or(f64::NAN),
    )
}

pub fn run(args: &GcArgs) -> Report {
    let common = &args.common;
    let seconds = args
        .seconds
        .unwrap_or(if common.quick { 3.0 } else { 60.0 })
        .max(0.5);
    let mut report = Report::new("gc");
    let copy_rate = measure_copy_rate(64 << 20, 8);
    let snap = play(Mode::Snapshot, seconds, copy_rate);
    let stw = play(Mode::StopTheWorld, seconds, copy_rate);
    let (obj_ns, atomic_ns) = alloc_ns(copy_rate);

    for (name, o) in [("snapshot", &snap), ("mark-sweep", &stw)] {
        let (min, avg, p99, max) = summary(&o.blocking_us);
        report.add("blocking_min", name, "us", &[min]);
        report.add("blocking_avg", name, "us", &[avg]);
        report.add("blocking_p99", name, "us", &[p99]);
        report.add("blocking_max", name, "us", &[max]);
        let over = |t: f64| o.blocking_us.iter().filter(|&&x| x > t).count() as f64;
        report.add("blocks_blocking_over_100us", name, "blocks", &[over(100.0)]);
        let (_, aavg, _, amax) = summary(&o.audio_us);
        report.add("audio_avg", name, "us", &[aavg]);
        report.add("audio_max", name, "us", &[amax]);
        report.add("missed_deadlines", name, "blocks", &[o.missed as f64]);
        report.add(
            "blocks_started_late",
            name,
            "blocks",
            &[o.late_starts as f64],
        );
        report.add(
            "waits_with_no_gap_before",
            name,
            "blocks",
            &[o.waits_without_gap as f64],
        );
        report.add("blocks", name, "blocks", &[o.blocking_us.len() as f64]);
        let s = &o.stats;
        report.add(
            "mark_avg",
            name,
            "us",
            &[s.mark.average().as_secs_f64() * 1e6],
        );
        report.add("mark_max", name, "us", &[s.mark.max.as_secs_f64() * 1e6]);
        report.add(
            "sweep_avg",
            name,
            "us",
            &[s.sweep.average().as_secs_f64() * 1e6],
        );
        report.add("collections", name, "cycles", &[s.cycles as f64]);
        report.add("objects_freed", name, "objects", &[s.objects_freed as f64]);
        report.add("bytes_freed", name, "MB", &[s.bytes_freed as f64 / 1e6]);
        report.add(
            "atomic_bytes_freed",
            name,
            "MB",
            &[o.mutator.atomic_bytes_freed as f64 / 1e6],
        );
        report.add("heap_used", name, "KB", &[o.heap_used as f64 / 1e3]);
        if o.mutator.free_time > Duration::ZERO {
            let free_ns = o.mutator.free_time.as_nanos() as f64
                / (o.mutator.objects_freed + o.mutator.atomic_freed) as f64;
            report.add("free_avg", name, "ns", &[free_ns]);
        }
        // Table 11.5: share of audio+gc time that blocks audio, and that runs in parallel.
        let audio_total: f64 = o.audio_us.iter().sum::<f64>() / 1e3;
        let (blocking, parallel) = match name {
            "snapshot" => (
                ms(s.roots_snapshot.total + s.partial_snapshot.total),
                ms(s.mark.total + s.sweep.total + s.full_snapshot.total),
            ),
            _ => (ms(s.mark.total + s.sweep.total), 0.0),
        };
        let all = audio_total + blocking + parallel;
        report.add("cpu_blocking", name, "%", &[100.0 * blocking / all]);
        report.add("cpu_parallel", name, "%", &[100.0 * parallel / all]);
        if let Some(note) = &o.rt_note {
            report.notes.push(note.clone());
        }
        let mut top: Vec<f64> = o.blocking_us.clone();
        top.sort_by(|a, b| b.total_cmp(a));
        top.truncate(5);
        report.notes.push(format!(
            "{name}: five longest blocking times (us): {:?}",
            top.iter()
                .map(|x| (x * 10.0).round() / 10.0)
                .collect::<Vec<_>>()
        ));
    }
    let s = &snap.stats;
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    for (case, t) in [
        ("roots_snapshot", s.roots_snapshot),
        ("partial_snapshot", s.partial_snapshot),
    ] {
        report.add(&format!("{case}_min"), "snapshot", "us", &[us(t.min)]);
        report.add(&format!("{case}_avg"), "snapshot", "us", &[us(t.average())]);
        report.add(&format!("{case}_max"), "snapshot", "us", &[us(t.max)]);
    }
    report.add(
        "full_snapshot_min",
        "snapshot",
        "ms",
        &[ms(s.full_snapshot.min)],
    );
    report.add(
        "full_snapshot_avg",
        "snapshot",
        "ms",
        &[ms(s.full_snapshot.average())],
    );
    report.add(
        "full_snapshot_max",
        "snapshot",
        "ms",
        &[ms(s.full_snapshot.max)],
    );
    report.add(
        "full_snapshot_count",
        "snapshot",
        "snapshots",
        &[s.full_snapshot.count as f64],
    );
    report.add(
        "full_snapshot_predicted",
        "snapshot",
        "ms",
        &[ms(s.predicted_full_snapshot)],
    );
    report.add("copy_rate_pM", "snapshot", "MB/ms", &[s.copy_rate * 1e3]);
    report.add(
        "late_full_snapshots",
        "snapshot",
        "count",
        &[s.late_full_snapshots as f64],
    );
    report.add(
        "safety_warnings",
        "snapshot",
        "count",
        &[s.safety_warnings as f64],
    );
    report.add("alloc_object", "snapshot", "ns", &[obj_ns]);
    report.add("alloc_atomic", "snapshot", "ns", &[atomic_ns]);

    // Ratios (> 1 favours the snapshot collector).
    let get = |case: &str, imp: &str| report.median(case, imp).unwrap_or(f64::NAN);
    let mut ratios = Vec::new();
    for case in ["blocking_p99", "blocking_max"] {
        let r = get(case, "mark-sweep") / get(case, "snapshot");
        ratios.push((format!("{case}_vs_mark_sweep"), r));
    }
    // The thesis' comparison: what cannot overlap the mutator (roots + partial snapshot) against
    // mark-and-sweep's blocking.
    let crit_max = us(s.roots_snapshot.max + s.partial_snapshot.max);
    let crit_avg = us(s.roots_snapshot.average() + s.partial_snapshot.average());
    // Per collection: mark + sweep on the audio thread against roots + partial snapshot.
    let t = &stw.stats;
    ratios.push((
        "critical_section_max_vs_mark_sweep".into(),
        get("blocking_max", "mark-sweep") / crit_max,
    ));
    ratios.push((
        "critical_section_avg_vs_mark_sweep".into(),
        us(t.mark.average() + t.sweep.average()) / crit_avg,
    ));
    ratios.push((
        "full_snapshot_avg_over_predicted".into(),
        ms(s.full_snapshot.average()) / ms(s.predicted_full_snapshot),
    ));
    for (k, v) in ratios {
        if v.is_finite() {
            report.ratios.insert(k, (v * 1000.0).round() / 1000.0);
        }
    }
    report.notes.push(format!(
        "{seconds} s per collector at 5.8 ms blocks (256 frames, 44.1 kHz), 4 MiB pointer heap; \
         blocking = time the audio thread waited for the collector in begin_block/end_block \
         (snapshot: for an unfinished copy; mark-sweep: mark and sweep on the audio thread); \
         ratios of a zero blocking time are omitted as infinite; \
         free_avg = time applying the collector's frees / blocks freed; \
         full_snapshot_avg_over_predicted is a ratio, not a > 1-is-better figure; \
         missed_deadlines counts blocks that started on time and still ended after their \
         deadline; blocks_started_late = woken over half a block late by the OS (they miss \
         whatever the collector does); waits_with_no_gap_before = blocks that waited for a \
         snapshot right after a block that ran into their start time"
    ));
    if let Some(n) = &s.priority_note {
        report.notes.push(n.clone());
    }
    report
}
