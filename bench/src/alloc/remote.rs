//! The `remote_*` workload: one thread allocates, another frees what it receives, as when the
//! audio thread hands finished voices to a worker. Downbeat frees through its remote list (the
//! owner applies those frees on later allocations); glibc frees into the allocating thread's
//! arena under its lock. rlsf has no cross-thread free, so it has no row here.

use std::hint::spin_loop;
use std::ptr::NonNull;
use std::time::Instant;

use downbeat_rt::alloc::{Heap, RtVec};

use super::workload::size;
use super::OURS;
use crate::report::{alternating, quantile, Better, Report};
use crate::rng::Rng;
use crate::Common;
use downbeat_rt::pool::pin_current_thread;

/// Blocks in flight between the threads at most.
const IN_FLIGHT: usize = 1024;

/// A glibc block on its way to the freeing thread.
struct Raw(NonNull<u8>);
// SAFETY: a malloc block may be freed by any thread; only the receiver touches it.
unsafe impl Send for Raw {}

/// Per-operation times (ns) of `n` allocations on the producer and `n` frees on the consumer.
struct Times {
    alloc: Vec<f64>,
    free: Vec<f64>,
    failed: usize,
}

/// Runs `n` allocations on a producer pinned to CPU 0 and their frees on a consumer pinned to
/// CPU 1. `alloc` makes a message of a given size and returns the nanoseconds its allocation
/// took (the touch of its first bytes afterwards is not timed); `free` drops one, timed here.
type Make<M> = Box<dyn FnMut(usize) -> (Option<M>, f64)>;

fn two_threads<M: Send + 'static>(
    n: usize,
    seed: u64,
    alloc: impl FnOnce() -> Make<M> + Send,
    mut free: impl FnMut(M) + Send,
) -> Times {
    let (mut tx, mut rx) = rtrb::RingBuffer::<M>::new(IN_FLIGHT);
    let mut alloc_ns = vec![-1.0; n];
    let mut free_ns = vec![-1.0; n];
    let failed = std::thread::scope(|s| {
        let consumer = s.spawn(|| {
            let _ = pin_current_thread(1);
            let mut got = 0;
            while got < n {
                match rx.pop() {
                    Ok(m) => {
                        let t = Instant::now();
                        free(m);
                        free_ns[got] = t.elapsed().as_nanos() as f64;
                        got += 1;
                    }
                    Err(_) if tx_gone(&rx) => break,
                    Err(_) => spin_loop(),
                }
            }
        });
        let producer = s.spawn(|| {
            let _ = pin_current_thread(0);
            let mut make = alloc();
            let mut rng = Rng(seed | 1);
            let mut failed = 0;
            for slot in alloc_ns.iter_mut() {
                let (m, ns) = make(size(&mut rng));
                *slot = ns;
                match m {
                    Some(mut m) => loop {
                        match tx.push(m) {
                            Ok(()) => break,
                            Err(rtrb::PushError::Full(back)) => {
                                m = back;
                                spin_loop();
                            }
                        }
                    },
                    None => failed += 1,
                }
            }
            drop(tx);
            failed
        });
        let failed = producer.join().expect("producer");
        consumer.join().expect("consumer");
        failed
    });
    free_ns.retain(|&x| x >= 0.0);
    alloc_ns.sort_by(f64::total_cmp);
    free_ns.sort_by(f64::total_cmp);
    Times {
        alloc: alloc_ns,
        free: free_ns,
        failed,
    }
}

fn tx_gone<M>(rx: &rtrb::Consumer<M>) -> bool {
    rx.is_abandoned() && rx.is_empty()
}

fn downbeat(heap: &Heap, n: usize, seed: u64) -> Times {
    let owner = heap.clone();
    let t = two_threads(
        n,
        seed,
        move || {
            let mut rt = owner.bind().expect("unbound");
            Box::new(move |s: usize| {
                let t = Instant::now();
                let v: Option<RtVec<u8>> = rt.vec(s).ok();
                let ns = t.elapsed().as_nanos() as f64;
                // Touch the block like a delay line being cleared at its start.
                let v = v.map(|mut v| {
                    while v.len() < 16 && v.push(0).is_ok() {}
                    v
                });
                (v, ns)
            })
        },
        drop,
    );
    // Apply the frees still waiting in the remote list, so the next run starts clean.
    heap.bind().expect("unbound").collect_remote();
    t
}

fn glibc(n: usize, seed: u64) -> Times {
    two_threads(
        n,
        seed,
        || {
            Box::new(|s: usize| {
                let t = Instant::now();
                // SAFETY: plain malloc.
                let p = NonNull::new(unsafe { libc::malloc(s) }.cast::<u8>());
                let ns = t.elapsed().as_nanos() as f64;
                let p = p.map(|p| {
                    // SAFETY: at least 16 bytes.
                    unsafe { p.as_ptr().write_bytes(0, 16) };
                    Raw(p)
                });
                (p, ns)
            })
        },
        // SAFETY: each block came from malloc and is freed once.
        |Raw(p)| unsafe { libc::free(p.as_ptr().cast()) },
    )
}

/// Adds `remote_alloc_*` and `remote_free_*` rows for Downbeat and glibc.
pub(crate) fn run(report: &mut Report, common: &Common, heap: &Heap) {
    let n = if common.quick { 20_000 } else { 300_000 };
    let runs = common.runs();
    let impls = [OURS, "glibc"];
    let qs = [("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999)];
    // [impl][alloc/free][quantile] -> samples over runs
    let mut rows = vec![vec![vec![Vec::new(); qs.len()]; 2]; impls.len()];
    for run in 0..runs {
        for k in alternating(&[0, 1], run) {
            let name = impls[k];
            if !common.wants(name) {
                continue;
            }
            let seed = 0x5eed + run as u64;
            let t = if name == OURS {
                downbeat(heap, n, seed)
            } else {
                glibc(n, seed)
            };
            for (side, samples) in [&t.alloc, &t.free].into_iter().enumerate() {
                for (j, (_, q)) in qs.iter().enumerate() {
                    rows[k][side][j].push(quantile(samples, *q));
                }
            }
            if t.failed > 0 {
                report.notes.push(format!(
                    "remote_ {name} run {run}: {} allocations failed",
                    t.failed
                ));
            }
        }
    }
    for (k, name) in impls.iter().enumerate() {
        for (side, op) in ["alloc", "free"].iter().enumerate() {
            for (j, (q, _)) in qs.iter().enumerate() {
                if !rows[k][side][j].is_empty() {
                    report.add(&format!("remote_{op}_{q}"), name, "ns", &rows[k][side][j]);
                }
            }
        }
    }
    for op in ["alloc", "free"] {
        for (q, _) in qs {
            let key = format!("remote_{op}_{q}");
            report.ratio(&key, &key, OURS, "glibc", Better::Lower);
        }
    }
    report.notes.push(format!(
        "remote_*: {n} allocations per run on a thread pinned to CPU 0 (sizes as pair_*), each \
         sent through a {IN_FLIGHT}-slot ring to a thread pinned to CPU 1 that frees it; \
         remote_alloc times the allocation (Downbeat's includes applying up to 2 remote frees), \
         remote_free the free (Downbeat's pushes onto its remote list, glibc's takes the arena \
         lock, one arena); rlsf cannot free from another thread and has no row; {runs} runs"
    ));
}
