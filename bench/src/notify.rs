//! The notify suite: the experiment of D. Rowland's "Real-time Trade-offs". A real-time thread runs a simulated audio callback
//! (5.8 ms blocks, 30% load) and triggers an update midway through its work; the callback, on
//! the dispatcher's thread, signals back by storing the time it ran. Measured per delivery
//! strategy and for the talk's baselines:
//!
//! * `poll-1kHz`, `block-phase`, `signal`: Downbeat's `notify` strategies;
//! * `mpsc`: an atomic coalescing flag plus a `std::sync::mpsc` channel whose receiver blocks
//!   (what `juce::AsyncUpdater` does: flag, then post to a queue that wakes the message thread);
//! * `timer-25Hz`, `timer-5ms`: an atomic flag polled by a sleeping timer thread (the talk's
//!   `Timer` and `HighResolutionTimer` dispatchers);
//! * `waitable-event`: flag plus a mutex/condvar event signalled on every trigger.
//!
//! Round trip: from the start of `trigger()` to the callback's store, read back by the audio
//! thread at its next block (the audio thread never waits). Trigger cost: the call's duration on
//! the audio thread, less the clock's own cost (it includes the cache misses of touching lines the
//! dispatcher wrote); "back-to-back" is the mean of 100,000 triggers in a row on one thread.
//! Syscalls: counted by the guard's seccomp tracer
//! in a separate, shorter pass of the same loop (its traps would skew the latency figures).
//! Dispatcher CPU: the dispatcher thread's CPU time over the run's wall time.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use downbeat_rt::clock::{now_ns, thread_cpu_time, LatePolicy, Spin, Ticker, TickerOptions};
use downbeat_rt::guard::{self, Allow, Options};
use downbeat_rt::notify::{BlockClock, Dispatcher, Strategy};

use crate::report::{quantile, Better, Report};
use crate::Common;

/// 256 frames at 44.1 kHz.
const BLOCK: Duration = Duration::from_nanos(5_804_989);
const LOAD: f64 = 0.3;
const IMPLS: [&str; 7] = [
    "block-phase",
    "poll-1kHz",
    "signal",
    "mpsc",
    "waitable-event",
    "timer-5ms",
    "timer-25Hz",
];

type TriggerFn = Arc<dyn Fn() + Send + Sync>;

/// A running dispatcher of one kind, and how to trigger it.
struct Running {
    trigger: TriggerFn,
    clock: Option<BlockClock>,
    delivered_at: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    /// Joins the dispatcher; gives its CPU share in percent.
    join: thread::JoinHandle<f64>,
}

fn spawn_dispatcher(
    body: impl FnOnce(&AtomicBool) + Send + 'static,
) -> (Arc<AtomicBool>, thread::JoinHandle<f64>) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let join = thread::spawn(move || {
        let cpu0 = thread_cpu_time();
        let t0 = now_ns();
        body(&flag);
        (thread_cpu_time() - cpu0).as_secs_f64() * 1e9 / (now_ns() - t0) as f64 * 100.0
    });
    (stop, join)
}

fn start(name: &str) -> Running {
    let delivered_at = Arc::new(AtomicU64::new(0));
    let signal_back = {
        let d = Arc::clone(&delivered_at);
        move || d.store(now_ns(), Ordering::Release)
    };
    match name {
        "block-phase" | "poll-1kHz" | "signal" => {
            let clock = BlockClock::new(BLOCK);
            let strategy = match name {
                "block-phase" => Strategy::BlockPhase {
                    clock: clock.clone(),
                    delay: Duration::from_micros(30),
                },
                "poll-1kHz" => Strategy::Poll {
                    period: Duration::from_millis(1),
                },
                _ => Strategy::Signal,
            };
            let (tx, rx) = mpsc::channel();
            let (stop, join) = spawn_dispatcher(move |stop| {
                let mut d = Dispatcher::new(strategy, 1);
                let n = d.register(signal_back).expect("capacity 1");
                tx.send(n).expect("bench thread waits");
                d.run_until(stop);
            });
            let n = rx.recv().expect("dispatcher started");
            Running {
                trigger: Arc::new(move || n.trigger()),
                clock: (name == "block-phase").then_some(clock),
                delivered_at,
                stop,
                join,
            }
        }
        "mpsc" => {
            let pending = Arc::new(AtomicBool::new(false));
            let (tx, rx) = mpsc::channel::<()>();
            let p = Arc::clone(&pending);
            let (stop, join) = spawn_dispatcher(move |stop| {
                while !stop.load(Ordering::Acquire) {
                    if rx.recv_timeout(Duration::from_millis(50)).is_ok() {
                        p.store(false, Ordering::Release);
                        signal_back();
                    }
                }
            });
            Running {
                trigger: Arc::new(move || {
                    if !pending.swap(true, Ordering::AcqRel) {
                        let _ = tx.send(());
                    }
                }),
                clock: None,
                delivered_at,
                stop,
                join,
            }
        }
        "waitable-event" => {
            let pending = Arc::new(AtomicBool::new(false));
            let event = Arc::new((Mutex::new(false), Condvar::new()));
            let (p, e) = (Arc::clone(&pending), Arc::clone(&event));
            let (stop, join) = spawn_dispatcher(move |stop| {
                while !stop.load(Ordering::Acquire) {
                    let (lock, cv) = &*e;
                    let mut set = lock.lock().unwrap();
                    if !*set {
                        set = cv.wait_timeout(set, Duration::from_millis(50)).unwrap().0;
                    }
                    *set = false;
                    drop(set);
                    if p.swap(false, Ordering::AcqRel) {
                        signal_back();
                    }
                }
            });
            Running {
                trigger: Arc::new(move || {
                    pending.store(true, Ordering::Release);
                    let (lock, cv) = &*event;
                    *lock.lock().unwrap() = true;
                    cv.notify_one();
                }),
                clock: None,
                delivered_at,
                stop,
                join,
            }
        }
        timer => {
            let period = if timer == "timer-5ms" {
                Duration::from_millis(5)
            } else {
                Duration::from_millis(40)
            };
            let pending = Arc::new(AtomicBool::new(false));
            let p = Arc::clone(&pending);
            let (stop, join) = spawn_dispatcher(move |stop| {
                while !stop.load(Ordering::Acquire) {
                    thread::sleep(period);
                    if p.swap(false, Ordering::AcqRel) {
                        signal_back();
                    }
                }
            });
            Running {
                trigger: Arc::new(move || pending.store(true, Ordering::Release)),
                clock: None,
                delivered_at,
                stop,
                join,
            }
        }
    }
}

/// What one pass of the audio loop measured, in ns.
struct Trips {
    round_trips: Vec<u64>,
    trigger_ns: Vec<u64>,
}

/// The simulated audio thread: `blocks` callbacks at most, stopping after `want` round trips.
/// Allocates nothing inside the loop (the vectors come preallocated).
fn audio_loop(r: &Running, ticker: &mut Ticker, want: usize, mut trips: Trips) -> Trips {
    let work = (BLOCK.as_nanos() as f64 * LOAD) as u64;
    let max_blocks = want * 20 + 100;
    let mut outstanding: Option<u64> = None;
    for _ in 0..max_blocks {
        if trips.round_trips.len() >= want {
            break;
        }
        ticker.wait();
        let start = now_ns();
        if let Some(t) = outstanding {
            let at = r.delivered_at.load(Ordering::Acquire);
            if at != 0 {
                trips.round_trips.push(at.saturating_sub(t));
                outstanding = None;
            }
        }
        while now_ns() < start + work / 2 {
            std::hint::spin_loop();
        }
        if outstanding.is_none() {
            r.delivered_at.store(0, Ordering::Release);
            let t0 = now_ns();
            (r.trigger)();
            let t1 = now_ns();
            trips.trigger_ns.push(t1 - t0);
            outstanding = Some(t0);
        }
        while now_ns() < start + work {
            std::hint::spin_loop();
        }
        if let Some(c) = &r.clock {
            c.block_ended();
        }
    }
    trips
}

fn stop(r: Running) -> f64 {
    r.stop.store(true, Ordering::Release);
    // Nudge the blocking dispatchers so they notice the stop at once.
    (r.trigger)();
    r.join.join().expect("dispatcher thread")
}

/// How long `now_ns()` itself takes, to take out of the trigger timings.
fn clock_cost() -> u64 {
    let mut v: Vec<u64> = (0..10_001)
        .map(|_| {
            let a = now_ns();
            now_ns() - a
        })
        .collect();
    v.sort_unstable();
    v[v.len() / 2]
}

/// Syscalls per trigger on the audio thread, counted by the guard on a shorter pass.
fn syscalls_per_trigger(name: &str, want: usize) -> (f64, Option<String>) {
    let r = start(name);
    let nanosleep = guard::syscall_number("clock_nanosleep").unwrap_or(-1);
    let trips = Trips {
        round_trips: Vec::with_capacity(want + 1),
        trigger_ns: Vec::with_capacity(want * 20 + 101),
    };
    let options = Options::new()
        .allow(Allow::Syscall(nanosleep))
        .backtraces(false);
    let (trips, report) = guard::check_with(&options, || {
        let mut ticker = Ticker::with_options(
            BLOCK,
            &TickerOptions {
                spin: Spin::Fixed(Duration::from_micros(100)),
                late: LatePolicy::Skip,
                ..TickerOptions::plain()
            },
        );
        audio_loop(&r, &mut ticker, want, trips)
    });
    stop(r);
    if let Err(why) = &report.syscall_tracking {
        return (f64::NAN, Some(format!("syscalls not counted ({why})")));
    }
    let calls: u64 = report.syscalls.iter().map(|s| s.count).sum::<u64>() + report.other_syscalls;
    let triggers = trips.trigger_ns.len().max(1);
    let kinds: Vec<String> = report
        .syscalls
        .iter()
        .map(|s| format!("{} x{}", s.name, s.count))
        .collect();
    let note = (!kinds.is_empty()).then(|| {
        format!(
            "{name}: syscalls on the audio thread over {triggers} triggers: {}",
            kinds.join(", ")
        )
    });
    (calls as f64 / triggers as f64, note)
}

pub fn run(common: &Common) -> Report {
    let mut report = Report::new("notify");
    let runs = common.runs.unwrap_or(1).max(1);
    let wanted = |name: &str| -> usize {
        match (common.quick, name) {
            (true, "timer-25Hz") => 5,
            (true, _) => 30,
            (false, "timer-25Hz") => 300,
            (false, "timer-5ms") => 2_000,
            (false, _) => 10_000,
        }
    };
    let clock = clock_cost();
    let mut rt_notes = Vec::new();
    let impls: Vec<&str> = IMPLS.into_iter().filter(|i| common.wants(i)).collect();
    let mut rows: Vec<(&str, [Vec<f64>; 8])> =
        impls.iter().map(|&i| (i, Default::default())).collect();
    for _ in 0..runs {
        for (name, cols) in rows.iter_mut() {
            let want = wanted(name);
            let r = start(name);
            let trips = Trips {
                round_trips: Vec::with_capacity(want + 1),
                trigger_ns: Vec::with_capacity(want * 20 + 101),
            };
            let trips = thread::scope(|s| {
                s.spawn(|| {
                    let mut ticker = Ticker::with_options(
                        BLOCK,
                        &TickerOptions {
                            late: LatePolicy::Skip,
                            ..TickerOptions::default()
                        },
                    );
                    rt_notes.extend(ticker.setup().notes());
                    audio_loop(&r, &mut ticker, want, trips)
                })
                .join()
                .expect("audio thread")
            });
            // Back to back on one thread, the state's cache line staying local: the floor of
            // the trigger's cost, where the in-loop figure includes cross-core cache misses.
            let n = if common.quick { 1_000 } else { 100_000 };
            let t0 = now_ns();
            for _ in 0..n {
                (r.trigger)();
            }
            cols[7].push((now_ns() - t0) as f64 / n as f64);
            let cpu = stop(r);
            let mut rt: Vec<f64> = trips.round_trips.iter().map(|&n| n as f64 / 1e3).collect();
            rt.sort_by(f64::total_cmp);
            let mut trig: Vec<f64> = trips
                .trigger_ns
                .iter()
                .map(|&n| n.saturating_sub(clock) as f64)
                .collect();
            trig.sort_by(f64::total_cmp);
            let avg = rt.iter().sum::<f64>() / rt.len().max(1) as f64;
            cols[0].push(avg);
            cols[1].push(quantile(&rt, 0.5));
            cols[2].push(rt.first().copied().unwrap_or(f64::NAN));
            cols[3].push(rt.last().copied().unwrap_or(f64::NAN));
            cols[4].push(quantile(&trig, 0.5));
            cols[5].push(cpu);
            if rt.len() < want {
                report.notes.push(format!(
                    "{name}: only {} of {want} round trips completed",
                    rt.len()
                ));
            }
        }
    }
    for (name, cols) in rows.iter_mut() {
        let census = if common.quick { 10 } else { 100 };
        let (per, note) =
            syscalls_per_trigger(name, if *name == "timer-25Hz" { 5 } else { census });
        cols[6].push(per);
        report.notes.extend(note);
    }
    let metrics = [
        ("round trip avg", "µs"),
        ("round trip p50", "µs"),
        ("round trip min", "µs"),
        ("round trip max", "µs"),
        ("trigger p50", "ns"),
        ("dispatcher cpu", "% core"),
        ("syscalls per trigger", "calls"),
        ("trigger back-to-back", "ns"),
    ];
    for (name, cols) in &rows {
        for ((metric, unit), samples) in metrics.iter().zip(cols.iter()) {
            report.add(metric, name, unit, samples);
        }
    }
    for rival in [
        "mpsc",
        "waitable-event",
        "timer-5ms",
        "timer-25Hz",
        "poll-1kHz",
        "signal",
    ] {
        report.ratio(
            "rt_p50_block-phase",
            "round trip p50",
            "block-phase",
            rival,
            Better::Lower,
        );
    }
    rt_notes.sort();
    rt_notes.dedup();
    report
        .notes
        .extend(rt_notes.into_iter().map(|n| format!("audio thread: {n}")));
    report.notes.push(format!(
        "round trips: {} per strategy, {} for timer-5ms, {} for timer-25Hz (slow timers: fewer, to keep the run short)",
        wanted("signal"),
        wanted("timer-5ms"),
        wanted("timer-25Hz")
    ));
    let block_us = BLOCK.as_secs_f64() * 1e6;
    let med = |m: &str, i: &str| report.median(m, i);
    let mut targets = Vec::new();
    if let (Some(p50), Some(sys), Some(cpu)) = (
        med("round trip p50", "block-phase"),
        med("syscalls per trigger", "block-phase"),
        med("dispatcher cpu", "block-phase"),
    ) {
        targets.push(format!(
            "target block-phase: p50 {p50:.0} µs <= {:.0} µs (1/4 block): {}; syscalls per trigger {sys}: {}; dispatcher {cpu:.2}% <= 1%: {}",
            block_us / 4.0,
            if p50 <= block_us / 4.0 { "met" } else { "missed" },
            if sys == 0.0 { "met" } else { "missed" },
            if cpu <= 1.0 { "met" } else { "missed" },
        ));
    }
    if let Some(p50) = med("round trip p50", "poll-1kHz") {
        targets.push(format!(
            "target poll-1kHz: p50 {p50:.0} µs <= 1000 µs: {}",
            if p50 <= 1000.0 { "met" } else { "missed" }
        ));
    }
    report.notes.extend(targets);
    report
}
