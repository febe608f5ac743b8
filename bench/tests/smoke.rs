//! The harness runs end to end and prints the agreed JSON shape; speed is never asserted here.

use std::process::Command;

#[test]
fn ring_quick_json_has_every_case_and_ratio() {
    let out = Command::new(env!("CARGO_BIN_EXE_downbeat-bench"))
        .args(["ring", "--quick", "--json"])
        .output()
        .expect("bench binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(json["suite"], "ring");
    assert!(json["machine"].as_str().is_some_and(|m| m.contains("cpus")));
    let results = json["results"].as_array().expect("results");
    for case in [
        "uncontended",
        "contended",
        "bulk",
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
