//! The guide's node-type reference (docs/guide/src/reference/nodes.md) is exactly what
//! `downbeat nodes --markdown` prints: a parameter added, renamed or given another range,
//! default, unit or doc without regenerating the page fails here.
//!
//! The page lists the `lv2` node type, which the binary registers only with the `lv2`
//! feature, so this test is built only with it; crates/cli/ci.sh runs the CLI's tests with
//! `--all-features`, which includes it.
#![cfg(feature = "lv2")]

use std::path::Path;
use std::process::Command;

#[test]
fn committed_node_reference_is_what_downbeat_nodes_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let page = "docs/guide/src/reference/nodes.md";
    let out = Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .args(["nodes", "--markdown"])
        .current_dir(&root)
        .output()
        .expect("the downbeat binary runs");
    assert!(
        out.status.success(),
        "downbeat nodes --markdown failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let generated = String::from_utf8(out.stdout).expect("the reference is UTF-8");
    let committed = std::fs::read_to_string(root.join(page))
        .unwrap_or_else(|e| panic!("cannot read {page} ({e}): run `bash scripts/references.sh`"));
    if generated == committed {
        return;
    }
    // The first line that differs, to show what drifted without printing both pages.
    let (line, ours, theirs) = generated
        .split_inclusive('\n')
        .map(Some)
        .chain(std::iter::repeat(None))
        .zip(
            committed
                .split_inclusive('\n')
                .map(Some)
                .chain(std::iter::repeat(None)),
        )
        .enumerate()
        .find(|(_, (a, b))| a != b)
        .map(|(i, (a, b))| (i + 1, a, b))
        .expect("the pages differ, so some line does");
    panic!(
        "{page} is not what `downbeat nodes --markdown` prints: run `bash scripts/references.sh` \
         and commit the result.\nFirst difference at line {line}:\n  committed: {theirs:?}\n  \
         generated: {ours:?}"
    );
}
