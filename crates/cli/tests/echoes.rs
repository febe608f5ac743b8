//! The engine uses the collected heap: `downbeat nodes` lists the `echoes` type of
//! `downbeat-gc-nodes`, and its example project renders offline through the CLI, with echoes
//! sounding in the silences between the plucks that started them.

mod support;

use std::process::Output;

use downbeat::lookup_node_type;
use downbeat::project::Project;
use downbeat_gc_nodes::Echoes;
use downbeat_graph::{AudioMut, AudioRef, Node, NodeConfig, ParamValue, ProcessContext};
use support::{downbeat, read_wav, repo, tmp};

const PROJECT: &str = "examples/projects/echoes.toml";

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `project` on the offline device for `seconds`, with `extra` arguments; it must
/// succeed.
fn render(project: &str, seconds: &str, extra: &[&str]) -> Output {
    let mut args = vec!["run", project, "--device", "offline", "--seconds", seconds];
    args.extend(extra);
    let out = downbeat(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

#[test]
fn nodes_lists_echoes_and_its_parameters() {
    let out = downbeat(&["nodes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let at = text.find("\nechoes: ").expect("`echoes` is listed");
    let mut lines = text[at + 1..].lines();
    let head = lines.next().unwrap();
    assert!(head.contains("collected heap"), "{head}");
    // Its parameters: the indented lines that follow, up to the next type.
    let params: Vec<&str> = lines
        .take_while(|l| l.starts_with("    "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        params,
        [
            "channels",
            "delay",
            "feedback",
            "threshold",
            "max_taps",
            "mix"
        ]
    );
}

#[test]
fn the_example_project_renders_offline_with_echoes_in_the_silences() {
    let check = downbeat(&["check", PROJECT]);
    assert!(check.status.success(), "{}", stderr(&check));
    let wav = tmp("echoes", "echoes.wav");
    render(PROJECT, "4", &["--out", wav.to_str().unwrap()]);
    let (samples, channels) = read_wav(&wav);
    assert_eq!(channels, 2);
    assert_eq!(samples.len(), 4 * 48_000 * 2, "4 s of stereo at 48 kHz");
    assert!(
        samples.iter().all(|s| s.is_finite()),
        "a sample is not finite"
    );
    let peak = samples.iter().fold(0.0f32, |m, s| m.max(s.abs()));
    assert!(peak > 0.01, "the render is silent (peak {peak})");
    // The string sounds for the first 0.2 s of every 0.6 s and is exactly silent for the
    // rest: whatever sounds from 0.25 s to 0.55 s of a period is echoes (0.15 s apart).
    let frame = |t: f64| (t * 48_000.0) as usize * channels;
    for period in 0..6 {
        let start = period as f64 * 0.6;
        let gap = &samples[frame(start + 0.25)..frame(start + 0.55)];
        let gap_peak = gap.iter().fold(0.0f32, |m, s| m.max(s.abs()));
        assert!(
            gap_peak > 0.001,
            "no echo between the plucks of period {period} (peak {gap_peak})"
        );
    }
    std::fs::remove_file(&wav).ok();
}

#[test]
fn the_guide_and_the_project_show_the_same_command() {
    let command = "cargo run --release -- run examples/projects/echoes.toml --device offline \
                   --seconds 8 --out echoes.wav";
    for file in ["docs/guide/src/design/memory.md", PROJECT] {
        let text = std::fs::read_to_string(repo().join(file)).unwrap();
        assert!(text.contains(command), "{file} lacks `{command}`");
    }
}

#[test]
fn the_example_makes_one_tap_per_pluck_and_keeps_about_four_alive() {
    // What the project's comment promises, checked on its own nodes and parameters: the
    // string from the file into the echoes from the file, as concrete nodes so that the
    // echoes' counters can be read.
    downbeat_cli::register_node_types().unwrap();
    let project = Project::load(repo().join(PROJECT)).unwrap();
    let params = |name: &str| {
        let node = project.nodes.iter().find(|n| n.name == name).unwrap();
        node.params.clone()
    };
    let cfg = NodeConfig {
        sample_rate: project.sample_rate,
        max_block: project.block_size,
    };
    let mut pluck = lookup_node_type("karplus")
        .unwrap()
        .create(params("pluck"), &cfg)
        .unwrap();
    let mut echoes = Echoes::from_params(params("echoes"), &cfg).unwrap();
    let monitor = echoes.monitor();
    let interval = params("pluck")
        .iter()
        .find_map(|(k, v)| match (k.as_str(), v) {
            ("interval", ParamValue::Float(s)) => Some(*s),
            _ => None,
        })
        .unwrap();
    let (block, seconds) = (project.block_size, 8.0);
    let blocks = (seconds * project.sample_rate as f64) as usize / block;
    let (mut a, mut b) = (vec![0.0f32; 2 * block], vec![0.0f32; 2 * block]);
    let mut most = 0;
    for n in 0..blocks {
        let ctx = ProcessContext::new(cfg.sample_rate, block, (n * block) as u64);
        pluck.process(
            &ctx,
            AudioRef::new(&[], 0, block, block),
            AudioMut::new(&mut a, 2, block, block),
        );
        echoes.process(
            &ctx,
            AudioRef::new(&a, 2, block, block),
            AudioMut::new(&mut b, 2, block, block),
        );
        most = most.max(monitor.counts().live);
    }
    let c = monitor.counts();
    let plucks = (seconds / interval).ceil() as u64;
    assert_eq!(c.started, plucks, "one tap per pluck: {c:?}");
    assert_eq!(
        (c.dropped_full, c.dropped_heap, c.errors),
        (0, 0, 0),
        "{c:?}"
    );
    assert!(
        (3..=5).contains(&most),
        "about four alive at once: at most {most}"
    );
    assert!(
        c.ended >= plucks - most,
        "the faded taps were unlinked: {c:?}"
    );
}

#[test]
fn a_run_prints_the_tap_counters_and_warns_of_dropped_onsets() {
    // One tap at a time, and taps that ring for seconds: every pluck after the first finds
    // the tap list full and is dropped, which the run must say, not just count.
    let text = std::fs::read_to_string(repo().join(PROJECT))
        .unwrap()
        .replace("max_taps = 16", "max_taps = 1")
        .replace("feedback = 0.6", "feedback = 0.95");
    let project = tmp("echoes", "one-tap.toml");
    std::fs::write(&project, text).unwrap();
    let project_path = project.to_str().unwrap();
    let run = |json: bool| render(project_path, "3", if json { &["--json"] } else { &[] });

    let out = run(true);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let echoes = &summary["node_counts"][0];
    assert_eq!(echoes["node"], "echoes", "{summary}");
    let count = |name: &str| echoes["counts"][name].as_u64().unwrap();
    let plucks = 5; // at 0, 0.6, 1.2, 1.8 and 2.4 s
    assert_eq!(count("started"), 1, "{echoes}");
    assert_eq!(count("dropped_full"), plucks - 1, "{echoes}");
    assert_eq!((count("dropped_heap"), count("errors")), (0, 0));
    assert_eq!(echoes["losses"], serde_json::json!(["dropped_full"]));
    let warning = stderr(&out);
    assert!(
        warning.contains("warning: node `echoes` lost part of its work: dropped_full 4"),
        "{warning}"
    );

    let out = run(false);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("node counters:\n  echoes  started 1  ended 0  live 1  dropped_full 4"),
        "{text}"
    );
    assert!(stderr(&out).contains("dropped_full 4"));

    // The example itself loses nothing, and says nothing about losses.
    let out = render(PROJECT, "2", &["--json"]);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        summary["node_counts"][0].get("losses").is_none(),
        "{summary}"
    );
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    std::fs::remove_file(&project).ok();
}
