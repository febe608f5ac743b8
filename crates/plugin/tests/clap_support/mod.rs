//! Builds the CLAP test plugins (`crates/clap-test-plugins`) and bundles them as a real
//! `.clap` file, for the tests of this crate and of the command line (which include this
//! file by path).
//!
//! The plugins are built by a nested `cargo build` into a target directory of their own
//! (`<target>/clap-test-plugins`): the outer `cargo test` may still hold its own target
//! directory's lock, and a separate directory also keeps the plugin's features and profile
//! independent of whatever the outer build uses. The shared object is then copied to
//! `downbeat-test.clap` through a temporary file and a rename, so a process that has the
//! previous copy loaded keeps a valid mapping.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Plugin ids, as `crates/clap-test-plugins` declares them.
pub const GAIN_ID: &str = "org.downbeat.test.gain";
/// The 64-frame delay.
pub const DELAY_ID: &str = "org.downbeat.test.delay";
/// The gain that allocates 4096 bytes in every `process`.
pub const ALLOC_ID: &str = "org.downbeat.test.alloc";
/// The instrument writing `velocity + key / 1000` at each note on's frame.
pub const CLICK_ID: &str = "org.downbeat.test.click";
/// The recorder of the transport each `process` call is given, written exactly into its
/// [`TRANSPORT_CHANNELS`] output channels (`crates/clap-test-plugins/src/transport.rs`).
pub const TRANSPORT_ID: &str = "org.downbeat.test.transport";
/// The plugin that asks to sleep after every call and writes its call count
/// (`crates/clap-test-plugins/src/sleeper.rs`).
pub const SLEEPER_ID: &str = "org.downbeat.test.sleeper";
/// The plugin that restarts itself into a new latency and a second parameter
/// (`crates/clap-test-plugins/src/reshaper.rs`).
pub const RESHAPER_ID: &str = "org.downbeat.test.reshaper";
/// The reshaper's latency after its restart.
pub const RESHAPED_LATENCY: u32 = 48;
/// The transport recorder's record: 16 words, each over three channels.
pub const TRANSPORT_FIELDS: usize = 16;
/// The transport recorder's output channels.
pub const TRANSPORT_CHANNELS: usize = 3 * TRANSPORT_FIELDS;
/// The delay's reported latency.
pub const DELAY_FRAMES: usize = 64;
/// The plugin that exercises the host's extensions (`crates/clap-test-plugins/src/host_probe.rs`).
pub const HOST_PROBE_ID: &str = "org.downbeat.test.host-probe";
/// The latency the probe reports once active.
pub const PROBE_LATENCY: usize = 32;
/// The probe's name, as its log lines give it.
pub const PROBE_NAME: &str = "Downbeat host probe";

/// The workspace's root directory.
pub fn workspace() -> PathBuf {
    // Both crates including this file sit at `crates/<name>`.
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `.clap` file holding the test plugins, built on first use.
pub fn test_plugins() -> PathBuf {
    static BUNDLE: OnceLock<PathBuf> = OnceLock::new();
    BUNDLE.get_or_init(build).clone()
}

fn build() -> PathBuf {
    // The test executable is `<target>/<profile>/deps/<name>`.
    let exe = std::env::current_exe().expect("the test's own path");
    let target = exe
        .ancestors()
        .nth(3)
        .expect("the test runs from <target>/<profile>/deps")
        .to_path_buf();
    let dir = target.join("clap-test-plugins");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "-p",
            "downbeat-clap-test-plugins",
            "--manifest-path",
        ])
        .arg(workspace().join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &dir)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building the CLAP test plugins failed");
    let so = dir.join("debug/libdownbeat_clap_test_plugins.so");
    let bundle = dir.join("downbeat-test.clap");
    let tmp = dir.join(format!("downbeat-test.clap.{}", std::process::id()));
    std::fs::copy(&so, &tmp).unwrap_or_else(|e| panic!("copying {}: {e}", so.display()));
    std::fs::rename(&tmp, &bundle).expect("renaming the bundle into place");
    bundle
}
