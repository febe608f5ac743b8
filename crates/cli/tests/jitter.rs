//! `downbeat jitter` end to end: output, the no-root fallback, bad input.

use std::process::{Command, Output};

fn downbeat(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_downbeat"));
    cmd.args(args).env_remove("DOWNBEAT_NO_RT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the downbeat binary runs")
}

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("one JSON object on stdout")
}

#[test]
fn json_summary_is_consistent() {
    let o = downbeat(
        &["jitter", "--period", "10ms", "--seconds", "0.5", "--json"],
        &[],
    );
    let s = json(&o);
    let ticks = s["ticks"].as_u64().unwrap();
    let skipped = s["skipped"].as_u64().unwrap();
    // Half a second of 10 ms deadlines: about fifty, delivered or skipped.
    assert!((40..=52).contains(&(ticks + skipped)), "{s}");
    let q = |k: &str| s[k].as_f64().unwrap();
    assert!(
        q("p50_us") <= q("p99_us") && q("p99_us") <= q("p999_us"),
        "{s}"
    );
    assert!(q("p999_us") <= q("max_us") + 1.0, "{s}");
    assert!((0.0..=100.0).contains(&q("cpu_percent")), "{s}");
    assert_eq!(q("period_us"), 10_000.0);
    let binned: u64 = s["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b[1].as_u64().unwrap())
        .sum();
    assert_eq!(binned + s["overflow"].as_u64().unwrap(), ticks);
}

#[test]
fn text_output_has_records_quantiles_and_a_histogram() {
    let o = downbeat(
        &[
            "jitter",
            "--period",
            "1.45ms",
            "--seconds",
            "0.3",
            "--load",
            "8",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "period 1.450 ms",
        "8 load thread(s)",
        "new record:",
        "P99.9",
        "% of a core",
        "histogram",
    ] {
        assert!(out.contains(needle), "missing `{needle}` in:\n{out}");
    }
}

#[test]
fn without_permission_it_falls_back_and_says_so() {
    // DOWNBEAT_NO_RT makes the priority request fail as it would for a user without rights.
    let o = downbeat(
        &["jitter", "--period", "5ms", "--seconds", "0.2", "--json"],
        &[("DOWNBEAT_NO_RT", "1")],
    );
    let s = json(&o);
    assert!(
        s["realtime"].as_str().unwrap().starts_with("refused"),
        "{s}"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("note: no real-time priority"), "{err}");
    assert!(err.contains("RLIMIT_RTPRIO"), "{err}");
    assert!(s["ticks"].as_u64().unwrap() > 0);

    let o = downbeat(
        &[
            "jitter",
            "--period",
            "5ms",
            "--seconds",
            "0.2",
            "--no-rt",
            "--spin",
            "off",
            "--json",
        ],
        &[],
    );
    let s = json(&o);
    assert_eq!(s["realtime"], "ordinary thread (--no-rt)");
    assert_eq!(s["spin_margin_us"], 0.0);
}

#[test]
fn bad_input_exits_2_with_a_hint() {
    for (args, needle) in [
        (&["jitter", "--period", "16"][..], "needs a unit"),
        (&["jitter", "--period", "16h"][..], "not a unit of time"),
        (&["jitter", "--period", "1us"][..], "out of range"),
        (&["jitter", "--period", "fast"][..], "not a period"),
        (&["jitter", "--seconds", "0"][..], "out of range"),
        (&["jitter", "--load", "9999"][..], "--load"),
        (
            &["jitter", "--pin", "4096", "--seconds", "0.1"][..],
            "--pin 4096",
        ),
    ] {
        let o = downbeat(args, &[]);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
