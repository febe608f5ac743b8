//! The floor of a case (issue 43): the case's output computed by one hand-written loop with
//! the same algorithm as Downbeat's nodes and no engine at all, no graph, no schedule, no
//! buffers between nodes, no file. Downbeat's steady state over its floor's is what the
//! engine itself costs.
//!
//! `sines`: every oscillator is Downbeat's own kernel ([`SineFill`], the phase a 32-bit
//! fraction, the polynomial sine, the denormal flush), filled a block at a time and added
//! into the block in the order the project's edges give, as the output node sums them.
//!
//! `chain`: Downbeat's `noise` node makes a block, and the block goes through the `n` gains
//! one after the other (a multiply and the denormal flush per sample, as the `gain` node
//! does), in place.
//!
//! `voices`: Downbeat's `synth` node itself, given the notes the MIDI file holds at its
//! first frame, renders block after block into the output.
//!
//! `fanin`: each branch's sine (the kernel above) goes through its low-pass filters
//! (Downbeat's `biquad` node, processing a block at a time) and its gains, and the branches
//! are added in their order, as the output node sums them.

use std::time::Instant;

use downbeat_rt::clock::thread_cpu_time;

use downbeat_graph::denormal::flush;
use downbeat_graph::{AudioMut, AudioRef, Node, NoteEvent, ProcessContext};
use downbeat_nodes::dsp::{hz_to_phase_inc, SineFill};
use downbeat_nodes::{
    Biquad, BiquadSettings, FilterMode, Noise, NoiseSettings, Synth, SynthSettings, Wave,
};

use super::cases::{self, Case, Kind, BLOCK, SAMPLE_RATE};
use super::child::Cost;

/// Renders `case` on this thread and returns what it cost this thread and its output.
pub fn render(case: &Case) -> (Cost, Vec<f32>) {
    match case.kind {
        Kind::Sines => timed(|| sines(case)),
        Kind::Chain => timed(|| chain(case)),
        Kind::Fanin => timed(|| fanin(case)),
        Kind::Voices => timed(|| voices(case)),
    }
}

fn voices(case: &Case) -> Vec<f32> {
    let settings = SynthSettings {
        voices: case.n,
        wave: Wave::Saw,
        attack: cases::ATTACK,
        decay: cases::DECAY,
        sustain: cases::SUSTAIN,
        release: cases::RELEASE,
        cutoff: cases::CUTOFF,
        resonance: cases::RESONANCE,
        key_track: cases::KEY_TRACK,
        vel_track: cases::VEL_TRACK,
        amp: cases::VOICE_AMP as f32,
        ..SynthSettings::default()
    };
    let mut synth = Synth::new(1, SAMPLE_RATE, &settings).expect("the case's synth is valid");
    for i in 0..case.n {
        let v = cases::voice(i);
        // As the engine reads the MIDI file's note ons: velocity over 127.
        let on = NoteEvent::On {
            channel: v.channel,
            note: f32::from(v.note),
            velocity: f32::from(v.velocity) / 127.0,
        };
        synth.note(0, on).expect("the case's notes are valid");
    }
    let ctx = context();
    in_blocks(case, |chunk| {
        synth.process(
            &ctx,
            no_input(),
            AudioMut::new(chunk, 1, BLOCK_LEN, BLOCK_LEN),
        );
    })
}

/// One branch of `fanin`: its sine, and its filter and gain per stage.
struct Branch {
    osc: SineFill,
    amp: f32,
    stages: Vec<(Biquad, f32)>,
}

fn fanin(case: &Case) -> Vec<f32> {
    let lowpass = BiquadSettings {
        mode: FilterMode::Lowpass,
        freq: cases::FANIN_CUTOFF,
        q: cases::FANIN_Q,
    };
    let mut branches: Vec<Branch> = (0..case.n)
        .map(|b| {
            let (osc, amp) = oscillator(cases::branch(b));
            Branch {
                osc,
                amp,
                stages: (0..cases::FANIN_DEPTH)
                    .map(|s| {
                        (
                            Biquad::new(1, SAMPLE_RATE, &lowpass)
                                .expect("the case's filter is valid"),
                            cases::fanin_gain(s) as f32,
                        )
                    })
                    .collect(),
            }
        })
        .collect();
    let ctx = context();
    let (mut a, mut b) = ([0.0f32; BLOCK_LEN], [0.0f32; BLOCK_LEN]);
    in_blocks(case, |sum| {
        for branch in &mut branches {
            branch.osc.fill(&mut a, branch.amp);
            for (filter, gain) in &mut branch.stages {
                filter.process(
                    &ctx,
                    AudioRef::new(&a, 1, BLOCK_LEN, BLOCK_LEN),
                    AudioMut::new(&mut b, 1, BLOCK_LEN, BLOCK_LEN),
                );
                for (x, &y) in a.iter_mut().zip(&b) {
                    *x = flush(*gain * y);
                }
            }
            for (s, x) in sum.iter_mut().zip(&a) {
                *s += x;
            }
        }
    })
}

fn chain(case: &Case) -> Vec<f32> {
    let settings = NoiseSettings {
        amp: cases::NOISE_AMP as f32,
        ..NoiseSettings::default()
    };
    let mut noise = Noise::new(1, &settings);
    let gain = cases::chain_gain(case.n) as f32;
    let ctx = context();
    in_blocks(case, |chunk| {
        noise.process(
            &ctx,
            no_input(),
            AudioMut::new(chunk, 1, BLOCK_LEN, BLOCK_LEN),
        );
        // A gain at a time over the block: the samples are independent, so each pass
        // vectorises, where a sample through all the gains in a row would wait on every
        // multiply before the next.
        for _ in 0..case.n {
            for x in chunk.iter_mut() {
                *x = flush(gain * *x);
            }
        }
    })
}

fn sines(case: &Case) -> Vec<f32> {
    let mut oscillators: Vec<(SineFill, f32)> =
        (0..case.n).map(|i| oscillator(cases::sine(i))).collect();
    let (mut one, mut group) = ([0.0f32; BLOCK_LEN], [0.0f32; BLOCK_LEN]);
    // Added up as the schedule adds a wide sum: in groups, then the groups' sums.
    let groups: Vec<_> = downbeat_graph::sum_groups(case.n).collect();
    in_blocks(case, |sum| {
        for range in &groups {
            group.fill(0.0);
            for (osc, amp) in &mut oscillators[range.clone()] {
                osc.fill(&mut one, *amp);
                for (s, x) in group.iter_mut().zip(&one) {
                    *s += x;
                }
            }
            for (s, x) in sum.iter_mut().zip(&group) {
                *s += x;
            }
        }
    })
}

/// Frames in a block.
const BLOCK_LEN: usize = BLOCK as usize;

/// The output of `case`, written a block at a time by `block`.
fn in_blocks(case: &Case, mut block: impl FnMut(&mut [f32])) -> Vec<f32> {
    let mut out = vec![0.0f32; case.frames().div_ceil(BLOCK_LEN) * BLOCK_LEN];
    out.chunks_exact_mut(BLOCK_LEN).for_each(&mut block);
    out.truncate(case.frames());
    out
}

/// The context every node of a floor processes in.
fn context() -> ProcessContext {
    ProcessContext::new(SAMPLE_RATE, BLOCK_LEN, 0)
}

/// No input, for the nodes that make sound.
fn no_input() -> AudioRef<'static> {
    AudioRef::new(&[], 0, BLOCK_LEN, BLOCK_LEN)
}

/// Downbeat's sine kernel at `hz` from phase 0, with its amplitude as the node holds it.
fn oscillator((hz, amp): (f64, f64)) -> (SineFill, f32) {
    let inc = hz_to_phase_inc(hz, f64::from(SAMPLE_RATE));
    (SineFill { phase: 0, inc }, amp as f32)
}

/// Runs `work` and returns the CPU time this thread spent in it (the thread's clock, as
/// `wait4` gives the engines' processes theirs) and the wall-clock time.
fn timed(work: impl FnOnce() -> Vec<f32>) -> (Cost, Vec<f32>) {
    let (c0, w0) = (thread_cpu_time(), Instant::now());
    let out = work();
    let cost = Cost {
        cpu: thread_cpu_time() - c0,
        wall: w0.elapsed(),
    };
    (cost, out)
}
