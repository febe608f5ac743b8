//! The audio-thread side of notify is clean under the guard: no allocation, free, lock or
//! system call, whichever strategy the dispatcher uses, as long as nobody is asleep to be
//! signalled.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use downbeat_rt::guard::{self, Allow, Options};
use downbeat_rt::notify::{BlockClock, Dispatcher, Strategy};

downbeat_rt::install_guard_allocator!();

fn strategies(clock: &BlockClock) -> [Strategy; 3] {
    [
        Strategy::Poll {
            period: Duration::from_millis(1),
        },
        Strategy::BlockPhase {
            clock: clock.clone(),
            delay: Duration::from_micros(50),
        },
        Strategy::Signal,
    ]
}

#[test]
fn trigger_cancel_and_block_clock_are_clean() {
    let clock = BlockClock::new(Duration::from_millis(5));
    for strategy in strategies(&clock) {
        let mut d = Dispatcher::new(strategy.clone(), 3);
        let notifiers: Vec<_> = (0..3).map(|_| d.register(|| ()).unwrap()).collect();
        // Several rounds, so first triggers (ticket taken) and coalesced ones are both covered,
        // and the ring wraps.
        for _ in 0..4 {
            let report = guard::check(|| {
                for n in &notifiers {
                    n.trigger();
                    n.trigger();
                }
                notifiers[1].cancel_pending();
                notifiers[1].trigger();
                let _ = notifiers[2].is_pending();
                clock.block_ended();
            });
            assert!(report.is_complete(), "{strategy:?}: {report}");
            report.assert_clean();
            assert_eq!(d.dispatch(), 3, "{strategy:?}");
        }
        assert_eq!(d.stats().signals, 0);
    }
}

#[test]
fn signal_to_a_sleeping_dispatcher_is_exactly_one_futex_wake() {
    let mut d = Dispatcher::new(Strategy::Signal, 1);
    let n = d.register(|| ()).unwrap();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| d.run_until(&stop));
        let start = Instant::now();
        // The dispatcher is asleep most of the time; a trigger that happens to find it awake
        // makes no system call at all, so try until one finds it asleep.
        let report = loop {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "never found it asleep"
            );
            std::thread::sleep(Duration::from_millis(5));
            let (_, report) =
                guard::check_with(&Options::new().allow(Allow::FutexWake), || n.trigger());
            while n.is_pending() {
                std::thread::yield_now();
            }
            assert!(report.is_clean(), "{report}");
            if report.allowed_syscall_count("futex") > 0 {
                break report;
            }
        };
        stop.store(true, Ordering::Release);
        assert_eq!(report.allowed_syscall_count("futex"), 1, "{report}");
        assert!(report.syscalls.is_empty(), "{report}");
    });
    assert!(d.stats().signals >= 1);
}
