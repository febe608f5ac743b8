//! A soft-real-time periodic ticker for game loops, virtual devices, MIDI clocks and meters.
//!
//! "soft realtime ticker on Linux" shows why the obvious loops miss: a relative sleep drifts by every late wake-up,
//! the kernel adds timer slack and scheduling delay, and a pure busy wait burns a core and is
//! still preempted. [`Ticker`] combines what works:
//!
//! * **absolute deadlines** on `CLOCK_MONOTONIC` (`clock_nanosleep(TIMER_ABSTIME)`): tick `k` is
//!   due at `start + k·period`, so lateness never accumulates into drift;
//! * **sleep, then spin**: it sleeps until a *spin margin* before the deadline and spins the
//!   rest on the vDSO clock, which costs no system call;
//! * an **adaptive margin**: it records how late each sleep woke up (a sliding window of 256)
//!   and sets the margin from a high quantile of that, so it spins only as long as this
//!   machine, under its current load, needs;
//! * optional **real-time priority** (`SCHED_FIFO` / `SCHED_RR`), **CPU pinning** and
//!   **timer slack**, each applied to the calling thread and, when the system refuses (no
//!   root, no `RLIMIT_RTPRIO`, or `DOWNBEAT_NO_RT=1` in the environment), skipped with the
//!   reason in [`Ticker::setup`]. They last as long as the ticker: dropping it on the thread
//!   that made it puts back the scheduling, affinity and slack that thread had before;
//! * late ticks are **reported, never merged**: every [`Tick`] says how late it was and, with
//!   [`LatePolicy::Skip`], how many deadlines were dropped to catch up.
//!
//! ```
//! use std::time::Duration;
//! use downbeat_rt::clock::{Ticker, TickerOptions};
//!
//! let mut ticker = Ticker::with_options(Duration::from_millis(2), &TickerOptions::default());
//! for note in ticker.setup().notes() {
//!     eprintln!("note: {note}"); // e.g. why SCHED_FIFO was not available
//! }
//! let mut worst = Duration::ZERO;
//! for _ in 0..5 {
//!     let tick = ticker.wait();
//!     worst = worst.max(tick.lateness);
//! }
//! assert_eq!(ticker.stats().ticks, 5);
//! # let _ = worst;
//! ```

mod histogram;
mod sys;

use std::fmt;
use std::time::Duration;

pub use histogram::Histogram;
pub use sys::{now_ns, set_timer_slack, sleep_until_ns, thread_cpu_ns};

use crate::pool::{pin_current_thread, set_current_thread_realtime, ThreadError};

/// Environment variable that, when set to anything but `0` or empty, makes every real-time
/// priority request fall back as if the system had refused it: the way to try the unprivileged
/// path on a machine where one runs as root.
pub const NO_RT_ENV: &str = "DOWNBEAT_NO_RT";

/// Sleep wake-ups remembered to learn the spin margin.
const WINDOW: usize = 256;
/// Ticks between two recomputations of the margin (a selection over the window).
const RELEARN_EVERY: u64 = 16;

/// The scheduling policy asked for with [`Realtime`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// `SCHED_FIFO`: runs until it blocks or a higher priority runs.
    Fifo,
    /// `SCHED_RR`: like FIFO, with time slices among equal priorities (the choice of "soft realtime ticker on Linux").
    RoundRobin,
}

/// Real-time scheduling for the ticking thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Realtime {
    /// Which real-time policy.
    pub policy: Policy,
    /// Priority, 1..=99.
    pub priority: i32,
}

/// How the last stretch before a deadline is waited for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Spin {
    /// Sleep all the way; lateness is whatever the kernel's wake-up costs. No CPU spent.
    Off,
    /// Spin for this long before every deadline.
    Fixed(Duration),
    /// Learn the margin: the `quantile` of recent sleep overshoot, times 1.25, plus 5 µs,
    /// kept at or below `max` (and below a quarter of the period).
    Adaptive {
        /// Which quantile of the observed overshoot to cover, e.g. 0.99.
        quantile: f64,
        /// Upper bound on the margin, which bounds the CPU spent per tick.
        max: Duration,
    },
}

impl Default for Spin {
    fn default() -> Self {
        Spin::Adaptive {
            quantile: 0.99,
            max: Duration::from_micros(500),
        }
    }
}

/// What to do about deadlines that have already passed when the ticker is asked to wait.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LatePolicy {
    /// Deliver every tick, back to back, each with its lateness: nothing is lost (a device that
    /// must produce every block wants this).
    #[default]
    Burst,
    /// Jump to the next deadline still ahead and report how many were skipped (a meter or a
    /// game loop wants this).
    Skip,
}

/// How a [`Ticker`] sets up the calling thread and waits.
#[derive(Clone, Debug, PartialEq)]
pub struct TickerOptions {
    /// Real-time scheduling; `None` leaves the thread as it is.
    pub realtime: Option<Realtime>,
    /// Pin the calling thread to this core.
    pub pin_core: Option<usize>,
    /// Timer slack for the calling thread (Linux); `None` leaves it as it is.
    pub timer_slack: Option<Duration>,
    /// The spin strategy.
    pub spin: Spin,
    /// Late deadlines: burst or skip.
    pub late: LatePolicy,
}

impl Default for TickerOptions {
    /// `SCHED_FIFO` 80, no pinning, 1 ns timer slack, adaptive spin, burst.
    fn default() -> Self {
        Self {
            realtime: Some(Realtime {
                policy: Policy::Fifo,
                priority: 80,
            }),
            pin_core: None,
            timer_slack: Some(Duration::from_nanos(1)),
            spin: Spin::default(),
            late: LatePolicy::Burst,
        }
    }
}

impl TickerOptions {
    /// Options that change nothing about the thread: ordinary scheduling, default slack.
    pub fn plain() -> Self {
        Self {
            realtime: None,
            pin_core: None,
            timer_slack: None,
            spin: Spin::default(),
            late: LatePolicy::Burst,
        }
    }
}

/// What became of one thread setting.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Outcome {
    /// Not asked for.
    #[default]
    NotRequested,
    /// Applied; says what.
    Applied(String),
    /// Asked for but not possible; says why. The ticker works on without it.
    Refused(ThreadError),
}

impl Outcome {
    fn from_result(what: String, r: Result<(), ThreadError>) -> Self {
        match r {
            Ok(()) => Outcome::Applied(what),
            Err(e) => Outcome::Refused(e),
        }
    }

    /// Whether the setting is in force.
    pub fn is_applied(&self) -> bool {
        matches!(self, Outcome::Applied(_))
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::NotRequested => f.write_str("not requested"),
            Outcome::Applied(s) => write!(f, "{s}"),
            Outcome::Refused(s) => write!(f, "refused: {s}"),
        }
    }
}

/// How the thread settings of [`TickerOptions`] turned out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Setup {
    /// Real-time scheduling.
    pub realtime: Outcome,
    /// CPU pinning.
    pub pinned: Outcome,
    /// Timer slack.
    pub timer_slack: Outcome,
}

impl Setup {
    /// One line for every setting that was asked for and refused, with the consequence.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if let Outcome::Refused(why) = &self.realtime {
            notes.push(format!(
                "no real-time priority ({why}); ticking as an ordinary thread, expect more \
                 lateness under load. Run as root or grant an RLIMIT_RTPRIO (e.g. \
                 /etc/security/limits.conf `@audio - rtprio 95`) to enable it"
            ));
        }
        if let Outcome::Refused(why) = &self.pinned {
            notes.push(format!("not pinned to a core ({why})"));
        }
        if let Outcome::Refused(why) = &self.timer_slack {
            notes.push(format!("timer slack unchanged ({why})"));
        }
        notes
    }
}

/// Applies the thread settings of `options` to the calling thread.
pub fn apply_thread_options(options: &TickerOptions) -> Setup {
    let realtime = match options.realtime {
        None => Outcome::NotRequested,
        Some(_) if rt_disabled_by_env() => {
            Outcome::Refused(ThreadError::DisabledByEnv { var: NO_RT_ENV })
        }
        Some(Realtime { policy, priority }) => match policy {
            Policy::Fifo => Outcome::from_result(
                format!("SCHED_FIFO {priority}"),
                set_current_thread_realtime(priority),
            ),
            Policy::RoundRobin => Outcome::from_result(
                format!("SCHED_RR {priority}"),
                sys::set_round_robin(priority),
            ),
        },
    };
    let pinned = match options.pin_core {
        None => Outcome::NotRequested,
        Some(core) => Outcome::from_result(format!("core {core}"), pin_current_thread(core)),
    };
    let timer_slack = match options.timer_slack {
        None => Outcome::NotRequested,
        Some(s) => Outcome::from_result(format!("{} ns", s.as_nanos()), set_timer_slack(s)),
    };
    Setup {
        realtime,
        pinned,
        timer_slack,
    }
}

fn rt_disabled_by_env() -> bool {
    std::env::var_os(NO_RT_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

/// One tick, as [`Ticker::wait`] returns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tick {
    /// 0 for the first deadline, counting skipped ones too, so `index · period` is the time
    /// since the start.
    pub index: u64,
    /// The deadline, in [`now_ns`] nanoseconds.
    pub deadline_ns: u64,
    /// How long after the deadline `wait` returned.
    pub lateness: Duration,
    /// Deadlines dropped just before this one ([`LatePolicy::Skip`] only).
    pub skipped: u64,
}

/// Running totals of a [`Ticker`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TickerStats {
    /// Ticks delivered.
    pub ticks: u64,
    /// Ticks whose lateness exceeded a tenth of the period.
    pub late: u64,
    /// Deadlines skipped ([`LatePolicy::Skip`]).
    pub skipped: u64,
    /// The largest lateness seen.
    pub max_lateness: Duration,
}

/// A periodic ticker with absolute deadlines, sleep-then-spin and an adaptive spin margin.
/// See the [module docs](self).
///
/// The thread settings apply to the thread that creates it, and the spin happens on the thread
/// that calls [`wait`](Self::wait): create it where it will tick. The settings are the
/// ticker's, not the thread's: when the ticker is dropped on the thread that created it, that
/// thread gets back the scheduling policy and priority, CPU affinity and timer slack it had
/// before (a ticker dropped on another thread leaves both threads as they are). A clone
/// restores nothing; only the original does.
///
/// ```
/// # #[cfg(target_os = "linux")] {
/// use std::time::Duration;
/// use downbeat_rt::clock::{Ticker, TickerOptions};
///
/// let slack = || unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
/// let before = slack();
/// let options = TickerOptions { realtime: None, ..TickerOptions::default() };
/// let ticker = Ticker::with_options(Duration::from_millis(1), &options);
/// assert_eq!(slack(), 1); // 1 ns while the ticker lives
/// drop(ticker);
/// assert_eq!(slack(), before);
/// # }
/// ```
pub struct Ticker {
    period_ns: u64,
    next_ns: u64,
    index: u64,
    spin: Spin,
    late: LatePolicy,
    margin_ns: u64,
    window: [u32; WINDOW],
    filled: usize,
    cursor: usize,
    setup: Setup,
    stats: TickerStats,
    /// What the creating thread had before the settings were applied; `None` when nothing
    /// was asked for, and in clones.
    saved: Option<sys::SavedThread>,
}

impl Clone for Ticker {
    fn clone(&self) -> Self {
        Self {
            saved: None,
            setup: self.setup.clone(),
            ..*self
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        if let Some(saved) = self.saved.take() {
            if saved.is_current_thread() {
                saved.restore();
            }
        }
    }
}

impl fmt::Debug for Ticker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticker")
            .field("period", &self.period())
            .field("spin_margin", &self.spin_margin())
            .field("setup", &self.setup)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Ticker {
    /// A ticker whose first deadline is one `period` from now, with
    /// [`TickerOptions::plain`]: adaptive spin, the thread left as it is.
    ///
    /// # Panics
    /// If `period` is zero.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut t = downbeat_rt::clock::Ticker::new(Duration::from_millis(1));
    /// assert_eq!(t.wait().index, 0);
    /// assert_eq!(t.wait().index, 1);
    /// ```
    pub fn new(period: Duration) -> Self {
        Self::with_options(period, &TickerOptions::plain())
    }

    /// A ticker with `options`, applied to the calling thread; see [`setup`](Self::setup) for
    /// what the system allowed.
    ///
    /// # Panics
    /// If `period` is zero.
    pub fn with_options(period: Duration, options: &TickerOptions) -> Self {
        let period_ns = period.as_nanos().min(u64::MAX as u128) as u64;
        assert!(period_ns > 0, "a ticker needs a period above zero");
        let changes_thread = options.realtime.is_some()
            || options.pin_core.is_some()
            || options.timer_slack.is_some();
        let saved = changes_thread.then(sys::SavedThread::current);
        let setup = apply_thread_options(options);
        let mut ticker = Self {
            period_ns,
            next_ns: 0,
            index: 0,
            spin: options.spin,
            late: options.late,
            margin_ns: 0,
            window: [0; WINDOW],
            filled: 0,
            cursor: 0,
            setup,
            stats: TickerStats::default(),
            saved,
        };
        ticker.margin_ns = match ticker.spin {
            Spin::Off => 0,
            Spin::Fixed(d) => d.as_nanos().min(period_ns as u128) as u64,
            // Start generously (an ordinary thread's slack plus its usual wake-up delay) and
            // let the observations bring it down.
            Spin::Adaptive { .. } => ticker.margin_cap().min(200_000),
        };
        ticker.restart();
        ticker
    }

    /// Makes the next deadline one period from now and counts ticks from 0 again; the learned
    /// margin and the statistics are kept.
    pub fn restart(&mut self) {
        self.next_ns = now_ns() + self.period_ns;
        self.index = 0;
    }

    /// The period.
    pub fn period(&self) -> Duration {
        Duration::from_nanos(self.period_ns)
    }

    /// How long before each deadline the ticker stops sleeping and starts spinning.
    pub fn spin_margin(&self) -> Duration {
        Duration::from_nanos(self.margin_ns)
    }

    /// What became of the thread settings.
    pub fn setup(&self) -> &Setup {
        &self.setup
    }

    /// Totals so far.
    pub fn stats(&self) -> TickerStats {
        self.stats
    }

    /// The next deadline, in [`now_ns`] nanoseconds.
    pub fn next_deadline_ns(&self) -> u64 {
        self.next_ns
    }

    /// Waits for the next deadline and returns how it went. Never allocates; makes at most one
    /// `clock_nanosleep` call.
    pub fn wait(&mut self) -> Tick {
        let mut skipped = 0;
        let mut now = now_ns();
        if self.late == LatePolicy::Skip && now >= self.next_ns + self.period_ns {
            skipped = (now - self.next_ns) / self.period_ns;
            self.next_ns += skipped * self.period_ns;
            self.index += skipped;
        }
        let deadline = self.next_ns;
        let wake_at = deadline.saturating_sub(self.margin_ns);
        if now < wake_at {
            sleep_until_ns(wake_at);
            now = now_ns();
            self.learn(now.saturating_sub(wake_at));
        }
        while now < deadline {
            std::hint::spin_loop();
            now = now_ns();
        }
        let lateness = now - deadline;
        let tick = Tick {
            index: self.index,
            deadline_ns: deadline,
            lateness: Duration::from_nanos(lateness),
            skipped,
        };
        self.index += 1;
        self.next_ns += self.period_ns;
        self.stats.ticks += 1;
        self.stats.skipped += skipped;
        if lateness > self.period_ns / 10 {
            self.stats.late += 1;
        }
        self.stats.max_lateness = self.stats.max_lateness.max(tick.lateness);
        tick
    }

    fn margin_cap(&self) -> u64 {
        match self.spin {
            Spin::Adaptive { max, .. } => {
                (max.as_nanos().min(u64::MAX as u128) as u64).min(self.period_ns / 4)
            }
            _ => self.margin_ns,
        }
    }

    /// Records how far past its target a sleep woke up and, every few ticks, sets the margin to
    /// cover the chosen quantile of that.
    fn learn(&mut self, overshoot_ns: u64) {
        let Spin::Adaptive { quantile, .. } = self.spin else {
            return;
        };
        self.window[self.cursor] = overshoot_ns.min(u32::MAX as u64) as u32;
        self.cursor = (self.cursor + 1) % WINDOW;
        self.filled = (self.filled + 1).min(WINDOW);
        if self.stats.ticks % RELEARN_EVERY != 0 || self.filled < 32 {
            return;
        }
        let mut scratch = self.window;
        let seen = &mut scratch[..self.filled];
        let rank = ((quantile.clamp(0.0, 1.0) * seen.len() as f64).ceil() as usize)
            .clamp(1, seen.len())
            - 1;
        let (_, q, _) = seen.select_nth_unstable(rank);
        let want = *q as u64 * 5 / 4 + 5_000;
        self.margin_ns = want.min(self.margin_cap());
    }
}

/// CPU time used by the calling thread so far (`CLOCK_THREAD_CPUTIME_ID`): with wall time, the
/// share of a core a ticking loop costs.
///
/// ```
/// let before = downbeat_rt::clock::thread_cpu_time();
/// let mut x = 0u64;
/// for i in 0..100_000 { x = x.wrapping_add(std::hint::black_box(i)); }
/// assert!(downbeat_rt::clock::thread_cpu_time() >= before);
/// # let _ = x;
/// ```
pub fn thread_cpu_time() -> Duration {
    Duration::from_nanos(thread_cpu_ns())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn policy() -> libc::c_int {
        let (mut policy, mut param) = (0, libc::sched_param { sched_priority: 0 });
        // SAFETY: the calling thread; both out-pointers are valid.
        let rc =
            unsafe { libc::pthread_getschedparam(libc::pthread_self(), &mut policy, &mut param) };
        assert_eq!(rc, 0);
        policy
    }

    fn slack() -> libc::c_int {
        // SAFETY: PR_GET_TIMERSLACK takes no argument.
        unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) }
    }

    fn affinity() -> Vec<usize> {
        // SAFETY: `cpu_set_t` is plain data; zeroed is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: pid 0 is the calling thread; `set` is valid for its size.
        let rc =
            unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        assert_eq!(rc, 0);
        // SAFETY: `c` is below CPU_SETSIZE.
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect()
    }

    #[test]
    fn dropping_the_ticker_gives_the_thread_its_slack_and_affinity_back() {
        // A thread of its own, so that nothing else in the test binary shares the settings.
        std::thread::spawn(|| {
            let before = (slack(), affinity());
            let options = TickerOptions {
                realtime: None,
                pin_core: Some(before.1[0]),
                ..TickerOptions::default()
            };
            let ticker = Ticker::with_options(Duration::from_millis(1), &options);
            assert_eq!(slack(), 1, "the ticker's slack is in force");
            assert_eq!(affinity(), [before.1[0]], "pinned while it lives");
            drop(ticker.clone());
            assert_eq!(slack(), 1, "a clone restores nothing");
            drop(ticker);
            assert_eq!((slack(), affinity()), before);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn dropping_the_ticker_gives_the_thread_its_scheduling_back() {
        std::thread::spawn(|| {
            let before = (policy(), slack());
            let ticker = Ticker::with_options(Duration::from_millis(1), &TickerOptions::default());
            if ticker.setup().realtime.is_applied() {
                assert_eq!(policy(), libc::SCHED_FIFO);
            } else {
                eprintln!("SCHED_FIFO refused here; only the restored slack is checked");
            }
            drop(ticker);
            assert_eq!((policy(), slack()), before);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_ticker_dropped_on_another_thread_leaves_both_alone() {
        let ticker = std::thread::spawn(|| {
            let options = TickerOptions {
                realtime: None,
                ..TickerOptions::default()
            };
            let ticker = Ticker::with_options(Duration::from_millis(1), &options);
            assert_eq!(slack(), 1);
            ticker
        })
        .join()
        .unwrap();
        std::thread::spawn(move || {
            // A slack of its own, which a restore meant for the other thread would overwrite.
            set_timer_slack(Duration::from_nanos(12_345)).unwrap();
            let before = (policy(), slack());
            drop(ticker);
            assert_eq!((policy(), slack()), before);
        })
        .join()
        .unwrap();
    }
}
