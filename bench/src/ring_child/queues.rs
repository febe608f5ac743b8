//! The loops that drive a ring, written once for every library: each child binary
//! implements [`Queue`] and [`Bulk`] for its own library and calls [`run_case`].
//!
//! Every loop retries without a `PAUSE`: under KVM a `PAUSE` loop can exit to the hypervisor,
//! and rtrb's and rigtorp's own benchmarks spin the same way. Every case checks what arrived,
//! so a fast wrong answer fails the run.

use std::hint::black_box;

use crate::common::{print_round_trips, two_threads, value};

/// One interleaved stereo block of 512 frames: the aligned bulk case.
pub const BLOCK: usize = 1024;
/// The aligned bulk case's ring: 8 blocks.
pub const BULK_RING: usize = 8 * BLOCK;
/// 480 stereo frames (10 ms at 48 kHz): the bulk case whose block is not a power of two.
pub const BLOCK_480: usize = 960;
/// Its ring, 3000 samples: not a multiple of the block, so blocks start at every multiple of
/// 120 samples (480 bytes, 7.5 cache lines) and a third of them wrap.
pub const BULK_480_RING: usize = 3000;
/// The single-element cases' queues.
pub const UNCONTENDED_CAPACITY: usize = 1 << 16;
/// Small enough that producer and consumer meet on every cache line.
pub const CONTENDED_CAPACITY: usize = 4;
/// Each of the two queues of the round trip.
pub const ROUND_TRIP_CAPACITY: usize = 64;

/// Single-element operations, as each library spells them.
pub trait Queue {
    /// The producer's handle.
    type Tx: Send + 'static;
    /// The consumer's handle.
    type Rx: Send + 'static;
    /// A queue holding at least `capacity` items.
    fn new(capacity: usize) -> (Self::Tx, Self::Rx);
    /// Pushes `value` if there is room.
    fn push(tx: &mut Self::Tx, value: u64) -> bool;
    /// Pops one item if there is one.
    fn pop(rx: &mut Self::Rx) -> Option<u64>;
}

/// Whole-block transfers of `N` samples through each library's fastest bulk API.
pub trait Bulk<const N: usize> {
    /// The producer's handle.
    type Tx: Send + 'static;
    /// The consumer's handle.
    type Rx: Send + 'static;
    /// A ring of `capacity` samples (or the nearest the library can express).
    fn new(capacity: usize) -> (Self::Tx, Self::Rx);
    /// Copies `block` in if there is room for all of it.
    fn write(tx: &mut Self::Tx, block: &[f32; N]) -> bool;
    /// Copies a whole block out if one is there.
    fn read(rx: &mut Self::Rx, block: &mut [f32; N]) -> bool;
}

/// Runs one case for library `L` and prints its figures; `false` if `case` is unknown.
pub fn run_case<L>(case: &str, size: u64) -> bool
where
    L: Queue + Bulk<BLOCK> + Bulk<BLOCK_480>,
{
    match case {
        "uncontended" => value(case, throughput::<L>(UNCONTENDED_CAPACITY, size)),
        "contended" => value(case, throughput::<L>(CONTENDED_CAPACITY, size)),
        "bulk" => value(case, bulk::<L, BLOCK>(BULK_RING, size)),
        "bulk_480" => value(case, bulk::<L, BLOCK_480>(BULK_480_RING, size)),
        "roundtrip" => print_round_trips(round_trip::<L>(size as usize)),
        _ => return false,
    }
    true
}

/// Items per second (millions) for `items` single-element transfers.
fn throughput<Q: Queue>(capacity: usize, items: u64) -> f64 {
    let (mut tx, mut rx) = Q::new(capacity);
    let (sum, elapsed) = two_threads(
        move || {
            for i in 0..items {
                while !Q::push(&mut tx, i) {}
            }
        },
        move || {
            let mut sum = 0u64;
            for _ in 0..items {
                loop {
                    if let Some(v) = Q::pop(&mut rx) {
                        sum = sum.wrapping_add(v);
                        break;
                    }
                }
            }
            sum
        },
    );
    assert_eq!(sum, items * (items - 1) / 2, "values lost or duplicated");
    items as f64 / elapsed.as_secs_f64() / 1e6
}

/// A block on a cache line of its own: where each binary's stack frame happened to put the
/// blocks moved every library's copies by a few percent, since a copy's speed depends on how
/// source and destination sit in their lines.
#[repr(C, align(64))]
struct Aligned<const N: usize>([f32; N]);

/// GB/s moving `blocks` blocks of `N` samples through a ring of `capacity` samples.
fn bulk<B: Bulk<N>, const N: usize>(capacity: usize, blocks: u64) -> f64 {
    assert!(blocks < 1 << 24, "block numbers must be exact in f32");
    let (mut tx, mut rx) = B::new(capacity);
    let (count, elapsed) = two_threads(
        move || {
            let mut block = Aligned([0.25f32; N]);
            for i in 0..blocks {
                block.0[0] = i as f32;
                block.0[N - 1] = i as f32;
                while !B::write(&mut tx, black_box(&block.0)) {}
            }
        },
        move || {
            let mut block = Aligned([0f32; N]);
            for i in 0..blocks {
                while !B::read(&mut rx, &mut block.0) {}
                let b = black_box(&block.0);
                // First and last sample: a block torn at the wrap or out of order fails.
                assert!(
                    b[0] == i as f32 && b[N - 1] == i as f32,
                    "block {i} arrived as {}..{}",
                    b[0],
                    b[N - 1]
                );
            }
            blocks
        },
    );
    (count * (N * 4) as u64) as f64 / elapsed.as_secs_f64() / 1e9
}

/// Per-trip times (ns) of `trips` ping-pongs of one item over two queues.
fn round_trip<Q: Queue>(trips: usize) -> Vec<f64> {
    let (mut ping_tx, mut ping_rx) = Q::new(ROUND_TRIP_CAPACITY);
    let (mut pong_tx, mut pong_rx) = Q::new(ROUND_TRIP_CAPACITY);
    let (samples, _) = two_threads(
        move || {
            for _ in 0..trips {
                let v = loop {
                    if let Some(v) = Q::pop(&mut ping_rx) {
                        break v;
                    }
                };
                while !Q::push(&mut pong_tx, v) {}
            }
        },
        move || {
            let mut samples = Vec::with_capacity(trips);
            for i in 0..trips as u64 {
                let t0 = std::time::Instant::now();
                while !Q::push(&mut ping_tx, i) {}
                let v = loop {
                    if let Some(v) = Q::pop(&mut pong_rx) {
                        break v;
                    }
                };
                samples.push(t0.elapsed().as_nanos() as f64);
                assert_eq!(v, i, "round trip {i} came back as {v}");
            }
            samples
        },
    );
    samples
}
