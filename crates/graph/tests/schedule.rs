//! Compilation and serial processing: order, summing, and errors that name the nodes.

use downbeat_graph::{AudioMut, AudioRef, CompileConfig, Graph, GraphError, Node, ProcessContext};
use downbeat_nodes::{Gain, Output};
use proptest::prelude::*;

const CFG: CompileConfig = CompileConfig {
    sample_rate: 48_000,
    max_block: 64,
};

/// Outputs the sum of its inputs plus a constant, so every node's output can be predicted.
struct AddConst {
    value: f32,
    inputs: usize,
}

impl Node for AddConst {
    fn input_channels(&self) -> usize {
        self.inputs
    }
    fn output_channels(&self) -> usize {
        2
    }
    fn process(&mut self, _: &ProcessContext, input: AudioRef<'_>, mut output: AudioMut<'_>) {
        for c in 0..2 {
            let out = output.channel_mut(c);
            for (k, o) in out.iter_mut().enumerate() {
                let i = if input.channels() > 0 {
                    input.channel(c)[k]
                } else {
                    0.0
                };
                *o = i + self.value * (c + 1) as f32;
            }
        }
    }
}

/// A random DAG over `n` nodes: edges only go from a lower to a higher rank, and nodes are
/// added to the graph in a shuffled order so the ranks are not the insertion order.
fn dag() -> impl Strategy<Value = (Vec<usize>, Vec<(usize, usize)>)> {
    (2usize..40).prop_flat_map(|n| {
        let pairs: Vec<(usize, usize)> = (0..n)
            .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
            .collect();
        let m = pairs.len();
        (
            Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
            proptest::sample::subsequence(pairs, 0..=m.min(120)),
        )
    })
}

proptest! {
    #[test]
    fn random_dags_respect_every_edge_and_sum_exactly((ranks, edges) in dag()) {
        let n = ranks.len();
        // ranks[k] is the rank of the node inserted k-th.
        let mut insert_of_rank = vec![0; n];
        for (k, &r) in ranks.iter().enumerate() {
            insert_of_rank[r] = k;
        }
        let mut g = Graph::new();
        let mut has_input = vec![false; n];
        for &(_, b) in &edges {
            has_input[b] = true;
        }
        for (k, &r) in ranks.iter().enumerate() {
            g.add(format!("n{k}"), AddConst { value: (r + 1) as f32, inputs: if has_input[r] { 2 } else { 0 } });
        }
        for &(a, b) in &edges {
            g.connect(format!("n{}", insert_of_rank[a]), format!("n{}", insert_of_rank[b]));
        }
        let out = g.add("out", Output::new(2));
        // The top-ranked node feeds the output.
        g.connect(format!("n{}", insert_of_rank[n - 1]), out);
        g.set_output(out);
        let mut s = g.compile(CFG).unwrap();

        let mut pos = vec![0; s.len()];
        for (p, &orig) in s.order().iter().enumerate() {
            pos[orig] = p;
        }
        for &(a, b) in &edges {
            prop_assert!(pos[insert_of_rank[a]] < pos[insert_of_rank[b]]);
        }

        // By hand: value of node r = (r + 1) + sum of its predecessors' values.
        let mut value = vec![0.0f64; n];
        for r in 0..n {
            value[r] = (r + 1) as f64 + edges.iter().filter(|e| e.1 == r).map(|e| value[e.0]).sum::<f64>();
        }
        s.process(17);
        let expect = value[n - 1];
        for c in 0..2 {
            for &x in s.output().channel(c) {
                prop_assert_eq!(x as f64, expect * (c + 1) as f64);
            }
        }
    }
}

fn src(v: f32) -> AddConst {
    AddConst {
        value: v,
        inputs: 0,
    }
}

#[test]
fn fan_in_sums_every_input_and_direct_input_is_not_copied() {
    let mut g = Graph::new();
    let a = g.add("a", src(1.0));
    let b = g.add("b", src(10.0));
    let c = g.add("c", src(100.0));
    let bus = g.add("bus", Gain::new(2, 0.5));
    let out = g.add("out", Output::new(2));
    for x in [a, b, c] {
        g.connect(x, bus);
    }
    g.connect(bus, out);
    g.set_output(out);
    let mut s = g.compile(CFG).unwrap();
    for frames in [64, 1, 33] {
        s.process(frames);
        assert_eq!(s.output().channel(0), vec![55.5; frames].as_slice());
        assert_eq!(s.output().channel(1), vec![111.0; frames].as_slice());
    }
    assert_eq!(s.position(), 98);
}

fn two_gains() -> (Graph, downbeat_graph::NodeId, downbeat_graph::NodeId) {
    let mut g = Graph::new();
    let a = g.add("a", Gain::new(2, 1.0));
    let b = g.add("b", Gain::new(2, 1.0));
    (g, a, b)
}

#[test]
fn errors_name_the_nodes() {
    let (mut g, a, b) = two_gains();
    g.connect(a, b);
    g.connect(b, a);
    let out = g.add("out", Output::new(2));
    g.set_output(out);
    let e = g.compile(CFG).unwrap_err();
    assert!(matches!(e, GraphError::Cycle { .. }));
    let msg = e.to_string();
    assert!(msg.contains("`a`") && msg.contains("`b`"), "{msg}");

    let (mut g, a, _) = two_gains();
    g.connect(a, "bb");
    let out = g.add("out", Output::new(2));
    g.set_output(out);
    match g.compile(CFG).unwrap_err() {
        GraphError::UnknownNode { name, known, edge } => {
            assert_eq!((name.as_str(), edge), ("bb", 0));
            assert_eq!(known[0], "b", "closest name first");
        }
        e => panic!("{e}"),
    }

    let (mut g, a, _) = two_gains();
    let mono = g.add("mono", Output::new(1));
    g.connect(a, mono);
    g.set_output(mono);
    let e = g.compile(CFG).unwrap_err();
    assert_eq!(
        e,
        GraphError::ChannelMismatch {
            edge: 0,
            from: "a".into(),
            from_channels: 2,
            to: "mono".into(),
            to_channels: 1
        }
    );

    let (g, _, _) = two_gains();
    assert_eq!(g.compile(CFG).unwrap_err(), GraphError::MissingOutput);

    let (mut g, a, b) = two_gains();
    g.connect(a, b);
    g.connect(a, b);
    g.set_output(b);
    assert!(matches!(
        g.compile(CFG).unwrap_err(),
        GraphError::DuplicateEdge { edge: 1, .. }
    ));

    let (mut g, a, _) = two_gains();
    g.add("a", Gain::new(2, 1.0));
    g.set_output(a);
    assert_eq!(
        g.compile(CFG).unwrap_err(),
        GraphError::DuplicateName { name: "a".into() }
    );

    let (mut g, a, _) = two_gains();
    let s = g.add("s", src(1.0));
    g.connect(a, s);
    g.set_output(a);
    assert!(matches!(
        g.compile(CFG).unwrap_err(),
        GraphError::NoInputs { .. }
    ));

    let (mut g, a, _) = two_gains();
    let (mut other, _, _) = two_gains();
    let far = other.add("far", Gain::new(2, 1.0));
    g.connect(a, far);
    g.set_output(a);
    assert!(matches!(
        g.compile(CFG).unwrap_err(),
        GraphError::DanglingEdge { id: 2, .. }
    ));
}

#[test]
#[should_panic(expected = "outside 1..=64")]
fn oversized_block_is_refused() {
    let mut g = Graph::new();
    let out = g.add("out", Output::new(2));
    g.set_output(out);
    g.compile(CFG).unwrap().process(65);
}
