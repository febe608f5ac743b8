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

use std::time::{Duration, Instant};

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
    let block = BLOCK as usize;
    let ctx = ProcessContext::new(SAMPLE_RATE, block, 0);
    let mut out = vec![0.0f32; case.frames().div_ceil(block) * block];
    for chunk in out.chunks_exact_mut(block) {
        synth.process(
            &ctx,
            AudioRef::new(&[], 0, block, block),
            AudioMut::new(chunk, 1, block, block),
        );
    }
    out.truncate(case.frames());
    out
}

/// One branch of `fanin`: its sine, and its filter and gain per stage.
struct Branch {
    osc: SineFill,
    amp: f32,
    stages: Vec<(Biquad, f32)>,
}

fn fanin(case: &Case) -> Vec<f32> {
    let rate = f64::from(SAMPLE_RATE);
    let lowpass = BiquadSettings {
        mode: FilterMode::Lowpass,
        freq: cases::FANIN_CUTOFF,
        q: cases::FANIN_Q,
    };
    let mut branches: Vec<Branch> = (0..case.n)
        .map(|b| {
            let (hz, amp) = cases::branch(b);
            Branch {
                osc: SineFill {
                    phase: 0,
                    inc: hz_to_phase_inc(hz, rate),
                },
                amp: amp as f32,
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
    let block = BLOCK as usize;
    let ctx = ProcessContext::new(SAMPLE_RATE, block, 0);
    let mut out = vec![0.0f32; case.frames().div_ceil(block) * block];
    let (mut a, mut b) = (vec![0.0f32; block], vec![0.0f32; block]);
    for sum in out.chunks_exact_mut(block) {
        for branch in &mut branches {
            branch.osc.fill(&mut a, branch.amp);
            for (filter, gain) in &mut branch.stages {
                filter.process(
                    &ctx,
                    AudioRef::new(&a, 1, block, block),
                    AudioMut::new(&mut b, 1, block, block),
                );
                for (x, &y) in a.iter_mut().zip(&b) {
                    *x = flush(*gain * y);
                }
            }
            for (s, x) in sum.iter_mut().zip(&a) {
                *s += x;
            }
        }
    }
    out.truncate(case.frames());
    out
}

fn chain(case: &Case) -> Vec<f32> {
    let settings = NoiseSettings {
        amp: cases::NOISE_AMP as f32,
        ..NoiseSettings::default()
    };
    let mut noise = Noise::new(1, &settings);
    let gain = cases::chain_gain(case.n) as f32;
    let block = BLOCK as usize;
    let ctx = ProcessContext::new(SAMPLE_RATE, block, 0);
    let mut out = vec![0.0f32; case.frames().div_ceil(block) * block];
    for chunk in out.chunks_exact_mut(block) {
        noise.process(
            &ctx,
            AudioRef::new(&[], 0, block, block),
            AudioMut::new(chunk, 1, block, block),
        );
        // A gain at a time over the block: the samples are independent, so each pass
        // vectorises, where a sample through all the gains in a row would wait on every
        // multiply before the next.
        for _ in 0..case.n {
            for x in chunk.iter_mut() {
                *x = flush(gain * *x);
            }
        }
    }
    out.truncate(case.frames());
    out
}

fn sines(case: &Case) -> Vec<f32> {
    let rate = f64::from(SAMPLE_RATE);
    let mut oscillators: Vec<(SineFill, f32)> = (0..case.n)
        .map(|i| {
            let (hz, amp) = cases::sine(i);
            let osc = SineFill {
                phase: 0,
                inc: hz_to_phase_inc(hz, rate),
            };
            (osc, amp as f32)
        })
        .collect();
    let block = BLOCK as usize;
    let mut out = vec![0.0f32; case.frames().div_ceil(block) * block];
    let mut one = vec![0.0f32; block];
    for sum in out.chunks_exact_mut(block) {
        for (osc, amp) in &mut oscillators {
            osc.fill(&mut one, *amp);
            for (s, x) in sum.iter_mut().zip(&one) {
                *s += x;
            }
        }
    }
    out.truncate(case.frames());
    out
}

/// Runs `work` and returns the CPU time this thread spent in it (the thread's clock, as
/// `wait4` gives the engines' processes theirs) and the wall-clock time.
fn timed(work: impl FnOnce() -> Vec<f32>) -> (Cost, Vec<f32>) {
    let cpu = || {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `t` is a valid timespec for the call to fill.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    };
    let (c0, w0) = (cpu(), Instant::now());
    let out = work();
    let cost = Cost {
        cpu: cpu() - c0,
        wall: w0.elapsed(),
    };
    (cost, out)
}
