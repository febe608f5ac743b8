//! The alloc suite: 10^6 alloc/free pairs of random sizes (16 B - 64 KiB, mostly delay-line
//! sized) after a fragmentation warm-up, through Downbeat's TLSF heap, glibc `malloc` and
//! `rlsf::Tlsf`. Each pair is timed on its own; the run happens under the guard so the system
//! calls and page faults it makes are counted.
//!
//! Beside that workload (case names `pair_*`, `syscalls`, `page_faults`), the suite runs:
//! `large_*`, the same pairs with one-second stereo delay lines (128-375 KiB, where glibc
//! switches to `mmap`); `remote_*`, one thread allocating and another freeing, Downbeat's
//! cross-thread frees against glibc (rlsf cannot free from another thread); and the rival
//! `glibc_tuned`, glibc set up as real-time users set it up (`M_MMAP_MAX=0`,
//! `M_TRIM_THRESHOLD=-1`, `mlockall`), run in a child process so its settings stay there.

mod remote;
mod tuned;
mod workload;

use std::alloc::Layout;
use std::hint::black_box;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::time::Instant;

use downbeat_rt::alloc::{Heap, RtAlloc};
use downbeat_rt::guard::{self, Options};

use crate::report::{alternating, quantile, Better, Report};
use crate::rng::Rng;
use crate::Common;
use workload::{large_size, size, LARGE_LIVE, LIVE};

const OURS: &str = "downbeat";
const GLIBC_TUNED: &str = "glibc_tuned";
const HEAP_BYTES: usize = 64 << 20;
/// Samples slower than this are counted as stalls (the VM's, or the allocator's).
const STALL_NS: f64 = 10_000.0;

trait Allocator {
    fn alloc(&mut self, size: usize) -> Option<NonNull<u8>>;
    /// # Safety
    /// `p` from `alloc` of `size`, freed once.
    unsafe fn free(&mut self, p: NonNull<u8>, size: usize);
}

struct Ours(RtAlloc);
impl Allocator for Ours {
    #[inline(always)]
    fn alloc(&mut self, size: usize) -> Option<NonNull<u8>> {
        self.0
            .alloc(Layout::from_size_align(size, 16).unwrap())
            .ok()
    }
    #[inline(always)]
    unsafe fn free(&mut self, p: NonNull<u8>, _: usize) {
        // SAFETY: forwarded.
        unsafe { self.0.free(p) }
    }
}

struct Glibc;
impl Allocator for Glibc {
    #[inline(always)]
    fn alloc(&mut self, size: usize) -> Option<NonNull<u8>> {
        // SAFETY: plain malloc.
        NonNull::new(unsafe { libc::malloc(size) }.cast())
    }
    #[inline(always)]
    unsafe fn free(&mut self, p: NonNull<u8>, _: usize) {
        // SAFETY: forwarded; from malloc.
        unsafe { libc::free(p.as_ptr().cast()) }
    }
}

type RlsfTlsf = rlsf::Tlsf<'static, u32, u32, 28, 32>;
struct Rlsf(RlsfTlsf);
impl Allocator for Rlsf {
    #[inline(always)]
    fn alloc(&mut self, size: usize) -> Option<NonNull<u8>> {
        self.0.allocate(Layout::from_size_align(size, 16).unwrap())
    }
    #[inline(always)]
    unsafe fn free(&mut self, p: NonNull<u8>, _: usize) {
        // SAFETY: forwarded.
        unsafe { self.0.deallocate(p, 16) }
    }
}

/// rlsf's pool, allocated and touched outside the measured scope.
fn rlsf_pool() -> &'static mut [MaybeUninit<u8>] {
    let pool = Box::leak(vec![MaybeUninit::new(0u8); HEAP_BYTES].into_boxed_slice());
    // A zeroed allocation may be untouched pages: back them, as our heap does.
    for i in (0..HEAP_BYTES).step_by(4096) {
        pool[i] = MaybeUninit::new(black_box(1));
    }
    pool
}

pub(crate) struct RunResult {
    pub(crate) sorted_ns: Vec<f64>,
    pub(crate) syscalls: u64,
    pub(crate) faults: u64,
    pub(crate) stalls: usize,
    pub(crate) failed: usize,
    /// `glibc_tuned` only: a `mallopt` or `mlockall` did not take.
    pub(crate) tune_failed: bool,
}

/// Everything a run carries from warm-up to measurement to clean-up, allocated up front so the
/// measured scope allocates nothing of its own.
struct State {
    live: Vec<Option<(NonNull<u8>, usize)>>,
    size: fn(&mut Rng) -> usize,
    rng: Rng,
    samples: Vec<f64>,
    failed: usize,
}

// SAFETY: the pointers are blocks of a heap that moves between threads together with the state
// (or glibc's, which any thread may free); nothing aliases them.
unsafe impl Send for State {}

impl State {
    fn new(pairs: usize, seed: u64, live: usize, size: fn(&mut Rng) -> usize) -> Self {
        Self {
            live: vec![None; live],
            size,
            rng: Rng(seed | 1),
            // Written now so the measured scope does not fault these pages in.
            samples: vec![-1.0; pairs],
            failed: 0,
        }
    }

    /// Frees one random live block and allocates another of a random size.
    #[inline(always)]
    fn step<H: Allocator>(&mut self, heap: &mut H) -> bool {
        let slot = (self.rng.next() % self.live.len() as u64) as usize;
        if let Some((p, s)) = self.live[slot].take() {
            // SAFETY: allocated below with this size.
            unsafe { heap.free(p, s) };
        }
        let s = (self.size)(&mut self.rng);
        match heap.alloc(s) {
            Some(p) => {
                // Touch the block like a delay line being cleared at its start.
                // SAFETY: at least 16 bytes.
                unsafe { p.as_ptr().write_bytes(0, 16) };
                self.live[slot] = Some((p, s));
                true
            }
            None => false,
        }
    }

    fn warm_up<H: Allocator>(&mut self, heap: &mut H, steps: usize) {
        for _ in 0..steps {
            self.step(heap);
        }
    }

    fn timed<H: Allocator>(&mut self, heap: &mut H) {
        for i in 0..self.samples.len() {
            let t = Instant::now();
            let ok = self.step(heap);
            self.samples[i] = t.elapsed().as_nanos() as f64;
            self.failed += usize::from(!ok);
        }
        black_box(&self.samples);
    }

    fn release<H: Allocator>(&mut self, heap: &mut H) {
        for (p, s) in self.live.iter_mut().filter_map(Option::take) {
            // SAFETY: as in `step`.
            unsafe { heap.free(p, s) };
        }
    }
}

/// Runs the timed part on the guard's thread, so the system calls and page faults it makes
/// are counted.
fn measure(state: &mut State, timed: impl FnOnce(&mut State) + Send) -> RunResult {
    // Allocations are expected for glibc: only system calls and faults are counted here.
    let options = Options::new().allow_allocations(true).stack_size(1 << 20);
    let ((), report) = guard::check_with(&options, || timed(&mut *state));
    let mut sorted_ns = state.samples.clone();
    sorted_ns.sort_by(f64::total_cmp);
    let stalls = sorted_ns.iter().filter(|&&x| x > STALL_NS).count();
    let syscalls = report.syscalls.iter().map(|s| s.count).sum::<u64>()
        + report.allowed_syscalls.iter().map(|s| s.count).sum::<u64>();
    let faults = report.rusage.as_ref().map_or(0, |r| r.page_faults());
    RunResult {
        sorted_ns,
        syscalls,
        faults,
        stalls,
        failed: state.failed,
        tune_failed: false,
    }
}

/// `rlsf::Tlsf` holds raw pointers and is not `Send`; it is moved whole to the measuring thread
/// and back.
struct SendRlsf(Rlsf);
// SAFETY: the heap and its memory are used by one thread at a time.
unsafe impl Send for SendRlsf {}

/// glibc gives every new thread an arena of its own; one arena makes the warm-up on this
/// thread shape the heap the measuring thread then uses.
fn one_glibc_arena() {
    const M_ARENA_MAX: libc::c_int = -8;
    // SAFETY: mallopt only changes a tuning parameter.
    unsafe { libc::mallopt(M_ARENA_MAX, 1) };
}

/// One workload's shape.
struct Workload {
    /// Prefix of its case names ("" for today's workload, whose names the docs cite).
    prefix: &'static str,
    live: usize,
    size: fn(&mut Rng) -> usize,
    pairs: usize,
    warmup: usize,
    /// What the notes say about it.
    describe: String,
}

/// The child process's whole job: one glibc_tuned run of `w`, its tuning set before anything
/// is allocated for it.
fn tuned_child(w: &Workload, seed: u64) -> RunResult {
    let tuned = tuned::tune_glibc();
    let mut state = State::new(w.pairs, seed, w.live, w.size);
    state.warm_up(&mut Glibc, w.warmup);
    let mut r = measure(&mut state, |st| st.timed(&mut Glibc));
    state.release(&mut Glibc);
    r.tune_failed = !tuned;
    r
}

/// One run of `name` on `w`, warmed up and measured on the same heap.
fn run_one(name: &str, w: &Workload, seed: u64, tlsf: &Heap) -> RunResult {
    let mut state = State::new(w.pairs, seed, w.live, w.size);
    match name {
        OURS => {
            // Warm up as one owner, measure as another on the guard's thread: the heap's
            // state carries over, as it would from one audio callback to the next.
            let mut heap = Ours(tlsf.bind().expect("unbound"));
            state.warm_up(&mut heap, w.warmup);
            drop(heap);
            let r = measure(&mut state, |st| {
                let mut heap = Ours(tlsf.bind().expect("unbound"));
                st.timed(&mut heap);
            });
            state.release(&mut Ours(tlsf.bind().expect("unbound")));
            r
        }
        "glibc" => {
            state.warm_up(&mut Glibc, w.warmup);
            let r = measure(&mut state, |st| st.timed(&mut Glibc));
            state.release(&mut Glibc);
            r
        }
        GLIBC_TUNED => unreachable!("glibc_tuned runs in a child process"),
        _ => {
            let mut t = RlsfTlsf::new();
            t.insert_free_block(rlsf_pool());
            let mut heap = SendRlsf(Rlsf(t));
            state.warm_up(&mut heap.0, w.warmup);
            let heap_ref = &mut heap;
            let r = measure(&mut state, move |st| st.timed(&mut heap_ref.0));
            state.release(&mut heap.0);
            r
        }
    }
}

/// Runs every wanted implementation on `w`, alternating their order from run to run, and adds
/// the rows and ratios.
fn run_workload(report: &mut Report, common: &Common, tlsf: &Heap, index: usize, w: &Workload) {
    let runs = common.runs();
    let impls = [OURS, "glibc", "rlsf", GLIBC_TUNED];
    let cases = ["p50", "p99", "p99.9", "p99.99", "max"];
    let mut rows: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); cases.len() + 3]; impls.len()];
    for run in 0..runs {
        let all: Vec<usize> = (0..impls.len()).collect();
        for k in alternating(&all, run) {
            let name = impls[k];
            if !common.wants(name) {
                continue;
            }
            let seed = 0x5eed + run as u64;
            let r = if name == GLIBC_TUNED {
                tuned::in_child(index, seed, common.quick)
                    .unwrap_or_else(|e| panic!("glibc_tuned child process: {e}"))
            } else {
                run_one(name, w, seed, tlsf)
            };
            for (c, q) in [0.5, 0.99, 0.999, 0.9999, 1.0].iter().enumerate() {
                rows[k][c].push(quantile(&r.sorted_ns, *q));
            }
            rows[k][5].push(r.syscalls as f64);
            rows[k][6].push(r.faults as f64);
            rows[k][7].push(r.stalls as f64);
            if r.failed > 0 {
                report.notes.push(format!(
                    "{}{name} run {run}: {} allocations failed",
                    w.prefix, r.failed
                ));
            }
            if r.tune_failed {
                report.notes.push(format!(
                    "{}{name} run {run}: tuning incomplete (mallopt or mlockall failed, see stderr)",
                    w.prefix
                ));
            }
        }
    }
    let p = w.prefix;
    for (k, name) in impls.iter().enumerate() {
        for (c, case) in cases.iter().enumerate() {
            if !rows[k][c].is_empty() {
                report.add(&format!("{p}pair_{case}"), name, "ns", &rows[k][c]);
            }
        }
        if !rows[k][5].is_empty() {
            report.add(&format!("{p}syscalls"), name, "calls", &rows[k][5]);
            report.add(&format!("{p}page_faults"), name, "faults", &rows[k][6]);
            report.add(
                &format!("{p}stalls_over_10us"),
                name,
                "samples",
                &rows[k][7],
            );
        }
    }
    for case in cases {
        for rival in ["glibc", "rlsf", GLIBC_TUNED] {
            let key = format!("{p}pair_{case}");
            report.ratio(&key, &key, OURS, rival, Better::Lower);
        }
    }
    report.notes.push(w.describe.clone());
}

pub fn run(common: &Common) -> Report {
    let mut report = Report::new("alloc");
    let pairs = if common.quick { 20_000 } else { 1_000_000 };
    let warmup = if common.quick { 5_000 } else { 200_000 };
    let runs = common.runs();
    let today = Workload {
        prefix: "",
        live: LIVE,
        size,
        pairs,
        warmup,
        describe: format!(
            "pair_*: {pairs} timed pairs per run after {warmup} warm-up pairs, {LIVE} live blocks, \
             sizes 16 B-64 KiB (40% objects, 50% delay lines 50-400 Hz, 10% log-uniform 4-64 \
             KiB); each pair includes one Instant::now() pair of timing overhead; stalls = \
             samples over 10 us; syscalls and page faults counted by the guard over the timed \
             pairs only; glibc limited to one arena (M_ARENA_MAX=1) so its warm-up shapes the \
             measured heap; glibc_tuned = glibc with M_MMAP_MAX=0, M_TRIM_THRESHOLD=-1 and \
             mlockall(MCL_CURRENT|MCL_FUTURE), in a child process of its own; implementations alternate \
             order run to run; {runs} runs"
        ),
    };
    let large_pairs = pairs / 10;
    let large_warmup = warmup / 10;
    let large = Workload {
        prefix: "large_",
        live: LARGE_LIVE,
        size: large_size,
        pairs: large_pairs,
        warmup: large_warmup,
        describe: format!(
            "large_*: {large_pairs} timed pairs per run after {large_warmup} warm-up pairs, \
             {LARGE_LIVE} live blocks of 128-375 KiB (up to one second of stereo f32 at 48 kHz: \
             above glibc's default mmap threshold), otherwise as pair_*; {runs} runs"
        ),
    };
    let workloads = [today, large];
    one_glibc_arena();
    if let Ok(v) = std::env::var(tuned::CHILD_ENV) {
        // We are the glibc_tuned child: one run, result on stdout, and nothing else.
        let (index, seed) = tuned::parse_child_env(&v)
            .filter(|(i, _)| *i < workloads.len())
            .unwrap_or_else(|| {
                panic!("{}={v:?}: expected <workload 0-1>,<seed>", tuned::CHILD_ENV)
            });
        let r = tuned_child(&workloads[index], seed);
        let code = match tuned::send(&r) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("glibc_tuned child: writing the result: {e}");
                1
            }
        };
        std::process::exit(code);
    }
    let tlsf = Heap::new(HEAP_BYTES).expect("heap");
    if let Some(note) = tlsf.note() {
        report.notes.push(note.to_owned());
    }
    for (index, w) in workloads.iter().enumerate() {
        run_workload(&mut report, common, &tlsf, index, w);
    }
    remote::run(&mut report, common, &tlsf);
    report
}
