//! Instruction-count driver for `bench ring` (issue 26): runs the work of one single-element
//! case through `downbeat-ring` or rtrb on ONE thread, without timing, so that
//! `valgrind --tool=callgrind` (deterministic, where this VM has no hardware counters) can count
//! instructions per operation. Usage:
//!
//! ```text
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.db \
//!     target/release/ring-count downbeat contended 1000000
//! callgrind_annotate --inclusive=yes /tmp/cg.db | grep 'ring_count::'
//! ```
//!
//! Cases, each with the threaded case's capacity:
//! * `uncontended`: fill a ring of 65,536 and drain it, `n` items in all;
//! * `contended`: fill a ring of 4 and drain it, `n` items in all, so every fourth push and pop
//!   finds its cached index stale and re-reads the other side's, as they do when the two
//!   threads meet on every cache line;
//! * `roundtrip`: `n` times push on one ring of 64, pop it, push on a second, pop that.
//!
//! Each case runs in a function of its own (`ring_count::<lib>_<case>`), which takes the two ends
//! by value and drops them, as the threaded cases' closures do: whether an end's fields live in
//! registers depends on that. Instructions per item are that function's inclusive count divided
//! by `n` (by `n` trips for the round trip).

use std::hint::black_box;
use std::process::ExitCode;

const UNCONTENDED_CAPACITY: usize = 1 << 16;
const CONTENDED_CAPACITY: usize = 4;
const ROUND_TRIP_CAPACITY: usize = 64;

macro_rules! cases {
    ($lib:ident, $new:expr, $push:expr, $pop:expr) => {
        mod $lib {
            use super::*;

            #[inline(never)]
            pub fn fill_drain(capacity: usize, n: u64) -> u64 {
                let (mut tx, mut rx) = $new(capacity);
                let mut sum = 0u64;
                let mut i = 0u64;
                while i < n {
                    let batch = (capacity as u64).min(n - i);
                    for k in 0..batch {
                        assert!($push(&mut tx, black_box(i + k)), "push {} failed", i + k);
                    }
                    for _ in 0..batch {
                        sum = sum.wrapping_add($pop(&mut rx).expect("pop failed"));
                    }
                    i += batch;
                }
                sum
            }

            #[inline(never)]
            pub fn roundtrip(trips: u64) -> u64 {
                let (mut ping_tx, mut ping_rx) = $new(ROUND_TRIP_CAPACITY);
                let (mut pong_tx, mut pong_rx) = $new(ROUND_TRIP_CAPACITY);
                let mut sum = 0u64;
                for i in 0..trips {
                    assert!($push(&mut ping_tx, black_box(i)));
                    let v = $pop(&mut ping_rx).expect("ping lost");
                    assert!($push(&mut pong_tx, v));
                    sum = sum.wrapping_add($pop(&mut pong_rx).expect("pong lost"));
                }
                sum
            }
        }
    };
}

cases!(
    downbeat,
    downbeat_ring::RingBuffer::<u64>::new,
    |tx: &mut downbeat_ring::Producer<u64>, v| tx.push(v).is_ok(),
    |rx: &mut downbeat_ring::Consumer<u64>| rx.pop()
);
cases!(
    rtrb,
    ::rtrb::RingBuffer::<u64>::new,
    |tx: &mut ::rtrb::Producer<u64>, v| tx.push(v).is_ok(),
    |rx: &mut ::rtrb::Consumer<u64>| rx.pop().ok()
);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: ring-count downbeat|rtrb uncontended|contended|roundtrip N";
    let [lib, case, n] = &args[..] else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    let Ok(n) = n.parse::<u64>() else {
        eprintln!("ring-count: N `{n}` is not a count\n{usage}");
        return ExitCode::from(2);
    };
    let sum = match (lib.as_str(), case.as_str()) {
        ("downbeat", "uncontended") => downbeat::fill_drain(UNCONTENDED_CAPACITY, n),
        ("downbeat", "contended") => downbeat::fill_drain(CONTENDED_CAPACITY, n),
        ("downbeat", "roundtrip") => downbeat::roundtrip(n),
        ("rtrb", "uncontended") => rtrb::fill_drain(UNCONTENDED_CAPACITY, n),
        ("rtrb", "contended") => rtrb::fill_drain(CONTENDED_CAPACITY, n),
        ("rtrb", "roundtrip") => rtrb::roundtrip(n),
        _ => {
            eprintln!("ring-count: unknown library or case `{lib} {case}`\n{usage}");
            return ExitCode::from(2);
        }
    };
    let expected = n.wrapping_mul(n.wrapping_sub(1)) / 2;
    if sum != expected {
        eprintln!("ring-count: values lost or duplicated (sum {sum}, expected {expected})");
        return ExitCode::FAILURE;
    }
    println!("{lib} {case} {n}: ok");
    ExitCode::SUCCESS
}
