//! The uneven case: many light nodes and one chain of heavy ones, the chain added last, so
//! that a scheduler taking sources in topological order starts the critical path after the
//! light work instead of beside it.

use downbeat::nodes::{Mix, MixSettings, Output};
use downbeat_graph::{AudioMut, AudioRef, CompileConfig, Graph, Node, ProcessContext, Schedule};

/// Light nodes (sources, each straight into the mix).
pub const LIGHT: usize = 96;
/// Heavy nodes, in one chain into the mix.
pub const HEAVY: usize = 4;
/// Dependent multiply-adds per frame of a light node, and of a heavy one.
const LIGHT_WORK: usize = 40;
const HEAVY_WORK: usize = 1_100;
pub const SAMPLE_RATE: u32 = 48_000;
pub const BLOCK: usize = 256;

/// A node that spends a fixed amount of arithmetic per frame: a damped recursion over the
/// input, `work` steps deep, so its time is steady and its output deterministic.
struct Burn {
    work: usize,
    state: f32,
}

impl Node for Burn {
    fn input_channels(&self) -> usize {
        1
    }
    fn output_channels(&self) -> usize {
        1
    }
    fn process(&mut self, _: &ProcessContext, input: AudioRef<'_>, mut output: AudioMut<'_>) {
        let out = output.channel_mut(0);
        for (o, &x) in out.iter_mut().zip(input.channel(0)) {
            let mut y = self.state;
            for _ in 0..self.work {
                y = y * 0.999_9 + x * 1e-4;
            }
            self.state = y;
            *o = y + 1e-3;
        }
    }
}

/// The graph: [`LIGHT`] light sources and a chain of [`HEAVY`] heavy nodes, all into one
/// mix and the output.
pub fn schedule() -> Schedule {
    let mut g = Graph::new();
    let mix = g.add(
        "mix",
        Mix::new(
            1,
            &MixSettings {
                gain_db: 0.0,
                ..MixSettings::default()
            },
        ),
    );
    for i in 0..LIGHT {
        let id = g.add(
            format!("light{i}"),
            Burn {
                work: LIGHT_WORK,
                state: i as f32 * 1e-3,
            },
        );
        g.connect(id, mix);
    }
    let mut prev = None;
    for i in 0..HEAVY {
        let id = g.add(
            format!("heavy{i}"),
            Burn {
                work: HEAVY_WORK,
                state: 0.5,
            },
        );
        if let Some(p) = prev {
            g.connect(p, id);
        }
        prev = Some(id);
    }
    g.connect(prev.unwrap(), mix);
    let out = g.add("out", Output::new(1));
    g.connect(mix, out);
    g.set_output(out);
    g.compile(CompileConfig {
        sample_rate: SAMPLE_RATE,
        max_block: BLOCK,
    })
    .unwrap()
}
