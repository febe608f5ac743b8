//! Notifiers coalesce, deliver in trigger order on the dispatcher's thread, can be cancelled or
//! handled early, and survive teardown while triggers race.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use downbeat_rt::notify::{BlockClock, Dispatcher, DispatcherFull, Notifier, Strategy};

fn poll() -> Strategy {
    Strategy::Poll {
        period: Duration::from_millis(1),
    }
}

/// Registers `n` notifiers whose callbacks append their index to a shared log.
fn logged(d: &mut Dispatcher, n: usize) -> (Vec<Notifier>, Arc<Mutex<Vec<usize>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let notifiers = (0..n)
        .map(|i| {
            let log = Arc::clone(&log);
            d.register(move || log.lock().unwrap().push(i)).unwrap()
        })
        .collect();
    (notifiers, log)
}

#[test]
fn repeated_triggers_coalesce_into_one_call() {
    let mut d = Dispatcher::new(poll(), 2);
    let (n, log) = logged(&mut d, 1);
    for _ in 0..100 {
        n[0].trigger();
    }
    assert!(n[0].is_pending());
    assert_eq!(d.dispatch(), 1);
    assert_eq!(d.dispatch(), 0);
    assert!(!n[0].is_pending());
    n[0].trigger();
    assert_eq!(d.dispatch(), 1);
    assert_eq!(*log.lock().unwrap(), [0, 0]);
    assert_eq!(d.stats().delivered, 2);
}

#[test]
fn delivery_follows_trigger_order_across_notifiers() {
    let mut d = Dispatcher::new(poll(), 5);
    let (n, log) = logged(&mut d, 5);
    for i in [3, 1, 4, 0, 2, 3, 1] {
        n[i].trigger();
    }
    assert_eq!(d.dispatch(), 5);
    assert_eq!(*log.lock().unwrap(), [3, 1, 4, 0, 2]);
    // The ring wraps many times without overflowing: one slot per notifier is enough.
    log.lock().unwrap().clear();
    for round in 0..1000 {
        for k in 0..5 {
            n[(round + k * 2) % 5].trigger();
        }
        d.dispatch();
    }
    assert_eq!(log.lock().unwrap().len(), 5000);
}

#[test]
fn cancel_withdraws_and_a_later_trigger_rearms() {
    let mut d = Dispatcher::new(poll(), 2);
    let (n, log) = logged(&mut d, 2);
    n[0].trigger();
    n[1].trigger();
    assert!(n[0].cancel_pending());
    assert!(!n[0].cancel_pending());
    assert_eq!(d.dispatch(), 1);
    assert_eq!(*log.lock().unwrap(), [1]);
    n[0].trigger();
    assert!(n[0].cancel_pending());
    n[0].trigger(); // re-armed before delivery: delivered after all
    assert_eq!(d.dispatch(), 1);
    assert_eq!(*log.lock().unwrap(), [1, 0]);
}

#[test]
fn handle_now_runs_a_pending_callback_once() {
    let mut d = Dispatcher::new(poll(), 2);
    let (n, log) = logged(&mut d, 2);
    assert!(!d.handle_now_if_needed(&n[0]));
    n[0].trigger();
    n[1].trigger();
    assert!(d.handle_now_if_needed(&n[0]));
    assert!(!d.handle_now_if_needed(&n[0]));
    assert_eq!(*log.lock().unwrap(), [0]);
    // Re-triggered after being handled but before its old ticket came round: one more call.
    n[0].trigger();
    assert_eq!(d.dispatch(), 2);
    assert_eq!(*log.lock().unwrap(), [0, 0, 1]);
    for _ in 0..10 {
        n[0].trigger();
        assert!(d.handle_now_if_needed(&n[0]));
    }
    assert_eq!(d.dispatch(), 0);
}

#[test]
fn capacity_is_fixed_and_foreign_notifiers_are_refused() {
    let mut d = Dispatcher::new(poll(), 1);
    let n = d.register(|| ()).unwrap();
    assert_eq!(
        d.register(|| ()).unwrap_err(),
        DispatcherFull { capacity: 1 }
    );
    let mut other = Dispatcher::new(poll(), 1);
    n.trigger();
    assert!(!other.handle_now_if_needed(&n));
    assert!(!other.remove(&n));
    assert!(d.remove(&n));
    assert!(!d.remove(&n));
    assert_eq!(d.dispatch(), 0, "a removed callback never runs");
}

/// Delivers across threads with `strategy`; `tick` runs on the audio side after each trigger.
fn round_trips(strategy: Strategy, tick: impl Fn() + Send + 'static) {
    let mut d = Dispatcher::new(strategy, 1);
    let delivered = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&delivered);
    let n = d
        .register(move || {
            seen.fetch_add(1, Ordering::Release);
        })
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let audio = {
        let (stop, delivered) = (Arc::clone(&stop), Arc::clone(&delivered));
        thread::spawn(move || {
            for k in 1..=20 {
                n.trigger();
                tick();
                let t = Instant::now();
                while delivered.load(Ordering::Acquire) < k {
                    assert!(t.elapsed() < Duration::from_secs(10), "no delivery");
                    thread::sleep(Duration::from_micros(200));
                    tick();
                }
            }
            stop.store(true, Ordering::Release);
        })
    };
    d.run_until(&stop);
    audio.join().unwrap();
    assert_eq!(delivered.load(Ordering::Relaxed), 20);
    assert!(d.stats().wakes > 0);
}

#[test]
fn poll_delivers_across_threads() {
    round_trips(poll(), || ());
}

#[test]
fn block_phase_delivers_across_threads() {
    let clock = BlockClock::new(Duration::from_millis(2));
    let audio = clock.clone();
    round_trips(
        Strategy::BlockPhase {
            clock,
            delay: Duration::from_micros(50),
        },
        move || audio.block_ended(),
    );
}

#[test]
fn block_phase_without_a_block_clock_still_polls() {
    round_trips(
        Strategy::BlockPhase {
            clock: BlockClock::new(Duration::from_millis(1)),
            delay: Duration::ZERO,
        },
        || (),
    );
}

#[test]
fn signal_delivers_across_threads_and_counts_its_wakes() {
    let mut d = Dispatcher::new(Strategy::Signal, 1);
    let delivered = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&delivered);
    let n = d
        .register(move || {
            seen.fetch_add(1, Ordering::Release);
        })
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let audio = {
        let (stop, delivered) = (Arc::clone(&stop), Arc::clone(&delivered));
        thread::spawn(move || {
            for k in 1..=20 {
                // Give the dispatcher time to fall asleep, so the trigger has to wake it.
                thread::sleep(Duration::from_millis(2));
                n.trigger();
                let t = Instant::now();
                while delivered.load(Ordering::Acquire) < k {
                    assert!(t.elapsed() < Duration::from_secs(10), "no delivery");
                    thread::yield_now();
                }
            }
            stop.store(true, Ordering::Release);
        })
    };
    d.run_until(&stop);
    audio.join().unwrap();
    assert_eq!(d.stats().delivered, 20);
    assert!(d.stats().signals >= 1, "{:?}", d.stats());
    assert!(d.stats().signals <= 20, "{:?}", d.stats());
}

#[test]
fn teardown_while_triggers_race_is_safe() {
    for strategy in [poll(), Strategy::Signal] {
        for round in 0..20 {
            let mut d = Dispatcher::new(strategy.clone(), 4);
            let calls = Arc::new(AtomicU64::new(0));
            let notifiers: Vec<Notifier> = (0..4)
                .map(|_| {
                    let calls = Arc::clone(&calls);
                    d.register(move || {
                        calls.fetch_add(1, Ordering::Relaxed);
                    })
                    .unwrap()
                })
                .collect();
            let stop = Arc::new(AtomicBool::new(false));
            let hammers: Vec<_> = (0..2)
                .map(|h| {
                    let (stop, ns) = (Arc::clone(&stop), notifiers.clone());
                    thread::spawn(move || {
                        let mut i = h;
                        while !stop.load(Ordering::Relaxed) {
                            ns[i % 4].trigger();
                            i += 1;
                        }
                        // Still triggering after the dispatcher is gone.
                        for n in &ns {
                            n.trigger();
                        }
                    })
                })
                .collect();
            for _ in 0..5 {
                d.dispatch();
                thread::yield_now();
            }
            // Remove one callback mid-race: it must never run again.
            d.remove(&notifiers[round % 4]);
            d.dispatch();
            if round % 2 == 0 {
                drop(d);
            } else {
                d.dispatch();
                drop(d);
            }
            stop.store(true, Ordering::Relaxed);
            for h in hammers {
                h.join().unwrap();
            }
            drop(notifiers);
        }
    }
}

#[test]
fn a_removed_callback_never_runs_even_mid_race() {
    let mut d = Dispatcher::new(poll(), 2);
    let removed_ran = Arc::new(AtomicBool::new(false));
    let gone = Arc::clone(&removed_ran);
    let removed_flag = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&removed_flag);
    let n = d
        .register(move || {
            if flag.load(Ordering::Relaxed) {
                gone.store(true, Ordering::Relaxed);
            }
        })
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let hammer = {
        let (stop, n) = (Arc::clone(&stop), n.clone());
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                n.trigger();
            }
        })
    };
    for _ in 0..100 {
        d.dispatch();
    }
    assert!(d.remove(&n));
    removed_flag.store(true, Ordering::Relaxed);
    for _ in 0..1000 {
        d.dispatch();
    }
    stop.store(true, Ordering::Relaxed);
    hammer.join().unwrap();
    assert!(!removed_ran.load(Ordering::Relaxed));
}
