//! A CLAP plugin that changes its latency and its parameter list while it runs, the way CLAP
//! has a plugin do it (the test plugins' reshaper): a `request_callback` from `process`, a
//! `request_restart` from the `on_main_thread` that answers it, and a new latency and a new
//! parameter in the activation that follows. The host's CLAP main thread answers both while
//! the schedule plays, on a thread of its own; the node hands its processor over and takes
//! the new one back without allocating, locking or a system call (every block is played
//! under the guard); the editor's next commit compensates the new latency and resolves the
//! new parameter; and the node is never built again.
//!
//! noise -> reshaper -> mix and noise -> invert -> mix: the two cancel exactly while the
//! plugin's latency is compensated (0 at first, then 48 frames), and not in the blocks
//! between the restart and the commit.

mod clap_support;

use std::time::{Duration, Instant};

use clap_support::{test_plugins, RESHAPED_LATENCY, RESHAPER_ID};
use downbeat_graph::{
    AudioMut, AudioRef, Change, CompileConfig, Editor, Event, Graph, Node, ProcessContext, Schedule,
};
use downbeat_nodes::{Mix, MixSettings, Noise, NoiseSettings, Output};
use downbeat_plugin::clap::{instances_loaded, ClapNode};

downbeat_rt::install_guard_allocator!();

const SR: u32 = 48_000;
const BLOCK: usize = 256;

/// Multiplies its input by -1: the inverted copy.
struct Invert;

impl Node for Invert {
    fn input_channels(&self) -> usize {
        2
    }
    fn output_channels(&self) -> usize {
        2
    }
    fn process(&mut self, _: &ProcessContext, input: AudioRef<'_>, mut out: AudioMut<'_>) {
        for c in 0..2 {
            for (o, i) in out.channel_mut(c).iter_mut().zip(input.channel(c)) {
                *o = -*i;
            }
        }
    }
}

/// One block, under the guard; the largest absolute sample of the output.
fn block(s: &mut Schedule) -> f32 {
    downbeat_rt::guard::check(|| s.process(BLOCK)).assert_clean();
    let out = s.output();
    (0..2)
        .flat_map(|c| out.channel(c).iter())
        .fold(0.0f32, |m, x| m.max(x.abs()))
}

/// Every sample of both channels of the last block.
fn samples(s: &Schedule) -> Vec<f32> {
    let out = s.output();
    (0..2).flat_map(|c| out.channel(c).to_vec()).collect()
}

#[test]
fn a_restart_from_on_main_thread_brings_a_new_latency_and_parameter_into_the_next_compile() {
    let reshaper = ClapNode::load(&test_plugins(), Some(RESHAPER_ID), SR, BLOCK)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((reshaper.latency(), reshaper.params().len()), (0, 1));
    let loaded = instances_loaded();
    let mut g = Graph::new();
    g.add("noise", Noise::new(2, &NoiseSettings { amp: 0.5, seed: 5 }));
    g.add("shaper", reshaper);
    g.add("inv", Invert);
    g.add("mix", Mix::new(2, &MixSettings::default()));
    let out = g.add("out", Output::new(2));
    for (f, t) in [
        ("noise", "shaper"),
        ("noise", "inv"),
        ("shaper", "mix"),
        ("inv", "mix"),
        ("mix", "out"),
    ] {
        g.connect(f, t);
    }
    g.set_output(out);
    let cfg = CompileConfig {
        sample_rate: SR,
        max_block: BLOCK,
    };
    let (mut editor, mut running) = Editor::new(g, cfg).unwrap();
    let first_table = running.param_table();
    assert!(first_table.resolve("shaper", "offset").is_err());
    for b in 0..4 {
        assert_eq!(
            block(&mut running),
            0.0,
            "block {b}: the null before the restart"
        );
    }

    // `go`: the plugin asks for a callback from `process`; its `on_main_thread` asks for the
    // restart. Blocks go on at about the real-time rate until the new shape is published.
    let go = first_table.resolve("shaper", "go").unwrap();
    running
        .push_event(Event::param(None, go, Change::Set(1.0)))
        .unwrap();
    let asked = Instant::now();
    while !editor.revise() {
        assert!(
            asked.elapsed() < Duration::from_secs(10),
            "no new latency or parameter list published in 10 s (on_main_thread or the \
             restart never came)"
        );
        std::thread::sleep(Duration::from_millis(2));
        block(&mut running);
    }
    // The node takes the new processor at its next block: uncompensated, the null breaks.
    let mut residual = 0.0f32;
    for _ in 0..4 {
        std::thread::sleep(Duration::from_millis(5));
        residual = residual.max(block(&mut running));
    }
    assert!(
        residual > 0.01,
        "the restarted plugin's delay shows before the commit"
    );

    // The commit compensates the new latency; the new delay on the inverted path starts
    // empty, so the first 48 frames after the take-over are the plugin's output alone.
    let mut next = editor.commit().unwrap();
    assert_eq!(next.latency(), RESHAPED_LATENCY as usize);
    assert_eq!(
        next.kept_nodes(),
        5,
        "every node kept, the plugin's instance too"
    );
    downbeat_rt::guard::check(|| next.take_over(&mut running)).assert_clean();
    std::mem::swap(&mut running, &mut next);
    drop(next);
    block(&mut running);
    for b in 0..4 {
        assert_eq!(
            block(&mut running),
            0.0,
            "block {b} after the commit: the null"
        );
    }

    // The new parameter is there by name, and reaches the plugin.
    let offset = running.param_table().resolve("shaper", "offset").unwrap();
    running.set_smoothing(Duration::ZERO);
    running
        .push_event(Event::param(None, offset, Change::Set(0.25)))
        .unwrap();
    block(&mut running);
    block(&mut running);
    // (x + 0.25) - x rounds, so the null leaves the offset to within float rounding.
    let out = samples(&running);
    assert!(
        out.iter().all(|&s| (s - 0.25).abs() < 1e-6),
        "the offset, alone above the null: {:?}",
        &out[..4]
    );
    assert_eq!(
        instances_loaded(),
        loaded,
        "the plugin was never created again"
    );
}
