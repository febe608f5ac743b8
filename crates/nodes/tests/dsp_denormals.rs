//! Every built-in node renders the same bits with subnormal numbers flushed to zero by the
//! processor (`FlushDenormals`: FTZ and DAZ on x86-64, FZ on AArch64) and without: the
//! mode only makes the audio thread faster, never changes what it plays. WebAssembly has no
//! such mode, so this is what lets a Web build render what a native build renders.
//!
//! Each node is driven through signals at every level a graph can carry (full scale, down
//! to the quietest value a node outputs, `dsp::denormal::TINY`), decays into silence, its
//! live parameters ramped to their extremes (gains to 0), and notes at loud and faint
//! velocities, in odd block sizes; once with the mode set and once with it clear.
#![cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
// Reference signals and measurements may use the platform's math; the engine may not.
#![allow(clippy::disallowed_methods)]

use downbeat_graph::denormal::TINY;
use downbeat_graph::time::{MusicalPosition, TempoMap};
use downbeat_graph::{
    AudioMut, AudioRef, Node, NodeConfig, NoteEvent, ParamCurve, ParamKind, ProcessContext, Shape,
};
use downbeat_nodes::node_types;
use downbeat_nodes::{Capture, Sample, SampleSet, Sampler, SamplerSettings};
use downbeat_rt::denormals::{is_flushing, FlushDenormals};

const CFG: NodeConfig = NodeConfig {
    sample_rate: 48000,
    max_block: 512,
};

/// Seconds rendered per node and mode.
const SECONDS: usize = 8;

/// Input level in each second: loud, then quieter and quieter stretches (each a decay to
/// silence), so feedback states and FFT frames pass through every magnitude; loud again
/// while gains go to -740 dB.
const LEVELS: [f32; SECONDS] = [1.0, 1e-6, 1e-18, 1e-27, 2e-30, 1.0, 0.5, 1e-3];

/// Input sample `n` of channel `c`: a rough tone (odd harmonics, a different one per
/// channel) at the level of its second, decaying exponentially within each half second
/// and flushed below [`TINY`], the quietest value a built-in node outputs.
fn input_sample(n: usize, c: usize) -> f32 {
    let second = n / CFG.sample_rate as usize;
    let level = LEVELS[second.min(SECONDS - 1)];
    let within = n % (CFG.sample_rate as usize / 2);
    // Half of each half second decays (by 2^-1 every 60 frames: to 2^-200 of the level),
    // the rest is silence.
    let decay = if within < 12_000 {
        (-(within as f64) / 60.0).exp2()
    } else {
        0.0
    };
    let phase = (n * (7 + 2 * c)) % 97;
    let tone = phase as f64 / 97.0 - 0.5;
    let x = (tone * decay * f64::from(level)) as f32;
    if x.abs() < TINY {
        0.0
    } else {
        x
    }
}

/// Notes every 1500 frames, velocities from full down to the faintest MIDI one.
fn play_notes(node: &mut dyn Node, frames: usize) {
    for (k, at) in (100..frames.saturating_sub(2000)).step_by(1500).enumerate() {
        let note = 40.0 + (k * 5 % 36) as f32;
        let velocity = [1.0, 0.5, 1.0 / 127.0][k % 3];
        node.note(
            at,
            NoteEvent::On {
                channel: 0,
                note,
                velocity,
            },
        )
        .unwrap();
        node.note(at + 700, NoteEvent::Off { channel: 0, note })
            .unwrap();
    }
}

/// A live parameter moving: from `from` at frame `start` to `to` over [`RAMP`] frames.
struct Ramp {
    index: usize,
    shape: Shape,
    from: f32,
    to: f32,
    start: usize,
}

/// Frames a parameter ramp lasts.
const RAMP: usize = 9000;

impl Ramp {
    /// The value at `frame` (the closed form of the schedule's ramps).
    fn at(&self, frame: usize) -> f32 {
        let t = ((frame - self.start) as f64 / RAMP as f64).min(1.0);
        let (a, b) = (f64::from(self.from), f64::from(self.to));
        let v = match self.shape {
            Shape::Linear => a + (b - a) * t,
            Shape::Exponential => a * (b / a).powf(t),
        };
        v as f32
    }
}

/// Every live parameter ramps to its minimum at 3 s (a gain to 0 passes through every small
/// value), exponentially to 1e-37 (-740 dB) where the minimum is 0 at 5 s, and to the maximum (or 4
/// times the minimum) at 6 s.
fn ramps_at(node: &dyn Node, second: usize, frame: usize) -> Vec<Ramp> {
    let mut ramps = Vec::new();
    for (i, spec) in node.params().iter().enumerate() {
        let ParamKind::Float { min, max, .. } = spec.kind else {
            continue;
        };
        if spec.name == "freq" {
            // A frequency at its minimum, 0, stops the oscillator: nothing to test.
            continue;
        }
        let mut from = node.get_param(i).unwrap_or(0.0);
        let (shape, to) = match second {
            3 => (Shape::Linear, min),
            5 if min == 0.0 => {
                // From 0 (where the first ramp left it) an exponential ramp cannot start.
                from = from.max(max.min(1.0) as f32);
                (Shape::Exponential, 1e-37)
            }
            6 => (Shape::Linear, max.min(4.0 * min.abs().max(1.0))),
            _ => continue,
        };
        if spec.live {
            ramps.push(Ramp {
                index: i,
                shape,
                from,
                to: to as f32,
                start: frame,
            });
        }
    }
    ramps
}

/// Hands each ramp's stretch over the block at `frame` to the node, as the schedule does,
/// and sets the target once it is reached. A frequency too close to half the sample rate
/// is refused: that is fine here.
fn follow(node: &mut dyn Node, ramps: &mut Vec<Ramp>, frame: usize, frames: usize) {
    for r in ramps.iter() {
        let curve = ParamCurve::ramp(r.shape, r.at(frame), r.at(frame + frames), frames as u64);
        let _ = node.follow_param(r.index, curve);
    }
    ramps.retain(|r| {
        let done = frame + frames >= r.start + RAMP;
        if done {
            let _ = node.set_param(r.index, r.to);
        }
        !done
    });
}

/// Renders `node` for [`SECONDS`] in blocks of odd sizes, with the processor's flush mode
/// set or clear around every `process` call, and returns the output's bits.
fn render(mut node: Box<dyn Node>, flush: bool) -> Vec<u32> {
    let frames = SECONDS * CFG.sample_rate as usize;
    if node.plays_notes() {
        play_notes(node.as_mut(), frames);
    }
    let (ic, oc, stride) = (node.input_channels(), node.output_channels(), CFG.max_block);
    let mut input = vec![0.0f32; ic * stride];
    let mut output = vec![0.0f32; oc * stride];
    let mut bits = Vec::with_capacity(frames * oc);
    let mut position = 0;
    let mut second = 0;
    let mut ramps = Vec::new();
    let song = TempoMap::constant(120.0, CFG.sample_rate).unwrap();
    for &block in [509usize, 1, 64, 512, 37, 200].iter().cycle() {
        if position >= frames {
            break;
        }
        let n = block.min(frames - position);
        let now = position / CFG.sample_rate as usize;
        if now != second {
            second = now;
            ramps = ramps_at(node.as_ref(), second, position);
        }
        follow(node.as_mut(), &mut ramps, position, n);
        for c in 0..ic {
            for k in 0..n {
                input[c * stride + k] = input_sample(position + k, c);
            }
        }
        let mut ctx = ProcessContext::new(CFG.sample_rate, n, position as u64);
        // A song playing at 120 bpm, for the nodes that follow it (the metronome).
        ctx.musical = MusicalPosition::of(&song, position as u64, true, None);
        {
            let _mode = flush.then(FlushDenormals::new);
            assert_eq!(is_flushing(), flush, "the flush mode could not be set");
            node.process(
                &ctx,
                AudioRef::new(&input, ic, stride, n),
                AudioMut::new(&mut output, oc, stride, n),
            );
        }
        for c in 0..oc {
            bits.extend(
                output[c * stride..c * stride + n]
                    .iter()
                    .map(|s| s.to_bits()),
            );
        }
        position += n;
    }
    bits
}

/// Checks that `build` renders the same bits in both modes, and something audible; says how
/// not.
fn mode_independent(name: &str, build: impl Fn() -> Box<dyn Node>) -> Result<(), String> {
    let flushed = render(build(), true);
    let kept = render(build(), false);
    assert_eq!(flushed.len(), kept.len());
    if !flushed.iter().any(|&b| f32::from_bits(b).abs() > 1e-3) {
        return Err(format!("`{name}` rendered nothing audible"));
    }
    match flushed.iter().zip(&kept).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(i) => Err(format!(
            "`{name}` depends on the flush mode: output value {i} is {:e} with subnormals \
             flushed, {:e} without ({} values differ)",
            f32::from_bits(flushed[i]),
            f32::from_bits(kept[i]),
            flushed.iter().zip(&kept).filter(|(a, b)| a != b).count()
        )),
    }
}

/// Every node type of the registry, with its default parameters (an `input` node reads a
/// capture holding the test signal).
#[test]
fn every_node_type_renders_the_same_bits_with_and_without_flushing() {
    let failures: Vec<String> = node_types()
        .iter()
        .filter_map(|ty| {
            mode_independent(ty.name, || {
                let capture = Capture::new(2, CFG.max_block);
                let signal: Vec<f32> = (0..2 * CFG.max_block)
                    .map(|k| input_sample(k / 2 + 300, k % 2))
                    .collect();
                capture.write_interleaved(&signal);
                capture
                    .connect(|| ty.instantiate(Vec::new(), &CFG))
                    .unwrap_or_else(|e| panic!("building `{}`: {e}", ty.name))
            })
            .err()
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The sampler, which the registry does not hold (its project-file type lives in
/// `downbeat-file`), playing a sample with a long quiet tail.
#[test]
fn the_sampler_renders_the_same_bits_with_and_without_flushing() {
    let tail: Vec<f32> = (0..24_000).map(|n| input_sample(n, 0)).collect();
    let result = mode_independent("sampler", || {
        let sample = Sample::from_interleaved(&tail, 1, 44_100).unwrap();
        let set = SampleSet::keyboard(sample, 60.0).unwrap();
        Box::new(Sampler::new(2, CFG.sample_rate, set, &SamplerSettings::default()).unwrap())
    });
    assert_eq!(result, Ok(()));
}
