//! What the collector's test binaries share.
// Each test binary includes this module and uses a part of it.
#![allow(dead_code)]

/// The variable `./test` sets so that a refused real-time request fails a test instead of
/// letting it pass without running what it is about.
pub const REQUIRE_RT_ENV: &str = "DOWNBEAT_REQUIRE_RT";

/// Called where the system refused real-time priority or pinning (`note` says why): fails
/// the test when [`REQUIRE_RT_ENV`] is `1`, else says on stderr what `test` did not check.
pub fn refused(test: &str, note: &str) {
    assert!(
        std::env::var(REQUIRE_RT_ENV).as_deref() != Ok("1"),
        "{test}: {REQUIRE_RT_ENV}=1 but the system refused: {note} \
         (run as root or with CAP_SYS_NICE / an RLIMIT_RTPRIO above 0)"
    );
    eprintln!("{test}: skipped, the system refused: {note}");
}
