//! `downbeat run --save-state DIR`: the folder is made, the summary says how many nodes
//! saved a state, and a folder that cannot be made is bad input. The plugins' own states
//! are tested with the plugins (crates/plugin/tests).

mod support;

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
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
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
    assert!(err.contains("--save-state") && err.contains("cannot make the folder"), "{err}");
}
