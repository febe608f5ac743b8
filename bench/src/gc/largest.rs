//! The largest live heap each collector sustains at a block size: short [`trial`]s double the
//! live size until one misses a block, bisect between the last pass and the first miss, then
//! one long trial confirms the result; if the confirmation misses a block, the size steps
//! down and is confirmed again, a bounded number of times.
//!
//! The search is split in phases ([`Search::explore`], [`Search::confirm`]) so that the suite
//! can run every collector's short trials first and spend what is left of its time budget on
//! confirmations, alternating the collectors' order in every phase.

use std::time::Instant;

use downbeat_gc::Mode;

use super::trial::{self, Setup};

/// How the search runs.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Seconds per short trial.
    pub trial_seconds: f64,
    /// Seconds of the confirmation; `None` skips it (`--quick`).
    pub confirm_seconds: Option<f64>,
    /// First live size tried (KiB).
    pub start_kib: usize,
    /// Smallest live size tried (KiB); below it the result is 0.
    pub min_kib: usize,
    /// Largest live size tried (KiB): a pass here is reported as `>= cap`.
    pub cap_kib: usize,
    /// Bisection steps between the last pass and the first miss.
    pub bisect_steps: usize,
    /// Confirmations after the first that may step the size down.
    pub max_retries: usize,
    /// Factor a size is multiplied by after a failed confirmation.
    pub step_down: f64,
}

/// One collector's search at one block size.
pub struct Search {
    /// The implementation's name in the report.
    pub name: &'static str,
    /// The collector.
    pub mode: Mode,
    /// Frames per block (at 48 kHz).
    pub frames: usize,
    /// The largest size that passed a short trial (KiB), 0 if none did.
    pub passed_kib: usize,
    /// The smallest size that missed a short trial (KiB), if one did.
    pub missed_kib: Option<usize>,
    /// The size the next confirmation tries (KiB).
    next_kib: usize,
    /// The confirmed size (KiB) and what its confirmation measured.
    pub confirmed: Option<Confirmed>,
    /// Confirmations run.
    pub confirmations: usize,
    /// Whether a confirmation was due but the suite's budget had no room for it.
    pub out_of_time: bool,
    /// Every trial, in order, for the notes.
    pub log: Vec<String>,
    /// Pinning or priority notes from the trials.
    pub notes: Vec<String>,
}

/// A size that ran a whole confirmation without a missed block.
pub struct Confirmed {
    /// Live size (KiB).
    pub kib: usize,
    /// Seconds it ran.
    pub seconds: f64,
    /// Per block: what the collector held the audio thread for (µs).
    pub pause_us: Vec<f64>,
    /// `Stats::memory_bytes` of the collector at that size.
    pub memory_bytes: usize,
    /// Blocks the OS woke more than half a period late (not judged).
    pub late_starts: usize,
}

impl Search {
    /// A search not started yet.
    pub fn new(name: &'static str, mode: Mode, frames: usize) -> Self {
        Self {
            name,
            mode,
            frames,
            passed_kib: 0,
            missed_kib: None,
            next_kib: 0,
            confirmed: None,
            confirmations: 0,
            out_of_time: false,
            log: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn setup(&self, kib: usize, seconds: f64, copy_rate: f64, collector_cpu: usize) -> Setup {
        Setup {
            mode: self.mode,
            frames: self.frames,
            live_bytes: kib << 10,
            seconds,
            copy_rate,
            collector_cpu,
            stop_on_miss: true,
        }
    }

    /// Runs one trial; `Ok` with the outcome when every block met its deadline.
    fn trial(&mut self, setup: &Setup, kind: &str) -> Result<trial::Outcome, ()> {
        let kib = setup.live_bytes >> 10;
        match trial::run(setup) {
            Ok(o) => {
                super::add_notes(&mut self.notes, o.notes.iter().cloned());
                match &o.failure {
                    None => {
                        self.log.push(format!("{kib} KiB {kind}: ok"));
                        Ok(o)
                    }
                    Some(f) => {
                        self.log.push(format!("{kib} KiB {kind}: {f}"));
                        Err(())
                    }
                }
            }
            Err(e) => {
                self.log.push(format!("{kib} KiB {kind}: {e}"));
                Err(())
            }
        }
    }

    fn passes(&mut self, kib: usize, plan: &Plan, copy_rate: f64, cpu: usize) -> bool {
        let setup = self.setup(kib, plan.trial_seconds, copy_rate, cpu);
        self.trial(&setup, "trial").is_ok()
    }

    /// The short trials: see [`bracket`].
    pub fn explore(&mut self, plan: &Plan, copy_rate: f64, cpu: usize) {
        let (lo, hi) = bracket(plan, |kib| self.passes(kib, plan, copy_rate, cpu));
        self.passed_kib = lo.unwrap_or(0);
        self.missed_kib = hi;
        self.next_kib = self.passed_kib;
    }

    /// Whether another confirmation is due: none passed yet, the search found a size, and
    /// the retries are not used up.
    pub fn wants_confirmation(&self, plan: &Plan) -> bool {
        plan.confirm_seconds.is_some()
            && self.confirmed.is_none()
            && self.next_kib >= plan.min_kib
            && self.next_kib > 0
            && self.confirmations <= plan.max_retries
            && !self.out_of_time
    }

    /// One long trial at the current candidate; on a miss the candidate steps down.
    pub fn confirm(&mut self, plan: &Plan, copy_rate: f64, cpu: usize) {
        let Some(seconds) = plan.confirm_seconds else {
            return;
        };
        let kib = self.next_kib;
        self.confirmations += 1;
        let setup = self.setup(kib, seconds, copy_rate, cpu);
        match self.trial(&setup, "confirmation") {
            Ok(o) => {
                self.confirmed = Some(Confirmed {
                    kib,
                    seconds: o.blocks as f64 * self.frames as f64 / trial::RATE,
                    pause_us: o.pause_us,
                    memory_bytes: o.stats.memory_bytes,
                    late_starts: o.late_starts,
                });
            }
            Err(()) => self.next_kib = (kib as f64 * plan.step_down) as usize,
        }
    }

    /// The size to report (KiB): the confirmed one, or without confirmations the search's.
    pub fn result_kib(&self, plan: &Plan) -> usize {
        match (&self.confirmed, plan.confirm_seconds) {
            (Some(c), _) => c.kib,
            (None, None) => self.passed_kib,
            (None, Some(_)) => 0,
        }
    }
}

/// Runs every search: short trials for all, then rounds of confirmations (every search's
/// first, then the step-downs) while each can end before `deadline`, alternating the order
/// of the searches.
pub fn run_all(
    searches: &mut [Search],
    plan: &Plan,
    copy_rate: f64,
    cpu: usize,
    deadline: Instant,
) {
    let all: Vec<usize> = (0..searches.len()).collect();
    let order = |k: usize| crate::report::alternating(&all, k);
    for i in order(0) {
        searches[i].explore(plan, copy_rate, cpu);
    }
    let Some(seconds) = plan.confirm_seconds else {
        return;
    };
    for round in 1.. {
        let mut ran = false;
        for i in order(round) {
            if !searches[i].wants_confirmation(plan) {
                continue;
            }
            // A few seconds more for building a large heap before the clock starts.
            let needs = std::time::Duration::from_secs_f64(seconds + 5.0);
            if Instant::now() + needs <= deadline {
                searches[i].confirm(plan, copy_rate, cpu);
                ran = true;
            } else {
                searches[i]
                    .log
                    .push("no time left in the suite's budget for another confirmation".into());
                searches[i].out_of_time = true;
            }
        }
        if !ran {
            break;
        }
    }
}

/// The largest size that `passes` (KiB) and the smallest that does not, as far as the plan
/// looks: doubling from `plan.start_kib` up to the cap (halving down to `plan.min_kib` while
/// the start misses), then bisecting geometrically between the last pass and the first miss.
pub fn bracket(
    plan: &Plan,
    mut passes: impl FnMut(usize) -> bool,
) -> (Option<usize>, Option<usize>) {
    let (mut lo, mut hi): (Option<usize>, Option<usize>) = (None, None);
    let mut kib = plan.start_kib.clamp(plan.min_kib, plan.cap_kib);
    loop {
        if passes(kib) {
            lo = Some(kib);
            if kib >= plan.cap_kib || hi.is_some() {
                break;
            }
            kib = (kib * 2).min(plan.cap_kib);
        } else {
            hi = Some(kib);
            if lo.is_some() || kib <= plan.min_kib {
                break;
            }
            kib = (kib / 2).max(plan.min_kib);
        }
    }
    if let (Some(mut l), Some(mut h)) = (lo, hi) {
        for _ in 0..plan.bisect_steps {
            let mid = ((l as f64 * h as f64).sqrt() as usize).clamp(l + 1, h);
            // Closer than 5% is below what a few seconds' trial can tell apart.
            if mid >= h || (h as f64) < l as f64 * 1.05 {
                break;
            }
            if passes(mid) {
                l = mid;
            } else {
                h = mid;
            }
        }
        (lo, hi) = (Some(l), Some(h));
    }
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            trial_seconds: 1.0,
            confirm_seconds: Some(60.0),
            start_kib: 1024,
            min_kib: 64,
            cap_kib: 4096,
            bisect_steps: 4,
            max_retries: 2,
            step_down: 0.8,
        }
    }

    #[test]
    fn the_search_brackets_the_threshold_within_ten_percent() {
        for threshold in [100, 700, 1500, 3000] {
            let mut tried = Vec::new();
            let (lo, hi) = bracket(&plan(), |kib| {
                tried.push(kib);
                kib <= threshold
            });
            let (lo, hi) = (lo.unwrap(), hi.unwrap());
            assert!(
                lo <= threshold && threshold < hi,
                "{threshold}: {lo}..{hi} {tried:?}"
            );
            assert!(
                hi as f64 <= lo as f64 * 1.1,
                "{threshold}: {lo}..{hi} {tried:?}"
            );
            assert!(tried.len() <= 10, "{tried:?}");
        }
    }

    #[test]
    fn the_cap_and_the_floor_end_the_search() {
        let (lo, hi) = bracket(&plan(), |_| true);
        assert_eq!((lo, hi), (Some(4096), None), "every size passes: the cap");
        let mut tried = Vec::new();
        let (lo, hi) = bracket(&plan(), |kib| {
            tried.push(kib);
            false
        });
        assert_eq!(
            (lo, hi),
            (None, Some(64)),
            "nothing passes: down to the floor"
        );
        assert_eq!(tried, [1024, 512, 256, 128, 64]);
    }
}
