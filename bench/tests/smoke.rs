//! The harness runs end to end and prints the agreed JSON shape; speed is never asserted here.

use std::process::Command;

/// Runs the bench binary with `args`, checks it succeeded, and parses its one JSON object.
fn bench_json(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_downbeat-bench"))
        .args(args)
        .output()
        .expect("bench binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn ring_quick_json_has_every_case_and_ratio() {
    let json = bench_json(&["ring", "--quick", "--json"]);
    assert_eq!(json["suite"], "ring");
    assert!(json["machine"].as_str().is_some_and(|m| m.contains("cpus")));
    let results = json["results"].as_array().expect("results");
    for case in [
        "uncontended",
        "contended",
        "bulk",
        "bulk_480",
        "roundtrip",
        "roundtrip_p99",
    ] {
        for imp in ["downbeat", "rtrb", "ringbuf", "crossbeam"] {
            let row = results
                .iter()
                .find(|r| r["case"] == case && r["impl"] == imp)
                .unwrap_or_else(|| panic!("missing {case}/{imp}"));
            for key in ["median", "min", "max"] {
                assert!(
                    row[key].as_f64().is_some_and(|x| x > 0.0),
                    "{case}/{imp} {key}"
                );
            }
            assert_eq!(row["runs"], 1);
            assert!(row["unit"].is_string());
        }
        assert!(
            json["ratios"][format!("{case}_vs_rtrb")].is_number(),
            "{case} ratio"
        );
    }
    // The machine's limits, measured in the same harness.
    for (case, imp) in [
        ("bulk", "memcpy (same core)"),
        ("bulk_480", "memcpy (same core)"),
        ("roundtrip", "floor: one atomic"),
        ("roundtrip_p99", "floor: one atomic"),
    ] {
        assert!(
            results
                .iter()
                .any(|r| r["case"] == case && r["impl"] == imp && r["median"].as_f64() > Some(0.0)),
            "missing {case}/{imp}"
        );
    }
    assert!(json["ratios"]["roundtrip_vs_floor"].is_number());
}

#[test]
fn ring_case_filter_runs_only_that_case() {
    let json = bench_json(&["ring", "--quick", "--json", "--case", "bulk_480"]);
    let results = json["results"].as_array().expect("results");
    assert_eq!(results.len(), 5, "four rings and memcpy: {results:?}");
    assert!(results.iter().all(|r| r["case"] == "bulk_480"));
}

#[test]
fn graph_quick_json_separates_scheduler_from_priority() {
    let json = bench_json(&["graph", "--quick", "--json", "--case", "fanin84"]);
    let results = json["results"].as_array().expect("results");
    for imp in [
        "serial",
        "rayon_spawn",
        "rayon_broadcast",
        "rayon_spawn_rt",
        "rayon_broadcast_rt",
        "downbeat",
        "downbeat_nort",
        "downbeat_cold",
    ] {
        for case in [
            "fanin84_load_P50",
            "fanin84_ideal_P50",
            "fanin84_missed",
            "fanin84_audio_syscalls",
        ] {
            assert!(
                results
                    .iter()
                    .any(|r| r["case"] == case && r["impl"] == imp),
                "missing {case}/{imp}"
            );
        }
    }
    for key in [
        "fanin84_load_P50_vs_rayon_spawn",
        "fanin84_load_P50_vs_rayon_spawn_rt",
        "fanin84_load_P100_vs_rayon_broadcast_rt",
        "fanin84_load_P50_vs_downbeat_nort",
        "fanin84_load_P50_vs_downbeat_cold",
        "fanin84_load_P50_vs_ideal",
    ] {
        assert!(json["ratios"][key].is_number(), "missing ratio {key}");
    }
}

/// The median of `case` for `imp` in a `--json` report.
fn median(results: &[serde_json::Value], case: &str, imp: &str) -> f64 {
    results
        .iter()
        .find(|r| r["case"] == case && r["impl"] == imp)
        .and_then(|r| r["median"].as_f64())
        .unwrap_or_else(|| panic!("missing {case}/{imp}"))
}

/// The ideal column is a lower bound: no scheduler on N cores beats the larger of the
/// summed node times over N and the critical path, both measured in the same callbacks.
#[test]
fn uneven_case_reports_an_ideal_no_scheduler_beats() {
    let json = bench_json(&["graph", "--quick", "--json", "--case", "uneven"]);
    let results = json["results"].as_array().expect("results");
    for imp in ["serial", "rayon_spawn_rt", "rayon_broadcast_rt", "downbeat"] {
        let load = median(results, "uneven_load_P50", imp);
        let ideal = median(results, "uneven_ideal_P50", imp);
        let work = median(results, "uneven_work_P50", imp);
        assert!(
            ideal > 0.0 && ideal <= load * 1.01,
            "{imp}: ideal {ideal}, load {load}"
        );
        assert!(
            ideal >= work / 2.0 * 0.99,
            "{imp}: ideal {ideal} below work/2 {work}"
        );
    }
    assert!(median(results, "uneven_wake_P50", "downbeat") >= 0.0);
}

#[test]
fn ring_table_is_the_default() {
    let out = Command::new(env!("CARGO_BIN_EXE_downbeat-bench"))
        .args(["ring", "--quick"])
        .output()
        .expect("bench binary runs");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("uncontended_vs_rtrb"), "{text}");
}

#[test]
fn alloc_quick_json_has_every_workload_and_rival() {
    let json = bench_json(&["alloc", "--quick", "--json"]);
    assert_eq!(json["suite"], "alloc");
    let results = json["results"].as_array().expect("results");
    let row = |case: &str, imp: &str| {
        results
            .iter()
            .find(|r| r["case"] == case && r["impl"] == imp)
            .unwrap_or_else(|| panic!("missing {case}/{imp}"))
            .clone()
    };
    for prefix in ["", "large_"] {
        for imp in ["downbeat", "glibc", "rlsf", "glibc_tuned"] {
            for q in ["p50", "p99", "p99.9"] {
                let r = row(&format!("{prefix}pair_{q}"), imp);
                assert!(
                    r["median"].as_f64().is_some_and(|x| x > 0.0),
                    "{prefix}{q}/{imp}"
                );
            }
            row(&format!("{prefix}syscalls"), imp);
        }
        // The pool is pre-faulted and nothing in the harness may undo that (a fork for the
        // glibc_tuned child once made every pool page copy-on-write, and the next Downbeat
        // run faulted on ~1500 of them).
        for case in ["syscalls", "page_faults"] {
            let r = row(&format!("{prefix}{case}"), "downbeat");
            assert_eq!(r["max"].as_f64(), Some(0.0), "{prefix}{case}/downbeat");
        }
    }
    for op in ["alloc", "free"] {
        for imp in ["downbeat", "glibc"] {
            let r = row(&format!("remote_{op}_p99"), imp);
            assert!(
                r["median"].as_f64().is_some_and(|x| x > 0.0),
                "remote {op}/{imp}"
            );
        }
    }
    assert!(
        !results.iter().any(
            |r| r["case"].as_str().is_some_and(|c| c.starts_with("remote_")) && r["impl"] == "rlsf"
        ),
        "rlsf cannot free across threads and must have no remote row"
    );
    for key in [
        "pair_p99.9_vs_rlsf",
        "pair_p99.9_vs_glibc",
        "pair_p99.9_vs_glibc_tuned",
        "large_pair_p99.9_vs_rlsf",
        "remote_alloc_p99.9_vs_glibc",
    ] {
        assert!(json["ratios"][key].is_number(), "ratio {key}");
    }
}

/// The gc suite names its three collectors and reports the largest live heap each sustains,
/// at both block sizes, in the quick run too (there from short trials only, and it says so).
#[test]
fn gc_quick_json_has_three_collectors_and_their_largest_heaps() {
    let json = bench_json(&["gc", "--quick", "--seconds", "1", "--json"]);
    assert_eq!(json["suite"], "gc");
    let results = json["results"].as_array().expect("results");
    let imps = ["snapshot", "replicating", "stop-the-world"];
    for imp in imps {
        for case in [
            "largest_heap_frames64",
            "largest_heap_frames256",
            "set_ref",
            "memory",
            "pause_frames64_max",
            "pause_frames256_p99",
            "blocking_max",
        ] {
            let row = results
                .iter()
                .find(|r| r["case"] == case && r["impl"] == imp)
                .unwrap_or_else(|| panic!("missing {case}/{imp}"));
            assert!(
                row["median"].as_f64().is_some_and(|x| x >= 0.0),
                "{case}/{imp}: {row}"
            );
        }
        // Every collector holds at least its pointer heap.
        let over = median(results, "memory_over_heap", imp);
        assert!(over >= 1.0, "{imp}: memory_over_heap {over}");
        // The quick search runs short trials only and says so: nothing was sustained over a
        // confirmation.
        for frames in [64, 256] {
            let s = median(
                results,
                &format!("largest_heap_frames{frames}_sustained"),
                imp,
            );
            assert_eq!(s, 0.0, "{imp} at {frames} frames: confirmed in --quick");
        }
    }
    assert!(
        results.iter().all(|r| r["impl"] != "mark-sweep"),
        "the baseline is called stop-the-world"
    );
    // The machine's own floor, with no collector: every block of a short trial's length
    // run and judged (0.2 s of 64 and of 256 frames at 48 kHz).
    for (frames, blocks) in [(64, 150.0), (256, 38.0)] {
        let row = |case: &str| median(results, &format!("{case}_frames{frames}"), "no-collector");
        assert_eq!(row("machine_blocks"), blocks, "{frames} frames");
        let missed = row("machine_missed");
        assert!(
            (0.0..=blocks).contains(&missed),
            "{frames}: {missed} missed"
        );
    }
    let cost = median(results, "set_ref_barrier_cost", "replicating");
    assert!(cost.is_finite(), "barrier cost {cost}");
    for key in [
        "blocking_max_vs_stop_the_world",
        "replicating_blocking_max_vs_stop_the_world",
    ] {
        assert!(json["ratios"][key].is_number(), "missing ratio {key}");
    }
}
