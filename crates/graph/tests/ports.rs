//! Named ports: edges into and out of a node's `main` and other ports.

use downbeat_graph::{
    AudioMut, AudioRef, CompileConfig, Editor, Graph, GraphError, Node, Port, ProcessContext,
};
use downbeat_nodes::{Output, Sine, SineSettings};
use downbeat_rt::pool::{Pool, PoolConfig};

const CFG: CompileConfig = CompileConfig {
    sample_rate: 48_000,
    max_block: 64,
};

/// A ducker: its `main` input (1 channel) times one minus the level of its `sidechain`
/// input (1 channel); it also sends the sidechain on through an `aux` output.
struct Duck;

impl Node for Duck {
    fn input_channels(&self) -> usize {
        2
    }
    fn output_channels(&self) -> usize {
        2
    }
    fn input_ports(&self) -> Vec<Port> {
        vec![Port::main(1), Port::new("sidechain", 1)]
    }
    fn output_ports(&self) -> Vec<Port> {
        vec![Port::main(1), Port::new("aux", 1)]
    }
    fn process(&mut self, _: &ProcessContext, input: AudioRef<'_>, mut out: AudioMut<'_>) {
        let (main, side) = (input.channel(0), input.channel(1));
        let ducked: Vec<f32> = main
            .iter()
            .zip(side)
            .map(|(m, s)| m * (1.0 - s.abs()))
            .collect();
        out.channel_mut(0).copy_from_slice(&ducked);
        out.channel_mut(1).copy_from_slice(side);
    }
}

/// A constant of `value` on one channel.
fn constant(value: f32) -> Sine {
    Sine::new(
        1,
        48_000,
        &SineSettings {
            freq: 0.0,
            amp: value,
            phase: 0.25,
        },
    )
}

fn ducked(graph: Graph, parallel: bool) -> Vec<u32> {
    let mut s = graph.compile(CFG).unwrap();
    let pool = Pool::new(PoolConfig {
        workers: Some(2),
        realtime_priority: None,
        ..PoolConfig::default()
    });
    let mut bits = Vec::new();
    for _ in 0..4 {
        if parallel {
            s.process_parallel(64, &pool);
        } else {
            s.process(64);
        }
        bits.extend(s.output().channel(0).iter().map(|x| x.to_bits()));
    }
    bits
}

/// Two sources into the main port, two into the sidechain, the ducker's `main` and its
/// `aux` output summed into the output: every channel gets exactly the edges routed to it,
/// in both processors, bit for bit.
fn sidechain_graph() -> Graph {
    let mut g = Graph::new();
    let pad = g.add("pad", constant(0.5));
    g.add("pad2", constant(0.25));
    let kick = g.add("kick", constant(0.125));
    let snare = g.add("snare", constant(0.0625));
    let duck = g.add("duck", Duck);
    let out = g.add("out", Output::new(1));
    g.connect(pad, duck);
    g.connect("pad2", "duck:main");
    g.connect(kick, (duck, "sidechain"));
    g.connect(snare, "duck:sidechain");
    g.connect(duck, out);
    g.connect("duck:aux", "out");
    g.set_output(out);
    g
}

#[test]
fn edges_reach_the_ports_they_name_and_only_those() {
    let bits = ducked(sidechain_graph(), false);
    // main = 0.75, sidechain = 0.1875: out = 0.75 * (1 - 0.1875) + 0.1875.
    let want = (0.75f32 * (1.0 - 0.1875) + 0.1875).to_bits();
    assert!(
        bits.iter().all(|&b| b == want),
        "{:?}",
        f32::from_bits(bits[0])
    );
    assert_eq!(bits, ducked(sidechain_graph(), true), "parallel differs");
}

/// An unconnected port hears silence.
#[test]
fn a_port_without_edges_is_silent() {
    let mut g = Graph::new();
    g.add("pad", constant(0.5));
    g.add("duck", Duck);
    let out = g.add("out", Output::new(1));
    g.connect("pad", "duck");
    g.connect("duck", "out");
    g.set_output(out);
    let bits = ducked(g, false);
    assert!(bits.iter().all(|&b| b == 0.5f32.to_bits()));
}

#[test]
fn bad_ports_are_refused_with_the_ports_there_are() {
    let compile = |edge: (&str, &str)| {
        let mut g = Graph::new();
        g.add("pad", constant(0.5));
        g.add(
            "stereo",
            Sine::new(
                2,
                48_000,
                &SineSettings {
                    freq: 0.0,
                    amp: 0.5,
                    phase: 0.25,
                },
            ),
        );
        g.add("duck", Duck);
        let out = g.add("out", Output::new(1));
        g.connect("duck", "out");
        g.connect(edge.0, edge.1);
        g.set_output(out);
        g.compile(CFG).err()
    };
    let err = compile(("pad", "duck:sidechian")).unwrap();
    assert!(
        matches!(
            err,
            GraphError::UnknownPort {
                edge: 1,
                input: true,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "node `duck` has no input port `sidechian`; its input ports: `main`, `sidechain`"
    );
    let err = compile(("duck:side", "out")).unwrap();
    assert_eq!(
        err.to_string(),
        "node `duck` has no output port `side`; its output ports: `main`, `aux`"
    );
    let err = compile(("stereo", "duck:sidechain")).unwrap();
    assert_eq!(
        err.to_string(),
        "edge `stereo` -> `duck:sidechain`: `stereo` has 2 output channel(s) but \
         `duck:sidechain` has 1 input channel(s)"
    );
    let err = compile(("duck", "out")).unwrap();
    assert!(matches!(err, GraphError::DuplicateEdge { .. }), "{err:?}");
    let err = compile(("nosuch:main", "duck")).unwrap();
    assert!(
        matches!(err, GraphError::UnknownNode { ref name, .. } if name == "nosuch"),
        "{err:?}"
    );
    assert!(compile(("pad", "duck:sidechain")).is_none());
}

/// A node of some latency on the way into the sidechain: compile delays the path into the
/// main port to match, with a delay of its own per routed edge.
#[test]
fn latency_is_compensated_port_by_port() {
    struct Late;
    impl Node for Late {
        fn input_channels(&self) -> usize {
            1
        }
        fn output_channels(&self) -> usize {
            1
        }
        fn latency(&self) -> usize {
            10
        }
        fn process(&mut self, _: &ProcessContext, input: AudioRef<'_>, mut out: AudioMut<'_>) {
            out.channel_mut(0).copy_from_slice(input.channel(0));
        }
    }
    let mut g = Graph::new();
    g.add("pad", constant(0.5));
    g.add("late", Late);
    g.add("duck", Duck);
    let out = g.add("out", Output::new(1));
    g.connect("pad", "late");
    g.connect("late", "duck:sidechain");
    g.connect("pad", "duck");
    g.connect("duck", "out");
    g.set_output(out);
    let s = g.compile(CFG).unwrap();
    assert_eq!(s.latency(), 10);
    assert!(
        s.names().iter().any(|n| n == "pad -> duck (latency 10)"),
        "{:?}",
        s.names()
    );
}

/// The editor takes `node:port` ends, and removing a node removes its port edges too.
#[test]
fn the_editor_connects_ports_and_removing_a_node_removes_its_port_edges() {
    let (mut e, mut running) = Editor::new(sidechain_graph(), CFG).unwrap();
    running.process(64);
    e.add("hat", constant(0.5)).unwrap();
    e.connect("hat", "duck:sidechain").unwrap();
    e.remove("kick").unwrap();
    let mut next = e.commit().unwrap();
    next.take_over(&mut running);
    next.process(64);
    assert!(e.has_edge("hat", "duck:sidechain"));
    assert!(!e.edges().any(|(f, _)| f == "kick"));
    assert!(e.has_edge("snare", "duck:sidechain"));
}
