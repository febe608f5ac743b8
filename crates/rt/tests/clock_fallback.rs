//! Without permission for real-time priority the ticker carries on as an ordinary thread and
//! says why. `DOWNBEAT_NO_RT` forces that path even as root; this binary is the only one that
//! sets it, so the process-wide variable cannot disturb other tests.

use std::time::Duration;

use downbeat_rt::clock::{Outcome, Ticker, TickerOptions, NO_RT_ENV};
use downbeat_rt::pool::ThreadError;

#[test]
fn forced_fallback_reports_the_reason_and_still_ticks() {
    std::env::set_var(NO_RT_ENV, "1");
    let mut ticker = Ticker::with_options(Duration::from_millis(1), &TickerOptions::default());
    match &ticker.setup().realtime {
        Outcome::Refused(why) => {
            assert_eq!(*why, ThreadError::DisabledByEnv { var: NO_RT_ENV });
            assert!(why.to_string().contains(NO_RT_ENV), "{why}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let notes = ticker.setup().notes();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("no real-time priority") && n.contains("RLIMIT_RTPRIO")),
        "{notes:?}"
    );
    // SAFETY: sched_getscheduler(0) only queries the calling thread's policy.
    let policy = unsafe { libc::sched_getscheduler(0) };
    assert_eq!(policy, libc::SCHED_OTHER);
    for k in 0..5 {
        assert_eq!(ticker.wait().index, k);
    }
}
