//! Instruction-count driver for issue 18: runs `bench alloc`'s workload (free one random live
//! block, allocate one of a random size) through Downbeat's pool or through `rlsf`, without
//! timing, so `valgrind --tool=callgrind` can count instructions per pair. Usage:
//!
//! ```text
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.ours \
//!     target/release/alloc-count downbeat 100000
//! callgrind_annotate /tmp/cg.ours
//! ```
//!
//! The program runs `pairs` warm-up pairs, then `pairs` measured pairs, after building a 64 MiB
//! pool (whose pre-faulting dominates a small run). Instructions per steady-state pair are the
//! difference of two runs divided by the difference of their pair counts, e.g.
//! (Ir(60000) - Ir(20000)) / 80000; or, from `callgrind_annotate --inclusive=yes`, the
//! inclusive count of `measured_downbeat` (warm-up and measured calls) minus that of
//! `measured_downbeat_warm`, divided by `pairs` (likewise for rlsf).

use std::alloc::Layout;
use std::hint::black_box;
use std::mem::MaybeUninit;
use std::process::ExitCode;
use std::ptr::NonNull;

use downbeat_rt::alloc::Pool;

#[path = "../rng.rs"]
#[allow(dead_code)] // the suites use `between`, this driver does not
mod rng;
#[path = "../alloc/workload.rs"]
mod workload;

use rng::Rng;
use workload::{size, LIVE};

const POOL: usize = 64 << 20;

type RlsfTlsf = rlsf::Tlsf<'static, u32, u32, 28, 32>;

/// The pairs, generic over the allocator's two calls.
#[inline(always)]
fn pairs(
    n: usize,
    rng: &mut Rng,
    live: &mut [Option<NonNull<u8>>],
    mut alloc: impl FnMut(usize) -> Option<NonNull<u8>>,
    mut free: impl FnMut(NonNull<u8>),
) -> usize {
    let mut failed = 0;
    for _ in 0..n {
        let slot = (rng.next() % LIVE as u64) as usize;
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
    rt: &mut downbeat_rt::alloc::RtAlloc,
) -> usize {
    let rt = std::cell::RefCell::new(rt);
    pairs(
        n,
        rng,
        live,
        |s| {
            rt.borrow_mut()
                .alloc(Layout::from_size_align(s, 16).unwrap())
                .ok()
        },
        // SAFETY: `p` came from this pool's `alloc` and is freed once.
        |p| unsafe { rt.borrow_mut().free(p) },
    )
}

#[inline(never)]
fn measured_rlsf(
    n: usize,
    rng: &mut Rng,
    live: &mut [Option<NonNull<u8>>],
    t: &mut RlsfTlsf,
) -> usize {
    let t = std::cell::RefCell::new(t);
    pairs(
        n,
        rng,
        live,
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
    let (which, n) = match (args.get(1), args.get(2).map(|s| s.parse::<usize>())) {
        (Some(w), Some(Ok(n))) if w == "downbeat" || w == "rlsf" => (w.clone(), n),
        _ => {
            eprintln!("usage: alloc-count <downbeat|rlsf> <pairs>");
            return ExitCode::from(2);
        }
    };
    let mut rng = Rng(0x5eed | 1);
    let mut live = vec![None; LIVE];
    let failed = if which == "downbeat" {
        let pool = Pool::new(POOL).expect("pool");
        let mut rt = pool.bind().expect("first owner");
        measured_downbeat_warm(n, &mut rng, &mut live, &mut rt);
        measured_downbeat(n, &mut rng, &mut live, &mut rt)
    } else {
        let mem = Box::leak(vec![MaybeUninit::new(0u8); POOL].into_boxed_slice());
        let mut t = RlsfTlsf::new();
        t.insert_free_block(mem);
        measured_rlsf_warm(n, &mut rng, &mut live, &mut t);
        measured_rlsf(n, &mut rng, &mut live, &mut t)
    };
    black_box(&live);
    println!("{which}: {n} pairs, {failed} failed");
    ExitCode::SUCCESS
}

/// The warm-up: same code as the measured pairs, under another name callgrind can exclude.
#[inline(never)]
fn measured_downbeat_warm(
    n: usize,
    rng: &mut Rng,
    live: &mut [Option<NonNull<u8>>],
    rt: &mut downbeat_rt::alloc::RtAlloc,
) -> usize {
    measured_downbeat(n, rng, live, rt)
}

#[inline(never)]
fn measured_rlsf_warm(
    n: usize,
    rng: &mut Rng,
    live: &mut [Option<NonNull<u8>>],
    t: &mut RlsfTlsf,
) -> usize {
    measured_rlsf(n, rng, live, t)
}
