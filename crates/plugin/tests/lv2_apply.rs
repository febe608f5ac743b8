//! Differential test against `lv2apply` (lilv-utils), a host we did not write: a WAV file
//! processed by an LV2 plugin inside a Downbeat graph equals `lv2apply`'s output for the
//! same plugin and control values, within 1e-5.
//!
//! `lv2apply` runs the plugin one frame per call. mda's Overdrive and Delay do not depend on
//! the block length, so Downbeat runs them in blocks of 256 and of 61 frames (cutting
//! blocks at odd places). x42's darc and nodelay glide their settings once per call (darc
//! differs by 1.8e-4 at 256-frame blocks, nodelay's start-up fade by 0.39), so they are
//! compared with Downbeat's block length at 1, the same calls `lv2apply` makes. Neither
//! host compensates a plugin's own latency on a single path.

// Built with the `lv2` feature only (crates/plugin/ci.sh turns it on).
#![cfg(feature = "lv2")]

mod lv2_support;

use std::process::Command;

use downbeat_plugin::lv2::{ControlValue, Lv2Node};
use lv2_support::{read_wav, render, require_plugin, require_tool, signal, tmp, write_wav};

const RATE: u32 = 48000;
const TOLERANCE: f32 = 1e-5;

/// Processes the test signal with `uri` and `controls` in both hosts; returns the largest
/// difference and where it is.
fn compare(
    name: &str,
    uri: &str,
    channels: usize,
    controls: &[(&str, f64)],
    block: usize,
) -> (f32, usize) {
    let dir = tmp(&format!("lv2apply-{name}-{block}"));
    let input = signal(channels, RATE as usize, RATE);
    let (inp, out) = (dir.join("in.wav"), dir.join("out.wav"));
    write_wav(&inp, channels, RATE, &input);
    let mut cmd = Command::new("lv2apply");
    cmd.arg("-i").arg(&inp).arg("-o").arg(&out);
    for (sym, value) in controls {
        cmd.arg("-c").arg(sym).arg(value.to_string());
    }
    let status = cmd.arg(uri).status().expect("lv2apply runs");
    assert!(status.success(), "lv2apply failed on {uri}: {status}");
    let (out_channels, theirs) = read_wav(&out);

    let values: Vec<(String, ControlValue)> = controls
        .iter()
        .map(|(s, v)| (s.to_string(), ControlValue::Number(*v)))
        .collect();
    let cfg = downbeat_graph::NodeConfig {
        sample_rate: RATE,
        max_block: block,
    };
    let node = Lv2Node::load(uri, &values, &cfg).unwrap();
    let ours = render(Box::new(node), channels, &input, RATE, block);
    assert_eq!(out_channels, channels);
    assert_eq!(ours.len(), theirs.len(), "frames");
    let mut worst = (0.0f32, 0);
    for (k, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        let d = (a - b).abs();
        if d > worst.0 || d.is_nan() {
            worst = (d, k);
        }
    }
    // A plugin that outputs silence would match trivially.
    let energy: f32 = ours.iter().map(|s| s * s).sum();
    assert!(energy > 1.0, "{name}: output is (nearly) silent");
    worst
}

fn check(name: &str, uri: &str, channels: usize, controls: &[(&str, f64)], blocks: &[usize]) {
    require_tool("lv2apply", "lilv-utils");
    require_plugin(uri);
    for &block in blocks {
        let (diff, at) = compare(name, uri, channels, controls, block);
        assert!(
            diff <= TOLERANCE,
            "{name} (block {block}): differs from lv2apply by {diff} at sample {at}"
        );
    }
}

#[test]
fn mda_overdrive_matches_lv2apply() {
    check(
        "overdrive",
        "http://drobilla.net/plugins/mda/Overdrive",
        2,
        &[("drive", 0.7), ("muffle", 0.3), ("output", 0.6)],
        &[256, 61],
    );
}

#[test]
fn x42_nodelay_matches_lv2apply() {
    check(
        "nodelay",
        "http://gareus.org/oss/lv2/nodelay",
        1,
        &[("delay", 37.0), ("report_latency", 0.0)],
        &[1],
    );
}

#[test]
fn x42_darc_compressor_matches_lv2apply() {
    check(
        "darc",
        "http://gareus.org/oss/lv2/darc#mono",
        1,
        &[("threshold", -30.0), ("inputgain", 6.0), ("Ratio", 0.5)],
        &[1],
    );
}

#[test]
fn mda_delay_matches_lv2apply() {
    check(
        "delay",
        "http://drobilla.net/plugins/mda/Delay",
        2,
        &[("l_delay", 0.3), ("feedback", 0.5)],
        &[256, 61],
    );
}
