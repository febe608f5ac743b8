//! The worker threads' side of the pool, and the type-erased job they run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::{Shared, WorkList};

/// `Shared::active` between callbacks: no worker may enter.
pub(crate) const CLOSED: usize = usize::MAX;

/// Yields between spinning and parking, when a worker waits for the next callback.
const YIELDS: u32 = 4;

/// The shortest wait for a predicted callback a worker spends at normal priority. Leaving
/// and taking back real-time priority is two system calls of a few microseconds; a wait
/// shorter than this (callbacks back to back, as an offline render's are: its period is the
/// time a block takes) gives the other threads no time worth them, and would put the second
/// call at the start of every block.
const SHORTEST_DEMOTED_WAIT: u64 = 50_000;

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
    let mut live = Live {
        shared,
        parked,
        realtime,
    };
    let mut waiter = Waiter::new(shared.lead, shared.spin);
    while waiter.next_callback(&mut live).is_some() {
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

/// What waiting between callbacks does to the world: read the clock and the epoch, park,
/// spin, yield. A worker thread has [`Live`]; the tests below have a clock that only moves
/// when the worker sleeps, spins or yields, so that what a callback finds the worker doing is
/// decided by [`Waiter`] alone, not by when the machine let the thread run.
trait Waiting {
    /// Held while the worker spins ahead of a predicted callback.
    type Demoted;
    /// Nanoseconds since `Shared::base`: the clock the audio thread stamps callbacks with.
    fn now(&mut self) -> u64;
    /// The current epoch, or `None` once the pool shuts down.
    fn epoch(&mut self) -> Option<u64>;
    /// When the current epoch's callback began (`Shared::began`).
    fn began(&mut self) -> u64;
    /// Parks for at most `timeout` unless the epoch is no longer `seen`; a callback that
    /// comes meanwhile finds the worker parked and wakes it (the audio thread's one system
    /// call, counted in `Pool::wakes`).
    fn park(&mut self, seen: u64, timeout: Option<Duration>);
    /// One pause of a busy wait.
    fn spin(&mut self);
    /// Gives the core to another thread that wants it.
    fn yield_now(&mut self);
    /// Ordinary scheduling until the returned guard drops.
    fn demote(&mut self) -> Self::Demoted;
}

/// A worker thread's [`Waiting`]: the pool's shared state, the system clock and scheduler.
struct Live<'a> {
    shared: &'a Shared,
    parked: &'a AtomicBool,
    realtime: Option<i32>,
}

impl Waiting for Live<'_> {
    type Demoted = Demoted;
    fn now(&mut self) -> u64 {
        self.shared.base.elapsed().as_nanos() as u64
    }
    fn epoch(&mut self) -> Option<u64> {
        if self.shared.shutdown.load(Ordering::Acquire) {
            return None;
        }
        Some(self.shared.epoch.load(Ordering::Acquire))
    }
    fn began(&mut self) -> u64 {
        self.shared.began.load(Ordering::Relaxed)
    }
    fn park(&mut self, seen: u64, timeout: Option<Duration>) {
        park_while_unchanged(self.shared, self.parked, seen, timeout);
    }
    fn spin(&mut self) {
        std::hint::spin_loop();
    }
    fn yield_now(&mut self) {
        std::thread::yield_now();
    }
    fn demote(&mut self) -> Demoted {
        Demoted::new(self.realtime)
    }
}

/// A worker's side of the wait between callbacks: the epoch it saw last, what it learned
/// of the callbacks' cadence, and the pool's settings.
struct Waiter {
    seen: u64,
    cadence: Cadence,
    /// `PoolConfig::lead` in nanoseconds; 0 turns prediction off.
    lead: u64,
    spin: u32,
}

impl Waiter {
    fn new(lead: Duration, spin: u32) -> Self {
        Self {
            // The epoch the pool was created with, not the one this thread finds when it
            // gets to run: a worker that starts after the first `Pool::run` opened its
            // callback would otherwise take that callback's epoch as already seen and sit
            // it out.
            seen: 0,
            cadence: Cadence::default(),
            lead: u64::try_from(lead.as_nanos()).unwrap_or(u64::MAX),
            spin,
        }
    }

    /// Waits for an epoch other than the last seen and returns it, or `None` on shutdown.
    fn next_callback(&mut self, world: &mut impl Waiting) -> Option<u64> {
        self.seen = self.wait(world)?;
        self.cadence.observe(self.seen, world.began());
        Some(self.seen)
    }

    /// The wait of [`next_callback`](Self::next_callback).
    ///
    /// With a steady stream of callbacks the worker sleeps (parked, so that an early callback
    /// still wakes it) until `lead` before the next one is due, then spins: a callback that
    /// comes on time finds it awake, costing the audio thread no wake and no wake-up
    /// latency, for about one lead of spinning per period. Without a prediction, or once the
    /// callback is a quarter period late, it spins `spin` times, yields, then parks.
    fn wait<W: Waiting>(&self, world: &mut W) -> Option<u64> {
        let seen = self.seen;
        let changed = |world: &mut W| match world.epoch() {
            None => Some(None),
            Some(epoch) => (epoch != seen).then_some(Some(epoch)),
        };
        if let Some((next, period)) = self.cadence.next().filter(|_| self.lead != 0) {
            let wake = next.saturating_sub(self.lead);
            // `park` may return early (a wake meant for an earlier park, or none at all);
            // sleep again for what is left unless the callback came.
            loop {
                if let Some(r) = changed(world) {
                    return r;
                }
                let now = world.now();
                if now >= wake {
                    break;
                }
                world.park(seen, Some(Duration::from_nanos(wake - now)));
            }
            // Spin at normal priority: the lead falls just before this process's callback,
            // when the other clients of the same audio graph (JACK's, say, at lower real-time
            // priorities) are running, and a real-time thread spinning on their core would
            // starve them. The worker takes its priority back when the callback comes (a
            // system call of the worker's, not the audio thread's). Not for a wait too short
            // to give anything away (`SHORTEST_DEMOTED_WAIT`).
            let _normal =
                (next.saturating_sub(world.now()) >= SHORTEST_DEMOTED_WAIT).then(|| world.demote());
            // A late callback (a timer that fired late, a busy host) still finds the worker
            // awake if it comes within a quarter period; that spinning only happens when the
            // callback is late, and a stream that stopped costs it once.
            let give_up = next.saturating_add((period / 4).max(self.lead));
            let mut spins = 0u32;
            loop {
                if let Some(r) = changed(world) {
                    return r;
                }
                spins = spins.wrapping_add(1);
                // Reading the clock costs more than a pause; look at it now and then.
                if spins % 64 == 0 && world.now() > give_up {
                    break;
                }
                world.spin();
            }
        }
        let mut waited = 0u32;
        loop {
            if let Some(r) = changed(world) {
                return r;
            }
            if waited < self.spin {
                world.spin();
            } else if waited < self.spin + YIELDS {
                world.yield_now();
            } else {
                world.park(seen, None);
                waited = 0;
                continue;
            }
            waited += 1;
        }
    }
}

/// Consecutive callbacks a worker remembers to estimate their period.
const INTERVALS: usize = 8;

/// Periods above this are not treated as a steady stream of callbacks (nothing is
/// predicted and the worker waits as it would for an irregular caller).
const LONGEST_PERIOD: Duration = Duration::from_millis(200);

/// When the callbacks began (as the audio thread stamped them, in nanoseconds since
/// `Shared::base`): enough to predict the next. Stamps, not when the worker saw a callback:
/// a worker woken late would otherwise predict late, and sleep through the next one too.
#[derive(Default)]
struct Cadence {
    /// The last epoch seen and its stamp.
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

    /// When the next callback should come, and the period, in nanoseconds: the last stamp
    /// plus the shortest recent period that is not an outlier. The shortest errs on the side
    /// of waking early (a callback's jitter is covered); a period more than an eighth below
    /// the median is left out, because it is one odd callback, not the stream's pace (one
    /// that came early, or the one back on the beat after a late one), and taking it would
    /// make the worker wake early, spin past its give-up and park for the next `INTERVALS`
    /// callbacks, each of which would then have to wake it. A real change of pace takes over
    /// once it is most of the recent periods.
    fn next(&self) -> Option<(u64, u64)> {
        if self.seen < INTERVALS {
            return None;
        }
        let mut sorted = self.periods;
        sorted.sort_unstable();
        let median = sorted[INTERVALS / 2];
        let period = *sorted.iter().find(|&&p| p >= median - median / 8)?;
        let (_, began) = self.last?;
        (period <= LONGEST_PERIOD.as_nanos() as u64).then_some((began + period, period))
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

/// The wake prediction against a clock that moves only when the worker parks, spins or
/// yields, so that what each callback finds the worker doing follows from the design alone.
/// `tests/pool.rs` shows the same on real threads, where a loaded machine can make it fail.
#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const PERIOD: u64 = 20 * MS;
    const LEAD: Duration = Duration::from_millis(1);
    /// What `tests/pool.rs` gives its workers: no spinning, only the yields, before parking.
    const SPIN: u32 = 0;
    /// What one pause, yield, futex wake and a callback's work take on the fake clock. The
    /// wake and the work are there so that the worker, like a real one, sees a callback a
    /// little after its stamp.
    const PAUSE: u64 = 100;
    const YIELD: u64 = 5_000;
    const WAKE_LATENCY: u64 = 50_000;
    const WORK: u64 = 300_000;

    /// Callbacks stamped at fixed times, and what the worker was doing when each came.
    struct Fake {
        now: u64,
        stamps: Vec<u64>,
        /// Per callback: it found the worker parked, so the audio thread had to wake it.
        woken: Vec<bool>,
        /// Per callback: time the worker spent spinning while waiting for it.
        spun: Vec<u64>,
        /// From a callback that finds the worker parked to the worker running again.
        wake_latency: u64,
        /// Per callback: whether the worker waited for it at normal priority.
        demoted: Vec<bool>,
    }

    impl Fake {
        fn new(stamps: &[u64]) -> Self {
            Self {
                now: 0,
                stamps: stamps.to_vec(),
                woken: vec![false; stamps.len()],
                spun: vec![0; stamps.len()],
                wake_latency: WAKE_LATENCY,
                demoted: vec![false; stamps.len()],
            }
        }

        /// One worker waiting for each callback and working on it for [`WORK`].
        fn run(mut self, lead: Duration) -> Self {
            let mut waiter = Waiter::new(lead, SPIN);
            for k in 0..self.stamps.len() {
                let epoch = waiter.next_callback(&mut self);
                assert_eq!(epoch, Some(k as u64 + 1), "the worker sees every callback");
                self.now = self.now.max(self.stamps[k]) + WORK;
            }
            self
        }

        /// Callbacks that began so far: the epoch the audio thread has published.
        fn current(&self) -> u64 {
            self.stamps.iter().filter(|&&t| t <= self.now).count() as u64
        }
    }

    impl Waiting for Fake {
        type Demoted = ();
        fn now(&mut self) -> u64 {
            self.now
        }
        fn epoch(&mut self) -> Option<u64> {
            Some(self.current())
        }
        fn began(&mut self) -> u64 {
            self.stamps[self.current() as usize - 1]
        }
        fn park(&mut self, seen: u64, timeout: Option<Duration>) {
            if self.current() != seen {
                return;
            }
            let next = self.current() as usize;
            let until = timeout.map(|t| self.now + t.as_nanos() as u64);
            match self.stamps.get(next) {
                Some(&stamp) if until.is_none_or(|until| stamp <= until) => {
                    self.woken[next] = true;
                    self.now = stamp + self.wake_latency;
                }
                _ => self.now = until.expect("parked with no callback to come"),
            }
        }
        fn spin(&mut self) {
            let next = self.current() as usize;
            self.spun[next] += PAUSE;
            self.now += PAUSE;
        }
        fn yield_now(&mut self) {
            self.now += YIELD;
        }
        fn demote(&mut self) {
            let next = self.current() as usize;
            self.demoted[next] = true;
        }
    }

    /// What one worker with `lead` did with callbacks stamped at `stamps`.
    fn run(lead: Duration, stamps: &[u64]) -> Fake {
        Fake::new(stamps).run(lead)
    }

    /// `n` callbacks `PERIOD` apart, the one at `at` moved by `by` nanoseconds (negative
    /// earlier).
    fn callbacks(n: u64, at: u64, by: i64) -> Vec<u64> {
        (1..=n)
            .map(|k| k * PERIOD)
            .enumerate()
            .map(|(i, t)| {
                if i as u64 == at {
                    t.checked_add_signed(by).unwrap()
                } else {
                    t
                }
            })
            .collect()
    }

    /// Indices of the callbacks that had to wake the worker.
    fn woken(fake: &Fake) -> Vec<usize> {
        (0..fake.woken.len()).filter(|&k| fake.woken[k]).collect()
    }

    /// Callbacks before the worker has seen `INTERVALS` periods: nothing predicted, so it
    /// parks and each of them wakes it.
    const WARM_UP: usize = INTERVALS + 1;

    #[test]
    fn steady_callbacks_find_the_worker_awake_after_warm_up() {
        let fake = run(LEAD, &callbacks(60, 0, 0));
        assert_eq!(woken(&fake), (0..WARM_UP).collect::<Vec<_>>());
        // The cost of being awake: it spins for one lead before each callback, no more.
        for k in WARM_UP..60 {
            let spun = fake.spun[k];
            assert!(
                spun <= LEAD.as_nanos() as u64 + 64 * PAUSE,
                "callback {k}: spun {spun} ns"
            );
        }
    }

    #[test]
    fn a_worker_waits_at_normal_priority_only_when_the_wait_is_long() {
        // Callbacks a period apart: each waited for through a lead, demoted.
        let fake = run(LEAD, &callbacks(60, 0, 0));
        assert!(fake.demoted[WARM_UP..].iter().all(|&d| d));
        // Back to back, as an offline render's: the next is due as the work ends, and the
        // worker keeps its priority instead of two system calls per block.
        let stamps: Vec<u64> = (1..=60).map(|k| k * (WORK + 20_000)).collect();
        let fake = run(LEAD, &stamps);
        assert_eq!(fake.demoted.iter().filter(|&&d| d).count(), 0);
    }

    #[test]
    fn without_a_lead_every_callback_wakes_the_worker() {
        let fake = run(Duration::ZERO, &callbacks(60, 0, 0));
        assert_eq!(woken(&fake), (0..60).collect::<Vec<_>>());
    }

    #[test]
    fn an_irregular_callback_finds_the_worker_as_the_design_says() {
        const AT: u64 = 30;
        let quarter = PERIOD as i64 / 4;
        let lead = LEAD.as_nanos() as i64;
        // (moved by, woken): early by more than the lead, the worker is still in its timed
        // sleep, parked, so the callback wakes it (and is not missed); early by less, it is
        // spinning already; late by up to a quarter period it is still spinning; later, it
        // has given up, parked, and must be woken.
        let cases = [
            (-4 * lead, true),
            (-2 * lead, true),
            (-lead / 2, false),
            (lead / 2, false),
            (3 * MS as i64, false),
            (quarter, false),
            // It reads the clock only every 64 pauses and yields a few times before it
            // parks: a callback just after the quarter still finds it awake.
            (
                quarter + 64 * PAUSE as i64 + YIELDS as i64 * YIELD as i64,
                true,
            ),
            (8 * MS as i64, true),
            (12 * MS as i64, true),
        ];
        for (by, expected) in cases {
            let fake = run(LEAD, &callbacks(60, AT, by));
            assert_eq!(
                fake.woken[AT as usize],
                expected,
                "callback moved by {by} ns: woken {:?}",
                woken(&fake)
            );
            // Once the irregular periods have left the worker's memory, it is predicted
            // awake again; before then it may need waking (for one reason, see
            // `a_late_callback_makes_the_next_one_early`).
            let after = AT as usize + INTERVALS + 2;
            assert!(
                woken(&fake).iter().all(|&k| k < after),
                "callback moved by {by} ns: woken {:?}",
                woken(&fake)
            );
        }
    }

    #[test]
    fn an_odd_callback_costs_at_most_one_wake_and_no_spinning_after_it() {
        // A callback moved by more than the lead, early or late: it may find the worker
        // parked (one wake), and so may the one after it; the rest come as predicted, and
        // the worker spins about one lead before each, as `PoolConfig::lead` says.
        const AT: usize = 30;
        let lead = LEAD.as_nanos() as u64;
        for by in [-8, -5, -3, 3, 5, 8, 12].map(|ms: i64| ms * MS as i64) {
            let fake = run(LEAD, &callbacks(60, AT as u64, by));
            let after: Vec<usize> = woken(&fake).into_iter().filter(|&k| k >= WARM_UP).collect();
            assert!(
                after.iter().all(|&k| k == AT || k == AT + 1) && after.len() <= 2,
                "callback moved by {} ms: woken {after:?}",
                by / MS as i64
            );
            for k in (WARM_UP..60).filter(|&k| k != AT && k != AT + 1) {
                assert!(
                    fake.spun[k] <= 2 * lead + 64 * PAUSE,
                    "callback moved by {} ms: callback {k} spun {} ns",
                    by / MS as i64,
                    fake.spun[k]
                );
            }
        }
    }

    #[test]
    fn a_late_callback_makes_the_next_one_early() {
        // Predicted from the late stamp, the callback after it, back on the beat, comes
        // early (by more than the lead) and finds the worker asleep: one wake. The one after
        // is predicted from the shortened period, so early enough.
        let fake = run(LEAD, &callbacks(60, 30, 3 * MS as i64));
        let mut expected: Vec<usize> = (0..WARM_UP).collect();
        expected.push(31);
        assert_eq!(woken(&fake), expected);
    }

    #[test]
    fn a_worker_woken_late_still_predicts_from_the_stamps() {
        // A loaded machine wakes each parked worker 3 ms late. Predicting from when it saw
        // the last callback, the worker would sleep past the next one and be woken late
        // again, for ever; predicting from the stamps, it is awake from the first prediction.
        let mut fake = Fake::new(&callbacks(60, 0, 0));
        fake.wake_latency = 3 * MS;
        let fake = fake.run(LEAD);
        assert_eq!(woken(&fake), (0..WARM_UP).collect::<Vec<_>>());
    }

    #[test]
    fn the_next_callback_is_the_last_stamp_plus_the_shortest_period_near_the_median() {
        let mut cadence = Cadence::default();
        for epoch in 1..=INTERVALS as u64 {
            cadence.observe(epoch, epoch * PERIOD);
            assert_eq!(cadence.next(), None, "{epoch} callbacks are too few");
        }
        let last = INTERVALS as u64 + 1;
        cadence.observe(last, last * PERIOD);
        assert_eq!(cadence.next(), Some(((last + 1) * PERIOD, PERIOD)));
        // An epoch the worker did not see (it was busy) spreads the time over both.
        cadence.observe(last + 2, (last + 2) * PERIOD);
        assert_eq!(cadence.next(), Some(((last + 3) * PERIOD, PERIOD)));
        // One much shorter period is one odd callback, not the pace: it is left out.
        let mut t = (last + 2) * PERIOD + PERIOD / 2;
        cadence.observe(last + 3, t);
        assert_eq!(cadence.next(), Some((t + PERIOD, PERIOD)));
        // A little shorter is jitter, and the shortest errs early.
        let jittered = PERIOD - PERIOD / 10;
        t += jittered;
        cadence.observe(last + 4, t);
        assert_eq!(cadence.next(), Some((t + jittered, jittered)));
        // A new pace takes over once it is most of the recent periods.
        let mut epoch = last + 4;
        for _ in 0..INTERVALS {
            epoch += 1;
            t += PERIOD;
            cadence.observe(epoch, t);
        }
        for k in 1..=INTERVALS / 2 + 1 {
            epoch += 1;
            t += PERIOD / 2;
            cadence.observe(epoch, t);
            let expected = if k > INTERVALS / 2 {
                PERIOD / 2
            } else {
                PERIOD
            };
            assert_eq!(
                cadence.next().map(|(_, p)| p),
                Some(expected),
                "{k} short periods"
            );
        }
        for _ in 0..INTERVALS {
            epoch += 1;
            t += PERIOD;
            cadence.observe(epoch, t);
        }
        assert_eq!(cadence.next(), Some((t + PERIOD, PERIOD)));
        let last = epoch;
        // A stream slower than `LONGEST_PERIOD` is not predicted.
        let slow = LONGEST_PERIOD.as_nanos() as u64 + 1;
        for epoch in 1..=INTERVALS as u64 {
            t += slow;
            cadence.observe(last + epoch, t);
        }
        assert_eq!(cadence.next(), None);
    }
}
