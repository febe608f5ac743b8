//! Instruction-count driver for issue 18: runs `bench alloc`'s workload (free one random live
//! block, allocate one of a random size) through Downbeat's heap or through `rlsf`, without
//! timing, so `valgrind --tool=callgrind` can count instructions per pair. Usage:
//!
//! ```text
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.ours \
//!     target/release/alloc-count downbeat 100000
//! callgrind_annotate /tmp/cg.ours
//! ```
//!
//! A third argument `large` runs the `large_*` workload instead (64 live delay lines of
//! 128-375 KiB).
//!
//! The program runs `pairs` warm-up pairs, then `pairs` measured pairs, after building a 64 MiB
//! heap (whose pre-faulting dominates a small run). Instructions per steady-state pair are the
//! difference of two runs divided by the difference of their pair counts, e.g.
//! (Ir(60000) - Ir(20000)) / 80000; or, from `callgrind_annotate --inclusive=yes`, the
//! inclusive count of `measured_downbeat` (warm-up and measured calls) minus that of
//! `measured_downbeat_warm`, divided by `pairs` (likewise for rlsf).

use std::alloc::Layout;
use std::hint::black_box;
use std::mem::MaybeUninit;
use std::process::ExitCode;
use std::ptr::NonNull;

use downbeat_rt::alloc::Heap;

#[path = "../rng.rs"]
#[allow(dead_code)] // the suites use `between`, this driver does not
mod rng;
#[path = "../alloc/workload.rs"]
mod workload;

use rng::Rng;
use workload::{large_size, size, LARGE_LIVE, LIVE};

const HEAP_BYTES: usize = 64 << 20;

type RlsfTlsf = rlsf::Tlsf<'static, u32, u32, 28, 32>;

/// The pairs, generic over the allocator's two calls; `live.len()` and `size` pick the workload.
#[inline(always)]
fn pairs(
    n: usize,
    rng: &mut Rng,
    live: &mut [Option<NonNull<u8>>],
    size: impl Fn(&mut Rng) -> usize + Copy,
    mut alloc: impl FnMut(usize) -> Option<NonNull<u8>>,
    mut free: impl FnMut(NonNull<u8>),
) -> usize {
    let mut failed = 0;
    for _ in 0..n {
        let slot = (rng.next() % live.len() as u64) as usize;
        if let Some(p) = live[slot].take() {
            free(p);
        }
        match alloc(size(rng)) {
            Some(p) => {
                // SAFETY: every block has at least 16 bytes.
                unsafe { p.as_ptr().write_bytes(0, 16) };
                live[slot] = Some(p);
            }
            None => failed += 1,
        }
    }
    failed
}

#[inline(never)]
fn measured_downbeat(
    n: usize,
    rng: &mut Rng,
    live: &mut [Option<NonNull<u8>>],
    size: impl Fn(&mut Rng) -> usize + Copy,
    rt: &mut downbeat_rt::alloc::RtAlloc,
) -> usize {
    let rt = std::cell::RefCell::new(rt);
    pairs(
        n,
        rng,
        live,
        size,
        |s| {
            rt.borrow_mut()
                .alloc(Layout::from_size_align(s, 16).unwrap())
                .ok()
        },
        // SAFETY: `p` came from this heap's `alloc` and is freed once.
        |p| unsafe { rt.borrow_mut().free(p) },
    )
}

#[inline(never)]
fn measured_rlsf(
    n: usize,
    rng: &mut Rng,
    live: &mut [Option<NonNull<u8>>],
    size: impl Fn(&mut Rng) -> usize + Copy,
    t: &mut RlsfTlsf,
) -> usize {
    let t = std::cell::RefCell::new(t);
    pairs(
        n,
        rng,
        live,
        size,
        |s| {
            t.borrow_mut()
                .allocate(Layout::from_size_align(s, 16).unwrap())
        },
        // SAFETY: `p` came from this heap with alignment 16 and is freed once.
        |p| unsafe { t.borrow_mut().deallocate(p, 16) },
    )
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let parsed = (
        args.get(1).map(String::as_str),
        args.get(2).map(|s| s.parse::<usize>()),
        args.get(3).map(String::as_str),
    );
    let (which, n, large) = match parsed {
        (Some(w @ ("downbeat" | "rlsf")), Some(Ok(n)), None | Some("large")) if args.len() <= 4 => {
            (w.to_owned(), n, parsed.2.is_some())
        }
        _ => {
            eprintln!("usage: alloc-count <downbeat|rlsf> <pairs> [large]");
            return ExitCode::from(2);
        }
    };
    let failed = match (which.as_str(), large) {
        ("downbeat", false) => run_downbeat(n, LIVE, size),
        ("downbeat", true) => run_downbeat(n, LARGE_LIVE, large_size),
        (_, false) => run_rlsf(n, LIVE, size),
        (_, true) => run_rlsf(n, LARGE_LIVE, large_size),
    };
    let workload = if large { "large" } else { "pair" };
    println!("{which} ({workload}): {n} pairs, {failed} failed");
    ExitCode::SUCCESS
}

/// Warm-up and measured pairs through Downbeat's heap; the size function is a type parameter
/// (not a pointer) so it is inlined as in the suite.
fn run_downbeat(n: usize, live: usize, size: impl Fn(&mut Rng) -> usize + Copy) -> usize {
    let mut rng = Rng(0x5eed | 1);
    let mut live = vec![None; live];
    let heap = Heap::new(HEAP_BYTES).expect("heap");
    let mut rt = heap.bind().expect("first owner");
    measured_downbeat_warm(n, &mut rng, &mut live, size, &mut rt);
    let failed = measured_downbeat(n, &mut rng, &mut live, size, &mut rt);
    black_box(&live);
    failed
}

/// As [`run_downbeat`], through `rlsf`.
fn run_rlsf(n: usize, live: usize, size: impl Fn(&mut Rng) -> usize + Copy) -> usize {
    let mut rng = Rng(0x5eed | 1);
    let mut live = vec![None; live];
    let mem = Box::leak(vec![MaybeUninit::new(0u8); HEAP_BYTES].into_boxed_slice());
    let mut t = RlsfTlsf::new();
    t.insert_free_block(mem);
    measured_rlsf_warm(n, &mut rng, &mut live, size, &mut t);
    let failed = measured_rlsf(n, &mut rng, &mut live, size, &mut t);
    black_box(&live);
    failed
}

/// The warm-up: same code as the measured pairs, under another name callgrind can exclude.
#[inline(never)]
fn measured_downbeat_warm(
    n: usize,
    rng: &mut Rng,
    live: &mut [Option<NonNull<u8>>],
    size: impl Fn(&mut Rng) -> usize + Copy,
    rt: &mut downbeat_rt::alloc::RtAlloc,
) -> usize {
    measured_downbeat(n, rng, live, size, rt)
}

#[inline(never)]
fn measured_rlsf_warm(
    n: usize,
    rng: &mut Rng,
    live: &mut [Option<NonNull<u8>>],
    size: impl Fn(&mut Rng) -> usize + Copy,
    t: &mut RlsfTlsf,
) -> usize {
    measured_rlsf(n, rng, live, size, t)
}
