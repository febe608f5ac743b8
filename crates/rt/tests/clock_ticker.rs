//! The ticker keeps absolute deadlines, reports lateness instead of hiding it, and waits
//! without allocating. Bounds are generous sanity checks, never speed targets: CI is a noisy
//! two-core machine.

use std::time::{Duration, Instant};

use downbeat_rt::clock::{self, Histogram, LatePolicy, Outcome, Spin, Ticker, TickerOptions};
use downbeat_rt::guard::{self, Allow, Options};

downbeat_rt::install_guard_allocator!();

const MS: Duration = Duration::from_millis(1);

#[test]
fn ten_ms_for_half_a_second_is_about_fifty_ticks_without_drift() {
    let period = 10 * MS;
    let mut ticker = Ticker::new(period);
    let first = ticker.next_deadline_ns();
    let started = Instant::now();
    let mut ticks = Vec::new();
    while started.elapsed() < Duration::from_millis(500) {
        ticks.push(ticker.wait());
    }
    assert!((40..=52).contains(&ticks.len()), "{} ticks", ticks.len());
    for (k, t) in ticks.iter().enumerate() {
        assert_eq!(t.index, k as u64);
        // Absolute deadlines: tick k is due exactly k periods after the first, whatever the
        // lateness of the ones before.
        assert_eq!(t.deadline_ns, first + k as u64 * 10_000_000);
        assert_eq!(t.skipped, 0);
    }
    let stats = ticker.stats();
    assert_eq!(stats.ticks, ticks.len() as u64);
    assert_eq!(
        stats.max_lateness,
        ticks.iter().map(|t| t.lateness).max().unwrap()
    );
}

#[test]
fn wait_returns_at_or_after_the_deadline() {
    let mut ticker = Ticker::new(2 * MS);
    for _ in 0..20 {
        let t = ticker.wait();
        assert!(clock::now_ns() >= t.deadline_ns);
        assert_eq!(
            t.lateness,
            Duration::from_nanos(clock::now_ns() - t.deadline_ns).min(t.lateness)
        );
    }
}

#[test]
fn burst_delivers_every_missed_tick_with_its_lateness() {
    let mut ticker = Ticker::new(5 * MS);
    ticker.wait();
    std::thread::sleep(Duration::from_millis(23)); // four deadlines pass
    let late: Vec<_> = (0..4).map(|_| ticker.wait()).collect();
    for (k, t) in late.iter().enumerate() {
        assert_eq!(t.index, k as u64 + 1, "nothing merged");
        assert_eq!(t.skipped, 0);
    }
    assert!(late[0].lateness >= Duration::from_millis(13), "{late:?}");
    assert!(late[0].lateness > late[3].lateness);
    assert!(ticker.stats().late >= 3, "{:?}", ticker.stats());
}

#[test]
fn skip_jumps_ahead_and_says_how_many_were_dropped() {
    let options = TickerOptions {
        late: LatePolicy::Skip,
        ..TickerOptions::plain()
    };
    let mut ticker = Ticker::with_options(5 * MS, &options);
    let before = ticker.wait();
    std::thread::sleep(Duration::from_millis(23));
    let after = ticker.wait();
    assert!(after.skipped >= 3, "{after:?}");
    assert_eq!(after.index, before.index + 1 + after.skipped);
    assert_eq!(
        after.deadline_ns,
        before.deadline_ns + (1 + after.skipped) * 5_000_000
    );
    assert!(after.lateness < Duration::from_millis(5), "{after:?}");
    assert_eq!(ticker.stats().skipped, after.skipped);
}

#[test]
fn the_spin_margin_follows_the_options() {
    let off = Ticker::with_options(
        MS,
        &TickerOptions {
            spin: Spin::Off,
            ..TickerOptions::plain()
        },
    );
    assert_eq!(off.spin_margin(), Duration::ZERO);
    let fixed = Ticker::with_options(
        MS,
        &TickerOptions {
            spin: Spin::Fixed(Duration::from_micros(70)),
            ..TickerOptions::plain()
        },
    );
    assert_eq!(fixed.spin_margin(), Duration::from_micros(70));

    // Adaptive: learned, but never above its cap (here a quarter of the 1 ms period).
    let mut adaptive = Ticker::with_options(
        MS,
        &TickerOptions {
            spin: Spin::Adaptive {
                quantile: 0.99,
                max: Duration::from_millis(5),
            },
            ..TickerOptions::plain()
        },
    );
    for _ in 0..200 {
        adaptive.wait();
        assert!(adaptive.spin_margin() <= Duration::from_micros(250));
    }
    assert!(adaptive.spin_margin() >= Duration::from_micros(5));
}

#[test]
fn a_plain_ticker_changes_nothing_about_the_thread() {
    let t = Ticker::new(MS);
    assert_eq!(t.setup().realtime, Outcome::NotRequested);
    assert_eq!(t.setup().pinned, Outcome::NotRequested);
    assert_eq!(t.setup().timer_slack, Outcome::NotRequested);
    assert!(t.setup().notes().is_empty());
}

#[test]
fn thread_settings_apply_or_say_why_not() {
    // On a thread of its own: real-time priority must not leak into the test harness.
    std::thread::spawn(|| {
        let options = TickerOptions {
            pin_core: Some(0),
            ..TickerOptions::default()
        };
        let mut t = Ticker::with_options(MS, &options);
        let setup = t.setup().clone();
        for outcome in [&setup.realtime, &setup.pinned, &setup.timer_slack] {
            assert_ne!(outcome, &Outcome::NotRequested);
            if let Outcome::Refused(why) = outcome {
                assert!(!why.to_string().is_empty());
                // `./test` sets it: CI must not pass without having applied the settings.
                assert!(
                    std::env::var("DOWNBEAT_REQUIRE_RT").as_deref() != Ok("1"),
                    "DOWNBEAT_REQUIRE_RT=1 but the system refused a ticker setting: {why} \
                     (run as root or with CAP_SYS_NICE / an RLIMIT_RTPRIO above 0)"
                );
                eprintln!("thread_settings_apply_or_say_why_not: refused: {why}");
            }
        }
        assert_eq!(
            setup.notes().len(),
            [&setup.realtime, &setup.pinned, &setup.timer_slack]
                .iter()
                .filter(|o| !o.is_applied())
                .count()
        );
        t.wait();
    })
    .join()
    .unwrap();
}

#[test]
fn waiting_never_allocates_and_only_sleeps() {
    let mut ticker = Ticker::new(MS);
    ticker.wait();
    let nanosleep = guard::syscall_number("clock_nanosleep").unwrap();
    let (_, report) = guard::check_with(&Options::new().allow(Allow::Syscall(nanosleep)), || {
        for _ in 0..10 {
            ticker.wait();
        }
    });
    assert_eq!(report.allocations.count + report.frees.count, 0, "{report}");
    assert!(report.syscalls.is_empty(), "{report}");
    assert_eq!(report.other_syscalls, 0, "{report}");
}

#[test]
fn histogram_quantiles_and_overflow() {
    let mut h = Histogram::new(Duration::from_micros(100));
    for us in 0..100 {
        h.record(Duration::from_micros(us));
    }
    h.record(Duration::from_millis(3));
    assert_eq!(h.count(), 101);
    assert_eq!(h.overflow(), 1);
    assert_eq!(h.max(), Duration::from_millis(3));
    assert_eq!(h.quantile(0.5), Duration::from_micros(51));
    assert_eq!(h.quantile(1.0), Duration::from_millis(3));
    assert_eq!(h.bins().count(), 100);
    h.clear();
    assert_eq!(
        (h.count(), h.max(), h.quantile(0.99)),
        (0, Duration::ZERO, Duration::ZERO)
    );
}
