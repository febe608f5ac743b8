//! The guide's generated reference chapters (`docs/guide/src/reference/`) are what
//! `downbeat reference cli|osc|project` prints, byte for byte: a flag, an OSC address or a
//! project key added, removed or reworded in the code without the chapter regenerated fails
//! here. (`crates/cli/ci.sh` runs this with every feature too, so a flag that only some
//! builds have would fail there.)

mod support;

use support::{downbeat, repo};

/// Compares `downbeat reference WHICH` with the committed `FILE`.
fn compare(which: &str, file: &str) {
    let out = downbeat(&["reference", which]);
    assert!(
        out.status.success(),
        "downbeat reference {which} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = repo().join("docs/guide/src/reference").join(file);
    let committed = std::fs::read(&path).unwrap_or_default();
    if committed == out.stdout {
        return;
    }
    let (generated, committed) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&committed),
    );
    let line = generated
        .lines()
        .zip(committed.lines())
        .position(|(g, c)| g != c)
        .unwrap_or_else(|| generated.lines().count().min(committed.lines().count()));
    panic!(
        "docs/guide/src/reference/{file} is not what `downbeat reference {which}` prints \
         (first difference at line {}: generated {:?}, committed {:?}); run `bash \
         scripts/references.sh` and commit the result",
        line + 1,
        generated.lines().nth(line).unwrap_or("(end)"),
        committed.lines().nth(line).unwrap_or("(end)"),
    );
}

#[test]
fn the_command_line_reference_is_up_to_date() {
    compare("cli", "cli.md");
}

#[test]
fn the_osc_reference_is_up_to_date() {
    compare("osc", "osc.md");
}

#[test]
fn the_project_reference_is_up_to_date() {
    compare("project", "project.md");
}
