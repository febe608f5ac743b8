//! The soak's figures, their bounds, and how they are printed.
//!
//! # Bounds
//!
//! Exact, because nothing may be lost however loaded the machine is: xruns the device
//! reports, OSC messages lost or refused, events stale, dropped or late, MIDI events not
//! sent, frames the recording lost, a player's underruns and every other loss counter of
//! every node, threads and file descriptors changed, edits that failed. Memory may grow by
//! at most 1 MiB (1024 kB of `VmRSS`) from the 20th second to the end: the bound.
//! OSC comes over UDP, which loses a datagram only when the server thread is kept from its
//! socket for about 0.2 s (the kernel's default receive buffer holds some 200 of these):
//! a soak run beside another soak (two sets of real-time threads on 2 cores) lost 162
//! messages that way; alone, on a machine busy with builds, none in any run.
//!
//! Late blocks cannot be exact on a shared machine, and are not a matter of speed alone
//! either. The virtual device counts a block as late when its callback starts more than a
//! period after its deadline (a card with two periods of buffer would have played a
//! glitch); it still renders the block at once, so the timeline never drifts. On 2 cores
//! shared with other work, fanin84 at 64 frames makes such blocks for a reason of its own:
//! its 84 spectral compressors hop every 256 frames, all in the same block, so one block in
//! four carries every FFT (about four blocks' worth of work, 1.9 ms serial against a
//! 1.45 ms period). When the other processes leave the pool's second thread no room, that
//! block overruns and the next one starts late; the three light blocks after it (load
//! about 0.04) catch the device up before the next hop. Measured on a 2-core VM whose other
//! work kept the load average at 5 to 9: fanin84 alone at 64 frames (`downbeat run`, 20 s)
//! missed 22% of its deadlines and started 1.3% of its blocks late on 2 threads (8% on 1),
//! a project of one sine started 0.2% late (the hypervisor's doing), and six one-minute
//! soaks missed 5 to 12% of their deadlines and started 0.3 to 0.6% of their blocks late
//! (133 to 253 of 41,344; the bound is 10,336).
//! How many depends on the machine and its load, which tests here never judge (the speed
//! of fanin84 is `bench graph`'s figure). What a soak must judge is that the device keeps
//! real time: lateness caught up within the hop cycle that caused it, never carried into
//! the next. So the bound is one late block per hop cycle, a quarter of the blocks. An
//! engine that falls behind (work that grows with every swap, stalls that recur) makes
//! most blocks late and fails it; a busy machine does not. Deadline misses
//! (callbacks longer than their period) and the load are reported beside it, not judged.

use std::fmt::Write as _;

use downbeat::control::osc::OscCounts;
use downbeat::device::{Run, RunLength};

use super::control::Controlled;
use super::osc::Sent;
use super::project::HOP_FRAMES;
use super::sequencer::Played;
use super::wav::Recording;
use super::{BLOCK, OSC_RATE};
use crate::report::{quantile, Report};

/// Resident memory allowed to grow from the 20th second to the end, in kB.
pub const RSS_GROWTH_KB: f64 = 1024.0;
/// The OSC rate the sender must reach (it catches up after any pause; 1% for the last
/// sleep).
const OSC_RATE_MIN: f64 = OSC_RATE as f64 * 0.99;
/// The quietest the recording may be (RMS): not silent.
const RMS_MIN: f64 = 1e-3;
/// Frames of exact silence allowed after the start: a chance zero, not a restarted graph.
const GAP_FRAMES: u64 = 2;

/// Everything the run produced.
pub struct Gathered {
    pub seconds: f64,
    pub rate: u32,
    pub threads: usize,
    pub length: RunLength,
    pub memory_from: f64,
    pub run: Run,
    pub control: Controlled,
    pub midi: Played,
    pub osc_sent: Sent,
    pub osc_counts: OscCounts,
    pub recording: Recording,
}

/// The figures of a run, ready to judge.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub seconds: f64,
    pub rate: u32,
    pub threads: usize,
    pub blocks: u64,
    /// The graph's latency in frames (`Schedule::latency`): fanin84's five compressors in
    /// series, 2048 frames each, and the delays that align every other path with them.
    pub latency_frames: u64,
    pub xruns: u64,
    pub late_blocks: u64,
    pub deadline_misses: u64,
    /// Median load over a window after the warm-up, and over the run's last one.
    pub load_p50_early: f64,
    pub load_p50_late: f64,
    pub load_p99: f64,
    pub load_max: f64,
    pub swaps: u64,
    pub swaps_expected: u64,
    pub edit_failures: u64,
    pub build_ms_max: f64,
    pub osc: Sent,
    pub osc_counts: OscCounts,
    pub midi: Played,
    pub events_applied: u64,
    pub events_stale: u64,
    pub events_dropped: u64,
    pub events_late: u64,
    pub memory_from: f64,
    /// `VmRSS` at the first reading from `memory_from` on, and the most it grew after.
    pub rss_kb: f64,
    pub rss_growth_kb: f64,
    pub threads_first: u64,
    pub threads_changed: f64,
    pub fds_first: u64,
    pub fds_changed: f64,
    pub readings: usize,
    pub run_frames: u64,
    pub lost_frames: u64,
    pub recording: Recording,
    pub underrun_frames: u64,
    pub other_losses: u64,
}

/// The median of the loads of blocks `from..to` (seconds) of `loads` (one per block).
fn window_p50(loads: &[f32], blocks_per_second: f64, from: f64, to: f64) -> f64 {
    let a = ((from * blocks_per_second) as usize).min(loads.len());
    let b = ((to * blocks_per_second) as usize).clamp(a, loads.len());
    let mut w: Vec<f64> = loads[a..b].iter().map(|&x| f64::from(x)).collect();
    w.sort_by(f64::total_cmp);
    quantile(&w, 0.5)
}

/// The largest distance of `values` from the first one (NaN when there is none).
fn largest_change(values: impl Iterator<Item = u64>) -> (u64, f64) {
    let mut values = values.peekable();
    let Some(&first) = values.peek() else {
        return (0, f64::NAN);
    };
    let changed = values.map(|v| v.abs_diff(first)).max().unwrap_or(0);
    (first, changed as f64)
}

impl Outcome {
    pub fn gather(g: Gathered) -> Self {
        let engine = &g.run.engine;
        let load = engine.summary();
        let stats = engine.schedule().event_stats();
        let blocks_per_second = f64::from(g.rate) / BLOCK as f64;
        let window = ((g.seconds - g.memory_from) / 2.0).min(60.0);
        let loads = engine.load().samples();
        let samples = &g.control.samples;
        let in_window: Vec<u64> = samples
            .iter()
            .filter(|s| s.at >= g.memory_from)
            .map(|s| s.counts.rss_kb)
            .collect();
        let (rss_kb, rss_growth_kb) = match in_window.first() {
            Some(&first) => (
                first as f64,
                in_window.iter().max().map_or(0, |&m| m - first) as f64,
            ),
            None => (f64::NAN, f64::NAN),
        };
        let (threads_first, threads_changed) =
            largest_change(samples.iter().map(|s| s.counts.threads));
        let (fds_first, fds_changed) = largest_change(samples.iter().map(|s| s.counts.fds));
        let recorded = g.run.report.recorded.first();
        let mut recording = g.recording;
        if recording.invalid.is_none()
            && (u32::from(recording.channels) != engine.channels() as u32
                || recording.rate != g.rate)
        {
            recording.invalid = Some(format!(
                "{} channels at {} Hz; the engine plays {} at {}",
                recording.channels,
                recording.rate,
                engine.channels(),
                g.rate
            ));
        }
        Self {
            seconds: g.seconds,
            rate: g.rate,
            threads: g.threads,
            blocks: load.blocks,
            latency_frames: engine.schedule().latency() as u64,
            xruns: g.run.report.xruns,
            late_blocks: g.run.report.late_wakeups,
            deadline_misses: load.missed,
            load_p50_early: window_p50(
                loads,
                blocks_per_second,
                g.memory_from,
                g.memory_from + window,
            ),
            load_p50_late: window_p50(loads, blocks_per_second, g.seconds - window, g.seconds),
            load_p99: load.load_p99,
            load_max: load.load_max,
            swaps: engine.swaps(),
            // One a second from the first second on, less one for where the run's start
            // and end fall between two ticks.
            swaps_expected: (g.seconds.floor() as u64).saturating_sub(2),
            edit_failures: g.control.failures,
            build_ms_max: g.control.build_ms_max,
            osc: g.osc_sent,
            osc_counts: g.osc_counts,
            midi: g.midi,
            events_applied: stats.applied,
            events_stale: engine.stale_events(),
            events_dropped: engine.undelivered_events() - engine.stale_events(),
            events_late: stats.late,
            memory_from: g.memory_from,
            rss_kb,
            rss_growth_kb,
            threads_first,
            threads_changed,
            fds_first,
            fds_changed,
            readings: samples.len(),
            run_frames: g.length.frames,
            lost_frames: recorded.map_or(u64::MAX, |r| r.lost_frames),
            recording,
            underrun_frames: g.control.underrun_frames,
            other_losses: g.control.other_losses,
        }
    }

    /// Messages the server neither took nor refused: lost on the way.
    fn osc_lost(&self) -> f64 {
        (self.osc.sent + self.osc.errors) as f64
            - (self.osc_counts.applied + self.osc_counts.rejected) as f64
    }
}

/// What a figure must be.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// At most this.
    Max(f64),
    /// At least this.
    Min(f64),
    /// Reported, not judged (the reason is in the module's documentation).
    Reported,
}

/// One figure, judged.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub name: &'static str,
    pub unit: &'static str,
    pub value: f64,
    pub bound: Bound,
    pub passed: bool,
}

fn check(name: &'static str, unit: &'static str, value: f64, bound: Bound) -> Check {
    // A figure that could not be measured (NaN) fails.
    let passed = match bound {
        Bound::Max(b) => value <= b,
        Bound::Min(b) => value >= b,
        Bound::Reported => true,
    };
    Check {
        name,
        unit,
        value,
        bound,
        passed,
    }
}

/// Every figure of `o` with its bound.
pub fn judge(o: &Outcome) -> Vec<Check> {
    use Bound::{Max, Min, Reported};
    let none = Max(0.0);
    let n = |x: u64| x as f64;
    let hop_cycles = o.blocks as f64 * BLOCK as f64 / HOP_FRAMES as f64;
    let r = &o.recording;
    vec![
        check("xruns", "xruns", n(o.xruns), none),
        check(
            "late_blocks",
            "blocks",
            n(o.late_blocks),
            Max(hop_cycles.floor()),
        ),
        check("deadline_misses", "blocks", n(o.deadline_misses), Reported),
        check("blocks", "blocks", n(o.blocks), Reported),
        check("load_p50_early", "load", o.load_p50_early, Reported),
        check("load_p50_late", "load", o.load_p50_late, Reported),
        check("load_p99", "load", o.load_p99, Reported),
        check("load_max", "load", o.load_max, Reported),
        check("swaps", "swaps", n(o.swaps), Min(n(o.swaps_expected))),
        check("edit_failures", "edits", n(o.edit_failures), none),
        check("build_ms_max", "ms", o.build_ms_max, Reported),
        check(
            "osc_rate",
            "messages/s",
            n(o.osc.sent) / o.osc.seconds,
            Min(OSC_RATE_MIN),
        ),
        check("osc_lost", "messages", o.osc_lost(), none),
        check("osc_rejected", "packets", n(o.osc_counts.rejected), none),
        check("midi_events", "events", n(o.midi.sent), Min(n(o.midi.due))),
        check("midi_refused", "events", n(o.midi.refused), none),
        check("events_applied", "events", n(o.events_applied), Reported),
        check("events_stale", "events", n(o.events_stale), none),
        check("events_dropped", "events", n(o.events_dropped), none),
        check("events_late", "events", n(o.events_late), none),
        check("rss", "kB", o.rss_kb, Reported),
        check("rss_growth", "kB", o.rss_growth_kb, Max(RSS_GROWTH_KB)),
        check("threads", "threads", n(o.threads_first), Reported),
        check("threads_changed", "threads", o.threads_changed, none),
        check("fds", "fds", n(o.fds_first), Reported),
        check("fds_changed", "fds", o.fds_changed, none),
        check(
            "recording_valid",
            "bool",
            if r.invalid.is_none() { 1.0 } else { 0.0 },
            Min(1.0),
        ),
        check(
            "recording_length_error",
            "frames",
            n(r.frames.abs_diff(o.run_frames)),
            Max(BLOCK as f64),
        ),
        check("recording_lost_frames", "frames", n(o.lost_frames), none),
        check("recording_nonfinite", "samples", n(r.nonfinite), none),
        check("recording_rms", "rms", r.rms, Min(RMS_MIN)),
        // The graph's latency of exact silence at the start, while the compensation delays
        // and compressors fill; more is a start that lost audio.
        check(
            "recording_leading_silence",
            "s",
            n(r.leading_silence) / f64::from(o.rate.max(1)),
            Max(n(o.latency_frames + BLOCK as u64) / f64::from(o.rate.max(1))),
        ),
        // From the first second on (the first edit comes after it) the player loops a file
        // that is never silent, and the live edits restart no node: a frame of exact
        // silence on both channels (a sum of a dozen sources hitting 0.0 exactly) is all
        // chance allows. A rebuilt graph would leave its latency of silence at every edit.
        check(
            "recording_longest_gap",
            "frames",
            n(r.longest_gap),
            Max(GAP_FRAMES as f64),
        ),
        check(
            "player_underrun_frames",
            "frames",
            n(o.underrun_frames),
            none,
        ),
        check("node_losses", "counts", n(o.other_losses), none),
    ]
}

/// The report: each figure a row (`impl` "downbeat"), each bound a row (`impl` "max" or
/// "min"), and `failed_checks`.
pub fn report(o: &Outcome, checks: &[Check]) -> Report {
    let mut report = Report::new("soak");
    for c in checks {
        report.add(c.name, "downbeat", c.unit, &[c.value]);
        match c.bound {
            Bound::Max(b) => report.add(c.name, "max", c.unit, &[b]),
            Bound::Min(b) => report.add(c.name, "min", c.unit, &[b]),
            Bound::Reported => {}
        }
    }
    let failed = checks.iter().filter(|c| !c.passed).count();
    report.add("failed_checks", "downbeat", "checks", &[failed as f64]);
    report.notes = notes(o);
    report
}

fn notes(o: &Outcome) -> Vec<String> {
    let mut notes = vec![
        format!(
            "{:.0} s on the virtual device: fanin84 + synth and string (tune.mid on loop) + a \
             looping player, {BLOCK} frames at {} Hz, {} thread(s); OSC {} messages/s from another \
             process; a live edit every second (one node added or removed, a filter moved); recorded to disk",
            o.seconds, o.rate, o.threads, OSC_RATE
        ),
        format!(
            "late_blocks: callbacks that started over a period late; bound: one per fanin84 \
             hop cycle ({HOP_FRAMES} frames = {} blocks), i.e. lateness caught up within the \
             cycle that caused it (bench/src/soak/checks.rs says why). deadline_misses and \
             load: reported, not judged (speed is bench graph's)",
            HOP_FRAMES / BLOCK
        ),
        format!(
            "memory from {:.0} s on ({} readings, each 0.5 s after a swap); MIDI: {} loop(s), \
             {} event(s) waited for queue room; OSC: {} sent, {} taken by the server",
            o.memory_from, o.readings, o.midi.loops, o.midi.full, o.osc.sent, o.osc_counts.applied
        ),
        "JACK: not run (the bench builds the engine with default features; bench engines \
         covers JACK)"
            .to_owned(),
    ];
    if let Some(why) = &o.recording.invalid {
        notes.push(format!("recording invalid: {why}"));
    }
    let r = &o.recording;
    if r.longest_gap > 0 {
        let end = r.longest_gap_end as f64 / f64::from(r.rate.max(1));
        notes.push(format!(
            "recording: the longest gap ({} frames) ends at {end:.4} s",
            r.longest_gap
        ));
    }
    notes
}

/// A whole number as one, anything else to four decimals.
fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x:.4}")
    }
}

/// The table of checks: figure, value, bound, result.
pub fn table(o: &Outcome, checks: &[Check]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "soak: {:.0} s, {} blocks of {BLOCK} frames at {} Hz, {} thread(s), virtual device",
        o.seconds, o.blocks, o.rate, o.threads
    );
    let rows: Vec<[String; 4]> = checks
        .iter()
        .map(|c| {
            let verdict = if c.passed { "pass" } else { "FAIL" };
            let (bound, result) = match c.bound {
                Bound::Max(b) => (format!("<= {}", number(b)), verdict),
                Bound::Min(b) => (format!(">= {}", number(b)), verdict),
                Bound::Reported => ("reported".to_owned(), "-"),
            };
            [
                c.name.to_owned(),
                format!("{} {}", number(c.value), c.unit),
                bound,
                result.to_owned(),
            ]
        })
        .collect();
    let header = ["figure", "value", "bound", "result"].map(String::from);
    let mut widths = header.clone().map(|h| h.len());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let _ = writeln!(
            out,
            "{:<w0$}  {:>w1$}  {:<w2$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        );
    }
    let failed: Vec<&str> = checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| c.name)
        .collect();
    let _ = match failed.len() {
        0 => writeln!(out, "soak: every figure within its bound"),
        _ => writeln!(out, "soak: FAILED: {}", failed.join(", ")),
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Figures by name.
    fn by_name(checks: &[Check]) -> BTreeMap<&'static str, &Check> {
        checks.iter().map(|c| (c.name, c)).collect()
    }

    /// A run in which everything went right.
    fn healthy() -> Outcome {
        Outcome {
            seconds: 60.0,
            rate: 44_100,
            threads: 2,
            blocks: 41_344,
            latency_frames: 10_240,
            late_blocks: 500,
            deadline_misses: 9000,
            swaps: 59,
            swaps_expected: 58,
            osc: Sent {
                sent: 59_000,
                errors: 0,
                seconds: 59.0,
            },
            osc_counts: OscCounts {
                applied: 59_000,
                rejected: 0,
            },
            midi: Played {
                sent: 100,
                due: 100,
                ..Played::default()
            },
            rss_kb: 100_000.0,
            rss_growth_kb: 200.0,
            threads_first: 9,
            fds_first: 12,
            threads_changed: 0.0,
            fds_changed: 0.0,
            run_frames: 2_646_000,
            recording: Recording {
                invalid: None,
                channels: 2,
                rate: 44_100,
                frames: 2_646_000,
                nonfinite: 0,
                rms: 0.05,
                leading_silence: 4000,
                longest_gap: 0,
                longest_gap_end: 0,
            },
            lost_frames: 0,
            ..Outcome::default()
        }
    }

    #[test]
    fn a_healthy_run_passes_and_each_fault_fails_its_own_check() {
        let checks = judge(&healthy());
        assert!(checks.iter().all(|c| c.passed), "{checks:?}");
        // The check a fault must fail, and the fault.
        type Fault = (&'static str, fn(&mut Outcome));
        let faults: [Fault; 8] = [
            ("rss_growth", |o| o.rss_growth_kb = 1025.0),
            ("fds_changed", |o| o.fds_changed = 1.0),
            ("threads_changed", |o| o.threads_changed = 1.0),
            ("osc_lost", |o| o.osc_counts.applied -= 1),
            ("events_stale", |o| o.events_stale = 1),
            // Behind for good: every block late.
            ("late_blocks", |o| o.late_blocks = o.blocks),
            ("recording_length_error", |o| o.recording.frames -= 65),
            // A reading that could not be made fails rather than passes.
            ("rss_growth", |o| o.rss_growth_kb = f64::NAN),
        ];
        for (name, fault) in faults {
            let mut o = healthy();
            fault(&mut o);
            let checks = judge(&o);
            let failed: Vec<_> = checks
                .iter()
                .filter(|c| !c.passed)
                .map(|c| c.name)
                .collect();
            assert_eq!(failed, [name]);
        }
    }

    #[test]
    fn the_late_block_bound_is_one_per_hop_cycle() {
        let checks = judge(&healthy());
        let late = by_name(&checks)["late_blocks"];
        assert_eq!(late.bound, Bound::Max((41_344 / 4) as f64));
    }

    #[test]
    fn rows_and_table_carry_every_figure_and_bound() {
        let o = healthy();
        let checks = judge(&o);
        let r = report(&o, &checks);
        assert_eq!(r.median("rss_growth", "max"), Some(RSS_GROWTH_KB));
        assert_eq!(r.median("failed_checks", "downbeat"), Some(0.0));
        assert!(r.median("deadline_misses", "max").is_none());
        let t = table(&o, &checks);
        assert!(t.contains("every figure within its bound"), "{t}");
        assert!(t.contains("late_blocks"));
    }

    #[test]
    fn largest_change_is_from_the_first_reading() {
        assert_eq!(largest_change([9, 9, 11, 8].into_iter()), (9, 2.0));
        assert!(largest_change(std::iter::empty()).1.is_nan());
    }
}
