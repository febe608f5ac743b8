//! `downbeat-bench ring`'s child for the machine's limits, in the same harness as the rings:
//! the round trip of one atomic ping-ponged between the two pinned cores (no ring can
//! hand an item over and back faster), and a same-core `memcpy` of the bulk cases' bytes
//! (no ring can move blocks faster).

use std::hint::black_box;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

#[path = "../ring_child/common.rs"]
mod common;

use common::{print_round_trips, two_threads, value};

/// Samples in the two bulk cases' blocks (as in the rings' harness).
const BLOCK: usize = 1024;
const BLOCK_480: usize = 960;

/// One atomic on a line of its own.
#[repr(align(128))]
struct Line(AtomicU64);

/// Per-trip times (ns) of `trips` round trips of one atomic: the initiator (CPU 1) writes
/// an odd number, the responder (CPU 0) answers with the next even one. The timing and the
/// thread roles are those of the rings' round trip.
fn ping_pong(trips: usize) -> Vec<f64> {
    let line = Arc::new(Line(AtomicU64::new(0)));
    let responder = line.clone();
    let (samples, _) = two_threads(
        move || {
            for i in 0..trips as u64 {
                while responder.0.load(Ordering::Acquire) != 2 * i + 1 {}
                responder.0.store(2 * i + 2, Ordering::Release);
            }
        },
        move || {
            let mut samples = Vec::with_capacity(trips);
            for i in 0..trips as u64 {
                let t0 = Instant::now();
                line.0.store(2 * i + 1, Ordering::Release);
                while line.0.load(Ordering::Acquire) != 2 * i + 2 {}
                samples.push(t0.elapsed().as_nanos() as f64);
            }
            samples
        },
    );
    samples
}

/// GB/s copying `blocks` blocks of `N` samples on one core.
fn memcpy<const N: usize>(blocks: u64) -> f64 {
    let src = [0.25f32; N];
    let mut dst = [0f32; N];
    let t0 = Instant::now();
    for _ in 0..blocks {
        dst.copy_from_slice(black_box(&src));
        black_box(&mut dst);
    }
    (blocks * (N * 4) as u64) as f64 / t0.elapsed().as_secs_f64() / 1e9
}

fn main() -> ExitCode {
    common::main("ring-floor", |case, size| {
        match case {
            "roundtrip" => print_round_trips(ping_pong(size as usize)),
            "bulk" => value(case, memcpy::<BLOCK>(size)),
            "bulk_480" => value(case, memcpy::<BLOCK_480>(size)),
            // Single-element throughput has no meaningful floor of this kind.
            "uncontended" | "contended" => {}
            _ => return false,
        }
        true
    })
}
