//! The guide's first graph (docs/guide/src/start/rust.md): build a graph, compile it, process one block.

use downbeat::graph::{CompileConfig, Graph};
use downbeat::nodes::{Biquad, BiquadSettings, FilterMode, Gain, Output, Sine, SineSettings};

fn main() {
    let sr = 48_000;
    let mut g = Graph::new();
    let osc = g.add(
        "osc",
        Sine::new(
            2,
            sr,
            &SineSettings {
                freq: 220.0,
                amp: 0.5,
                ..SineSettings::default()
            },
        ),
    );
    let lp = g.add(
        "lp",
        Biquad::new(
            2,
            sr,
            &BiquadSettings {
                mode: FilterMode::Lowpass,
                freq: 800.0,
                q: 0.707,
            },
        )
        .unwrap(),
    );
    let amp = g.add("amp", Gain::new(2, 0.8));
    let out = g.add("out", Output::new(2));
    g.connect(osc, lp);
    g.connect(lp, amp);
    g.connect(amp, out);
    g.set_output(out);

    // Off the audio thread: check the graph and allocate every buffer.
    let mut schedule = g
        .compile(CompileConfig {
            sample_rate: sr,
            max_block: 256,
        })
        .unwrap();
    // On the audio thread: one call per block, no allocation.
    schedule.process(256);
    println!("first sample: {}", schedule.output().channel(0)[0]);
}
