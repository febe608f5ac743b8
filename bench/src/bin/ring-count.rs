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
//! * `roundtrip`: `n` times push on one ring of 64, pop it, push on a second, pop that;
//! * `bulk_480`: `n` blocks of 960 `f32` (480 stereo frames) written as one chunk into a ring of
//!   3,000 and read back as one, so a third of the blocks wrap (count per block).
//!
//! Each case runs in a function of its own (`ring_count::downbeat::fill_drain`,
//! `ring_count::rtrb::roundtrip`, `ring_count::downbeat_bulk_480`, ...), which makes the ends and
//! drops them, as the threaded cases' closures do: whether an end's fields live in registers
//! depends on that. Instructions per item are that function's inclusive count divided by `n`
//! (per trip for the round trip, per block for `bulk_480`). `n` must stay below 2^24 so that
//! block numbers are exact in `f32`.

use std::hint::black_box;
use std::process::ExitCode;

const UNCONTENDED_CAPACITY: usize = 1 << 16;
const CONTENDED_CAPACITY: usize = 4;
const ROUND_TRIP_CAPACITY: usize = 64;
const BLOCK_480: usize = 960;
const BULK_480_RING: usize = 3000;

/// `n` blocks through a ring of [`BULK_480_RING`], each written by `write` and read back by
/// `read`; returns the sum of the blocks' first samples.
#[inline(always)]
fn blocks<Tx, Rx>(
    (mut tx, mut rx): (Tx, Rx),
    n: u64,
    write: impl Fn(&mut Tx, &[f32; BLOCK_480]) -> bool,
    read: impl Fn(&mut Rx, &mut [f32; BLOCK_480]) -> bool,
) -> u64 {
    let mut block = [0.25f32; BLOCK_480];
    let mut out = [0f32; BLOCK_480];
    let mut sum = 0u64;
    for i in 0..n {
        block[0] = i as f32;
        assert!(write(&mut tx, black_box(&block)), "block {i} did not fit");
        assert!(read(&mut rx, &mut out), "block {i} did not arrive");
        sum += black_box(&out)[0] as u64;
    }
    sum
}

#[inline(never)]
fn downbeat_bulk_480(n: u64) -> u64 {
    blocks(
        downbeat_ring::RingBuffer::<f32>::new(BULK_480_RING),
        n,
        |tx, block| {
            let Ok(mut chunk) = tx.write_chunk(BLOCK_480) else {
                return false;
            };
            let (a, b) = chunk.as_mut_slices();
            let (head, tail) = block.split_at(a.len());
            a.copy_from_slice(head);
            b.copy_from_slice(tail);
            chunk.commit_all();
            true
        },
        |rx, block| {
            let Ok(chunk) = rx.read_chunk(BLOCK_480) else {
                return false;
            };
            let (a, b) = chunk.as_slices();
            let (head, tail) = block.split_at_mut(a.len());
            head.copy_from_slice(a);
            tail.copy_from_slice(b);
            chunk.commit_all();
            true
        },
    )
}

#[inline(never)]
fn rtrb_bulk_480(n: u64) -> u64 {
    use ::rtrb::CopyToUninit;
    blocks(
        ::rtrb::RingBuffer::<f32>::new(BULK_480_RING),
        n,
        |tx, block| {
            let Ok(mut chunk) = tx.write_chunk_uninit(BLOCK_480) else {
                return false;
            };
            let (a, b) = chunk.as_mut_slices();
            let (head, tail) = block.split_at(a.len());
            head.copy_to_uninit(a);
            tail.copy_to_uninit(b);
            // SAFETY: `a` and `b` are the whole chunk and were both just initialised.
            unsafe { chunk.commit_all() };
            true
        },
        |rx, block| {
            let Ok(chunk) = rx.read_chunk(BLOCK_480) else {
                return false;
            };
            let (a, b) = chunk.as_slices();
            let (head, tail) = block.split_at_mut(a.len());
            head.copy_from_slice(a);
            tail.copy_from_slice(b);
            chunk.commit_all();
            true
        },
    )
}

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
    let usage = "usage: ring-count downbeat|rtrb uncontended|contended|roundtrip|bulk_480 N";
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
        ("downbeat", "bulk_480") => downbeat_bulk_480(n),
        ("rtrb", "bulk_480") => rtrb_bulk_480(n),
        ("rtrb", "uncontended") => rtrb::fill_drain(UNCONTENDED_CAPACITY, n),
        ("rtrb", "contended") => rtrb::fill_drain(CONTENDED_CAPACITY, n),
        ("rtrb", "roundtrip") => rtrb::roundtrip(n),
        _ => {
            eprintln!("ring-count: unknown library or case `{lib} {case}`\n{usage}");
            return ExitCode::from(2);
        }
    };
    // Every case sums the numbers 0..n (as block numbers for bulk_480).
    let expected = n.wrapping_mul(n.wrapping_sub(1)) / 2;
    if sum != expected {
        eprintln!("ring-count: values lost or duplicated (sum {sum}, expected {expected})");
        return ExitCode::FAILURE;
    }
    println!("{lib} {case} {n}: ok");
    ExitCode::SUCCESS
}
