//! Times blocks of `N` sines summed into one output (default 500), 64 frames each, on a pool
//! of one worker and on the calling thread alone, and prints each per block with the
//! pool's wakes of a parked worker:
//!
//! ```sh
//! cargo run --release -p downbeat-graph --example parallel_block -- 500 pin
//! chrt -f 80 target/release/examples/parallel_block 500 pin   # the caller above the worker
//! ```
//!
//! With `pin` the calling thread is pinned to CPU 0, as a benchmark pins it. The worker
//! runs at `SCHED_FIFO` 70 where the system allows. Run from an ordinary thread, the caller
//! is below it, and a worker spinning on the caller's core takes the core from it: many
//! wakes, slow and uneven blocks. This is why the offline device renders on a
//! thread of its own at `SCHED_FIFO` 80 on more than one thread (`docs/bench/engines.md`).

use std::time::Instant;

use downbeat_graph::{CompileConfig, Graph};
use downbeat_nodes::{Output, Sine, SineSettings};
use downbeat_rt::pool::{Pool, PoolConfig};

const BLOCKS: usize = 15_000;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(500, |s| s.parse().expect("a number of sines"));
    let mut g = Graph::new();
    let out = g.add("out", Output::new(1));
    for i in 0..n {
        let settings = SineSettings {
            freq: 50.0 + 17.0 * i as f64,
            amp: 0.001,
            ..SineSettings::default()
        };
        let s = g.add(format!("s{i}"), Sine::new(1, 48_000, &settings));
        g.connect(s, out);
    }
    g.set_output(out);
    if std::env::args().nth(2).as_deref() == Some("pin") {
        downbeat_rt::pool::pin_current_thread(0).expect("pinned to CPU 0");
    }
    let cfg = CompileConfig {
        sample_rate: 48_000,
        max_block: 64,
    };
    let mut s = g.compile(cfg).expect("the graph compiles");
    let pool = Pool::new(PoolConfig {
        workers: Some(1),
        ..PoolConfig::default()
    });
    for note in pool.notes() {
        println!("note: {note}");
    }
    let per_block = |t: Instant| t.elapsed().as_secs_f64() * 1e6 / BLOCKS as f64;
    // Warm up: the first blocks time the nodes and share the sources out.
    for _ in 0..BLOCKS / 5 {
        s.process_parallel(64, &pool);
    }
    let wakes = pool.wakes();
    let t = Instant::now();
    for _ in 0..BLOCKS {
        s.process_parallel(64, &pool);
    }
    println!(
        "{n} sines, 2 threads: {:.2} µs a block, {} wakes",
        per_block(t),
        pool.wakes() - wakes
    );
    let t = Instant::now();
    for _ in 0..BLOCKS {
        s.process(64);
    }
    println!("{n} sines, 1 thread: {:.2} µs a block", per_block(t));
}
