//! The ring suite: Downbeat's ring against rtrb, ringbuf and crossbeam's `ArrayQueue`, producer
//! and consumer on two pinned threads, every implementation driven by the same loops.
//!
//! Repetitions are interleaved (run 1 of every implementation, then run 2, ...) so that drift in
//! what else the machine is doing spreads over all of them instead of biasing one.

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use crate::report::{pin_to_cpu, quantile, Better, Report};
use crate::Common;

/// One interleaved stereo block of 512 frames.
const BLOCK: usize = 1024;
const OURS: &str = "downbeat";
const RIVALS: [&str; 3] = ["rtrb", "ringbuf", "crossbeam"];

struct Sizes {
    uncontended_items: u64,
    contended_items: u64,
    bulk_blocks: u64,
    round_trips: usize,
}

impl Sizes {
    fn new(quick: bool) -> Self {
        if quick {
            Self {
                uncontended_items: 10_000,
                contended_items: 10_000,
                bulk_blocks: 200,
                round_trips: 1_000,
            }
        } else {
            Self {
                uncontended_items: 10_000_000,
                contended_items: 2_000_000,
                bulk_blocks: 1 << 16,
                round_trips: 100_000,
            }
        }
    }
}

/// Single-element operations, as each library spells them.
trait Queue {
    type Tx: Send + 'static;
    type Rx: Send + 'static;
    fn new(capacity: usize) -> (Self::Tx, Self::Rx);
    fn push(tx: &mut Self::Tx, value: u64) -> bool;
    fn pop(rx: &mut Self::Rx) -> Option<u64>;
}

/// Whole-block transfers through each library's best bulk API.
trait Bulk {
    type Tx: Send + 'static;
    type Rx: Send + 'static;
    fn new(capacity: usize) -> (Self::Tx, Self::Rx);
    /// Copies `block` in if there is room for all of it.
    fn write(tx: &mut Self::Tx, block: &[f32; BLOCK]) -> bool;
    /// Copies a whole block out if one is there.
    fn read(rx: &mut Self::Rx, block: &mut [f32; BLOCK]) -> bool;
}

struct Downbeat;
struct Rtrb;
struct Ringbuf;
struct Crossbeam;

impl Queue for Downbeat {
    type Tx = downbeat_ring::Producer<u64>;
    type Rx = downbeat_ring::Consumer<u64>;
    fn new(capacity: usize) -> (Self::Tx, Self::Rx) {
        downbeat_ring::RingBuffer::new(capacity)
    }
    #[inline(always)]
    fn push(tx: &mut Self::Tx, value: u64) -> bool {
        tx.push(value).is_ok()
    }
    #[inline(always)]
    fn pop(rx: &mut Self::Rx) -> Option<u64> {
        rx.pop()
    }
}

impl Bulk for Downbeat {
    type Tx = downbeat_ring::Producer<f32>;
    type Rx = downbeat_ring::Consumer<f32>;
    fn new(capacity: usize) -> (Self::Tx, Self::Rx) {
        downbeat_ring::RingBuffer::new(capacity)
    }
    #[inline(always)]
    fn write(tx: &mut Self::Tx, block: &[f32; BLOCK]) -> bool {
        let Ok(mut chunk) = tx.write_chunk(BLOCK) else {
            return false;
        };
        let (a, b) = chunk.as_mut_slices();
        let (head, tail) = block.split_at(a.len());
        a.copy_from_slice(head);
        b.copy_from_slice(tail);
        chunk.commit_all();
        true
    }
    #[inline(always)]
    fn read(rx: &mut Self::Rx, block: &mut [f32; BLOCK]) -> bool {
        let Ok(chunk) = rx.read_chunk(BLOCK) else {
            return false;
        };
        let (a, b) = chunk.as_slices();
        let (head, tail) = block.split_at_mut(a.len());
        head.copy_from_slice(a);
        tail.copy_from_slice(b);
        chunk.commit_all();
        true
    }
}

impl Queue for Rtrb {
    type Tx = rtrb::Producer<u64>;
    type Rx = rtrb::Consumer<u64>;
    fn new(capacity: usize) -> (Self::Tx, Self::Rx) {
        rtrb::RingBuffer::new(capacity)
    }
    #[inline(always)]
    fn push(tx: &mut Self::Tx, value: u64) -> bool {
        tx.push(value).is_ok()
    }
    #[inline(always)]
    fn pop(rx: &mut Self::Rx) -> Option<u64> {
        rx.pop().ok()
    }
}

impl Bulk for Rtrb {
    type Tx = rtrb::Producer<f32>;
    type Rx = rtrb::Consumer<f32>;
    fn new(capacity: usize) -> (Self::Tx, Self::Rx) {
        rtrb::RingBuffer::new(capacity)
    }
    #[inline(always)]
    fn write(tx: &mut Self::Tx, block: &[f32; BLOCK]) -> bool {
        use rtrb::CopyToUninit;
        // The uninit chunk is rtrb's fastest write path: `write_chunk` would first fill every
        // slot with `Default`.
        let Ok(mut chunk) = tx.write_chunk_uninit(BLOCK) else {
            return false;
        };
        let (a, b) = chunk.as_mut_slices();
        let (head, tail) = block.split_at(a.len());
        head.copy_to_uninit(a);
        tail.copy_to_uninit(b);
        // SAFETY: both slices were just initialised.
        unsafe { chunk.commit_all() };
        true
    }
    #[inline(always)]
    fn read(rx: &mut Self::Rx, block: &mut [f32; BLOCK]) -> bool {
        let Ok(chunk) = rx.read_chunk(BLOCK) else {
            return false;
        };
        let (a, b) = chunk.as_slices();
        let (head, tail) = block.split_at_mut(a.len());
        head.copy_from_slice(a);
        tail.copy_from_slice(b);
        chunk.commit_all();
        true
    }
}

impl Queue for Ringbuf {
    type Tx = ringbuf::HeapProd<u64>;
    type Rx = ringbuf::HeapCons<u64>;
    fn new(capacity: usize) -> (Self::Tx, Self::Rx) {
        use ringbuf::traits::Split;
        ringbuf::HeapRb::new(capacity).split()
    }
    #[inline(always)]
    fn push(tx: &mut Self::Tx, value: u64) -> bool {
        use ringbuf::traits::Producer;
        tx.try_push(value).is_ok()
    }
    #[inline(always)]
    fn pop(rx: &mut Self::Rx) -> Option<u64> {
        use ringbuf::traits::Consumer;
        rx.try_pop()
    }
}

impl Bulk for Ringbuf {
    type Tx = ringbuf::HeapProd<f32>;
    type Rx = ringbuf::HeapCons<f32>;
    fn new(capacity: usize) -> (Self::Tx, Self::Rx) {
        use ringbuf::traits::Split;
        ringbuf::HeapRb::new(capacity).split()
    }
    #[inline(always)]
    fn write(tx: &mut Self::Tx, block: &[f32; BLOCK]) -> bool {
        use ringbuf::traits::{Observer, Producer};
        if tx.vacant_len() < BLOCK {
            return false;
        }
        tx.push_slice(block);
        true
    }
    #[inline(always)]
    fn read(rx: &mut Self::Rx, block: &mut [f32; BLOCK]) -> bool {
        use ringbuf::traits::{Consumer, Observer};
        if rx.occupied_len() < BLOCK {
            return false;
        }
        rx.pop_slice(block);
        true
    }
}

impl Queue for Crossbeam {
    type Tx = Arc<crossbeam_queue::ArrayQueue<u64>>;
    type Rx = Arc<crossbeam_queue::ArrayQueue<u64>>;
    fn new(capacity: usize) -> (Self::Tx, Self::Rx) {
        let q = Arc::new(crossbeam_queue::ArrayQueue::new(capacity));
        (q.clone(), q)
    }
    #[inline(always)]
    fn push(tx: &mut Self::Tx, value: u64) -> bool {
        tx.push(value).is_ok()
    }
    #[inline(always)]
    fn pop(rx: &mut Self::Rx) -> Option<u64> {
        rx.pop()
    }
}

/// `ArrayQueue` has no slice API; its best bulk transfer moves whole blocks as values.
impl Bulk for Crossbeam {
    type Tx = Arc<crossbeam_queue::ArrayQueue<[f32; BLOCK]>>;
    type Rx = Arc<crossbeam_queue::ArrayQueue<[f32; BLOCK]>>;
    fn new(capacity: usize) -> (Self::Tx, Self::Rx) {
        let q = Arc::new(crossbeam_queue::ArrayQueue::new((capacity / BLOCK).max(1)));
        (q.clone(), q)
    }
    #[inline(always)]
    fn write(tx: &mut Self::Tx, block: &[f32; BLOCK]) -> bool {
        !tx.is_full() && tx.push(*block).is_ok()
    }
    #[inline(always)]
    fn read(rx: &mut Self::Rx, block: &mut [f32; BLOCK]) -> bool {
        match rx.pop() {
            Some(b) => {
                *block = b;
                true
            }
            None => false,
        }
    }
}

/// Runs `producer` and `consumer` on two threads pinned to different CPUs, released together;
/// returns the consumer's result and the time from release until both finished.
fn two_threads<P, C, R>(producer: P, consumer: C) -> (R, Duration)
where
    P: FnOnce() + Send + 'static,
    C: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let start = Arc::new(Barrier::new(3));
    let (s1, s2) = (start.clone(), start.clone());
    let p = thread::spawn(move || {
        pin_to_cpu(0);
        s1.wait();
        producer();
    });
    let c = thread::spawn(move || {
        pin_to_cpu(1);
        s2.wait();
        consumer()
    });
    start.wait();
    let t0 = Instant::now();
    p.join().expect("producer panicked");
    let r = c.join().expect("consumer panicked");
    (r, t0.elapsed())
}

/// Items per second (millions) for `items` single-element transfers.
fn throughput<Q: Queue>(capacity: usize, items: u64) -> f64 {
    let (mut tx, mut rx) = Q::new(capacity);
    // Plain retry loops, no PAUSE: under KVM a PAUSE loop can exit to the hypervisor, and
    // rtrb's and rigtorp's own benchmarks spin the same way.
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

/// GB/s moving `blocks` blocks of 512 stereo frames.
fn bulk<B: Bulk>(blocks: u64) -> f64 {
    let (mut tx, mut rx) = B::new(8 * BLOCK);
    let (count, elapsed) = two_threads(
        move || {
            let mut block = [0.25f32; BLOCK];
            for i in 0..blocks {
                block[0] = i as f32;
                while !B::write(&mut tx, black_box(&block)) {}
            }
        },
        move || {
            let mut block = [0f32; BLOCK];
            for i in 0..blocks {
                while !B::read(&mut rx, &mut block) {}
                // Exact for the block counts used here (< 2^24).
                assert_eq!(black_box(&block)[0], i as f32, "blocks out of order");
            }
            blocks
        },
    );
    (count * (BLOCK * 4) as u64) as f64 / elapsed.as_secs_f64() / 1e9
}

/// Same bytes copied on one core: the ceiling no queue can pass, shown as context.
fn memcpy(blocks: u64) -> f64 {
    let src = [0.25f32; BLOCK];
    let mut dst = [0f32; BLOCK];
    let t0 = Instant::now();
    for _ in 0..blocks {
        dst.copy_from_slice(black_box(&src));
        black_box(&mut dst);
    }
    (blocks * (BLOCK * 4) as u64) as f64 / t0.elapsed().as_secs_f64() / 1e9
}

/// Round trips over two queues: (median ns, p99 ns).
fn round_trip<Q: Queue>(trips: usize) -> (f64, f64) {
    let (mut ping_tx, mut ping_rx) = Q::new(64);
    let (mut pong_tx, mut pong_rx) = Q::new(64);
    let (mut samples, _) = two_threads(
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
                let t0 = Instant::now();
                while !Q::push(&mut ping_tx, i) {}
                let v = loop {
                    if let Some(v) = Q::pop(&mut pong_rx) {
                        break v;
                    }
                };
                samples.push(t0.elapsed().as_nanos() as f64);
                assert_eq!(v, i);
            }
            samples
        },
    );
    samples.sort_by(f64::total_cmp);
    (quantile(&samples, 0.5), quantile(&samples, 0.99))
}

/// Per-implementation sample lists for one case.
#[derive(Default)]
struct Samples(Vec<(&'static str, Vec<f64>)>);

impl Samples {
    fn push(&mut self, implementation: &'static str, value: f64) {
        match self.0.iter_mut().find(|(name, _)| *name == implementation) {
            Some((_, v)) => v.push(value),
            None => self.0.push((implementation, vec![value])),
        }
    }

    fn report(&self, report: &mut Report, case: &str, unit: &str) {
        for (name, values) in &self.0 {
            report.add(case, name, unit, values);
        }
    }
}

pub fn run(common: &Common) -> Report {
    let sizes = Sizes::new(common.quick);
    let runs = common.runs();
    let mut report = Report::new("ring");
    let mut pinned = true;
    thread::spawn(move || pin_to_cpu(0) && pin_to_cpu(1))
        .join()
        .map(|ok| pinned = ok)
        .ok();
    if !pinned {
        report
            .notes
            .push("threads could not be pinned; they run where the OS puts them".into());
    }

    let mut uncontended = Samples::default();
    let mut contended = Samples::default();
    let mut bulk_gbs = Samples::default();
    let mut copy = Samples::default();
    let mut rt_median = Samples::default();
    let mut rt_p99 = Samples::default();
    for _ in 0..runs {
        macro_rules! each {
            ($f:ident) => {
                $f!(Downbeat, OURS);
                $f!(Rtrb, "rtrb");
                $f!(Ringbuf, "ringbuf");
                $f!(Crossbeam, "crossbeam");
            };
        }
        macro_rules! one_run {
            ($q:ty, $name:expr) => {{
                if common.wants("uncontended") {
                    uncontended.push($name, throughput::<$q>(1 << 16, sizes.uncontended_items));
                }
                if common.wants("contended") {
                    contended.push($name, throughput::<$q>(4, sizes.contended_items));
                }
                if common.wants("bulk") {
                    bulk_gbs.push($name, bulk::<$q>(sizes.bulk_blocks));
                }
                if common.wants("roundtrip") {
                    let (median, p99) = round_trip::<$q>(sizes.round_trips);
                    rt_median.push($name, median);
                    rt_p99.push($name, p99);
                }
            }};
        }
        each!(one_run);
        if common.wants("bulk") {
            copy.push("memcpy (same core)", memcpy(sizes.bulk_blocks));
        }
    }

    uncontended.report(&mut report, "uncontended", "Mitems/s");
    contended.report(&mut report, "contended", "Mitems/s");
    bulk_gbs.report(&mut report, "bulk", "GB/s");
    copy.report(&mut report, "bulk", "GB/s");
    rt_median.report(&mut report, "roundtrip", "ns");
    rt_p99.report(&mut report, "roundtrip_p99", "ns");

    for rival in RIVALS {
        report.ratio("uncontended", "uncontended", OURS, rival, Better::Higher);
        report.ratio("contended", "contended", OURS, rival, Better::Higher);
        report.ratio("bulk", "bulk", OURS, rival, Better::Higher);
        report.ratio("roundtrip", "roundtrip", OURS, rival, Better::Lower);
        report.ratio("roundtrip_p99", "roundtrip_p99", OURS, rival, Better::Lower);
    }
    report.notes.push(format!(
        "uncontended: queue of 65536 u64, {} items; contended: capacity 4, {} items; \
         bulk: ring of 8 blocks, {} blocks of 512 stereo f32 frames (4 KiB); \
         roundtrip: {} trips over two queues. memcpy is one core copying the same bytes, \
         context only.",
        sizes.uncontended_items, sizes.contended_items, sizes.bulk_blocks, sizes.round_trips
    ));
    report
}
