//! `Schedule::save_states`: every node with a state is asked for it after a run, by name,
//! and a node that fails is reported, not dropped.

use downbeat_graph::{
    AudioMut, AudioRef, CompileConfig, Graph, Node, NodeState, ProcessContext, StateError,
};
use downbeat_nodes::{Output, Sine, SineSettings};

/// Counts its blocks and saves the count; or, as `Broken`, refuses to save.
struct Counter {
    blocks: u32,
    broken: bool,
}

impl Node for Counter {
    fn input_channels(&self) -> usize {
        1
    }
    fn output_channels(&self) -> usize {
        1
    }
    fn process(&mut self, _: &ProcessContext, input: AudioRef<'_>, mut out: AudioMut<'_>) {
        out.channel_mut(0).copy_from_slice(input.channel(0));
        self.blocks += 1;
    }
    fn save_state(&mut self) -> Result<Option<NodeState>, StateError> {
        if self.broken {
            return Err(StateError::new("refused"));
        }
        Ok(Some(NodeState {
            bytes: self.blocks.to_le_bytes().to_vec(),
            extension: "count",
        }))
    }
}

#[test]
fn states_come_back_by_name_with_failures_reported() {
    let mut g = Graph::new();
    let sine = g.add(
        "sine",
        Sine::new(
            1,
            48_000,
            &SineSettings {
                freq: 440.0,
                amp: 0.5,
                ..SineSettings::default()
            },
        ),
    );
    let a = g.add(
        "a",
        Counter {
            blocks: 0,
            broken: false,
        },
    );
    let b = g.add(
        "b",
        Counter {
            blocks: 0,
            broken: true,
        },
    );
    let out = g.add("out", Output::new(1));
    g.connect(sine, a);
    g.connect(a, b);
    g.connect(b, out);
    g.set_output(out);
    let cfg = CompileConfig {
        sample_rate: 48_000,
        max_block: 64,
    };
    let mut schedule = g.compile(cfg).unwrap();
    for _ in 0..3 {
        schedule.process(64);
    }
    let states = schedule.save_states();
    assert_eq!(states.len(), 2, "the sine and the output have no state");
    assert_eq!(states[0].0, "a");
    let saved = states[0].1.as_ref().unwrap();
    assert_eq!(
        saved.bytes,
        3u32.to_le_bytes(),
        "the state after three blocks"
    );
    assert_eq!(saved.extension, "count");
    assert_eq!(states[1].0, "b");
    assert_eq!(states[1].1, Err(StateError::new("refused")));
}
