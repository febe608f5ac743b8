//! A `PathMap` parameter (a table of names to files, a sampler's kit) in a project file:
//! each relative path resolves against the project file's folder, absolute ones stay, the
//! order written is kept, and an entry that is not a string is refused at that value.

use downbeat::project::Project;
use downbeat::register_node_type;
use downbeat_graph::{Node, NodeConfig, NodeType, ParamError, ParamKind, ParamSpec, Params, Unit};

static PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "files",
    doc: "files by name",
    kind: ParamKind::PathMap,
    unit: Unit::None,
    live: false,
}];

fn build(params: &Params, _: &NodeConfig) -> Result<Box<dyn Node>, ParamError> {
    // The resolved table comes back as the node's error, so the test can read it.
    let entries: Vec<String> = params
        .path_map("files")
        .iter()
        .map(|(k, p)| format!("{k}={p}"))
        .collect();
    Err(ParamError::Invalid {
        name: "files".into(),
        message: format!("resolved to [{}]", entries.join(", ")),
    })
}

fn project(files: &str) -> String {
    format!(
        "edges = [\"f -> out\"]\n[nodes.f]\ntype = \"test-path-map\"\n{files}\n[nodes.out]\ntype = \"output\"\n"
    )
}

fn register() {
    let _ = register_node_type(NodeType {
        name: "test-path-map",
        doc: "reports where its files are",
        params: PARAMS,
        build,
    });
}

#[test]
fn every_relative_path_of_a_table_resolves_against_the_project_folder() {
    register();
    let dir = std::env::temp_dir().join(format!("downbeat-path-maps-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    let path = dir.join("sub/p.toml");
    std::fs::write(
        &path,
        project("files = { 38 = \"../snare.wav\", C2 = \"/abs/kick.wav\", x = \"hat.wav\" }"),
    )
    .unwrap();
    let err = Project::load(&path)
        .unwrap()
        .build()
        .unwrap_err()
        .to_string();
    let sub = dir.join("sub");
    let want = format!(
        "resolved to [38={}, C2=/abs/kick.wav, x={}]",
        sub.join("../snare.wav").display(),
        sub.join("hat.wav").display()
    );
    assert!(err.contains(&want), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_table_entry_that_is_not_a_path_is_refused_where_it_is() {
    register();
    let err = Project::parse(&project("files = { 36 = 5 }"), "p.toml")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`36` is 5, expected the path of a file as a string"),
        "{err}"
    );
    assert!(err.contains("p.toml:4:"), "at the value: {err}");
    let err = Project::parse(&project("files = \"kick.wav\""), "p.toml")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("expected a table of names to file paths"),
        "{err}"
    );
    let err = Project::parse(&project("files = { 36 = \"\" }"), "p.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("`36`: no file given"), "{err}");
}
