//! Builds the VST3 test plugins (`crates/vst3-test-plugins`) and bundles them as a real
//! `.vst3` folder, for the tests of this crate and of the command line (which include this
//! file by path). As for the CLAP test plugins (`clap_support`): a nested `cargo build` into
//! a target directory of its own, then the library copied into place through a temporary
//! file and a rename.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The probe: stereo gain (`gain`, 0 to 2) and notes written as clicks.
pub const PROBE: &str = "Downbeat VST3 probe";
/// The classes that crash in one phase each.
pub const CRASH_CREATE: &str = "Downbeat VST3 crash create";
/// See [`CRASH_CREATE`].
pub const CRASH_ACTIVATE: &str = "Downbeat VST3 crash activate";
/// See [`CRASH_CREATE`].
pub const CRASH_PROCESS: &str = "Downbeat VST3 crash process";
/// See [`CRASH_CREATE`].
pub const CRASH_DEACTIVATE: &str = "Downbeat VST3 crash deactivate";

/// The `.vst3` bundle holding the test plugins, built on first use.
pub fn test_bundle() -> PathBuf {
    static BUNDLE: OnceLock<PathBuf> = OnceLock::new();
    BUNDLE.get_or_init(build).clone()
}

fn build() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let target = exe
        .ancestors()
        .nth(3)
        .expect("the test runs from <target>/<profile>/deps")
        .to_path_buf();
    let dir = target.join("vst3-test-plugins");
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "-p",
            "downbeat-vst3-test-plugins",
            "--manifest-path",
        ])
        .arg(workspace.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &dir)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building the VST3 test plugins failed");
    let so = dir.join("debug/libdownbeat_vst3_test_plugins.so");
    let bundle = dir.join("downbeat-test.vst3");
    let lib = bundle.join("Contents/x86_64-linux");
    std::fs::create_dir_all(&lib).unwrap();
    let tmp = lib.join(format!("downbeat-test.so.{}", std::process::id()));
    std::fs::copy(&so, &tmp).unwrap_or_else(|e| panic!("copying {}: {e}", so.display()));
    std::fs::rename(&tmp, lib.join("downbeat-test.so")).expect("renaming the library into place");
    bundle
}
