//! The cases for node-web-audio-api: a JSON description that `bench/engines/render.mjs`
//! builds into an `OfflineAudioContext` graph.

use serde_json::{json, Value};

use super::cases::{self, Case, Kind, SAMPLE_RATE};

/// The description of `case` (the script's input).
pub fn description(case: &Case) -> Value {
    let body = match case.kind {
        Kind::Sines => json!({
            "sines": (0..case.n).map(cases::sine).collect::<Vec<_>>(),
        }),
        Kind::Voices => {
            let goal = |from: f64, to: f64| from + (to - from) / (1.0 - cases::CURVE);
            json!({
                "voices": (0..case.n).map(|i| {
                    let v = cases::voice(i);
                    json!({"freq": v.hz(), "cutoff": v.cutoff(), "gain": v.gain()})
                }).collect::<Vec<_>>(),
                // Web Audio's low-pass Q is in decibels (the RBJ biquad's resonance).
                "q_db": 20.0 * cases::RESONANCE.log10(),
                "attack": cases::ATTACK,
                // The decay as setTargetAtTime: towards the goal past the sustain level with
                // the time constant that reaches the sustain level after `decay`.
                "decay_goal": goal(1.0, cases::SUSTAIN),
                "decay_tau": cases::DECAY / (1.0 / cases::CURVE).ln(),
            })
        }
        Kind::Chain => json!({
            "noise_amp": cases::NOISE_AMP,
            "gains": vec![cases::chain_gain(case.n); case.n],
        }),
        Kind::Fanin => json!({
            "branches": (0..case.n).map(cases::branch).collect::<Vec<_>>(),
            "stages": (0..cases::FANIN_DEPTH).map(cases::fanin_gain).collect::<Vec<_>>(),
            "cutoff": cases::FANIN_CUTOFF,
            "q_db": 20.0 * cases::FANIN_Q.log10(),
        }),
    };
    json!({
        "case": case.kind.name(),
        "sample_rate": SAMPLE_RATE,
        "frames": case.frames(),
        "graph": body,
    })
}
