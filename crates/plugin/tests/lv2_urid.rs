//! A plugin that maps URIs from `run()` on the audio thread, loaded through lilv like any
//! other: the host's URID map neither allocates nor locks nor calls the system there, and
//! what it returns is what the host maps for the same URIs afterwards.
//!
//! The plugin is tests/lv2_urid_plugin (C, compiled here with `cc` into a bundle of its own,
//! which `LV2_PATH` points lilv at); a missing `cc` fails the test.

// Built with the `lv2` feature only (crates/plugin/ci.sh turns it on).
#![cfg(feature = "lv2")]

mod c_bundle;

use downbeat_graph::{CompileConfig, Graph, NodeConfig};
use downbeat_nodes::Output;
use downbeat_plugin::lv2::{features, Lv2Node};

downbeat_rt::install_guard_allocator!();

const URI: &str = "urn:downbeat:test:urid-in-run";

#[test]
fn a_plugin_mapping_uris_in_run_is_real_time_safe_and_agrees_with_the_host() {
    // Before lilv's world is created (on the first load), and only our bundle.
    std::env::set_var(
        "LV2_PATH",
        c_bundle::build("lv2_urid_plugin", "urid_in_run"),
    );
    let cfg = NodeConfig {
        sample_rate: 48000,
        max_block: 256,
    };
    let node = Lv2Node::load(URI, &[], &cfg).unwrap();
    let mut g = Graph::new();
    let fx = g.add("fx", node);
    let out = g.add("out", Output::new(1));
    g.connect(fx, out);
    g.set_output(out);
    let mut schedule = g
        .compile(CompileConfig {
            sample_rate: 48000,
            max_block: 256,
        })
        .unwrap();
    // Run 0 outside the guard, then runs 1 to 8 inside it, each mapping a new URI.
    schedule.process(256);
    let mut seen = Vec::with_capacity(8);
    let report = downbeat_rt::guard::check(|| {
        for _ in 0..8 {
            schedule.process(256);
            let o = schedule.output().channel(0);
            seen.push((o[0], o[1]));
        }
    });
    assert!(report.is_complete(), "{report}");
    report.assert_clean();
    let fixed = features::urid(c"urn:downbeat:test#fixed");
    for (run, (fresh, fixed_seen)) in (1..).zip(&seen) {
        let uri = std::ffi::CString::new(format!("urn:downbeat:test:run#{run}")).unwrap();
        let id = features::urid(&uri);
        assert_ne!(id, 0);
        assert_eq!(*fresh, id as f32, "run {run}: the plugin got another URID");
        assert_eq!(*fixed_seen, fixed as f32, "run {run}");
    }
    assert_eq!(features::refused(), 0);
}
