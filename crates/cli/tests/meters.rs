//! `downbeat run --meters`: every node's level over the run in the summary.

mod support;

/// A constant 1.0 through a gain ramped by automation from 0 to 1 over `SECONDS`: the
/// gain's value at frame f is f / (SECONDS x 48000), and so is its output.
const AUTOMATION: &str = r#"gain = 0.0

[[automation]]
node = "g"
param = "gain"
points = [[SECONDS, 1.0, "linear"]]
"#;

/// `downbeat run --meters` reports every node's peak and RMS over the run.
#[test]
fn run_meters_reports_each_nodes_levels_over_the_run() {
    let dir = std::env::temp_dir().join(format!("downbeat-watch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The gain ramps from 0 to 1 over the run: its peak is 1 (the last frame is the
    // ramp's end), its RMS that of a straight line, 1/sqrt(3).
    let src = support::constant_through_gain(64) + &AUTOMATION.replace("SECONDS", "1.0");
    std::fs::write(dir.join("p.toml"), src).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .arg("run")
        .arg(dir.join("p.toml"))
        .args([
            "--device",
            "offline",
            "--seconds",
            "1.1",
            "--meters",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let levels = summary["node_levels"].as_array().unwrap();
    let level = |node: &str| {
        let l = levels.iter().find(|l| l["node"] == node).unwrap();
        (l["peak"].as_f64().unwrap(), l["rms"].as_f64().unwrap())
    };
    assert_eq!(level("s"), (1.0, 1.0));
    let (peak, rms) = level("g");
    assert_eq!(peak, 1.0);
    // 1 s of ramp and 0.1 s at 1: mean square (1/3 + 0.1) / 1.1.
    let want = ((1.0 / 3.0 + 0.1) / 1.1f64).sqrt();
    assert!((rms - want).abs() < 1e-4, "rms {rms}, want {want}");
    assert_eq!(level("out"), level("g"));
}
