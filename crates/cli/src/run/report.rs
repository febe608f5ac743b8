//! `--report`: a self-contained HTML page with SVG plots of a run's load.

use std::fmt::Write as _;
use std::path::Path;

use downbeat::LoadSummary;

/// Everything a report shows.
#[derive(Clone, Debug)]
pub struct ReportData<'a> {
    /// Title line, e.g. the project file.
    pub title: &'a str,
    /// One line describing the run (device, threads, format).
    pub subtitle: &'a str,
    /// Load statistics.
    pub summary: LoadSummary,
    /// The load of each callback, in order (may be shorter than `summary.blocks`).
    pub samples: &'a [f32],
    /// Mean time per block of each node, in microseconds, with its name.
    pub node_us: Vec<(String, f64)>,
    /// Duration of one block in microseconds (the budget).
    pub budget_us: f64,
}

const W: f64 = 860.0;
const H: f64 = 260.0;
const PAD: f64 = 48.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn axis(svg: &mut String, y_max: f64, y_label: &str, x_label: &str) {
    let (x0, y0, x1, y1) = (PAD, H - PAD, W - 10.0, 10.0);
    let _ = write!(
        svg,
        r##"<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="#444"/><line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="#444"/>"##
    );
    for k in 0..=4 {
        let v = y_max * k as f64 / 4.0;
        let y = y0 - (y0 - y1) * k as f64 / 4.0;
        let _ = write!(
            svg,
            r##"<text x="{}" y="{}" font-size="11" text-anchor="end">{v:.2}</text><line x1="{x0}" y1="{y}" x2="{x1}" y2="{y}" stroke="#ddd"/>"##,
            x0 - 4.0,
            y + 4.0
        );
    }
    let _ = write!(
        svg,
        r##"<text x="12" y="{}" font-size="12" transform="rotate(-90 12 {})" text-anchor="middle">{y_label}</text><text x="{}" y="{}" font-size="12" text-anchor="middle">{x_label}</text>"##,
        H / 2.0,
        H / 2.0,
        (x0 + x1) / 2.0,
        H - 12.0
    );
}

fn load_over_time(d: &ReportData<'_>) -> String {
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" id="load-time">"#
    );
    let y_max = (d.summary.load_max.max(1.0) * 1.05).min(10.0);
    axis(&mut svg, y_max, "load", "callback");
    let n = d.samples.len().max(1);
    let buckets = n.min(1500);
    let mut points = String::new();
    for b in 0..buckets {
        let lo = b * n / buckets;
        let hi = ((b + 1) * n / buckets).max(lo + 1).min(d.samples.len());
        let v = d.samples[lo.min(d.samples.len().saturating_sub(1))..hi]
            .iter()
            .fold(0.0f32, |m, &x| m.max(x)) as f64;
        let x = PAD + (W - 10.0 - PAD) * b as f64 / buckets as f64;
        let y = (H - PAD) - (H - PAD - 10.0) * (v.min(y_max) / y_max);
        let _ = write!(points, "{x:.1},{y:.1} ");
    }
    let budget_y = (H - PAD) - (H - PAD - 10.0) * (1.0 / y_max);
    let _ = write!(
        svg,
        r##"<polyline fill="none" stroke="#1f77b4" stroke-width="1" points="{points}"/><line x1="{PAD}" y1="{budget_y:.1}" x2="{}" y2="{budget_y:.1}" stroke="#d62728" stroke-dasharray="4 3"/><text x="{}" y="{:.1}" font-size="11" fill="#d62728" text-anchor="end">deadline (1.0)</text></svg>"##,
        W - 10.0,
        W - 12.0,
        budget_y - 3.0
    );
    svg
}

fn histogram(d: &ReportData<'_>) -> String {
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" id="load-histogram">"#
    );
    let x_max = d.summary.load_max.max(0.01) * 1.05;
    let bins = 60;
    let mut counts = vec![0u64; bins];
    for &s in d.samples {
        let b = ((s as f64 / x_max) * bins as f64) as usize;
        counts[b.min(bins - 1)] += 1;
    }
    let c_max = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    axis(&mut svg, c_max, "callbacks", "load");
    let plot_w = W - 10.0 - PAD;
    let bw = plot_w / bins as f64;
    for (i, &c) in counts.iter().enumerate() {
        let h = (H - PAD - 10.0) * c as f64 / c_max;
        let _ = write!(
            svg,
            r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="#9ecae1"/>"##,
            PAD + bw * i as f64,
            H - PAD - h,
            (bw - 1.0).max(0.5)
        );
    }
    let s = &d.summary;
    let marks = [
        ("P25", s.load_p25),
        ("P50", s.load_p50),
        ("P75", s.load_p75),
        ("P99", s.load_p99),
        ("P100", s.load_max),
    ];
    for (k, (name, v)) in marks.iter().enumerate() {
        let x = PAD + plot_w * (v / x_max);
        // Labels near the right edge go to the left of their line.
        let (tx, anchor) = if x > W - 120.0 {
            (x - 3.0, "end")
        } else {
            (x + 3.0, "start")
        };
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" y1="10" x2="{x:.1}" y2="{}" stroke="#e6550d"/><text x="{tx:.1}" y="{}" font-size="11" fill="#e6550d" text-anchor="{anchor}" class="mark">{name} {v:.3}</text>"##,
            H - PAD,
            22.0 + 13.0 * k as f64
        );
    }
    for k in 0..=4 {
        let v = x_max * k as f64 / 4.0;
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{}" font-size="11" text-anchor="middle">{v:.2}</text>"##,
            PAD + plot_w * k as f64 / 4.0,
            H - PAD + 14.0
        );
    }
    svg.push_str("</svg>");
    svg
}

fn node_times(d: &ReportData<'_>) -> String {
    let mut nodes = d.node_us.clone();
    nodes.sort_by(|a, b| b.1.total_cmp(&a.1));
    nodes.truncate(40);
    let row = 16.0;
    let h = PAD + row * nodes.len() as f64;
    let label_w = 150.0;
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" id="node-times">"#
    );
    let max = nodes.iter().map(|n| n.1).fold(1e-9, f64::max);
    for (i, (name, us)) in nodes.iter().enumerate() {
        let y = 10.0 + row * i as f64;
        let w = (W - label_w - 90.0) * us / max;
        let _ = write!(
            svg,
            r##"<text x="{}" y="{:.1}" font-size="11" text-anchor="end">{}</text><rect x="{label_w}" y="{y:.1}" width="{w:.1}" height="{:.1}" fill="#74c476"/><text x="{:.1}" y="{:.1}" font-size="11">{us:.1} µs</text>"##,
            label_w - 4.0,
            y + 11.0,
            esc(name),
            row - 3.0,
            label_w + w + 4.0,
            y + 11.0
        );
    }
    svg.push_str("</svg>");
    svg
}

/// Renders the page.
pub fn render(d: &ReportData<'_>) -> String {
    let s = &d.summary;
    let table = format!(
        "<table><tr><th>blocks</th><th>P0</th><th>P25</th><th>P50</th><th>P75</th><th>P99</th><th>P99.9</th><th>P100</th><th>missed</th></tr>\
         <tr><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{}</td></tr></table>",
        s.blocks, s.load_p0, s.load_p25, s.load_p50, s.load_p75, s.load_p99, s.load_p999, s.load_max, s.missed
    );
    let nodes_section = if d.node_us.is_empty() {
        String::new()
    } else {
        format!(
            "<h2>Time per node (mean per block, slowest {} of {})</h2>{}",
            d.node_us.len().min(40),
            d.node_us.len(),
            node_times(d)
        )
    };
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Downbeat load report: {title}</title>
<style>body{{font-family:system-ui,sans-serif;margin:24px;color:#222}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 10px;text-align:right}}h2{{font-size:16px;margin-top:28px}}</style>
</head><body>
<h1>Load report: {title}</h1>
<p>{subtitle}. Load = callback time / block duration ({budget:.0} µs); above 1.0 the deadline was missed.</p>
{table}
<h2>Load over time (maximum per pixel)</h2>{time}
<h2>Load histogram</h2>{hist}
{nodes_section}
</body></html>
"#,
        title = esc(d.title),
        subtitle = esc(d.subtitle),
        budget = d.budget_us,
        time = load_over_time(d),
        hist = histogram(d),
    )
}

/// Writes the page to `path`.
pub fn write(path: &Path, d: &ReportData<'_>) -> std::io::Result<()> {
    std::fs::write(path, render(d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use downbeat::LoadMeter;

    #[test]
    fn page_has_three_plots_and_every_percentile() {
        let mut m = LoadMeter::new(100);
        for i in 0..100 {
            m.record(i as f64 / 80.0);
        }
        let d = ReportData {
            title: "t<1>",
            subtitle: "s",
            summary: m.summary(),
            samples: m.samples(),
            node_us: vec![("a".into(), 10.0), ("b".into(), 5.0)],
            budget_us: 1000.0,
        };
        let page = render(&d);
        for id in ["load-time", "load-histogram", "node-times"] {
            assert!(page.contains(&format!("id=\"{id}\"")), "{id}");
        }
        for p in ["P25", "P50", "P75", "P99", "P100"] {
            assert!(page.contains(&format!(">{p} ")), "{p}");
        }
        assert!(page.contains("t&lt;1&gt;"));
        assert_eq!(page.matches("<rect").count(), 60 + 2);
    }
}
