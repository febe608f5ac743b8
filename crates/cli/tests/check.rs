//! `downbeat check`: what a project builds to.

use downbeat::project::Project;

#[test]
fn check_reports_the_graph_latency() {
    // The fan-in project puts spectral compressors (FFT size 2048 by default) on every
    // path: the graph lags its sources by one FFT frame.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .args(["check", "examples/projects/fanin84.toml"])
        .current_dir(&root)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let project = Project::load(root.join("examples/projects/fanin84.toml")).unwrap();
    let latency = project.build().unwrap().latency();
    assert!(latency > 0);
    assert!(
        text.contains(&format!("latency {latency} frames")),
        "{text}"
    );
}
