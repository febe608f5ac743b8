//! The worker threads' side of the pool, and the type-erased job they run.

use std::sync::atomic::{AtomicBool, Ordering};

use super::{Shared, WorkList};

/// `Shared::active` between callbacks: no worker may enter.
pub(crate) const CLOSED: usize = usize::MAX;

/// Yields between spinning and parking, when a worker waits for the next callback.
const YIELDS: u32 = 4;

/// Spins a thread waits, inside a callback, for more items before leaving the work.
const IDLE_SPINS: u32 = 4_096;

/// A work list with its type erased, so workers can run any `WorkList`. It lives on the
/// audio thread's stack for the duration of `Pool::run`.
pub(crate) struct JobRef {
    data: *const (),
    run: unsafe fn(*const ()),
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
unsafe fn run_erased<W: WorkList>(data: *const ()) {
    // SAFETY: the caller guarantees `data` is a live `W`; `W: Sync`, so sharing it with
    // this thread is sound.
    let work = unsafe { &*(data as *const W) };
    work_until_done(work, Some(IDLE_SPINS));
}

/// Takes ready items and runs each one's chain of reserved successors. With `give_up`,
/// returns after that many spins without finding work (a worker); without, only when the
/// list is done (the audio thread, which must not return early).
pub(crate) fn work_until_done<W: WorkList>(work: &W, give_up: Option<u32>) {
    let mut idle = 0;
    loop {
        if let Some(mut item) = work.next_item() {
            idle = 0;
            while let Some(next) = work.do_work(item) {
                item = next;
            }
        } else if work.is_done() {
            return;
        } else {
            idle += 1;
            if give_up.is_some_and(|limit| idle > limit) {
                return;
            }
            std::hint::spin_loop();
        }
    }
}

pub(crate) fn main(shared: &Shared, parked: &AtomicBool) {
    let mut seen = shared.epoch.load(Ordering::Acquire);
    loop {
        // Idle: wait for the next callback's epoch, spinning, then yielding, then parked.
        let mut waited = 0u32;
        loop {
            if shared.shutdown.load(Ordering::Acquire) {
                return;
            }
            let epoch = shared.epoch.load(Ordering::Acquire);
            if epoch != seen {
                seen = epoch;
                break;
            }
            if waited < shared.spin {
                std::hint::spin_loop();
            } else if waited < shared.spin + YIELDS {
                std::thread::yield_now();
            } else {
                parked.store(true, Ordering::SeqCst);
                if shared.epoch.load(Ordering::SeqCst) == seen
                    && !shared.shutdown.load(Ordering::SeqCst)
                {
                    std::thread::park();
                }
                parked.store(false, Ordering::SeqCst);
                waited = 0;
                continue;
            }
            waited += 1;
        }

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
                (job.run)(job.data);
            }
            shared.active.fetch_sub(1, Ordering::Release);
        }
    }
}
