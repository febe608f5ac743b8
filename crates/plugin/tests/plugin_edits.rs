//! Plugins across live edits: an LV2 plugin (mda Delay, Debian's `mda-lv2`, a stereo delay
//! with feedback) and a CLAP plugin (ZaMaximX2, Debian's `zam-plugins`, a look-ahead limiter
//! reporting 480 frames of latency, which the graph compensates on the delay's path) play
//! through 100 commits of an [`Editor`] that change the graph around them, each taken over
//! at a block boundary as the engine does it (see crates/graph/tests/edit.rs). Neither
//! plugin is instantiated again (the per-format instance counters do not move), and the
//! output, which only the plugins' branch makes, is bit for bit the output of the same
//! graph rendered without the edits: the delay's echoes, the limiter's look-ahead and gain,
//! and the latency delay beside it go on across every edit.
//!
//! The comparison needs plugins whose output is the same from one instance to the next:
//! mda DubDelay's is not (9 renders in 10 differed from a first one, each a fresh instance
//! over the same input), mda Delay's and ZaMaximX2's are.
//!
//! Built with the `lv2` feature (crates/plugin/ci.sh). One test in this file: the instance
//! counters are per process, and another test loading plugins at the same time would move
//! them.

#![cfg(feature = "lv2")]

mod lv2_support;

use std::path::Path;

use downbeat_graph::{CompileConfig, Editor, Graph, NodeConfig, Schedule};
use downbeat_nodes::{Gain, Mix, MixSettings, Noise, NoiseSettings, Output, Sine, SineSettings};
use downbeat_plugin::clap::ClapNode;
use downbeat_plugin::lv2::{ControlValue, Lv2Node};
use lv2_support::require_plugin;

const DELAY: &str = "http://drobilla.net/plugins/mda/Delay";
const LIMITER: &str = "/usr/lib/clap/ZaMaximX2.clap";
const SR: u32 = 48_000;
const BLOCK: usize = 256;
const CFG: CompileConfig = CompileConfig {
    sample_rate: SR,
    max_block: BLOCK,
};
/// Commits made.
const EDITS: usize = 100;
/// The first commit's block; then one commit every [`EVERY`] blocks.
const FIRST_EDIT: usize = 20;
const EVERY: usize = 2;
const BLOCKS: usize = FIRST_EDIT + EDITS * EVERY + 40;

/// Audible: noise through the delay and through the limiter, into `mix`. Off the audible
/// path, where the edits happen: a sine through `side` and a gain of 0 into `mix` (a
/// product with 0 adds nothing to a sum).
fn graph() -> Graph {
    let node_cfg = NodeConfig {
        sample_rate: SR,
        max_block: BLOCK,
    };
    let delay = Lv2Node::load(
        DELAY,
        &[
            ("l_delay".to_string(), ControlValue::Number(0.1)),
            ("r_delay".to_string(), ControlValue::Number(0.15)),
        ],
        &node_cfg,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let limiter =
        ClapNode::load(Path::new(LIMITER), None, SR, BLOCK).unwrap_or_else(|e| panic!("{e}"));
    let mut g = Graph::new();
    g.add(
        "noise",
        Noise::new(2, &NoiseSettings { amp: 0.3, seed: 17 }),
    );
    g.add("delay", delay);
    g.add("limiter", limiter);
    g.add(
        "tone",
        Sine::new(
            2,
            SR,
            &SineSettings {
                freq: 330.0,
                amp: 0.5,
                ..SineSettings::default()
            },
        ),
    );
    g.add("side", Gain::new(2, 0.5));
    g.add("mute", Gain::new(2, 0.0));
    g.add(
        "mix",
        Mix::new(
            2,
            &MixSettings {
                gain_db: -6.0,
                ..MixSettings::default()
            },
        ),
    );
    let out = g.add("out", Output::new(2));
    for (f, t) in [
        ("noise", "delay"),
        ("noise", "limiter"),
        ("delay", "mix"),
        ("limiter", "mix"),
        ("tone", "side"),
        ("side", "mute"),
        ("mute", "mix"),
        ("mix", "out"),
    ] {
        g.connect(f, t);
    }
    g.set_output(out);
    g
}

/// Edit `k` of the side branch: a new gain between `tone` and `mute`, the previous edit's
/// removed; every fifth edit also moves `side` off `mute` and back.
fn edit(e: &mut Editor, k: usize) {
    let name = format!("t{k}");
    e.add(name.as_str(), Gain::new(2, 0.25)).unwrap();
    e.connect("tone", &name).unwrap();
    e.connect(&name, "mute").unwrap();
    if k > 0 {
        e.remove(&format!("t{}", k - 1)).unwrap();
    }
    if k % 5 == 0 {
        if e.has_edge("side", "mute") {
            e.disconnect("side", "mute").unwrap();
        } else {
            e.connect("side", "mute").unwrap();
        }
    }
}

fn bits(s: &Schedule) -> impl Iterator<Item = u32> + '_ {
    let out = s.output();
    (0..out.channels()).flat_map(move |c| out.channel(c).iter().map(|x| x.to_bits()))
}

/// How a render changes the graph.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Not at all.
    Plain,
    /// The [`EDITS`] edits, through the editor.
    Edits,
    /// Once, at the first edit's block, by building the graph afresh (new plugin
    /// instances) instead: what the editor exists to avoid.
    Rebuild,
}

/// Renders [`BLOCKS`] blocks, changing the graph as `mode` says; returns the output's bits
/// and the instances of each format (LV2, CLAP) loaded while the changes were made.
fn render(mode: Mode) -> (Vec<u32>, (u64, u64)) {
    let (mut editor, mut running) = Editor::new(graph(), CFG).unwrap();
    // Rendered offline: the limiter's CLAP build (DPF) asks for a restart in its first
    // block, which an offline schedule serves before the next block in every render alike
    // (in real time it would land wherever the CLAP main thread looks).
    running.set_offline(true);
    // The limiter's latency, compensated on the delay's path.
    assert_eq!(running.latency(), 480);
    assert!(
        running
            .names()
            .iter()
            .any(|n| n == "delay -> mix (latency 480)"),
        "{:?}",
        running.names()
    );
    let loaded = || {
        (
            downbeat_plugin::lv2::instances_loaded(),
            downbeat_plugin::clap::instances_loaded(),
        )
    };
    let before = loaded();
    let mut out = Vec::new();
    for b in 0..BLOCKS {
        let k = b.wrapping_sub(FIRST_EDIT) / EVERY;
        if mode == Mode::Rebuild && b == FIRST_EDIT {
            let (_, mut fresh) = Editor::new(graph(), CFG).unwrap();
            fresh.set_offline(true);
            std::mem::swap(&mut fresh, &mut running);
        }
        if mode == Mode::Edits && b >= FIRST_EDIT && (b - FIRST_EDIT) % EVERY == 0 && k < EDITS {
            edit(&mut editor, k);
            let mut next = editor.commit().unwrap_or_else(|e| panic!("edit {k}: {e}"));
            next.take_over(&mut running);
            std::mem::swap(&mut next, &mut running);
            // The old schedule goes with the nodes it no longer has (the removed gain).
            drop(next);
        }
        running.process(BLOCK);
        out.extend(bits(&running));
    }
    let after = loaded();
    (out, (after.0 - before.0, after.1 - before.1))
}

#[test]
fn an_lv2_and_a_clap_plugin_play_on_unbroken_across_100_edits_without_being_reloaded() {
    require_plugin(DELAY);
    assert!(
        Path::new(LIMITER).is_file(),
        "{LIMITER} is missing: this test needs it; `bash scripts/deps.sh` installs it (Debian \
         package zam-plugins)"
    );
    let (plain, _) = render(Mode::Plain);
    let (edited, reloaded) = render(Mode::Edits);
    assert_eq!(
        reloaded,
        (0, 0),
        "plugin instances (LV2, CLAP) created during the edits"
    );
    let frames = BLOCKS * BLOCK;
    assert_eq!(plain.len(), 2 * frames);
    // Not a silent comparison: both plugins' branches sound through the edits.
    let loud = plain
        .iter()
        .skip(FIRST_EDIT * BLOCK * 2)
        .filter(|&&b| f32::from_bits(b).abs() > 1e-3)
        .count();
    assert!(
        loud > frames,
        "the plugins' branch is nearly silent ({loud} loud samples)"
    );
    let first = plain.iter().zip(&edited).position(|(a, b)| a != b);
    assert_eq!(
        first,
        None,
        "the edited render parts from the plain one at sample {first:?} (of the \
         block-planar output; the first edit is at frame {})",
        FIRST_EDIT * BLOCK
    );

    // The same comparison tells a reload: a graph built afresh at the first edit's block
    // loads both plugins again, and the output parts in that block (a fresh delay has no
    // echoes, a fresh limiter an empty look-ahead).
    let (rebuilt, reloaded) = render(Mode::Rebuild);
    assert_eq!(reloaded, (1, 1), "instances created by the rebuild");
    let first = plain.iter().zip(&rebuilt).position(|(a, b)| a != b);
    let edit = FIRST_EDIT * BLOCK * 2;
    assert!(
        first.is_some_and(|f| (edit..edit + 2 * BLOCK).contains(&f)),
        "a rebuilt graph parts from the plain one at sample {first:?}, not in block {FIRST_EDIT}"
    );
}
