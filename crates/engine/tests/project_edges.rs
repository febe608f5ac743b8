//! Edges in project files: levels (`@ -6 dB`) and ports (`node:port`).
// The reference values come from the platform's math: the test checks the node against the
// formula, not against itself.
#![allow(clippy::disallowed_methods)]

use downbeat::project::Project;

const SENDS: &str = r#"
block_size = 64
edges = ["one -> bus @ -6 dB -> out", "half -> bus @ -144dB", "quiet -> bus @ 0"]
[nodes.one]
type = "sine"
freq = 0.0
phase = 0.25
channels = 1
amp = 1.0
[nodes.half]
type = "sine"
freq = 0.0
phase = 0.25
channels = 1
amp = 0.5
[nodes.quiet]
type = "sine"
freq = 0.0
phase = 0.25
channels = 1
amp = 0.25
[nodes.bus]
type = "mix"
channels = 1
[nodes.out]
type = "output"
channels = 1
"#;

/// A level belongs to the hop into the node it follows: `one -> bus` at -6 dB, `bus -> out`
/// without one; -144 dB is silence; each level is the live `gain_db` of its edge's node.
#[test]
fn levels_scale_their_edges_and_are_live_parameters() {
    let p = Project::parse(SENDS, "sends.toml").unwrap();
    assert_eq!(p.edge_gains, [Some(-6.0), None, Some(-144.0), Some(0.0)]);
    let mut s = p.build().unwrap();
    let table = s.param_table();
    assert!(table.resolve("one -> bus", "gain_db").is_ok());
    assert!(table.resolve("bus -> out", "gain_db").is_err());
    s.process(64);
    let want = 10f64.powf(-6.0 / 20.0) + 0.25;
    let got = f64::from(s.output().channel(0)[0]);
    assert!((got - want).abs() < 1e-6, "{got} against {want}");
}

/// A level before any node, and a level that is not a number, are refused at the edge.
#[test]
fn misplaced_and_malformed_levels_are_refused() {
    let text = SENDS.replace("\"quiet -> bus @ 0\"", "\"quiet @ -3 dB -> bus\"");
    let err = Project::parse(&text, "x.toml").unwrap_err().to_string();
    assert!(
        err.contains("a level comes after the node the edge goes to"),
        "{err}"
    );
    let text = SENDS.replace("@ 0\"", "@ zero dB\"");
    let err = Project::parse(&text, "x.toml").unwrap_err().to_string();
    assert!(err.contains("`zero dB` is not a level"), "{err}");
}
