//! What every suite shares: result rows, summaries, the JSON convention of ARCHITECTURE.md,
//! the text table, the machine description, and thread pinning.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

/// The order run `k` visits `items` in: forward when `k` is even, backward when it is odd,
/// so that no rival always runs first or after the same neighbour.
pub fn alternating<T: Copy>(items: &[T], k: usize) -> Vec<T> {
    let mut v = items.to_vec();
    if k % 2 == 1 {
        v.reverse();
    }
    v
}

/// One case measured for one implementation, summarised over its runs.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub case: String,
    #[serde(rename = "impl")]
    pub implementation: String,
    pub unit: String,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub runs: usize,
}

/// Whether a larger figure is better, which orients ratios so that > 1.0 favours Downbeat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

/// A suite's results, printed as one JSON object or as a table.
#[derive(Debug, Serialize)]
pub struct Report {
    pub suite: String,
    pub machine: String,
    pub results: Vec<Row>,
    pub ratios: BTreeMap<String, f64>,
    /// Lines printed under the table only (context such as a same-core memcpy, or fallbacks).
    #[serde(skip)]
    pub notes: Vec<String>,
}

impl Report {
    pub fn new(suite: &str) -> Self {
        Self {
            suite: suite.to_owned(),
            machine: machine(),
            results: Vec::new(),
            ratios: BTreeMap::new(),
            notes: Vec::new(),
        }
    }

    /// Adds a row summarising `samples`.
    pub fn add(&mut self, case: &str, implementation: &str, unit: &str, samples: &[f64]) {
        let s = Summary::of(samples);
        self.results.push(Row {
            case: case.to_owned(),
            implementation: implementation.to_owned(),
            unit: unit.to_owned(),
            median: round(s.median),
            min: round(s.min),
            max: round(s.max),
            runs: samples.len(),
        });
    }

    /// Median of one case and implementation.
    pub fn median(&self, case: &str, implementation: &str) -> Option<f64> {
        self.results
            .iter()
            .find(|r| r.case == case && r.implementation == implementation)
            .map(|r| r.median)
    }

    /// Records `<key>_vs_<rival>` = ours / theirs (or theirs / ours when lower is better).
    pub fn ratio(&mut self, key: &str, case: &str, ours: &str, rival: &str, better: Better) {
        if let (Some(a), Some(b)) = (self.median(case, ours), self.median(case, rival)) {
            let r = match better {
                Better::Higher => a / b,
                Better::Lower => b / a,
            };
            if r.is_finite() {
                self.ratios
                    .insert(format!("{key}_vs_{rival}"), (r * 1000.0).round() / 1000.0);
            }
        }
    }

    /// Prints the report: JSON on one line, or an aligned table.
    pub fn print(&self, json: bool) {
        if json {
            println!(
                "{}",
                serde_json::to_string(self).expect("report serialises")
            );
        } else {
            print!("{}", self.table());
        }
    }

    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "suite: {}    machine: {}", self.suite, self.machine);
        let header = ["case", "impl", "unit", "median", "min", "max", "runs"];
        let rows: Vec<[String; 7]> = self
            .results
            .iter()
            .map(|r| {
                [
                    r.case.clone(),
                    r.implementation.clone(),
                    r.unit.clone(),
                    fmt_num(r.median),
                    fmt_num(r.min),
                    fmt_num(r.max),
                    r.runs.to_string(),
                ]
            })
            .collect();
        let mut widths = header.map(str::len);
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.len());
            }
        }
        let line = |cells: &[String]| {
            let mut s = String::new();
            for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
                // Text left, numbers right.
                if i < 3 {
                    let _ = write!(s, "{cell:<w$}  ");
                } else {
                    let _ = write!(s, "{cell:>w$}  ");
                }
            }
            s.trim_end().to_owned()
        };
        let _ = writeln!(out, "{}", line(&header.map(String::from)));
        for row in &rows {
            let _ = writeln!(out, "{}", line(row));
        }
        if !self.ratios.is_empty() {
            let _ = writeln!(out, "ratios (> 1.0 means Downbeat is better):");
            for (k, v) in &self.ratios {
                let _ = writeln!(out, "  {k:<28} {v:.3}");
            }
        }
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
        out
    }
}

/// Median, minimum and maximum of a set of runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Summary {
    pub fn of(samples: &[f64]) -> Self {
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return Self {
                median: f64::NAN,
                min: f64::NAN,
                max: f64::NAN,
            };
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Self {
            median,
            min: v[0],
            max: v[n - 1],
        }
    }
}

/// The `q` quantile (0..=1) of already sorted values, nearest rank.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn round(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    // Four significant digits are more than any of these measurements can back.
    let digits = 3 - x.abs().max(1e-9).log10().floor() as i32;
    let scale = 10f64.powi(digits.max(0));
    (x * scale).round() / scale
}

fn fmt_num(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// "2 cpus, Intel(R) Xeon(R) Processor", from the OS.
pub fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned());
    format!("{cpus} cpus, {model}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternating_order_reverses_every_other_run() {
        assert_eq!(alternating(&[1, 2, 3], 0), vec![1, 2, 3]);
        assert_eq!(alternating(&[1, 2, 3], 1), vec![3, 2, 1]);
        assert_eq!(alternating(&[1, 2, 3], 2), vec![1, 2, 3]);
    }

    #[test]
    fn summaries_and_quantiles() {
        let s = Summary::of(&[3.0, 1.0, 2.0, 10.0]);
        assert_eq!((s.median, s.min, s.max), (2.5, 1.0, 10.0));
        let sorted: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&sorted, 0.5), 50.0);
        assert_eq!(quantile(&sorted, 0.99), 99.0);
        assert_eq!(round(123.456), 123.5);
        assert_eq!(round(0.012345), 0.01235);
    }

    #[test]
    fn ratios_are_oriented() {
        let mut r = Report::new("t");
        r.add("tp", "downbeat", "M/s", &[120.0]);
        r.add("tp", "rtrb", "M/s", &[100.0]);
        r.add("lat", "downbeat", "ns", &[400.0]);
        r.add("lat", "rtrb", "ns", &[500.0]);
        r.ratio("tp", "tp", "downbeat", "rtrb", Better::Higher);
        r.ratio("lat", "lat", "downbeat", "rtrb", Better::Lower);
        assert_eq!(r.ratios["tp_vs_rtrb"], 1.2);
        assert_eq!(r.ratios["lat_vs_rtrb"], 1.25);
        let json: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(json["results"][0]["impl"], "downbeat");
        assert!(r.table().contains("tp_vs_rtrb"));
    }
}
