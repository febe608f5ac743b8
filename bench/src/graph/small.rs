//! The small-nodes case (issue 28, "many small nodes"): the engines suite's `sines` (1000
//! sine oscillators into the output) and `fanin` (32 branches of a sine through 8 low-pass
//! and gain stages) as graphs in this process, 48 kHz / 64 frames, each node taking tens to
//! a few hundred nanoseconds: where handing out one node at a time costs more than the
//! nodes. Unpaced, serial against Downbeat's pool, in alternating order.

use downbeat::nodes::{Biquad, BiquadSettings, FilterMode, Gain, Output, Sine, SineSettings};
use downbeat_graph::{CompileConfig, Graph, Schedule};

pub const SAMPLE_RATE: u32 = 48_000;
pub const BLOCK: usize = 64;

/// The graphs of the case, by name.
pub const SHAPES: [&str; 2] = ["sines", "fanin"];

/// `sines`: `n` sines summed by the output. `fanin`: `n` branches, each a sine through 8
/// stages of a low-pass and a gain, summed by the output.
pub fn schedule(shape: &str) -> Schedule {
    let sr = SAMPLE_RATE;
    let mut g = Graph::new();
    let out = g.add("out", Output::new(1));
    if shape == "sines" {
        for i in 0..1000 {
            let s = g.add(
                format!("s{i}"),
                Sine::new(
                    1,
                    sr,
                    &SineSettings {
                        freq: 50.0 + 17.0 * i as f64,
                        amp: 0.001,
                        ..SineSettings::default()
                    },
                ),
            );
            g.connect(s, out);
        }
    } else {
        for b in 0..32 {
            let mut prev = g.add(
                format!("b{b}"),
                Sine::new(
                    1,
                    sr,
                    &SineSettings {
                        freq: 200.0 + 37.0 * b as f64,
                        amp: 0.02,
                        ..SineSettings::default()
                    },
                ),
            );
            for s in 0..8 {
                let lp = Biquad::new(
                    1,
                    sr,
                    &BiquadSettings {
                        mode: FilterMode::Lowpass,
                        freq: 2000.0,
                        q: 0.707,
                    },
                )
                .expect("a valid low-pass");
                let lp = g.add(format!("b{b}_lp{s}"), lp);
                let gain = g.add(
                    format!("b{b}_g{s}"),
                    Gain::new(1, if s % 2 == 0 { 2.0 } else { 0.5 }),
                );
                g.connect(prev, lp);
                g.connect(lp, gain);
                prev = gain;
            }
            g.connect(prev, out);
        }
    }
    g.set_output(out);
    g.compile(CompileConfig {
        sample_rate: sr,
        max_block: BLOCK,
    })
    .expect("the small-nodes graphs compile")
}
