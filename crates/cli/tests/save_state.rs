//! `downbeat run --save-state DIR`: the folder is made, the summary says how many nodes
//! saved a state, a folder that cannot be made is bad input, and a node that cannot save
//! fails the run after the others are written. The plugins' own states are tested with the
//! plugins (crates/plugin/tests).

mod support;

#[cfg(feature = "clap")]
#[path = "../../plugin/tests/clap_support/mod.rs"]
mod clap_support;

#[test]
fn save_state_makes_the_folder_and_counts_the_nodes() {
    let dir = support::tmp("save-state", "states");
    let _ = std::fs::remove_dir_all(&dir);
    let project = support::repo().join("examples/projects/synth.toml");
    let out = support::downbeat(&[
        "run",
        project.to_str().unwrap(),
        "--device",
        "offline",
        "--seconds",
        "0.1",
        "--json",
        "--save-state",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.is_dir(), "--save-state makes its folder");
    let json = String::from_utf8_lossy(&out.stdout);
    assert!(
        json.contains(r#""saved_states":{"dir":"#) && json.contains(r#""nodes":0}"#),
        "built-in nodes have no state: {json}"
    );
}

#[test]
fn save_state_into_a_file_is_bad_input() {
    let file = support::tmp("save-state", "a-file");
    std::fs::write(&file, b"not a folder").unwrap();
    let project = support::repo().join("examples/projects/synth.toml");
    let out = support::downbeat(&[
        "run",
        project.to_str().unwrap(),
        "--device",
        "offline",
        "--seconds",
        "0.1",
        "--save-state",
        file.join("inner").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--save-state") && err.contains("cannot make the folder"),
        "{err}"
    );
}

/// A node whose state cannot be saved fails the run with exit 1, naming the node, after the
/// other nodes' states are written (the guide, "Host plugins"; ARCHITECTURE, "State leaves a node"):
/// the CLAP test gain has no `clap.state` extension, the host probe has one. The gain comes
/// first in processing order, so the probe's file shows that the failure did not stop the
/// nodes after it.
#[cfg(feature = "clap")]
#[test]
fn a_node_that_cannot_save_fails_the_run_after_the_others_are_written() {
    let dir = support::tmp("save-state", "mixed");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let plugins = clap_support::test_plugins();
    let project = dir.join("p.toml");
    std::fs::write(
        &project,
        format!(
            "sample_rate = 48000\nblock_size = 256\nedges = [\"n -> g -> p -> out\"]\n\
             [nodes.n]\ntype = \"noise\"\nseed = 7\n\
             [nodes.g]\ntype = \"clap\"\npath = \"{plugins}\"\nid = \"{gain}\"\n\
             [nodes.p]\ntype = \"clap\"\npath = \"{plugins}\"\nid = \"{probe}\"\n\
             [nodes.out]\ntype = \"output\"\n",
            plugins = plugins.display(),
            gain = clap_support::GAIN_ID,
            probe = clap_support::HOST_PROBE_ID,
        ),
    )
    .unwrap();
    let states = dir.join("states");
    let out = support::downbeat(&[
        "run",
        project.to_str().unwrap(),
        "--device",
        "offline",
        "--seconds",
        "0.1",
        "--save-state",
        states.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("node `g`") && err.contains("no state extension"),
        "the failing node is named, with the reason: {err}"
    );
    assert!(
        !err.contains("node `p`"),
        "only the gain failed to save: {err}"
    );
    let saved = std::fs::read(states.join("p.clapstate")).expect("the probe's state is written");
    // The probe's state: its magic, then its gain as an `f32` (host_probe.rs).
    assert!(
        saved.len() == 12 && saved.starts_with(b"DBPROBE1"),
        "the probe's own state: {saved:?}"
    );
    assert!(
        !states.join("g.clapstate").exists(),
        "nothing is written for the node that failed"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
