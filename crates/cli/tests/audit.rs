//! `downbeat audit` on the workspace's CLAP test plugins: the plugin that allocates in
//! `process` is reported with its allocation sizes (exit 3), the gain and the delay are
//! clean (exit 0), a plugin that cannot be loaded exits 2, and `--json` is the only output.

#![cfg(feature = "clap")]

#[path = "../../plugin/tests/clap_support/mod.rs"]
mod clap_support;

use std::process::{Command, Output};

use clap_support::{test_plugins, ALLOC_ID, CLICK_ID, DELAY_ID, GAIN_ID};

fn audit(plugin: &str, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .arg("audit")
        .arg(plugin)
        .args(extra)
        .output()
        .expect("downbeat runs")
}

fn spec(id: &str) -> String {
    format!("{}#{id}", test_plugins().display())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_plugin_that_allocates_is_reported_with_its_sizes() {
    let out = audit(&spec(ALLOC_ID), &["--blocks", "50"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("4096 B [4096]"), "{stdout}");
    assert!(
        stdout.contains("violations in 50 of 50 callbacks"),
        "{stdout}"
    );
}

#[test]
fn the_gain_the_delay_and_the_instrument_are_clean() {
    for id in [GAIN_ID, DELAY_ID, CLICK_ID] {
        let out = audit(&spec(id), &[]);
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{id}: {stdout}{}",
            text(&out.stderr)
        );
        assert!(stdout.contains("0-199     clean"), "{stdout}");
        assert!(stdout.ends_with("result: clean\n"), "{stdout}");
    }
    // The gain's parameter was moved and the instrument got notes: the audit drove them.
    let out = audit(&spec(GAIN_ID), &[]);
    assert!(text(&out.stdout).contains("parameters moved: gain; notes sent: 0"));
    let out = audit(&spec(CLICK_ID), &[]);
    assert!(text(&out.stdout).contains("parameters moved: none; notes sent: 125"));
}

#[test]
fn json_is_the_only_output_and_carries_every_callback() {
    let out = audit(
        &spec(ALLOC_ID),
        &["--json", "--blocks", "10", "--block", "64"],
    );
    assert_eq!(out.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(v["clean"], false);
    let callbacks = v["callbacks"].as_array().unwrap();
    assert_eq!(callbacks.len(), 10);
    for c in callbacks {
        assert_eq!(c["malloc"]["allocations"], 1, "{c}");
        assert_eq!(c["malloc"]["sizes"][0], 4096, "{c}");
        assert_eq!(c["malloc"]["frees"], 1, "{c}");
    }
    assert_eq!(v["block"], 64);

    let out = audit(&spec(GAIN_ID), &["--json", "--blocks", "10"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(v["clean"], true);
    assert_eq!(v["violations"], 0);
    assert_eq!(v["params_moved"][0], "gain");
}

#[test]
fn a_plugin_that_cannot_be_loaded_exits_2_and_says_why() {
    let out = audit("/nonexistent/none.clap", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(text(&out.stderr).contains("/nonexistent/none.clap does not exist"));

    let out = audit(&spec("org.nope"), &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("no plugin with id \"org.nope\""), "{err}");
    assert!(err.contains(GAIN_ID), "{err}");
}

#[test]
fn a_clap_node_in_a_project_file_runs() {
    let dir = std::env::temp_dir().join(format!("downbeat-clap-project-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let project = dir.join("p.toml");
    std::fs::write(
        &project,
        format!(
            r#"sample_rate = 48000
block_size = 256
edges = ["osc -> fx -> out"]

[nodes.osc]
type = "sine"
freq = 440.0

[nodes.fx]
type = "clap"
path = "{}"
id = "{GAIN_ID}"
gain = 0.5

[nodes.out]
type = "output"
"#,
            test_plugins().display()
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .arg("check")
        .arg(&project)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // A wrong id is bad input: exit 2, naming the key and the ids the file holds.
    let bad = std::fs::read_to_string(&project)
        .unwrap()
        .replace(GAIN_ID, "org.nope");
    std::fs::write(&project, bad).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .arg("check")
        .arg(&project)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("org.nope") && err.contains(GAIN_ID), "{err}");
}
