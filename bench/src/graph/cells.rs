//! The table of a paced graph case: per scheduler and run, the load percentiles, missed
//! callbacks, and the limit columns of [`Limit`](super::limit::Limit).

use super::{quantile, Paced, Scheduler};
use crate::report::{Better, Report};

/// The load percentiles every paced case reports.
const LABELS: [(f64, &str); 6] = [
    (0.0, "P0"),
    (0.25, "P25"),
    (0.5, "P50"),
    (0.75, "P75"),
    (0.99, "P99"),
    (1.0, "P100"),
];

/// One figure per run of each scheduler.
#[derive(Clone, Default)]
struct Runs {
    loads: [Vec<f64>; LABELS.len()],
    missed: Vec<f64>,
    ideal_p50: Vec<f64>,
    ideal_p99: Vec<f64>,
    work_p50: Vec<f64>,
    idle_p50: Vec<f64>,
    wake_p50: Vec<f64>,
    wake_p99: Vec<f64>,
    tail_p50: Vec<f64>,
    outside_p50: Vec<f64>,
    moved_vs_stayed: Vec<f64>,
}

pub struct Cells {
    case: &'static str,
    kinds: Vec<Scheduler>,
    runs: Vec<Runs>,
}

fn percentile(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    quantile(&v, q)
}

impl Cells {
    pub fn new(case: &'static str, kinds: &[Scheduler]) -> Self {
        Self {
            case,
            kinds: kinds.to_vec(),
            runs: vec![Runs::default(); kinds.len()],
        }
    }

    pub fn record(&mut self, kind: Scheduler, paced: Paced) {
        let k = self.kinds.iter().position(|&x| x == kind).unwrap();
        let r = &mut self.runs[k];
        let mut loads = paced.loads;
        r.missed
            .push(loads.iter().filter(|&&l| l > 1.0).count() as f64);
        loads.sort_by(f64::total_cmp);
        for (j, &(q, _)) in LABELS.iter().enumerate() {
            r.loads[j].push(quantile(&loads, q));
        }
        let limit = paced.limit;
        if let Some((ratio, _, _)) = limit.moved_vs_stayed() {
            r.moved_vs_stayed.push(ratio);
        }
        r.ideal_p50.push(percentile(limit.ideal.clone(), 0.5));
        r.ideal_p99.push(percentile(limit.ideal, 0.99));
        r.work_p50.push(percentile(limit.work, 0.5));
        r.idle_p50.push(percentile(limit.idle, 0.5));
        if !limit.outside.is_empty() {
            r.outside_p50.push(percentile(limit.outside.clone(), 0.5));
        }
        if !limit.tail.is_empty() {
            r.tail_p50.push(percentile(limit.tail.clone(), 0.5));
        }
        if !limit.wake.is_empty() {
            r.wake_p50.push(percentile(limit.wake.clone(), 0.5));
            r.wake_p99.push(percentile(limit.wake, 0.99));
        }
    }

    pub fn report(&self, report: &mut Report) {
        let c = self.case;
        for (k, kind) in self.kinds.iter().enumerate() {
            let name = kind.name(true);
            let r = &self.runs[k];
            for (j, &(_, label)) in LABELS.iter().enumerate() {
                report.add(&format!("{c}_load_{label}"), name, "load", &r.loads[j]);
            }
            report.add(&format!("{c}_missed"), name, "callbacks", &r.missed);
            report.add(&format!("{c}_ideal_P50"), name, "load", &r.ideal_p50);
            report.add(&format!("{c}_ideal_P99"), name, "load", &r.ideal_p99);
            report.add(&format!("{c}_work_P50"), name, "load", &r.work_p50);
            report.add(&format!("{c}_idle_P50"), name, "load", &r.idle_p50);
            if !r.wake_p50.is_empty() {
                report.add(&format!("{c}_wake_P50"), name, "us", &r.wake_p50);
                report.add(&format!("{c}_wake_P99"), name, "us", &r.wake_p99);
            }
            if !r.tail_p50.is_empty() {
                report.add(&format!("{c}_tail_P50"), name, "load", &r.tail_p50);
            }
            if !r.outside_p50.is_empty() {
                report.add(&format!("{c}_outside_P50"), name, "load", &r.outside_p50);
            }
            if !r.moved_vs_stayed.is_empty() {
                report.add(
                    &format!("{c}_node_moved_vs_stayed"),
                    name,
                    "time ratio",
                    &r.moved_vs_stayed,
                );
            }
        }
        let ours = Scheduler::Downbeat;
        if !self.kinds.contains(&ours) {
            return;
        }
        for rival in self.kinds.iter().filter(|&&k| k != ours) {
            for label in ["P50", "P99", "P100"] {
                let case = format!("{c}_load_{label}");
                report.ratio(
                    &case,
                    &case,
                    ours.name(true),
                    rival.name(true),
                    Better::Lower,
                );
            }
        }
        for label in ["P50", "P99"] {
            let measured = report.median(&format!("{c}_load_{label}"), ours.name(true));
            let ideal = report.median(&format!("{c}_ideal_{label}"), ours.name(true));
            if let (Some(m), Some(i)) = (measured, ideal) {
                report
                    .ratios
                    .insert(format!("{c}_load_{label}_vs_ideal"), i / m);
            }
        }
    }
}
