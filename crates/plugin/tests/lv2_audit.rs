//! The audit over LV2 plugins: a clean effect and a clean instrument are reported clean, and
//! a plugin that misbehaves when its parameters move (dragonfly's early reflections makes
//! system calls and touches fresh memory on the audio thread) is reported, even without the
//! `downbeat` executable's malloc probe.

// Built with the `lv2` feature only (crates/plugin/ci.sh turns it on).
#![cfg(feature = "lv2")]

mod lv2_support;

use downbeat_graph::NodeConfig;
use downbeat_plugin::audit::{audit, AuditOptions};
use downbeat_plugin::lv2::Lv2Node;
use lv2_support::require_plugin;

downbeat_rt::install_guard_allocator!();

fn run(uri: &str) -> downbeat_plugin::audit::AuditReport {
    let opts = AuditOptions {
        blocks: 50,
        ..AuditOptions::default()
    };
    let cfg = NodeConfig {
        sample_rate: opts.sample_rate,
        max_block: opts.block,
    };
    let mut node = Lv2Node::load(uri, &[], &cfg).unwrap();
    audit(uri, &mut node, &opts, None)
}

#[test]
fn clean_mda_plugins_are_reported_clean() {
    let overdrive = "http://drobilla.net/plugins/mda/Overdrive";
    let epiano = "http://drobilla.net/plugins/mda/EPiano";
    require_plugin(overdrive);
    require_plugin(epiano);
    let report = run(overdrive);
    assert!(report.clean, "{}", report.table());
    assert_eq!(report.params_moved, ["drive", "muffle", "output"]);
    let report = run(epiano);
    assert!(report.clean, "{}", report.table());
    assert!(report.notes_sent > 0);
}

#[test]
fn a_plugin_that_calls_the_system_while_automated_is_reported() {
    let early = "urn:dragonfly:early";
    require_plugin(early);
    let report = run(early);
    assert!(!report.clean);
    assert!(report.violations > 0);
    let syscalls: u64 = report
        .callbacks
        .iter()
        .flat_map(|c| &c.syscalls)
        .map(|s| s.count)
        .sum();
    let faults: u64 = report.callbacks.iter().map(|c| c.page_faults).sum();
    assert!(syscalls > 0 && faults > 0, "{}", report.table());
}
