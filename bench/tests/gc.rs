//! The gc suite runs end to end and reports the thesis' measures under the agreed names and
//! units; speed is never asserted here.

use std::process::Command;

use serde_json::Value;

fn row<'a>(results: &'a [Value], case: &str, imp: &str) -> &'a Value {
    results
        .iter()
        .find(|r| r["case"] == case && r["impl"] == imp)
        .unwrap_or_else(|| panic!("missing {case}/{imp}"))
}

#[test]
fn gc_quick_json_has_both_blocking_measures_and_p_m_in_mb_per_ms() {
    let out = Command::new(env!("CARGO_BIN_EXE_downbeat-bench"))
        .args(["gc", "--quick", "--seconds", "1", "--json"])
        .output()
        .expect("bench binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(json["suite"], "gc");
    let results = json["results"].as_array().expect("results");
    for imp in ["snapshot", "replicating", "stop-the-world"] {
        for measure in ["blocking", "blocking_without_full", "waited"] {
            for q in ["min", "avg", "p99", "max"] {
                let r = row(results, &format!("{measure}_{q}"), imp);
                assert_eq!(r["unit"], "us");
                assert!(r["median"].as_f64().is_some_and(|x| x >= 0.0));
            }
        }
        for share in [
            "cpu_blocking",
            "cpu_parallel",
            "cpu_free",
            "cpu_blocking_waited",
            "cpu_parallel_waited",
        ] {
            let x = row(results, share, imp)["median"].as_f64().unwrap();
            assert!((0.0..100.0).contains(&x), "{share}/{imp} = {x}");
        }
        // Every collection has a critical section: a roots copy at least.
        let avg = row(results, "blocking_avg", imp)["median"]
            .as_f64()
            .unwrap();
        assert!(avg > 0.0, "{imp} blocking_avg = {avg}");
        assert_eq!(row(results, "blocks", imp)["runs"], 1);
    }
    // p(M) is bytes per nanosecond, which is MB/ms. Its size depends on the machine and its
    // load, so what is checked is the unit: the predicted full snapshot (ms) times p(M)
    // (MB/ms) is the 4 MiB heap in MB, whatever the speed, within the JSON's four significant
    // digits per figure (a MiB taken for a MB is 5% off, a unit slip 1,000x).
    let p = row(results, "copy_rate_pM", "snapshot");
    assert_eq!(p["unit"], "MB/ms");
    let rate = p["median"].as_f64().unwrap();
    assert!(rate.is_finite() && rate > 0.0, "p(M) = {rate} MB/ms");
    let predicted = row(results, "full_snapshot_predicted", "snapshot");
    assert_eq!(predicted["unit"], "ms");
    let heap_mb = predicted["median"].as_f64().unwrap() * rate;
    let four_mib_in_mb = (4 << 20) as f64 / 1e6;
    assert!(
        (heap_mb - four_mib_in_mb).abs() < 2e-3 * four_mib_in_mb,
        "predicted x p(M) = {heap_mb} MB, not the 4 MiB heap ({four_mib_in_mb} MB)"
    );
    let unpadded = row(results, "full_copy_unpadded_avg", "snapshot")["median"]
        .as_f64()
        .unwrap();
    assert!(unpadded > 0.0);
    let ratios = json["ratios"].as_object().expect("ratios");
    for key in [
        "blocking_avg_vs_stop_the_world",
        "blocking_max_vs_stop_the_world",
    ] {
        assert!(
            ratios
                .get(key)
                .and_then(Value::as_f64)
                .is_some_and(|r| r > 0.0),
            "missing ratio {key}"
        );
    }
}
