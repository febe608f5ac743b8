//! The clock suite (after "soft realtime ticker on Linux"): how late a periodic tick wakes up, side by side in one run.
//!
//! Methods: Downbeat's `Ticker` (with real-time priority where allowed, and without), a plain
//! `thread::sleep` loop as in the C++ program of "soft realtime ticker on Linux", the `spin_sleep` crate, a pure busy wait,
//! Go's `time.Ticker` (that post's program, built with the machine's `go`), and `cyclictest`
//! (rt-tests) as the floor the machine itself sets. Periods 16 ms and 1.45 ms (64 frames at
//! 44.1 kHz), idle and with 200 threads that sleep 1 ms in a loop (goroutines for Go).
//!
//! Lateness is measured from the time each method aimed at: its absolute deadline, or for the
//! relative sleep loop, the previous wake-up plus one period (what it asked the kernel for).
//! Methods with absolute deadlines skip deadlines already more than a period behind, as the
//! Ticker's `LatePolicy::Skip` and Go's ticker do. CPU is the ticking thread's own CPU time over
//! the wall time (for Go, the whole process, burners included).
//!
//! Each run measures the methods one after the other, forward in even runs and backward in
//! odd ones. Ratios compare like with like: the rivals (normal priority) against our ticker
//! without real-time priority (`downbeat-nort`), cyclictest (SCHED_FIFO 80) against our
//! ticker at SCHED_FIFO 80 (`downbeat`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use downbeat_rt::clock::{
    now_ns, thread_cpu_time, LatePolicy, Policy, Realtime, Ticker, TickerOptions,
};

use crate::report::{alternating, quantile, Better, Report};
use crate::Common;

const OURS: &str = "downbeat";
const OURS_NO_RT: &str = "downbeat-nort";
const SLEEP: &str = "sleep-loop";
const SPIN_SLEEP: &str = "spin_sleep";
const BUSY: &str = "busy-wait";
const GO: &str = "go-ticker";
const CYCLICTEST: &str = "cyclictest";
const LOAD: usize = 200;

/// The methods one case measures, in the order of an even run (odd runs reverse it, so that
/// no method always runs first, or always right after the same neighbour).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    Ours,
    OursNoRt,
    Sleep,
    SpinSleep,
    Busy,
    Cyclictest,
    Go,
}

const METHODS: [Method; 7] = [
    Method::Ours,
    Method::OursNoRt,
    Method::Sleep,
    Method::SpinSleep,
    Method::Busy,
    Method::Cyclictest,
    Method::Go,
];

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Ours => OURS,
            Method::OursNoRt => OURS_NO_RT,
            Method::Sleep => SLEEP,
            Method::SpinSleep => SPIN_SLEEP,
            Method::Busy => BUSY,
            Method::Cyclictest => CYCLICTEST,
            Method::Go => GO,
        }
    }
}

/// The order of the methods in run `k`.
fn order(k: usize) -> Vec<Method> {
    alternating(&METHODS, k)
}

/// `(ours, rival)` for every ratio: each rival against our ticker at the rival's own
/// priority (normal, or SCHED_FIFO 80 for cyclictest).
const RATIOS: [(&str, &str); 5] = [
    (OURS_NO_RT, SLEEP),
    (OURS_NO_RT, SPIN_SLEEP),
    (OURS_NO_RT, BUSY),
    (OURS_NO_RT, GO),
    (OURS, CYCLICTEST),
];

/// One method's run: lateness quantiles in µs and CPU in percent of a core.
#[derive(Clone, Copy)]
struct Sample {
    p50: f64,
    p99: f64,
    p999: f64,
    max: f64,
    cpu: Option<f64>,
}

impl Sample {
    fn of(mut lateness_ns: Vec<u64>, cpu: Option<f64>) -> Self {
        lateness_ns.sort_unstable();
        let us: Vec<f64> = lateness_ns.iter().map(|&n| n as f64 / 1e3).collect();
        Self {
            p50: quantile(&us, 0.5),
            p99: quantile(&us, 0.99),
            p999: quantile(&us, 0.999),
            max: us.last().copied().unwrap_or(f64::NAN),
            cpu,
        }
    }
}

/// Runs `body` on a fresh thread (so priority changes die with it) and returns its lateness
/// samples with its CPU share.
fn on_thread(body: impl FnOnce() -> Vec<u64> + Send + 'static) -> Sample {
    thread::spawn(move || {
        let cpu0 = thread_cpu_time();
        let t0 = Instant::now();
        let lateness = body();
        let cpu = (thread_cpu_time() - cpu0).as_secs_f64() / t0.elapsed().as_secs_f64() * 100.0;
        Sample::of(lateness, Some(cpu))
    })
    .join()
    .expect("measuring thread")
}

fn ticks(period: Duration, run: Duration) -> usize {
    (run.as_secs_f64() / period.as_secs_f64()).ceil() as usize
}

fn downbeat(period: Duration, run: Duration, rt: bool) -> (Sample, Vec<String>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let sample = on_thread(move || {
        let options = TickerOptions {
            realtime: rt.then_some(Realtime {
                policy: Policy::Fifo,
                priority: 80,
            }),
            late: LatePolicy::Skip,
            ..TickerOptions::default()
        };
        let mut ticker = Ticker::with_options(period, &options);
        let _ = tx.send(ticker.setup().notes());
        (0..ticks(period, run))
            .map(|_| ticker.wait().lateness.as_nanos() as u64)
            .collect()
    });
    (sample, rx.recv().unwrap_or_default())
}

/// The C++ loop of "soft realtime ticker on Linux": sleep for the period minus the time since the last wake-up.
fn sleep_loop(period: Duration, run: Duration) -> Sample {
    on_thread(move || {
        let p = period.as_nanos() as u64;
        let mut last = now_ns();
        (0..ticks(period, run))
            .map(|_| {
                let elapsed = now_ns() - last;
                thread::sleep(Duration::from_nanos(p.saturating_sub(elapsed)));
                let now = now_ns();
                let late = now.saturating_sub(last + p);
                last = now;
                late
            })
            .collect()
    })
}

/// Absolute deadlines, waited for by `wait(remaining)`; late deadlines are skipped.
fn absolute(period: Duration, run: Duration, wait: fn(Duration)) -> Sample {
    on_thread(move || {
        let p = period.as_nanos() as u64;
        let mut deadline = now_ns() + p;
        (0..ticks(period, run))
            .map(|_| {
                let now = now_ns();
                if now > deadline + p {
                    deadline += (now - deadline) / p * p;
                }
                if deadline > now {
                    wait(Duration::from_nanos(deadline - now));
                }
                let late = now_ns().saturating_sub(deadline);
                deadline += p;
                late
            })
            .collect()
    })
}

fn spin_sleep_wait(d: Duration) {
    spin_sleep::SpinSleeper::default().sleep(d);
}

fn busy_wait(d: Duration) {
    let until = now_ns() + d.as_nanos() as u64;
    while now_ns() < until {
        std::hint::spin_loop();
    }
}

/// Threads that sleep 1 ms in a loop, like that post's burner goroutines.
struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Load {
    fn start(k: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..k)
            .map(|_| {
                let stop = Arc::clone(&stop);
                thread::Builder::new()
                    .stack_size(64 * 1024)
                    .spawn(move || {
                        while !stop.load(Ordering::Relaxed) {
                            thread::sleep(Duration::from_millis(1));
                        }
                    })
                    .expect("load thread")
            })
            .collect();
        Self { stop, threads }
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

fn build_go() -> Result<PathBuf, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("go");
    let bin = std::env::temp_dir().join(format!("downbeat-bench-go-ticker-{}", std::process::id()));
    let out = Command::new("go")
        .args(["build", "-o"])
        .arg(&bin)
        .arg("ticker.go")
        .current_dir(&dir)
        .output()
        .map_err(|e| format!("go not available ({e}): Go's time.Ticker skipped"))?;
    if !out.status.success() {
        return Err(format!(
            "go build failed, Go's time.Ticker skipped: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(bin)
}

fn go(bin: &Path, period: Duration, run: Duration, load: usize) -> Option<Sample> {
    let out = Command::new(bin)
        .arg(format!("-period={}us", period.as_micros()))
        .arg(format!("-seconds={}", run.as_secs_f64()))
        .arg(format!("-load={load}"))
        .output()
        .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    Some(Sample {
        p50: v["p50_us"].as_f64()?,
        p99: v["p99_us"].as_f64()?,
        p999: v["p999_us"].as_f64()?,
        max: v["max_us"].as_f64()?,
        cpu: v["cpu_percent"].as_f64(),
    })
}

fn find_cyclictest() -> Result<(), String> {
    let present = || Command::new("cyclictest").arg("--help").output().is_ok();
    if present() {
        return Ok(());
    }
    // Debian's rt-tests; only attempted where we may install packages.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let _ = Command::new("apt-get")
            .args(["install", "-y", "-q", "rt-tests"])
            .output();
        if present() {
            return Ok(());
        }
    }
    Err("cyclictest (Debian rt-tests) not installed and not installable here: skipped".into())
}

/// cyclictest at the same period: SCHED_FIFO 80, mlockall, one thread, 1 µs histogram.
fn cyclictest(period: Duration, run: Duration) -> Option<Sample> {
    let out = Command::new("cyclictest")
        .args(["-m", "-q", "-p", "80", "-t", "1", "-h", "30000"])
        .arg(format!("-i{}", period.as_micros()))
        .arg(format!("-l{}", ticks(period, run)))
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lateness = Vec::new();
    let mut max = None;
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        match (parts.next(), parts.next()) {
            (Some(bin), Some(count)) if bin.chars().all(|c| c.is_ascii_digit()) => {
                let (Ok(bin), Ok(count)) = (bin.parse::<u64>(), count.parse::<usize>()) else {
                    continue;
                };
                // The bin's upper edge, like the other methods' exact values rounded up.
                lateness.extend(std::iter::repeat_n((bin + 1) * 1_000, count));
            }
            _ => {
                if let Some(m) = line.strip_prefix("# Max Latencies:") {
                    max = m.trim().parse::<f64>().ok();
                }
            }
        }
    }
    if lateness.is_empty() {
        return None;
    }
    let mut s = Sample::of(lateness, None);
    if let Some(m) = max {
        s.max = m;
    }
    Some(s)
}

fn label(period: Duration) -> String {
    let ms = period.as_secs_f64() * 1e3;
    if ms.fract() == 0.0 {
        format!("{ms:.0}ms")
    } else {
        format!("{ms}ms")
    }
}

pub fn run(common: &Common) -> Report {
    let mut report = Report::new("clock");
    let runs = common
        .runs
        .unwrap_or(if common.quick { 1 } else { 3 })
        .max(1);
    let cases: Vec<(Duration, Duration, usize)> = [
        (Duration::from_millis(16), 5.0),
        (Duration::from_micros(1450), 2.5),
    ]
    .into_iter()
    .flat_map(|(p, secs)| {
        let secs = if common.quick { 0.2 } else { secs };
        [0, LOAD].map(|l| (p, Duration::from_secs_f64(secs), l))
    })
    .filter(|(p, _, l)| {
        let name = format!("{} {}", label(*p), if *l == 0 { "idle" } else { "load200" });
        common.wants(&name)
    })
    .collect();
    let go_bin = match build_go() {
        Ok(b) => Some(b),
        Err(note) => {
            report.notes.push(note);
            None
        }
    };
    let have_cyclictest = match find_cyclictest() {
        Ok(()) => true,
        Err(note) => {
            report.notes.push(note);
            false
        }
    };
    // (case, impl) -> samples over runs
    let mut results: Vec<(String, &str, Vec<Sample>)> = Vec::new();
    let mut push = |case: &str, imp: &'static str, s: Sample| match results
        .iter_mut()
        .find(|(c, i, _)| c == case && *i == imp)
    {
        Some((_, _, v)) => v.push(s),
        None => results.push((case.to_owned(), imp, vec![s])),
    };
    let mut setup_notes = Vec::new();
    for k in 0..runs {
        for &(period, run, load) in &cases {
            let case = format!(
                "{} {}",
                label(period),
                if load == 0 {
                    "idle".into()
                } else {
                    format!("load{load}")
                }
            );
            for method in order(k) {
                // Go brings its own burners: goroutines, as in the seed.
                let burners = (load > 0 && method != Method::Go).then(|| Load::start(load));
                let sample = match method {
                    Method::Ours => {
                        let (s, notes) = downbeat(period, run, true);
                        setup_notes.extend(notes);
                        Some(s)
                    }
                    Method::OursNoRt => Some(downbeat(period, run, false).0),
                    Method::Sleep => Some(sleep_loop(period, run)),
                    Method::SpinSleep => Some(absolute(period, run, spin_sleep_wait)),
                    Method::Busy => Some(absolute(period, run, busy_wait)),
                    Method::Cyclictest if have_cyclictest => cyclictest(period, run),
                    Method::Go => go_bin.as_ref().and_then(|bin| go(bin, period, run, load)),
                    Method::Cyclictest => None,
                };
                if let Some(b) = burners {
                    b.stop();
                }
                if let Some(s) = sample {
                    push(&case, method.name(), s);
                }
            }
        }
    }
    if let Some(bin) = &go_bin {
        let _ = std::fs::remove_file(bin);
    }
    setup_notes.sort();
    setup_notes.dedup();
    report.notes.extend(setup_notes);
    for (case, imp, samples) in &results {
        let pick =
            |f: fn(&Sample) -> Option<f64>| -> Vec<f64> { samples.iter().filter_map(f).collect() };
        report.add(&format!("{case} p50"), imp, "µs", &pick(|s| Some(s.p50)));
        report.add(&format!("{case} p99"), imp, "µs", &pick(|s| Some(s.p99)));
        report.add(&format!("{case} p99.9"), imp, "µs", &pick(|s| Some(s.p999)));
        report.add(&format!("{case} max"), imp, "µs", &pick(|s| Some(s.max)));
        let cpu = pick(|s| s.cpu);
        if !cpu.is_empty() {
            report.add(&format!("{case} cpu"), imp, "% core", &cpu);
        }
    }
    let case_names: Vec<String> = {
        let mut v: Vec<String> = results.iter().map(|(c, _, _)| c.clone()).collect();
        v.dedup();
        v
    };
    for case in &case_names {
        let key = format!("p999 {case}").replace(' ', "_");
        let key99 = format!("p99 {case}").replace(' ', "_");
        // Like with like: the rivals run at normal priority, so they face our ticker at
        // normal priority; cyclictest runs at SCHED_FIFO 80, as our ticker does.
        for (ours, rival) in RATIOS {
            report.ratio(&key, &format!("{case} p99.9"), ours, rival, Better::Lower);
            if rival != CYCLICTEST {
                report.ratio(&key99, &format!("{case} p99"), ours, rival, Better::Lower);
            }
        }
        let p999 = report.median(&format!("{case} p99.9"), OURS);
        let sleep = report.median(&format!("{case} p99.9"), SLEEP);
        if let (Some(ours), Some(sleep)) = (p999, sleep) {
            report.notes.push(format!(
                "target {case}: p99.9 {ours:.1} µs (SCHED_FIFO) vs sleep loop {sleep:.1} µs \
                 (normal priority) (<= 1/10: {})",
                if ours * 10.0 <= sleep {
                    "met"
                } else {
                    "missed"
                }
            ));
        }
        if case.contains("load") {
            if let Some(ours) = p999 {
                report.notes.push(format!(
                    "target {case}: p99.9 {ours:.1} µs (<= 50 µs with SCHED_FIFO: {})",
                    if ours <= 50.0 { "met" } else { "missed" }
                ));
            }
        }
        if case.starts_with("16ms") {
            if let Some(cpu) = report.median(&format!("{case} cpu"), OURS) {
                report.notes.push(format!(
                    "target {case}: ticking thread {cpu:.2}% of a core (<= 5%: {})",
                    if cpu <= 5.0 { "met" } else { "missed" }
                ));
            }
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_run_measures_every_method_once_and_the_first_alternates() {
        for k in 0..4 {
            let o = order(k);
            assert_eq!(o.len(), METHODS.len());
            for m in METHODS {
                assert_eq!(o.iter().filter(|&&x| x == m).count(), 1, "run {k}: {m:?}");
            }
        }
        let (even, odd) = (order(0), order(1));
        assert_ne!(
            even[0], odd[0],
            "the same method runs first in two runs in a row"
        );
        // Neighbours swap sides: what ran right after a method now runs right before it.
        let mut reversed = odd.clone();
        reversed.reverse();
        assert_eq!(even, reversed);
        assert_eq!(order(2), even);
    }

    #[test]
    fn ratios_compare_methods_at_the_same_priority() {
        // At normal priority: the rivals and downbeat-nort; at SCHED_FIFO 80: ours and
        // cyclictest.
        let realtime = |name: &str| name == OURS || name == CYCLICTEST;
        for (ours, rival) in RATIOS {
            assert_eq!(realtime(ours), realtime(rival), "{ours} against {rival}");
        }
        // Every rival has its ratio.
        for m in METHODS {
            let name = m.name();
            if name != OURS && name != OURS_NO_RT {
                assert!(RATIOS.iter().any(|&(_, r)| r == name), "{name}");
            }
        }
    }
}
