//! Builds a test LV2 plugin written in C (`tests/<dir>/<name>.c` with its `manifest.ttl` and
//! `<name>.ttl`) into a bundle under the test target's temporary directory, with `cc`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds `tests/<dir>` into `<tmp>/<dir>/<name>.lv2` and returns `<tmp>/<dir>`, the folder
/// to put on `LV2_PATH`. Panics, failing the test, when `cc` is missing or fails.
pub fn build(dir: &str, name: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(dir);
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(dir);
    let bundle = root.join(format!("{name}.lv2"));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&bundle).unwrap();
    for ttl in ["manifest.ttl".to_string(), format!("{name}.ttl")] {
        std::fs::copy(src.join(&ttl), bundle.join(&ttl)).unwrap();
    }
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o"])
        .arg(bundle.join(format!("{name}.so")))
        .arg(src.join(format!("{name}.c")))
        .output()
        .unwrap_or_else(|e| {
            panic!("cc (a C compiler) must be installed to build the test plugin: {e}")
        });
    assert!(
        out.status.success(),
        "cc failed on the test plugin:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    root
}
