//! CLAP plugins in graphs, against the workspace's test plugins (`crates/clap-test-plugins`):
//!
//! * ports: the host probe (`host_probe.rs`: a stereo `main` input and output, and a mono
//!   input port called "sidechain" whose samples it adds to both outputs) is a node with
//!   input ports `main` and `sidechain`; an edge into `p:sidechain` reaches the plugin's
//!   sidechain port, and only it;
//! * a null test: a signal through the test delay (a stereo delay of 64 frames that reports
//!   them as its latency) and its own inverted copy, summed on a `mix` bus, cancel to below
//!   -120 dBFS once the graph compensates the delay's latency, before and after a live edit
//!   elsewhere in the graph (an [`Editor`] commit taken over at a block boundary, which
//!   keeps the plugin and the latency delay beside it, contents and all). The probe is not
//!   used for this: it reports a latency of 32 frames but does not delay its input, so no
//!   compensation can null it.

mod clap_support;

use clap_support::{test_plugins, DELAY_FRAMES, DELAY_ID, HOST_PROBE_ID};
use downbeat_graph::{
    AudioMut, AudioRef, CompileConfig, Editor, Graph, Node, Port, ProcessContext, Schedule,
};
use downbeat_nodes::{Gain, Mix, MixSettings, Noise, NoiseSettings, Output, Sine, SineSettings};
use downbeat_plugin::clap::ClapNode;

const SR: u32 = 48_000;
const BLOCK: usize = 256;
const CFG: CompileConfig = CompileConfig {
    sample_rate: SR,
    max_block: BLOCK,
};

fn load(id: &str) -> ClapNode {
    ClapNode::load(&test_plugins(), Some(id), SR, BLOCK).unwrap_or_else(|e| panic!("{id}: {e}"))
}

fn probe() -> ClapNode {
    load(HOST_PROBE_ID)
}

/// A constant of `value` on `channels` channels (a sine of 0 Hz starting at its peak).
fn constant(channels: usize, value: f32) -> Sine {
    Sine::new(
        channels,
        SR,
        &SineSettings {
            freq: 0.0,
            amp: value,
            phase: 0.25,
        },
    )
}

#[test]
fn an_edge_into_the_sidechain_port_reaches_the_plugins_sidechain_and_only_it() {
    let node = probe();
    assert_eq!(
        node.input_ports(),
        [Port::main(2), Port::new("sidechain", 1)]
    );
    let render = |side: Option<&str>| -> Vec<f32> {
        let mut g = Graph::new();
        g.add("src", constant(2, 0.5));
        g.add("side", constant(1, 0.125));
        g.add("p", probe());
        let out = g.add("out", Output::new(2));
        g.connect("src", "p");
        if let Some(port) = side {
            g.connect("side", port);
        }
        g.connect("p", "out");
        g.set_output(out);
        let mut s = g.compile(CFG).unwrap_or_else(|e| panic!("{e}"));
        s.process(BLOCK);
        (0..2)
            .flat_map(|c| s.output().channel(c).to_vec())
            .collect()
    };
    // main + sidechain on both outputs (the probe adds its sidechain to each).
    assert!(render(Some("p:sidechain")).iter().all(|&x| x == 0.625));
    // No edge into the sidechain: it hears silence.
    assert!(render(None).iter().all(|&x| x == 0.5));

    // A wrong port is refused at compile time with the ports the probe has.
    let mut g = Graph::new();
    g.add("side", constant(1, 0.125));
    g.add("p", probe());
    let out = g.add("out", Output::new(2));
    g.connect("side", "p:side");
    g.connect("p", "out");
    g.set_output(out);
    let Err(err) = g.compile(CFG) else {
        panic!("an edge into an unknown port compiled");
    };
    assert_eq!(
        err.to_string(),
        "node `p` has no input port `side`; its input ports: `main`, `sidechain`"
    );
}

/// Multiplies its input by -1: the inverted copy.
struct Invert(usize);

impl Node for Invert {
    fn input_channels(&self) -> usize {
        self.0
    }
    fn output_channels(&self) -> usize {
        self.0
    }
    fn process(&mut self, _: &ProcessContext, input: AudioRef<'_>, mut out: AudioMut<'_>) {
        for c in 0..self.0 {
            for (o, i) in out.channel_mut(c).iter_mut().zip(input.channel(c)) {
                *o = -*i;
            }
        }
    }
}

/// noise -> delay -> mix and noise -> invert -> mix (the graph delays the inverted path by
/// the plugin's latency), with a side branch elsewhere: a sine through `side` and a gain of
/// 0 into `mix`.
fn null_graph() -> Graph {
    let mut g = Graph::new();
    g.add(
        "noise",
        Noise::new(2, &NoiseSettings { amp: 0.5, seed: 23 }),
    );
    g.add("delay", load(DELAY_ID));
    g.add("inv", Invert(2));
    g.add(
        "tone",
        Sine::new(
            2,
            SR,
            &SineSettings {
                freq: 440.0,
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
                gain_db: 0.0,
                ..MixSettings::default()
            },
        ),
    );
    let out = g.add("out", Output::new(2));
    for (f, t) in [
        ("noise", "delay"),
        ("noise", "inv"),
        ("delay", "mix"),
        ("inv", "mix"),
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

/// The block's peak over both output channels, in dBFS (-inf for silence).
fn peak_db(s: &Schedule) -> f64 {
    let out = s.output();
    let peak = (0..out.channels())
        .flat_map(|c| out.channel(c).iter())
        .fold(0.0f32, |p, x| p.max(x.abs()));
    20.0 * f64::from(peak).log10()
}

#[test]
fn a_signal_and_its_inverted_copy_through_a_latent_plugin_cancel_before_and_after_an_edit() {
    let (mut editor, mut running) = Editor::new(null_graph(), CFG).unwrap();
    assert_eq!(running.latency(), DELAY_FRAMES);
    let compensation = format!("inv -> mix (latency {DELAY_FRAMES})");
    assert!(
        running.names().contains(&compensation),
        "no latency delay on the inverted path: {:?}",
        running.names()
    );
    // The signal cancelled is loud (see the test below, where its residue is measured).
    for b in 0..40 {
        running.process(BLOCK);
        let db = peak_db(&running);
        assert!(db < -120.0, "block {b}: the null leaves {db:.1} dBFS");
    }
    // An edit on the side branch, mid-run: `side` replaced by another gain.
    editor.remove("side").unwrap();
    editor.add("side2", Gain::new(2, 0.25)).unwrap();
    editor.connect("tone", "side2").unwrap();
    editor.connect("side2", "mute").unwrap();
    let mut next = editor.commit().unwrap();
    // Every node but `side`, and the latency delay: the plugin's and the latency delay's
    // contents go on, so the 64 frames in flight on each path still meet.
    assert!(next.kept_nodes() >= 8, "{} nodes kept", next.kept_nodes());
    next.take_over(&mut running);
    std::mem::swap(&mut next, &mut running);
    drop(next);
    assert!(running.names().contains(&compensation));
    for b in 40..80 {
        running.process(BLOCK);
        let db = peak_db(&running);
        assert!(
            db < -120.0,
            "block {b}, after the edit: the null leaves {db:.1} dBFS"
        );
    }
}

/// The null test can tell a latency delay that loses its contents: an edit that replaces
/// the inverting node (`inv` by `inv2`) makes a new latency delay on the new edge, empty,
/// while the plugin keeps the 64 frames it holds. The output then carries the plugin's
/// path alone for exactly those 64 frames, and cancels again after them.
#[test]
fn a_new_latency_delay_starts_empty_and_breaks_the_null_for_the_latency() {
    let (mut editor, mut running) = Editor::new(null_graph(), CFG).unwrap();
    for _ in 0..40 {
        running.process(BLOCK);
    }
    assert!(peak_db(&running) < -120.0);
    editor.remove("inv").unwrap();
    editor.add("inv2", Invert(2)).unwrap();
    editor.connect("noise", "inv2").unwrap();
    editor.connect("inv2", "mix").unwrap();
    let mut next = editor.commit().unwrap();
    next.take_over(&mut running);
    std::mem::swap(&mut next, &mut running);
    drop(next);
    running.process(BLOCK);
    let out = running.output();
    let peak = |range: std::ops::Range<usize>| {
        let p = (0..2)
            .flat_map(|c| out.channel(c)[range.clone()].iter())
            .fold(0.0f32, |p, x| p.max(x.abs()));
        20.0 * f64::from(p).log10()
    };
    let residue = peak(0..DELAY_FRAMES);
    assert!(
        residue > -12.0,
        "the residue while the new delay fills is only {residue:.1} dBFS"
    );
    let after = peak(DELAY_FRAMES..BLOCK);
    assert!(
        after < -120.0,
        "once it is full the null leaves {after:.1} dBFS"
    );
}
