//! An LV2 plugin's side chain as a port of its node: LSP's sidechain compressor (Debian's
//! `lsp-plugins-lv2`) ducks a pad by a kick fed to its `sidechain_in` port.
//!
//! The compressor declares its audio inputs in two port groups, `stereo_in` (its
//! `pg:mainInput`) and `sidechain_in` (`pg:sideChainOf` the first): the node's input ports
//! are `main` and `sidechain_in`, two channels each. The graph is pad -> comp:main,
//! kick -> comp:sidechain_in, comp -> out, with the compressor's sidechain type set to
//! External (`sct`, `lv2info` lists it with its scale points). The pad alone is below the
//! threshold; the kick is well above it. So the pad's level in the output, measured over
//! short windows, drops just after each kick's onset and is back up just before the next.

#![cfg(feature = "lv2")]

mod lv2_support;

use downbeat_graph::{
    AudioMut, AudioRef, CompileConfig, Graph, Node, NodeConfig, Port, ProcessContext,
};
use downbeat_nodes::{Output, Sine, SineSettings};
use downbeat_plugin::lv2::{ControlValue, Lv2Node};
use lv2_support::require_plugin;

const COMP: &str = "http://lsp-plug.in/plugins/lv2/sc_compressor_stereo";
const SR: u32 = 48_000;
const BLOCK: usize = 256;
/// Frames between kicks (0.5 s), the first kick after a quarter of that.
const PERIOD: usize = 24_000;
const FIRST: usize = PERIOD / 4;
/// A kick's length (80 ms).
const KICK: usize = 3_840;
/// Kicks rendered.
const KICKS: usize = 6;

/// Passes its input through during the first [`KICK`] frames of every [`PERIOD`] from
/// [`FIRST`] on, and silence otherwise: a sine gated into kicks, deterministic to the frame.
struct Gate {
    channels: usize,
}

impl Node for Gate {
    fn input_channels(&self) -> usize {
        self.channels
    }
    fn output_channels(&self) -> usize {
        self.channels
    }
    fn process(&mut self, ctx: &ProcessContext, input: AudioRef<'_>, mut out: AudioMut<'_>) {
        for c in 0..self.channels {
            let inp = input.channel(c);
            for (k, o) in out.channel_mut(c).iter_mut().enumerate() {
                let t = ctx.position as usize + k;
                let open = t >= FIRST && (t - FIRST) % PERIOD < KICK;
                *o = if open { inp[k] } else { 0.0 };
            }
        }
    }
}

/// The compressor with its side chain external, attack 5 ms and release 60 ms (so that the
/// pad is back to its level well before the next kick); other settings the plugin's
/// defaults (threshold -12 dB, ratio 4).
fn comp(side_chain: &str) -> Lv2Node {
    let cfg = NodeConfig {
        sample_rate: SR,
        max_block: BLOCK,
    };
    let values = [
        ("sct".to_string(), ControlValue::Label(side_chain.into())),
        ("at".to_string(), ControlValue::Number(5.0)),
        ("rt".to_string(), ControlValue::Number(60.0)),
    ];
    Lv2Node::load(COMP, &values, &cfg).unwrap_or_else(|e| panic!("{e}"))
}

/// Renders the graph (pad -> comp:main, and when `kick_edge` names the compressor's port,
/// kick -> that port) and returns the left output channel and the schedule's latency.
fn render(comp: Lv2Node, kick_edge: Option<&str>) -> (Vec<f32>, usize) {
    let mut g = Graph::new();
    // A pad of -20 dBFS peak (well below the threshold), a kick of 0 dBFS at 60 Hz.
    g.add(
        "pad",
        Sine::new(
            2,
            SR,
            &SineSettings {
                freq: 220.0,
                amp: 0.1,
                ..SineSettings::default()
            },
        ),
    );
    g.add(
        "osc",
        Sine::new(
            2,
            SR,
            &SineSettings {
                freq: 60.0,
                amp: 1.0,
                ..SineSettings::default()
            },
        ),
    );
    g.add("kick", Gate { channels: 2 });
    g.add("comp", comp);
    let out = g.add("out", Output::new(2));
    g.connect("osc", "kick");
    g.connect("pad", "comp:main");
    if let Some(port) = kick_edge {
        g.connect("kick", port);
    }
    g.connect("comp", "out");
    g.set_output(out);
    let mut s = g
        .compile(CompileConfig {
            sample_rate: SR,
            max_block: BLOCK,
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let frames = FIRST + KICKS * PERIOD;
    let mut left = Vec::with_capacity(frames);
    while left.len() < frames {
        s.process(BLOCK);
        left.extend_from_slice(s.output().channel(0));
    }
    (left, s.latency())
}

/// RMS level in dBFS of `x[from..to]`.
fn level(x: &[f32], from: usize, to: usize) -> f64 {
    let w = &x[from..to];
    let power = w.iter().map(|s| f64::from(*s).powi(2)).sum::<f64>() / w.len() as f64;
    10.0 * power.max(1e-30).log10()
}

/// The pad's level just before each kick (the 20 ms before its onset) and just after it
/// (20 to 60 ms after, the attack done), in output time.
fn around_kicks(out: &[f32], latency: usize) -> Vec<(f64, f64)> {
    let ms = |n: usize| n * SR as usize / 1000;
    (0..KICKS)
        .map(|k| {
            let onset = FIRST + k * PERIOD + latency;
            (
                level(out, onset - ms(20), onset),
                level(out, onset + ms(20), onset + ms(60)),
            )
        })
        .collect()
}

#[test]
fn a_kick_on_the_sidechain_port_ducks_the_pad_after_each_onset() {
    require_plugin(COMP);
    let node = comp("External");
    // The port groups: `main` (stereo_in, the main input group) and the side chain by its
    // group's symbol; the outputs, one group, `main`.
    assert_eq!(
        node.input_ports(),
        [Port::main(2), Port::new("sidechain_in", 2)]
    );
    assert_eq!(node.output_ports(), [Port::main(2)]);

    let (out, latency) = render(node, Some("comp:sidechain_in"));
    for (k, (before, after)) in around_kicks(&out, latency).into_iter().enumerate() {
        eprintln!("kick {k}: pad {before:.1} dBFS before, {after:.1} dBFS after");
        // The pad alone: a sine of peak 0.1 is -23 dBFS RMS.
        assert!(
            (before + 23.0).abs() < 1.0,
            "kick {k}: the pad is at {before:.1} dBFS before the kick, not its own level"
        );
        assert!(
            after < before - 3.0,
            "kick {k}: the pad is at {after:.1} dBFS after the kick's onset, {before:.1} \
             before: the side chain did not duck it"
        );
    }

    // The same graph without the kick's edge: the side chain hears silence, and the pad
    // goes through unducked. The ducking above is the side-chain port's doing.
    let (out, latency) = render(comp("External"), None);
    for (k, (before, after)) in around_kicks(&out, latency).into_iter().enumerate() {
        assert!(
            (after - before).abs() < 0.5,
            "kick {k}: without a side chain the pad moved from {before:.1} to {after:.1} dBFS"
        );
    }
}

/// The port names are checked when the graph compiles: a misspelt port is refused with the
/// ports the compressor has.
#[test]
fn an_unknown_port_of_the_compressor_is_refused_with_its_ports() {
    require_plugin(COMP);
    let mut g = Graph::new();
    g.add(
        "kick",
        Sine::new(
            2,
            SR,
            &SineSettings {
                freq: 60.0,
                amp: 1.0,
                ..SineSettings::default()
            },
        ),
    );
    g.add("comp", comp("External"));
    let out = g.add("out", Output::new(2));
    g.connect("kick", "comp:sidechain");
    g.connect("comp", "out");
    g.set_output(out);
    let Err(err) = g.compile(CompileConfig {
        sample_rate: SR,
        max_block: BLOCK,
    }) else {
        panic!("an edge into an unknown port compiled");
    };
    assert_eq!(
        err.to_string(),
        "node `comp` has no input port `sidechain`; its input ports: `main`, `sidechain_in`"
    );
}
