//! What every ring child shares: its command line, its output lines, and the two pinned
//! threads every case runs on.
//!
//! `downbeat-bench ring` starts one child binary per library (see `bench/src/ring.rs`), so
//! that each library's loops are compiled and placed in a binary that links no other ring.
//! A child is told which cases to run and how large they are, as `case=size` arguments, and
//! answers with one line per figure, `value CASE NUMBER`, or `note TEXT`.

use std::process::ExitCode;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

/// The cases a child was asked to run, with their sizes, in the order given.
pub struct Request(pub Vec<(String, u64)>);

impl Request {
    /// Parses `case=size` arguments; `Err` names the bad argument and why.
    pub fn parse(args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut cases = Vec::new();
        for arg in args {
            let (case, size) = arg
                .split_once('=')
                .ok_or_else(|| format!("argument `{arg}`: expected CASE=SIZE"))?;
            let size: u64 = size
                .parse()
                .map_err(|e| format!("argument `{arg}`: size is not a count ({e})"))?;
            if size == 0 {
                return Err(format!("argument `{arg}`: size must be at least 1"));
            }
            cases.push((case.to_owned(), size));
        }
        Ok(Self(cases))
    }
}

/// Runs a child: parses the arguments, pins a probe thread to see whether pinning works,
/// and hands every requested case to `run_case`, which prints its figures with [`value`]
/// and returns `false` for a case it does not know.
pub fn main(library: &str, mut run_case: impl FnMut(&str, u64) -> bool) -> ExitCode {
    let request = match Request::parse(std::env::args().skip(1)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{library}: {e}");
            return ExitCode::from(2);
        }
    };
    let pinned = thread::spawn(|| pin(0) && pin(1)).join().unwrap_or(false);
    if !pinned {
        println!("note threads could not be pinned; they run where the OS puts them");
    }
    for (case, size) in &request.0 {
        if !run_case(case, *size) {
            eprintln!("{library}: unknown case `{case}`");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}

/// Prints one figure for the parent.
pub fn value(case: &str, number: f64) {
    println!("value {case} {number}");
}

/// Runs `producer` and `consumer` on two threads pinned to CPUs 0 and 1, released together;
/// returns the consumer's result and the time from the producer's release until the
/// consumer finished. Both ends are read on the measuring threads themselves: a clock read
/// by a third thread could be late by however long that thread waited for a core.
pub fn two_threads<P, C, R>(producer: P, consumer: C) -> (R, Duration)
where
    P: FnOnce() + Send + 'static,
    C: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let start = Arc::new(Barrier::new(2));
    let s2 = start.clone();
    let p = thread::spawn(move || {
        pin(0);
        start.wait();
        let t0 = Instant::now();
        producer();
        t0
    });
    let c = thread::spawn(move || {
        pin(1);
        s2.wait();
        let r = consumer();
        (r, Instant::now())
    });
    let t0 = p.join().expect("producer panicked");
    let (r, t1) = c.join().expect("consumer panicked");
    (r, t1.saturating_duration_since(t0))
}

/// The `q` quantile (0..=1) of already sorted values, nearest rank.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Prints the median and 99th percentile of per-trip times, as `roundtrip` and
/// `roundtrip_p99`.
pub fn print_round_trips(mut samples: Vec<f64>) {
    samples.sort_by(f64::total_cmp);
    value("roundtrip", quantile(&samples, 0.5));
    value("roundtrip_p99", quantile(&samples, 0.99));
}

/// Pins the calling thread to `cpu`; `false` (and no harm done) where that is not possible.
fn pin(cpu: usize) -> bool {
    downbeat_rt::pool::pin_current_thread(cpu).is_ok()
}
