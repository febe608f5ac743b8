//! The meter behind `downbeat jitter`: a cyclictest-like meter for the [`Ticker`], as in "soft realtime ticker on Linux".
//!
//! A dedicated thread ticks at the period (real-time priority when allowed, adaptive
//! sleep-then-spin, late deadlines skipped and counted) and records every tick's lateness in a
//! 1 µs histogram. The main thread prints each new maximum as it happens ("new record"), and
//! at the end the quantiles, the histogram and the CPU the ticking thread used. `--load K`
//! starts K threads that sleep 1 ms in a loop, like the burner goroutines of "soft realtime ticker on Linux".

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use downbeat_cli::Failure;
use downbeat_rt::clock::{
    thread_cpu_time, Histogram, LatePolicy, Outcome, Policy, Realtime, Spin, Ticker, TickerOptions,
};
use serde::Serialize;

/// What the user asked for.
pub(crate) struct Settings {
    pub(crate) period: Duration,
    pub(crate) seconds: f64,
    pub(crate) load: usize,
    pub(crate) no_rt: bool,
    pub(crate) spin: SpinMode,
    pub(crate) pin: Option<usize>,
    pub(crate) json: bool,
}

/// `--spin`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SpinMode {
    /// Learn the margin from observed wake-up lateness (default).
    Adaptive,
    /// Sleep all the way: what a plain absolute-deadline loop gets.
    Off,
}

/// The result, as printed with `--json`.
#[derive(Serialize)]
pub(crate) struct Summary {
    pub(crate) period_us: f64,
    pub(crate) seconds: f64,
    pub(crate) load_threads: usize,
    pub(crate) realtime: String,
    pub(crate) notes: Vec<String>,
    pub(crate) ticks: u64,
    pub(crate) skipped: u64,
    /// Ticks later than a tenth of the period.
    pub(crate) late: u64,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) p999_us: f64,
    pub(crate) max_us: f64,
    pub(crate) mean_us: f64,
    pub(crate) spin_margin_us: f64,
    /// CPU used by the ticking thread, in percent of one core.
    pub(crate) cpu_percent: f64,
    /// Non-empty 1 µs bins: `[lower edge in µs, count]`.
    pub(crate) histogram: Vec<(u64, u64)>,
    /// Ticks beyond the histogram's range (they still count in max and the quantiles' ranks).
    pub(crate) overflow: u64,
}

struct Measured {
    hist: Histogram,
    skipped: u64,
    late: u64,
    margin: Duration,
    cpu: Duration,
    wall: Duration,
    realtime: String,
    notes: Vec<String>,
}

/// Runs the meter. Prints "new record" lines to stdout as they happen unless `--json`.
pub(crate) fn run(args: &Settings) -> Result<Summary, Failure> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut burners = Vec::with_capacity(args.load);
    for i in 0..args.load {
        let flag = Arc::clone(&stop);
        let spawned = std::thread::Builder::new()
            .name(format!("jitter-load-{i}"))
            .stack_size(64 * 1024)
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            });
        match spawned {
            Ok(h) => burners.push(h),
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                return Err(Failure::Runtime(format!(
                    "cannot start load thread {i}: {e}"
                )));
            }
        }
    }
    let result = measure(args);
    stop.store(true, Ordering::Relaxed);
    for b in burners {
        let _ = b.join();
    }
    let m = result?;
    let us = |d: Duration| (d.as_secs_f64() * 1e7).round() / 10.0;
    Ok(Summary {
        period_us: us(args.period),
        seconds: args.seconds,
        load_threads: args.load,
        realtime: m.realtime,
        notes: m.notes,
        ticks: m.hist.count(),
        skipped: m.skipped,
        late: m.late,
        p50_us: us(m.hist.quantile(0.5)),
        p99_us: us(m.hist.quantile(0.99)),
        p999_us: us(m.hist.quantile(0.999)),
        max_us: us(m.hist.max()),
        mean_us: us(m.hist.mean()),
        spin_margin_us: us(m.margin),
        cpu_percent: (m.cpu.as_secs_f64() / m.wall.as_secs_f64().max(1e-9) * 1000.0).round() / 10.0,
        histogram: m.hist.bins().collect(),
        overflow: m.hist.overflow(),
    })
}

fn measure(args: &Settings) -> Result<Measured, Failure> {
    let options = TickerOptions {
        realtime: (!args.no_rt).then_some(Realtime {
            policy: Policy::Fifo,
            priority: 80,
        }),
        pin_core: args.pin,
        timer_slack: Some(Duration::from_nanos(1)),
        spin: match args.spin {
            SpinMode::Adaptive => Spin::default(),
            SpinMode::Off => Spin::Off,
        },
        late: LatePolicy::Skip,
    };
    let max_ns = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&max_ns);
    let period = args.period;
    let run_for = Duration::from_secs_f64(args.seconds);
    let ticking = std::thread::Builder::new()
        .name("downbeat-jitter".into())
        .spawn(move || {
            let range = (period * 4).max(Duration::from_millis(20));
            let mut hist = Histogram::new(range);
            let mut ticker = Ticker::with_options(period, &options);
            let setup = ticker.setup().clone();
            let started = Instant::now();
            let cpu0 = thread_cpu_time();
            let mut skipped = 0;
            while started.elapsed() < run_for {
                let tick = ticker.wait();
                hist.record(tick.lateness);
                skipped += tick.skipped;
                let ns = tick.lateness.as_nanos() as u64;
                if ns > seen.load(Ordering::Relaxed) {
                    seen.store(ns, Ordering::Relaxed);
                }
            }
            let cpu = thread_cpu_time() - cpu0;
            let wall = started.elapsed();
            Measured {
                hist,
                skipped,
                late: ticker.stats().late,
                margin: ticker.spin_margin(),
                cpu,
                wall,
                notes: setup.notes(),
                realtime: match setup.realtime {
                    Outcome::NotRequested => "ordinary thread (--no-rt)".into(),
                    other => other.to_string(),
                },
            }
        })
        .map_err(|e| Failure::Runtime(format!("cannot start the ticking thread: {e}")))?;
    let started = Instant::now();
    let mut shown = 0;
    let mut running = true;
    while running {
        // One more look after the thread ends, so a record set at the very end is shown too.
        running = !ticking.is_finished();
        std::thread::sleep(Duration::from_millis(20));
        let now = max_ns.load(Ordering::Relaxed);
        if now > shown {
            shown = now;
            if !args.json {
                println!(
                    "new record: {:>10.2} µs late   (at {:.2} s)",
                    now as f64 / 1e3,
                    started.elapsed().as_secs_f64()
                );
            }
        }
    }
    ticking
        .join()
        .map_err(|_| Failure::Runtime("the ticking thread panicked".into()))
}

/// The text report (everything but the live "new record" lines).
pub(crate) fn render(s: &Summary, spin: SpinMode) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "ticks {}  skipped {}  late (> period/10) {}",
        s.ticks, s.skipped, s.late
    );
    let _ = writeln!(
        out,
        "lateness  P50 {:.1} µs  P99 {:.1} µs  P99.9 {:.1} µs  max {:.1} µs  mean {:.1} µs",
        s.p50_us, s.p99_us, s.p999_us, s.max_us, s.mean_us
    );
    let _ = writeln!(
        out,
        "spin {} (margin {:.1} µs); ticking thread used {:.1}% of a core",
        match spin {
            SpinMode::Adaptive => "adaptive",
            SpinMode::Off => "off",
        },
        s.spin_margin_us,
        s.cpu_percent
    );
    let _ = writeln!(out, "histogram (lateness: ticks):");
    let edges: [u64; 13] = [
        1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000,
    ];
    let mut counts = [0u64; 14];
    for (us, n) in &s.histogram {
        let k = edges.iter().position(|&e| *us < e).unwrap_or(edges.len());
        counts[k] += n;
    }
    counts[13] += s.overflow;
    let total = s.ticks.max(1) as f64;
    for (k, &n) in counts.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let lo = if k == 0 { 0 } else { edges[k - 1] };
        let label = match edges.get(k) {
            Some(hi) => format!("{}-{} µs", fmt_us(lo), fmt_us(*hi)),
            None => format!(">= {} µs", fmt_us(lo)),
        };
        let bar = "#".repeat(((n as f64 / total) * 40.0).ceil() as usize);
        let _ = writeln!(out, "  {label:>16} {n:>9}  {bar}");
    }
    out
}

fn fmt_us(us: u64) -> String {
    if us >= 1000 {
        format!("{}k", us / 1000)
    } else {
        us.to_string()
    }
}
