//! The worker threads' side of the pool, and the type-erased job they run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{Shared, WorkList};

/// `Shared::active` between callbacks: no worker may enter.
pub(crate) const CLOSED: usize = usize::MAX;

/// Yields between spinning and parking, when a worker waits for the next callback.
const YIELDS: u32 = 4;

/// Polls a thread makes, inside a callback, for more items before leaving the work.
const IDLE_SPINS: u32 = 512;

/// Most pauses between two polls of an idle thread. Each poll reads the list's shared
/// counters, which the working threads write once per item: polling flat out would pull
/// those cache lines back and forth on every item (a thread running a long chain while the
/// other polls ran 25-30 ns slower per node), so an idle thread backs off, doubling its
/// pauses up to this many, at the cost of noticing new work up to this many pauses late.
const MAX_BACKOFF: u32 = 16;

/// A work list with its type erased, so workers can run any `WorkList`. It lives on the
/// audio thread's stack for the duration of `Pool::run`.
pub(crate) struct JobRef {
    data: *const (),
    run: unsafe fn(*const (), usize),
}

impl JobRef {
    pub(crate) fn new<W: WorkList>(work: &W) -> Self {
        Self {
            data: work as *const W as *const (),
            run: run_erased::<W>,
        }
    }
}

/// # Safety
/// `data` must point to a live `W`.
unsafe fn run_erased<W: WorkList>(data: *const (), thread: usize) {
    // SAFETY: the caller guarantees `data` is a live `W`; `W: Sync`, so sharing it with
    // this thread is sound.
    let work = unsafe { &*(data as *const W) };
    work_until_done(work, Some(IDLE_SPINS), thread);
}

/// Takes ready items and runs each one's chain of reserved successors. With `give_up`,
/// returns after that many spins without finding work (a worker); without, only when the
/// list is done (the audio thread, which must not return early).
pub(crate) fn work_until_done<W: WorkList>(work: &W, give_up: Option<u32>, thread: usize) {
    let mut idle = 0;
    let mut backoff = 1;
    loop {
        if let Some(mut item) = work.next_item(thread) {
            idle = 0;
            backoff = 1;
            while let Some(next) = work.do_work(item, thread) {
                item = next;
            }
        } else if work.is_done() {
            return;
        } else {
            idle += 1;
            if give_up.is_some_and(|limit| idle > limit) {
                return;
            }
            for _ in 0..backoff {
                std::hint::spin_loop();
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
}

/// `realtime`: the `SCHED_FIFO` priority the worker runs at, if it got one.
pub(crate) fn main(shared: &Shared, parked: &AtomicBool, thread: usize, realtime: Option<i32>) {
    // The epoch the pool was created with, not the one this thread finds when it gets to
    // run: a worker that starts after the first `Pool::run` opened its callback would
    // otherwise take that callback's epoch as already seen and sit it out.
    let mut seen = 0;
    let mut cadence = Cadence::default();
    loop {
        match wait_for_epoch(shared, parked, seen, &cadence, realtime) {
            Some(epoch) => seen = epoch,
            None => return,
        }
        cadence.observe(seen, shared.began.load(Ordering::Relaxed));

        // Enter the current callback's work unless the audio thread already closed it.
        let mut active = shared.active.load(Ordering::Acquire);
        let entered = loop {
            if active == CLOSED {
                break false;
            }
            match shared.active.compare_exchange_weak(
                active,
                active + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break true,
                Err(now) => active = now,
            }
        };
        if entered {
            let job = shared.job.load(Ordering::Acquire);
            // SAFETY: `run` published `job` before opening the pool and does not return,
            // so the job and the work list it points to stay alive, until `active` drops
            // back to 0, which cannot happen before this worker's `fetch_sub` below.
            unsafe {
                let job = &*job;
                (job.run)(job.data, thread);
            }
            shared.active.fetch_sub(1, Ordering::Release);
        }
    }
}

/// Consecutive callbacks a worker remembers to estimate their period.
const INTERVALS: usize = 8;

/// Periods above this are not treated as a steady stream of callbacks (nothing is
/// predicted and the worker waits as it would for an irregular caller).
const LONGEST_PERIOD: Duration = Duration::from_millis(200);

/// When the callbacks began (as the audio thread stamped them): enough to predict the next.
#[derive(Default)]
struct Cadence {
    /// The last epoch seen and its stamp, in nanoseconds since `Shared::base`.
    last: Option<(u64, u64)>,
    /// Recent periods: time between two stamps over the epochs between them.
    periods: [u64; INTERVALS],
    seen: usize,
}

impl Cadence {
    fn observe(&mut self, epoch: u64, began: u64) {
        if let Some((e, t)) = self.last {
            if epoch > e && began > t {
                self.periods[self.seen % INTERVALS] = (began - t) / (epoch - e);
                self.seen += 1;
            }
        }
        self.last = Some((epoch, began));
    }

    /// When the next callback should come (the last one plus the shortest recent period:
    /// the shortest errs on the side of waking early), and the period; `base` is the
    /// instant the stamps count from (`Shared::base`).
    fn next(&self, base: Instant) -> Option<(Instant, Duration)> {
        if self.seen < INTERVALS {
            return None;
        }
        let period = Duration::from_nanos(*self.periods.iter().min()?);
        let (_, began) = self.last?;
        let next = base + Duration::from_nanos(began) + period;
        (period <= LONGEST_PERIOD).then_some((next, period))
    }
}

/// Waits for an epoch other than `seen` and returns it, or `None` on shutdown.
///
/// With a steady stream of callbacks the worker sleeps (parked, so that an early callback
/// still wakes it) until `shared.lead` before the next one is due, then spins: a callback
/// that comes on time finds it awake, costing the audio thread no wake and no wake-up
/// latency, for about one lead of spinning per period. Without a prediction, or once the
/// callback is a quarter period late, it spins `shared.spin` times, yields, then parks.
fn wait_for_epoch(
    shared: &Shared,
    parked: &AtomicBool,
    seen: u64,
    cadence: &Cadence,
    realtime: Option<i32>,
) -> Option<u64> {
    let changed = || {
        if shared.shutdown.load(Ordering::Acquire) {
            return Some(None);
        }
        let epoch = shared.epoch.load(Ordering::Acquire);
        (epoch != seen).then_some(Some(epoch))
    };
    if let Some((next, period)) = cadence.next(shared.base).filter(|_| !shared.lead.is_zero()) {
        let wake = next.checked_sub(shared.lead).unwrap_or(next);
        // `park_timeout` may return early (a wake meant for an earlier park, or none at
        // all); sleep again for what is left unless the callback came.
        loop {
            if let Some(r) = changed() {
                return r;
            }
            let now = Instant::now();
            if now >= wake {
                break;
            }
            park_while_unchanged(shared, parked, seen, Some(wake - now));
        }
        // Spin at normal priority: the lead falls just before this process's callback, when
        // the other clients of the same audio graph (JACK's, say, at lower real-time
        // priorities) are running, and a real-time thread spinning on their core would starve
        // them. The worker takes its priority back when the callback comes (a system call of
        // the worker's, not the audio thread's).
        let _normal = Demoted::new(realtime);
        // A late callback (a timer that fired late, a busy host) still finds the worker
        // awake if it comes within a quarter period; that spinning only happens when the
        // callback is late, and a stream that stopped costs it once.
        let give_up = next + (period / 4).max(shared.lead);
        let mut spins = 0u32;
        loop {
            if let Some(r) = changed() {
                return r;
            }
            spins = spins.wrapping_add(1);
            // Reading the clock costs more than a pause; look at it now and then.
            if spins % 64 == 0 && Instant::now() > give_up {
                break;
            }
            std::hint::spin_loop();
        }
    }
    let mut waited = 0u32;
    loop {
        if let Some(r) = changed() {
            return r;
        }
        if waited < shared.spin {
            std::hint::spin_loop();
        } else if waited < shared.spin + YIELDS {
            std::thread::yield_now();
        } else {
            park_while_unchanged(shared, parked, seen, None);
            waited = 0;
            continue;
        }
        waited += 1;
    }
}

/// Parks (for at most `timeout`) unless the epoch moved on, with `parked` set meanwhile so
/// that `Pool::run` wakes this worker.
fn park_while_unchanged(
    shared: &Shared,
    parked: &AtomicBool,
    seen: u64,
    timeout: Option<Duration>,
) {
    parked.store(true, Ordering::SeqCst);
    // SeqCst pairs with `run`'s epoch increment and `parked` load: either this load sees
    // the new epoch, or `run` sees `parked` and unparks the thread.
    if shared.epoch.load(Ordering::SeqCst) == seen && !shared.shutdown.load(Ordering::SeqCst) {
        match timeout {
            Some(t) => std::thread::park_timeout(t),
            None => std::thread::park(),
        }
    }
    parked.store(false, Ordering::SeqCst);
}

/// Normal scheduling for the calling worker while it lives; its real-time priority back on
/// drop. Refusals are ignored: the worker then spins at whatever priority it has.
struct Demoted(Option<i32>);

impl Demoted {
    fn new(realtime: Option<i32>) -> Self {
        if realtime.is_some() {
            let _ = super::thread::set_current_thread_normal();
        }
        Self(realtime)
    }
}

impl Drop for Demoted {
    fn drop(&mut self) {
        if let Some(p) = self.0 {
            let _ = super::set_current_thread_realtime(p);
        }
    }
}
