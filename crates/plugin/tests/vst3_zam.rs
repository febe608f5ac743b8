//! Debian's `zam-plugins` ships the same 17 effects as VST3 (`/usr/lib/vst3/*.vst3`) and as
//! CLAP, built by DPF from one source: the VST3 host checked against the CLAP host. Every
//! VST3 build loads, has the CLAP build's channels, ports, parameters (names and ranges),
//! meters (its read-only parameters, the node's outputs) and latency, and, given the same
//! input, renders what the CLAP build renders, bit for bit, and ends with the same meter
//! readings, with the parameters as each build starts them and with every one set to an end
//! of its range (see [`Settings`]).
//!
//! Not compared: the parameters at their *declared* defaults. DPF starts some plugins
//! elsewhere (ZamDynamicEQ's `peak` at 1, declared 0; ZamGrains' `loop_time` at 1000,
//! declared 160), and its VST3 processor takes a change to the declared default as no
//! change: the value reaches it (a queue with one point at offset 0, read twice) and the
//! output stays that of the constructor's value, where the CLAP build follows. Setting
//! those two to any other value is followed by both builds alike.
//!
//! Built with the `lv2` feature, as the other zam-plugins tests (crates/plugin/ci.sh installs
//! the package and turns it on). A missing package fails the test.

#![cfg(all(feature = "lv2", feature = "vst3", feature = "clap"))]

mod lv2_support;

use std::path::PathBuf;

use downbeat_graph::{Node, NodeConfig, NodeFactory, ParamKind, ParamValue};
use lv2_support::{render_outputs, signal};

/// The largest difference allowed between the VST3 and the CLAP build's samples.
const SAME_WITHIN: f32 = 0.0;

/// The package's VST3 bundles.
fn zam_bundles() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir("/usr/lib/vst3")
        .expect("/usr/lib/vst3 exists (the zam-plugins package; crates/plugin/ci.sh installs it)")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("Za"))
                && p.extension().is_some_and(|e| e == "vst3")
        })
        .collect();
    v.sort();
    assert_eq!(v.len(), 17, "zam-plugins' 17 VST3 bundles: {v:?}");
    v
}

fn create(factory: &dyn NodeFactory, path: &str) -> Box<dyn Node> {
    let cfg = NodeConfig {
        sample_rate: 48000,
        max_block: 256,
    };
    factory
        .create(vec![("path".into(), ParamValue::Text(path.into()))], &cfg)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// How a comparison sets the plugins' parameters.
#[derive(Clone, Copy, Debug)]
enum Settings {
    /// Where each build starts them (DPF's constructor values, in both).
    AsLoaded,
    /// Every parameter at an end of its range, at frame 0: the even ones at their maximum,
    /// the odd ones at their minimum. An end is exact in every mapping (a normalized 0 or
    /// 1), where a value inside the range may fall between a stepped parameter's steps
    /// (a toggle at 0.5) or take the wrapper's rounding.
    Ends,
}

fn set(node: &mut dyn Node, settings: Settings, name: &str) {
    if let Settings::Ends = settings {
        for (i, spec) in node.params().iter().enumerate() {
            if let ParamKind::Float { min, max, .. } = spec.kind {
                let v = if i % 2 == 0 { max } else { min };
                assert!(node.set_param(i, v as f32), "{name}: {}", spec.name);
            }
        }
    }
}

#[test]
fn every_zam_vst3_build_renders_what_its_clap_build_renders() {
    let mut differ = Vec::new();
    for bundle in zam_bundles() {
        let name = bundle.file_stem().unwrap().to_string_lossy().into_owned();
        let vst3 = create(
            &downbeat_plugin::vst3::Vst3Factory,
            &bundle.to_string_lossy(),
        );
        let clap = create(
            &downbeat_plugin::clap::ClapFactory,
            &format!("/usr/lib/clap/{name}.clap"),
        );
        let ports = |n: &dyn Node| -> [Vec<(String, usize)>; 2] {
            let p = |v: Vec<downbeat_graph::Port>| {
                v.into_iter().map(|p| (p.name, p.channels)).collect()
            };
            [p(n.input_ports()), p(n.output_ports())]
        };
        assert_eq!(ports(vst3.as_ref()), ports(clap.as_ref()), "{name}: ports");
        // Names and ranges; defaults within a float's rounding, since VST3 declares a
        // normalized default, which DPF keeps as an f32 (ZaMultiComp's attack: 9.999999).
        let params = |n: &dyn Node| -> Vec<(&'static str, f64, f64, f32)> {
            n.params()
                .iter()
                .map(|s| match s.kind {
                    ParamKind::Float { min, max, default } => (s.name, min, max, default as f32),
                    _ => (s.name, 0.0, 0.0, 0.0),
                })
                .collect()
        };
        // Both hosts make a plugin's read-only parameters (ZaMaximX2's `gain_reduction`) the
        // node's outputs, not parameters.
        let clap_params = params(clap.as_ref());
        let vst3_params = params(vst3.as_ref());
        let meters =
            |n: &dyn Node| -> Vec<&'static str> { n.outputs().iter().map(|s| s.name).collect() };
        assert_eq!(
            meters(vst3.as_ref()),
            meters(clap.as_ref()),
            "{name}: meters"
        );
        assert_eq!(vst3_params.len(), clap_params.len(), "{name}: parameters");
        for (v, c) in vst3_params.iter().zip(&clap_params) {
            assert_eq!((v.0, v.1, v.2), (c.0, c.1, c.2), "{name}: parameter");
            assert!(
                (v.3 - c.3).abs() <= 1e-5 * c.3.abs().max(1.0),
                "{name}: {v:?} {c:?}"
            );
        }
        assert_eq!(vst3.latency(), clap.latency(), "{name}: latency");
        for settings in [Settings::AsLoaded, Settings::Ends] {
            let mut vst3 = create(
                &downbeat_plugin::vst3::Vst3Factory,
                &bundle.to_string_lossy(),
            );
            let mut clap = create(
                &downbeat_plugin::clap::ClapFactory,
                &format!("/usr/lib/clap/{name}.clap"),
            );
            set(vst3.as_mut(), settings, &name);
            set(clap.as_mut(), settings, &name);
            let ins = vst3.input_channels();
            // One block of silence first, in which ZaMaximX2's CLAP build asks for its restart
            // (see clap_zam.rs).
            let mut input = vec![0.0; 256 * ins];
            input.extend(signal(ins, 48000, 48000));
            let (a, a_meters) = render_outputs(vst3, ins, &input, 48000, 256);
            let (b, b_meters) = render_outputs(clap, ins, &input, 48000, 256);
            if a_meters != b_meters {
                differ.push(format!(
                    "{name} ({settings:?}): meters {a_meters:?} (VST3) against {b_meters:?} (CLAP)"
                ));
            }
            let worst = a
                .iter()
                .zip(&b)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0f32, f32::max);
            eprintln!("{name} ({settings:?}): largest difference {worst:e}");
            if worst > SAME_WITHIN || a.iter().chain(&b).any(|s| !s.is_finite()) {
                differ.push(format!("{name} ({settings:?}): {worst:e}"));
            }
        }
    }
    assert!(
        differ.is_empty(),
        "VST3 and CLAP differ by more than {SAME_WITHIN:e}: {}",
        differ.join(", ")
    );
}
