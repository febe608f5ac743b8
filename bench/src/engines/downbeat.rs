//! The cases as Downbeat project files (and, for `voices`, a MIDI file of the notes).

use std::fmt::Write as _;

use super::cases::{self, Case, Kind, BLOCK, SAMPLE_RATE};

/// The project file for `case`.
pub fn project(case: &Case) -> String {
    let mut p = format!(
        "# downbeat-bench engines: {} (n = {})\nsample_rate = {SAMPLE_RATE}\nblock_size = {BLOCK}\n",
        case.kind.name(),
        case.n
    );
    let mut edges: Vec<String> = Vec::new();
    let mut nodes = String::new();
    let mut node = |name: &str, body: &str| {
        let _ = write!(nodes, "\n[nodes.{name}]\nchannels = 1\n{body}");
    };
    match case.kind {
        Kind::Sines => {
            for i in 0..case.n {
                let (f, a) = cases::sine(i);
                node(
                    &format!("s{i}"),
                    &format!("type = \"sine\"\nfreq = {f:?}\namp = {a:?}\n"),
                );
                edges.push(format!("s{i} -> out"));
            }
        }
        Kind::Voices => {
            node(
                "keys",
                &format!(
                    "type = \"synth\"\nwave = \"saw\"\nvoices = {}\nattack = {:?}\ndecay = {:?}\n\
                     sustain = {:?}\nrelease = {:?}\ncutoff = {:?}\nresonance = {:?}\n\
                     key_track = {:?}\nvel_track = {:?}\namp = {:?}\n",
                    case.n,
                    cases::ATTACK,
                    cases::DECAY,
                    cases::SUSTAIN,
                    cases::RELEASE,
                    cases::CUTOFF,
                    cases::RESONANCE,
                    cases::KEY_TRACK,
                    cases::VEL_TRACK,
                    cases::VOICE_AMP
                ),
            );
            edges.push("keys -> out".into());
        }
        Kind::Chain => {
            node(
                "noise",
                &format!("type = \"noise\"\namp = {:?}\n", cases::NOISE_AMP),
            );
            let mut prev = "noise".to_owned();
            for i in 0..case.n {
                let name = format!("g{i}");
                node(
                    &name,
                    &format!("type = \"gain\"\ngain = {:?}\n", cases::chain_gain(case.n)),
                );
                edges.push(format!("{prev} -> {name}"));
                prev = name;
            }
            edges.push(format!("{prev} -> out"));
        }
        Kind::Fanin => {
            for b in 0..case.n {
                let (f, a) = cases::branch(b);
                let mut prev = format!("b{b}");
                node(
                    &prev,
                    &format!("type = \"sine\"\nfreq = {f:?}\namp = {a:?}\n"),
                );
                for s in 0..cases::FANIN_DEPTH {
                    let lp = format!("b{b}_lp{s}");
                    node(
                        &lp,
                        &format!(
                            "type = \"biquad\"\nmode = \"lowpass\"\nfreq = {:?}\nq = {:?}\n",
                            cases::FANIN_CUTOFF,
                            cases::FANIN_Q
                        ),
                    );
                    let g = format!("b{b}_g{s}");
                    node(
                        &g,
                        &format!("type = \"gain\"\ngain = {:?}\n", cases::fanin_gain(s)),
                    );
                    edges.push(format!("{prev} -> {lp}"));
                    edges.push(format!("{lp} -> {g}"));
                    prev = g;
                }
                edges.push(format!("{prev} -> out"));
            }
        }
    }
    node("out", "type = \"output\"\n");
    p.push_str("edges = [\n");
    for e in &edges {
        let _ = writeln!(p, "    \"{e}\",");
    }
    p.push_str("]\n");
    p.push_str(&nodes);
    p
}

/// A format-0 Standard MIDI file holding every voice's note on at time 0 (no note offs:
/// the run ends, by `--seconds`, with every voice still sounding).
pub fn notes(n: usize) -> Vec<u8> {
    let mut track = Vec::new();
    for i in 0..n {
        let v = cases::voice(i);
        // Delta time 0, note on.
        track.extend_from_slice(&[0, 0x90 | v.channel, v.note, v.velocity]);
    }
    track.extend_from_slice(&[0, 0xff, 0x2f, 0]);
    let mut f = b"MThd".to_vec();
    f.extend_from_slice(&6u32.to_be_bytes());
    // Format 0, one track, 480 ticks per quarter note.
    f.extend_from_slice(&[0, 0, 0, 1, 1, 0xe0]);
    f.extend_from_slice(b"MTrk");
    f.extend_from_slice(&(track.len() as u32).to_be_bytes());
    f.extend_from_slice(&track);
    f
}
