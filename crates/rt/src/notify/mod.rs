//! A real-time-safe "async updater": the audio thread triggers, a callback runs later on the
//! thread that owns the [`Dispatcher`] (after D. Rowland, "Real-time Trade-offs").
//!
//! JUCE's `AsyncUpdater` sets an atomic flag and then posts to the OS message queue, which can
//! lock, allocate and write to a socket: not safe on the audio thread. Here a trigger never
//! does any of that:
//!
//! * [`Notifier::trigger`] is one atomic swap of the notifier's state. Repeated triggers before
//!   the callback runs coalesce into one delivery. The first trigger after a delivery also takes
//!   a ticket (one `fetch_add`) and publishes it (one store) so deliveries come out **in trigger
//!   order across notifiers**. Every notifier owns one slot of a preallocated ring and holds at
//!   most one ticket at a time, so the ring cannot overflow: no allocation, no lock, no retry
//!   loop, no system call (under [`Strategy::Poll`] and [`Strategy::BlockPhase`]).
//! * The callbacks live in the [`Dispatcher`] and run on its thread, in
//!   [`dispatch`](Dispatcher::dispatch), [`wait_and_dispatch`](Dispatcher::wait_and_dispatch) or
//!   [`run_until`](Dispatcher::run_until).
//! * [`Notifier::cancel_pending`] withdraws a trigger; [`Dispatcher::handle_now_if_needed`]
//!   runs a pending callback at once instead of waiting for its turn.
//! * Teardown is safe while triggers race: the state a trigger touches is shared through an
//!   `Arc` and outlives both the dispatcher and [`Dispatcher::remove`]; a removed or dropped
//!   callback is simply never called again.
//!
//! # How the dispatcher wakes up
//!
//! Chosen per dispatcher with [`Strategy`]:
//!
//! | strategy | latency | dispatcher cost | triggering thread |
//! |---|---|---|---|
//! | [`Poll`](Strategy::Poll) | up to one period | one wake per period | atomics only |
//! | [`BlockPhase`](Strategy::BlockPhase) | a fraction of a block | one wake per block | atomics only (plus reading the vDSO clock in [`BlockClock::block_ended`]) |
//! | [`Signal`](Strategy::Signal) | a thread wake-up (µs) | sleeps until triggered | a futex wake syscall when the dispatcher sleeps |
//!
//! `Signal` is fast but, like the `WaitableEvent` of "Real-time Trade-offs", **not strictly real-time safe**: the
//! trigger that finds the dispatcher asleep makes one `futex` wake system call (counted in
//! [`DispatchStats::signals`]). Triggers that find it awake, or coalesce, make none.
//!
//! # Example
//!
//! ```
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use std::sync::Arc;
//! use std::time::Duration;
//! use downbeat_rt::notify::{Dispatcher, Strategy};
//!
//! let mut dispatcher = Dispatcher::new(Strategy::Poll { period: Duration::from_millis(1) }, 4);
//! let redraws = Arc::new(AtomicU32::new(0));
//! let seen = Arc::clone(&redraws);
//! let meters = dispatcher.register(move || { seen.fetch_add(1, Ordering::Relaxed); }).unwrap();
//!
//! // On the audio thread (a clone of the notifier moves there):
//! let audio_side = meters.clone();
//! std::thread::spawn(move || { audio_side.trigger(); audio_side.trigger(); }).join().unwrap();
//!
//! // On the message thread: both triggers coalesce into one callback.
//! dispatcher.wait_and_dispatch();
//! assert_eq!(redraws.load(Ordering::Relaxed), 1);
//! ```

mod futex;

use std::fmt;
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{now_ns, sleep_until_ns, LatePolicy, Spin, Ticker, TickerOptions};

/// Not pending, holds no ticket.
const IDLE: u8 = 0;
/// Pending: holds a ticket and wants its callback.
const QUEUED: u8 = 1;
/// Holds a ticket but the callback is no longer wanted (cancelled or handled early).
const CANCELLED: u8 = 2;

/// Longest a [`Strategy::Signal`] dispatcher sleeps without a trigger, so
/// [`Dispatcher::run_until`] notices its stop flag.
const SIGNAL_IDLE_WAKE: Duration = Duration::from_millis(50);

/// How the dispatcher's thread learns that there is something to deliver. See the
/// [module docs](self) for the trade-offs.
#[derive(Clone, Debug)]
pub enum Strategy {
    /// Look every `period` (driven by a [`Ticker`], absolute deadlines, no spinning).
    Poll {
        /// The polling period, e.g. 1 ms.
        period: Duration,
    },
    /// Look just after each audio block ends: `delay` after the end predicted from `clock`,
    /// which the audio thread updates with [`BlockClock::block_ended`].
    BlockPhase {
        /// The block clock the audio thread publishes.
        clock: BlockClock,
        /// How long after the predicted end to look, covering the block's own jitter.
        delay: Duration,
    },
    /// Sleep on a futex; a trigger that finds the dispatcher asleep wakes it (a system call on
    /// the triggering thread).
    Signal,
}

struct BlockClockInner {
    period_ns: AtomicU64,
    last_end_ns: AtomicU64,
}

/// The audio block clock, published by the audio thread for [`Strategy::BlockPhase`]: its
/// period, and when the last block ended.
///
/// ```
/// use std::time::Duration;
/// use downbeat_rt::notify::BlockClock;
///
/// let clock = BlockClock::new(Duration::from_micros(5_805));
/// // At the end of every audio callback (reads the vDSO clock, stores one atomic):
/// clock.block_ended();
/// assert!(clock.last_end_ns().is_some());
/// ```
#[derive(Clone)]
pub struct BlockClock(Arc<BlockClockInner>);

impl fmt::Debug for BlockClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockClock")
            .field("period", &self.period())
            .field("last_end_ns", &self.last_end_ns())
            .finish()
    }
}

impl BlockClock {
    /// A clock for blocks of `period`, no block seen yet.
    pub fn new(period: Duration) -> Self {
        Self(Arc::new(BlockClockInner {
            period_ns: AtomicU64::new(period.as_nanos().max(1) as u64),
            last_end_ns: AtomicU64::new(0),
        }))
    }

    /// Marks the end of a block now. Real-time safe: one read of the monotonic clock (vDSO, no
    /// system call) and one atomic store.
    pub fn block_ended(&self) {
        self.block_ended_at(now_ns());
    }

    /// Marks the end of a block at `ns` ([`crate::clock::now_ns`] nanoseconds), for a
    /// caller that already read the clock.
    pub fn block_ended_at(&self, ns: u64) {
        self.0.last_end_ns.store(ns.max(1), Ordering::Release);
    }

    /// Changes the block period (the device's buffer size or rate changed).
    pub fn set_period(&self, period: Duration) {
        self.0
            .period_ns
            .store(period.as_nanos().max(1) as u64, Ordering::Release);
    }

    /// The block period.
    pub fn period(&self) -> Duration {
        Duration::from_nanos(self.0.period_ns.load(Ordering::Acquire))
    }

    /// When the last block ended, if one has.
    pub fn last_end_ns(&self) -> Option<u64> {
        match self.0.last_end_ns.load(Ordering::Acquire) {
            0 => None,
            ns => Some(ns),
        }
    }
}

/// What triggers share with the dispatcher. Lives as long as any notifier or the dispatcher.
struct Shared {
    /// One state per notifier: IDLE, QUEUED or CANCELLED.
    states: Box<[AtomicU8]>,
    /// The ticket ring: slot `t % capacity` holds `id + 1` for ticket `t`, or 0 when free.
    ring: Box<[AtomicU32]>,
    tail: AtomicU64,
    /// Futex word: 1 while the dispatcher sleeps (signal strategy).
    sleeping: AtomicU32,
    signal: bool,
    signals: AtomicU64,
}

/// The audio-thread side of one callback: cheap to clone, `Send + Sync`, real-time safe to
/// [`trigger`](Self::trigger). The role of JUCE's `AsyncUpdater::triggerAsyncUpdate`.
///
/// Dropping a notifier never frees memory unless it is the last handle on the shared state and
/// the dispatcher is gone too: keep one clone off the audio thread (the message thread usually
/// does) so that the last free happens there.
#[derive(Clone)]
pub struct Notifier {
    shared: Arc<Shared>,
    id: u32,
}

/// The name "Real-time Trade-offs" and JUCE use for a [`Notifier`].
pub type AsyncUpdater = Notifier;

impl fmt::Debug for Notifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notifier")
            .field("id", &self.id)
            .field("pending", &self.is_pending())
            .finish()
    }
}

impl Notifier {
    /// Asks for the callback to run on the dispatcher's thread. Coalesces: any number of
    /// triggers before the callback runs give one call. Never allocates, locks or blocks; see
    /// the [module docs](self) for the exact atomic operations and the one case
    /// ([`Strategy::Signal`], dispatcher asleep) that makes a system call.
    pub fn trigger(&self) {
        let s = &*self.shared;
        let id = self.id as usize;
        if s.states[id].swap(QUEUED, Ordering::AcqRel) != IDLE {
            // Still holds its ticket: the delivery already planned covers this trigger.
            return;
        }
        let ticket = s.tail.fetch_add(1, Ordering::AcqRel);
        // Free by construction: at most one ticket per notifier, as many slots as notifiers.
        s.ring[(ticket % s.ring.len() as u64) as usize].store(self.id + 1, Ordering::Release);
        if s.signal {
            // Pairs with the dispatcher's fence between announcing sleep and re-checking the
            // ring: either it sees our ticket, or we see it asleep.
            fence(Ordering::SeqCst);
            if s.sleeping.load(Ordering::Relaxed) == 1 && s.sleeping.swap(0, Ordering::AcqRel) == 1
            {
                s.signals.fetch_add(1, Ordering::Relaxed);
                futex::wake_one(&s.sleeping);
            }
        }
    }

    /// Withdraws a trigger that has not been delivered yet; a later trigger re-arms it.
    /// Returns whether one was pending. Real-time safe (one compare-and-swap).
    pub fn cancel_pending(&self) -> bool {
        self.shared.states[self.id as usize]
            .compare_exchange(QUEUED, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Whether a trigger is waiting for delivery.
    pub fn is_pending(&self) -> bool {
        self.shared.states[self.id as usize].load(Ordering::Acquire) == QUEUED
    }
}

/// The dispatcher is full: it was created with room for fewer notifiers.
///
/// ```
/// use std::time::Duration;
/// use downbeat_rt::notify::{Dispatcher, DispatcherFull, Strategy};
/// let mut d = Dispatcher::new(Strategy::Poll { period: Duration::from_millis(10) }, 1);
/// d.register(|| ()).unwrap();
/// assert_eq!(d.register(|| ()).unwrap_err(), DispatcherFull { capacity: 1 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatcherFull {
    /// The capacity it was created with.
    pub capacity: usize,
}

impl fmt::Display for DispatcherFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the dispatcher holds at most {} notifiers; create it with a larger capacity",
            self.capacity
        )
    }
}

impl std::error::Error for DispatcherFull {}

/// Counters of a [`Dispatcher`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DispatchStats {
    /// Times the dispatcher's thread woke up to look (poll ticks, block phases, signals and
    /// timeouts).
    pub wakes: u64,
    /// Callbacks run.
    pub delivered: u64,
    /// Futex wakes made by triggering threads (signal strategy only): their system calls.
    pub signals: u64,
}

type Callback = Box<dyn FnMut() + Send>;

enum Waiter {
    // Boxed: the ticker's 1 KiB window would bloat the other variants.
    Poll(Box<Ticker>),
    BlockPhase {
        clock: BlockClock,
        delay_ns: u64,
        last_look_ns: u64,
    },
    Signal,
}

/// Owns the callbacks and runs them on its thread, in trigger order. See the
/// [module docs](self).
pub struct Dispatcher {
    shared: Arc<Shared>,
    callbacks: Vec<Option<Callback>>,
    head: u64,
    waiter: Waiter,
    wakes: u64,
    delivered: u64,
}

impl fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dispatcher")
            .field("capacity", &self.capacity())
            .field("registered", &self.callbacks.len())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Dispatcher {
    /// A dispatcher with room for `capacity` notifiers (at least one), all memory preallocated.
    ///
    /// # Panics
    /// If `capacity` does not fit in a `u32`, or a [`Strategy::Poll`] period is zero.
    pub fn new(strategy: Strategy, capacity: usize) -> Self {
        let capacity = capacity.max(1);
        assert!(capacity < u32::MAX as usize, "capacity too large");
        let signal = matches!(strategy, Strategy::Signal);
        let waiter = match strategy {
            Strategy::Poll { period } => Waiter::Poll(Box::new(Ticker::with_options(
                period,
                &TickerOptions {
                    spin: Spin::Off,
                    late: LatePolicy::Skip,
                    ..TickerOptions::plain()
                },
            ))),
            Strategy::BlockPhase { clock, delay } => Waiter::BlockPhase {
                clock,
                delay_ns: delay.as_nanos() as u64,
                last_look_ns: now_ns(),
            },
            Strategy::Signal => Waiter::Signal,
        };
        Self {
            shared: Arc::new(Shared {
                states: (0..capacity).map(|_| AtomicU8::new(IDLE)).collect(),
                ring: (0..capacity).map(|_| AtomicU32::new(0)).collect(),
                tail: AtomicU64::new(0),
                sleeping: AtomicU32::new(0),
                signal,
                signals: AtomicU64::new(0),
            }),
            callbacks: Vec::with_capacity(capacity),
            head: 0,
            waiter,
            wakes: 0,
            delivered: 0,
        }
    }

    /// How many notifiers it can hold.
    pub fn capacity(&self) -> usize {
        self.shared.states.len()
    }

    /// Registers `callback` and returns its notifier. Slots are not reused after
    /// [`remove`](Self::remove), so a stale notifier can never fire someone else's callback.
    ///
    /// # Errors
    /// [`DispatcherFull`] when every slot has been handed out.
    pub fn register(
        &mut self,
        callback: impl FnMut() + Send + 'static,
    ) -> Result<Notifier, DispatcherFull> {
        if self.callbacks.len() == self.capacity() {
            return Err(DispatcherFull {
                capacity: self.capacity(),
            });
        }
        self.callbacks.push(Some(Box::new(callback)));
        Ok(Notifier {
            shared: Arc::clone(&self.shared),
            id: (self.callbacks.len() - 1) as u32,
        })
    }

    /// Drops `notifier`'s callback: it is never called again, even if a trigger races with this
    /// call. Returns false if the notifier belongs to another dispatcher or was removed before.
    pub fn remove(&mut self, notifier: &Notifier) -> bool {
        self.owns(notifier)
            && self
                .callbacks
                .get_mut(notifier.id as usize)
                .and_then(Option::take)
                .is_some()
    }

    /// Runs `notifier`'s callback now, on this thread, if a trigger is pending, and withdraws
    /// that trigger from the queue. Returns whether it ran.
    pub fn handle_now_if_needed(&mut self, notifier: &Notifier) -> bool {
        if !self.owns(notifier) {
            return false;
        }
        let id = notifier.id as usize;
        // The ticket stays in the ring (CANCELLED, not IDLE), so a trigger racing with this
        // cannot take a second one: the ring keeps its one-slot-per-notifier bound.
        if self.shared.states[id]
            .compare_exchange(QUEUED, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        self.run(id)
    }

    /// Runs, in trigger order, every callback triggered so far; returns how many ran.
    /// Never waits.
    pub fn dispatch(&mut self) -> usize {
        let mut ran = 0;
        loop {
            let len = self.shared.ring.len() as u64;
            let slot = &self.shared.ring[(self.head % len) as usize];
            let v = slot.load(Ordering::Acquire);
            if v == 0 {
                // Empty, or a trigger took this ticket and has not published it yet: it will be
                // delivered on the next look.
                return ran;
            }
            slot.store(0, Ordering::Relaxed);
            self.head += 1;
            let id = (v - 1) as usize;
            // Releasing the state after freeing the slot is what lets the next trigger of this
            // notifier reuse a slot safely (see `trigger`).
            if self.shared.states[id].swap(IDLE, Ordering::AcqRel) == QUEUED && self.run(id) {
                ran += 1;
            }
        }
    }

    fn run(&mut self, id: usize) -> bool {
        match self.callbacks.get_mut(id) {
            Some(Some(cb)) => {
                cb();
                self.delivered += 1;
                true
            }
            _ => false,
        }
    }

    fn owns(&self, notifier: &Notifier) -> bool {
        Arc::ptr_eq(&self.shared, &notifier.shared)
    }

    fn ring_has_work(&self) -> bool {
        let len = self.shared.ring.len() as u64;
        self.shared.ring[(self.head % len) as usize].load(Ordering::Acquire) != 0
    }

    /// Waits for the strategy's next chance to deliver (the next poll tick, the next block
    /// phase, or a signal, at most 50 ms), then [`dispatch`](Self::dispatch)es.
    pub fn wait_and_dispatch(&mut self) -> usize {
        match &mut self.waiter {
            Waiter::Poll(ticker) => {
                ticker.wait();
            }
            Waiter::BlockPhase {
                clock,
                delay_ns,
                last_look_ns,
            } => {
                let period = clock.0.period_ns.load(Ordering::Acquire);
                let target = match clock.last_end_ns() {
                    // First look after the block end that is next after our last look.
                    Some(end) => {
                        let base = end + *delay_ns;
                        if base > *last_look_ns {
                            base
                        } else {
                            base + ((*last_look_ns - base) / period + 1) * period
                        }
                    }
                    None => *last_look_ns + period,
                };
                sleep_until_ns(target);
                *last_look_ns = target.max(now_ns());
            }
            Waiter::Signal => {
                if !self.ring_has_work() {
                    self.shared.sleeping.store(1, Ordering::Relaxed);
                    fence(Ordering::SeqCst);
                    if !self.ring_has_work() {
                        futex::wait(&self.shared.sleeping, 1, SIGNAL_IDLE_WAKE);
                    }
                    self.shared.sleeping.store(0, Ordering::Relaxed);
                }
            }
        }
        self.wakes += 1;
        self.dispatch()
    }

    /// Calls [`wait_and_dispatch`](Self::wait_and_dispatch) until `stop` is set (checked after
    /// every wake, so within a poll period, a block or 50 ms).
    pub fn run_until(&mut self, stop: &AtomicBool) {
        while !stop.load(Ordering::Acquire) {
            self.wait_and_dispatch();
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> DispatchStats {
        DispatchStats {
            wakes: self.wakes,
            delivered: self.delivered,
            signals: self.shared.signals.load(Ordering::Relaxed),
        }
    }
}
