//! A plugin that prints to stdout does not spoil the audit's report: guitarix's
//! `gx_redeye.lv2` (Debian's `guitarix-lv2`, which `scripts/deps.sh` installs) prints its
//! block size and name there as it starts, and `downbeat audit DIR --json` used to find the
//! child's report unreadable and refuse all three of its plugins. The child keeps its
//! stdout for the report and gives the plugin stderr instead.

// Built with the `lv2` feature only (crates/plugin/ci.sh turns it on).
#![cfg(feature = "lv2")]

mod support;

use std::path::Path;
use std::process::Command;

#[test]
fn a_plugin_printing_to_stdout_is_audited_not_refused() {
    let bundle = Path::new("/usr/lib/lv2/gx_redeye.lv2");
    assert!(
        bundle.is_dir(),
        "{} is missing: install Debian's guitarix-lv2 (bash scripts/deps.sh does)",
        bundle.display()
    );
    let dir = support::tmp("audit-noisy", "plugins");
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("gx_redeye.lv2");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(bundle, &link).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .arg("audit")
        .arg(&dir)
        .args(["--blocks", "20", "--json"])
        .output()
        .expect("the downbeat binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stderr}"));
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 3, "{v:#}");
    for row in rows {
        assert!(
            row["result"] == "clean" || row["result"] == "violations",
            "{row}"
        );
    }
}
