//! A `Path` parameter in a project file names a file relative to the project file's folder,
//! whatever the working directory, and cannot be left out when it has no default.

use downbeat::project::Project;
use downbeat::register_node_type;
use downbeat_graph::{Node, NodeConfig, NodeType, ParamError, ParamKind, ParamSpec, Params, Unit};

static PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "file",
    doc: "a file",
    kind: ParamKind::Path { default: "" },
    unit: Unit::None,
    live: false,
}];

fn build(params: &Params, _: &NodeConfig) -> Result<Box<dyn Node>, ParamError> {
    // The resolved path comes back as the node's error, so the test can read it.
    Err(ParamError::Invalid {
        name: "file".into(),
        message: format!("resolved to {}", params.path("file").display()),
    })
}

fn project(file: &str) -> String {
    format!(
        "edges = [\"f -> out\"]\n[nodes.f]\ntype = \"test-file\"\n{file}\n[nodes.out]\ntype = \"output\"\n"
    )
}

fn register() {
    let _ = register_node_type(NodeType {
        name: "test-file",
        doc: "reports where its file is",
        params: PARAMS,
        build,
    });
}

#[test]
fn relative_paths_resolve_against_the_project_folder() {
    register();
    let dir = std::env::temp_dir().join(format!("downbeat-paths-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    let path = dir.join("sub/p.toml");
    std::fs::write(&path, project("file = \"../a.wav\"")).unwrap();
    let err = Project::load(&path)
        .unwrap()
        .build()
        .unwrap_err()
        .to_string();
    let want = format!("resolved to {}", dir.join("sub").join("../a.wav").display());
    assert!(err.contains(&want), "{err}");

    std::fs::write(&path, project("file = \"/abs/b.wav\"")).unwrap();
    let err = Project::load(&path)
        .unwrap()
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("resolved to /abs/b.wav"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_path_without_default_is_required() {
    register();
    let err = Project::parse(&project(""), "p.toml")
        .unwrap()
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("`file`: required"), "{err}");
    let err = Project::parse(&project("file = 3"), "p.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("expected the path of a file"), "{err}");
}
