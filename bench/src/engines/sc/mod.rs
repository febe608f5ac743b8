//! The cases as SuperCollider non-real-time scores: SynthDefs and the commands that place
//! one synth per oscillator, voice or gain, written without `sclang`.
//!
//! Everything is added at the tail of the root node (or of its group), so synths run in
//! the order they are created: a source, then the stages that read and replace its bus.
//! `fanin` puts each branch in its own group inside one parallel group (`/p_new`), which
//! supernova spreads over its threads and scsynth runs as a plain group.

pub mod osc;
pub mod synthdef;

use super::cases::{self, Case, Kind};
use osc::{Arg, Message};
use synthdef::{Input, Rate, SynthDef, OP_ADD, OP_MUL};

/// `/s_new` add action: at the tail of the target group.
const TAIL: i32 = 1;
/// The root node every score builds under.
const ROOT: i32 = 0;
/// The parallel group of `fanin`.
const PAR_GROUP: i32 = 2;
/// First private audio bus: after the one output (scores run with `-i 0 -o 1`).
const FIRST_PRIVATE_BUS: i32 = 1;

fn c(v: f64) -> Input {
    Input::Const(v as f32)
}

/// `Out.ar(bus, sig)`.
fn out(d: &mut SynthDef, bus: Input, sig: Input) {
    d.ugen_n("Out", Rate::Audio, &[bus, sig], 0, 0);
}

fn sine_def() -> SynthDef {
    let mut d = SynthDef::new("sine");
    let p = d.controls(&[("freq", 440.0), ("amp", 0.1), ("bus", 0.0)]);
    let s = d.ugen("SinOsc", Rate::Audio, &[p[0], c(0.0)]);
    let m = d.binop(OP_MUL, s, p[1]);
    out(&mut d, p[2], m);
    d
}

/// Samples in a saw wavetable (`Osc` wants a power of two; the buffer holds twice as many
/// in SuperCollider's wavetable format).
const TABLE_SIZE: i32 = 4096;

/// Downbeat's synth voice: a band-limited saw from a wavetable with the harmonics Downbeat's
/// table for the note holds, read with linear interpolation as Downbeat does (`Osc`;
/// `Saw.ar` would do, but it swings ±0.5 and starts at another phase, which changes the
/// RMS of voices an octave apart by up to 18%), the same two-pole low-pass (RBJ's biquad is
/// the same bilinear transform of the same prototype as the synth's TPT state-variable
/// filter), the same ADSR (linear attack, decay and release curves of `ln(1e-3)`),
/// computed per sample (`EnvGen.ar`) as Downbeat does.
fn voice_def() -> SynthDef {
    let mut d = SynthDef::new("voice");
    let p = d.controls(&[
        ("freq", 440.0),
        ("cutoff", 5000.0),
        ("rq", 1.0),
        ("gain", 0.1),
        ("gate", 1.0),
        ("buf", 0.0),
    ]);
    let saw = d.ugen("Osc", Rate::Audio, &[p[5], p[0], c(0.0)]);
    let lp = d.ugen("BLowPass", Rate::Audio, &[saw, p[1], p[2]]);
    // EnvGen inputs: gate, levelScale, levelBias, timeScale, doneAction, then the envelope
    // (Env.adsr's layout): initial level, segments, release node, loop node (-99: none),
    // and per segment its end level, time, shape (1 linear, 5 curve) and curve.
    let curve = cases::CURVE.ln();
    let env_inputs = [
        p[4],
        c(1.0),
        c(0.0),
        c(1.0),
        c(0.0),
        c(0.0),
        c(3.0),
        c(2.0),
        c(-99.0),
        c(1.0),
        c(cases::ATTACK),
        c(1.0),
        c(0.0),
        c(cases::SUSTAIN),
        c(cases::DECAY),
        c(5.0),
        c(curve),
        c(0.0),
        c(cases::RELEASE),
        c(5.0),
        c(curve),
    ];
    let env = d.ugen("EnvGen", Rate::Audio, &env_inputs);
    let shaped = d.binop(OP_MUL, lp, env);
    let sig = d.binop(OP_MUL, shaped, p[3]);
    out(&mut d, c(0.0), sig);
    d
}

fn noise_def() -> SynthDef {
    let mut d = SynthDef::new("noise");
    let p = d.controls(&[("amp", 0.5), ("bus", 0.0)]);
    let n = d.ugen("WhiteNoise", Rate::Audio, &[]);
    let m = d.binop(OP_MUL, n, p[0]);
    out(&mut d, p[1], m);
    d
}

/// `ReplaceOut.ar(bus, In.ar(bus) * gain)`.
fn gain_def() -> SynthDef {
    let mut d = SynthDef::new("gain");
    let p = d.controls(&[("gain", 1.0), ("bus", 0.0)]);
    let i = d.ugen("In", Rate::Audio, &[p[1]]);
    let m = d.binop(OP_MUL, i, p[0]);
    d.ugen_n("ReplaceOut", Rate::Audio, &[p[1], m], 0, 0);
    d
}

/// `ReplaceOut.ar(bus, BLowPass.ar(In.ar(bus), freq, rq))`.
fn lowpass_def() -> SynthDef {
    let mut d = SynthDef::new("lowpass");
    let p = d.controls(&[("freq", 1000.0), ("rq", 1.0), ("bus", 0.0)]);
    let i = d.ugen("In", Rate::Audio, &[p[2]]);
    let f = d.ugen("BLowPass", Rate::Audio, &[i, p[0], p[1]]);
    d.ugen_n("ReplaceOut", Rate::Audio, &[p[2], f], 0, 0);
    d
}

/// Sums `width` private buses into the output.
fn mix_def(width: usize) -> SynthDef {
    let mut d = SynthDef::new("mix");
    let ins = d.ugen_n(
        "In",
        Rate::Audio,
        &[c(f64::from(FIRST_PRIVATE_BUS))],
        width,
        0,
    );
    let mut sum = ins[0];
    for i in &ins[1..] {
        sum = d.binop(OP_ADD, sum, *i);
    }
    out(&mut d, c(0.0), sum);
    d
}

/// Accumulates a score's commands at time 0.
struct Score {
    /// Buffers to fill before any synth starts.
    prelude: Vec<Message>,
    messages: Vec<Message>,
    next_id: i32,
}

impl Score {
    fn synth(&mut self, def: &str, target: i32, params: &[(&str, f64)]) {
        let mut args: Vec<Arg> = vec![def.into(), self.next_id.into(), TAIL.into(), target.into()];
        self.next_id += 1;
        for (name, v) in params {
            args.push((*name).into());
            args.push((*v as f32).into());
        }
        self.messages.push(Message::new("/s_new", args));
    }
}

/// The score rendering `case`: its SynthDefs, its nodes at time 0, and the end at
/// `case.seconds`.
pub fn score(case: &Case) -> Vec<u8> {
    let (setup, nodes) = commands(case);
    osc::score(&[
        (0.0, setup),
        (0.0, nodes),
        // The render ends at the last bundle's time.
        (
            case.seconds,
            vec![Message::new("/c_set", vec![0.into(), 0.into()])],
        ),
    ])
}

/// The commands that set `case` up (SynthDefs and buffers, asynchronous on a real-time
/// server) and those that start its nodes.
pub fn commands(case: &Case) -> (Vec<Message>, Vec<Message>) {
    let defs = match case.kind {
        Kind::Sines => vec![sine_def()],
        Kind::Voices => vec![voice_def()],
        Kind::Chain => vec![noise_def(), gain_def()],
        Kind::Fanin => vec![sine_def(), lowpass_def(), gain_def(), mix_def(case.n)],
    };
    let mut s = Score {
        prelude: Vec::new(),
        messages: Vec::new(),
        next_id: 1000,
    };
    match case.kind {
        Kind::Sines => {
            for i in 0..case.n {
                let (f, a) = cases::sine(i);
                s.synth("sine", ROOT, &[("freq", f), ("amp", a)]);
            }
        }
        Kind::Voices => {
            // One wavetable per harmonic count, numbered in order of first use.
            let mut tables: Vec<usize> = Vec::new();
            let table = |tables: &mut Vec<usize>, hz: f64| -> i32 {
                let h = cases::saw_harmonics(hz);
                let k = tables.iter().position(|&t| t == h).unwrap_or_else(|| {
                    tables.push(h);
                    tables.len() - 1
                });
                k as i32
            };
            for i in 0..case.n {
                table(&mut tables, cases::voice(i).hz());
            }
            for (k, &h) in tables.iter().enumerate() {
                s.prelude.push(Message::new(
                    "/b_alloc",
                    vec![(k as i32).into(), (TABLE_SIZE * 2).into(), 1.into()],
                ));
                // sine1 with flags 2 (wavetable format) + 4 (clear first), not normalised:
                // harmonic k at 2/(πk), alternating in sign (a rising ramp from -1 to 1).
                let mut args: Vec<Arg> = vec![(k as i32).into(), "sine1".into(), 6.into()];
                for n in 1..=h {
                    let sign = if n % 2 == 1 { 1.0 } else { -1.0 };
                    args.push(((sign * 2.0 / (std::f64::consts::PI * n as f64)) as f32).into());
                }
                s.prelude.push(Message::new("/b_gen", args));
            }
            for i in 0..case.n {
                let v = cases::voice(i);
                s.synth(
                    "voice",
                    ROOT,
                    &[
                        ("freq", v.hz()),
                        ("cutoff", v.cutoff()),
                        ("rq", 1.0 / cases::RESONANCE),
                        ("gain", v.gain()),
                        ("buf", f64::from(table(&mut tables, v.hz()))),
                    ],
                );
            }
        }
        Kind::Chain => {
            s.synth("noise", ROOT, &[("amp", cases::NOISE_AMP)]);
            for _ in 0..case.n {
                s.synth("gain", ROOT, &[("gain", cases::chain_gain(case.n))]);
            }
        }
        Kind::Fanin => {
            s.messages.push(Message::new(
                "/p_new",
                vec![PAR_GROUP.into(), TAIL.into(), ROOT.into()],
            ));
            for b in 0..case.n {
                let group = 100 + b as i32;
                s.messages.push(Message::new(
                    "/g_new",
                    vec![group.into(), TAIL.into(), PAR_GROUP.into()],
                ));
                let bus = f64::from(FIRST_PRIVATE_BUS + b as i32);
                let (f, a) = cases::branch(b);
                s.synth("sine", group, &[("freq", f), ("amp", a), ("bus", bus)]);
                for st in 0..cases::FANIN_DEPTH {
                    s.synth(
                        "lowpass",
                        group,
                        &[
                            ("freq", cases::FANIN_CUTOFF),
                            ("rq", 1.0 / cases::FANIN_Q),
                            ("bus", bus),
                        ],
                    );
                    s.synth(
                        "gain",
                        group,
                        &[("gain", cases::fanin_gain(st)), ("bus", bus)],
                    );
                }
            }
            s.synth("mix", ROOT, &[]);
        }
    }
    // One file per `/d_recv`: supernova reads only the first def of a file with several.
    let mut recv: Vec<Message> = defs
        .iter()
        .map(|d| {
            Message::new(
                "/d_recv",
                vec![Arg::Blob(synthdef::file(std::slice::from_ref(d)))],
            )
        })
        .collect();
    recv.append(&mut s.prelude);
    (recv, s.messages)
}
