//! `process` and `set_param` of every built-in node type are real-time safe: under the
//! guard they make no allocation, free, lock, page fault or system call. The parameters are
//! set to values that change the output (checked outside the guard), and every call must be
//! accepted: a refused call would do nothing worth watching.

use std::sync::OnceLock;

use downbeat_graph::time::{MusicalPosition, TempoMap};
use downbeat_graph::{
    AudioMut, AudioRef, Node, NodeConfig, NodeType, NoteEvent, ParamCurve, ParamKind,
    ProcessContext, Shape,
};
use downbeat_nodes::node_types;
use downbeat_nodes::Capture;
use downbeat_rt::guard;

downbeat_rt::install_guard_allocator!();

const CFG: NodeConfig = NodeConfig {
    sample_rate: 48000,
    max_block: 512,
};

/// A live parameter's name and two values for it.
type LiveValues = (&'static str, f32, f32);

/// Every node type's live parameters, each with two values that differ from its default and
/// from each other: the guarded run alternates between them, so every call is a change.
const LIVE: &[(&str, &[LiveValues])] = &[
    ("biquad", &[("freq", 2000.0, 300.0), ("q", 4.0, 0.5)]),
    ("gain", &[("gain", 0.25, 3.0)]),
    ("input", &[]),
    ("karplus", &[("decay", 0.9, 0.95), ("amp", 0.1, 1.0)]),
    ("metronome", &[("gain", 0.2, 0.9)]),
    ("mix", &[("gain_db", -6.0, 6.0), ("pan", -0.5, 0.8)]),
    ("noise", &[("amp", 0.1, 0.5)]),
    ("output", &[]),
    ("sine", &[("freq", 1000.0, 220.0), ("amp", 0.25, 0.8)]),
    ("strings", &[("decay", 0.9, 0.95), ("amp", 0.1, 1.0)]),
    (
        "spectral_compressor",
        &[
            ("threshold_db", -40.0, -10.0),
            ("ratio", 10.0, 2.0),
            ("attack_ms", 1.0, 100.0),
            ("release_ms", 20.0, 1000.0),
            ("makeup_db", 6.0, -6.0),
        ],
    ),
    (
        "synth",
        &[
            ("attack", 0.01, 0.05),
            ("decay", 0.05, 0.01),
            ("sustain", 0.3, 0.9),
            ("release", 0.5, 0.02),
            ("cutoff", 1000.0, 300.0),
            ("resonance", 4.0, 1.5),
            ("key_track", 1.0, 0.1),
            ("vel_track", 3.0, 0.2),
            ("amp", 0.3, 0.05),
            ("bend_range", 12.0, 5.0),
        ],
    ),
];

/// Values within a live parameter's declared range that the node still refuses while
/// running: a frequency at or above half the sample rate.
const REFUSED_IN_RANGE: &[(&str, &str, f32)] =
    &[("biquad", "freq", 30000.0), ("sine", "freq", 30000.0)];

/// `ty`'s live parameters as (index, first value, second value).
fn live_params(ty: &NodeType) -> Vec<(usize, f32, f32)> {
    let (_, live) = LIVE
        .iter()
        .find(|(name, _)| *name == ty.name)
        .unwrap_or_else(|| {
            panic!(
                "node type `{}` is missing from LIVE: list its live parameters, each with two \
                 values that change the output",
                ty.name
            )
        });
    live.iter()
        .map(|&(name, a, b)| {
            let index = ty
                .params
                .iter()
                .position(|p| p.name == name)
                .unwrap_or_else(|| panic!("`{}` has no parameter `{name}`", ty.name));
            (index, a, b)
        })
        .collect()
}

/// A node of type `ty` with its default parameters. An `input` node reads the device's
/// capture, so every node is built with one connected, holding a signal.
fn build(ty: &NodeType) -> Box<dyn Node> {
    let capture = Capture::new(32, CFG.max_block);
    capture.write_interleaved(&signal(32, 1.0));
    let mut node = capture
        .connect(|| ty.instantiate(Vec::new(), &CFG))
        .unwrap_or_else(|e| panic!("building `{}`: {e}", ty.name));
    if node.plays_notes() {
        play_notes(node.as_mut());
    }
    node
}

/// An instrument gets notes for the whole of every run: a pitch bend, then a note every
/// 2048 frames at velocity 0.6, released 1024 frames later, so that changes of envelope
/// times, filter tracking and bend range are all heard.
fn play_notes(node: &mut dyn Node) {
    let bend = NoteEvent::PitchBend {
        channel: 0,
        value: 0.5,
    };
    node.note(0, bend).unwrap();
    for k in 0..80 {
        let note = 45.0 + (k % 12) as f32;
        let on = NoteEvent::On {
            channel: 0,
            note,
            velocity: 0.6,
        };
        node.note(k * 2048 + 100, on).unwrap();
        node.note(k * 2048 + 1124, NoteEvent::Off { channel: 0, note })
            .unwrap();
    }
}

/// An input that keeps changing level: 0.5 peak for four blocks, then 0.05, so envelopes
/// (compressor attack and release) move, never exact silence.
fn level(round: usize) -> f32 {
    if (round / 4) % 2 == 0 {
        1.0
    } else {
        0.1
    }
}

fn signal(channels: usize, scale: f32) -> Vec<f32> {
    (0..channels * CFG.max_block)
        .map(|i| scale * (((i * 31) % 17) as f32 / 17.0 - 0.5))
        .collect()
}

/// The song's tempo map, made before any guarded run (each test calls it first).
fn song() -> &'static TempoMap {
    static SONG: OnceLock<TempoMap> = OnceLock::new();
    SONG.get_or_init(|| TempoMap::constant(240.0, CFG.sample_rate).unwrap())
}

fn process(node: &mut dyn Node, input: &[f32], output: &mut [f32], frames: usize, position: u64) {
    let (ic, oc, stride) = (node.input_channels(), node.output_channels(), CFG.max_block);
    let mut ctx = ProcessContext::new(CFG.sample_rate, frames, position);
    // A song playing at 240 bpm, for the nodes that follow it (the metronome): a beat
    // every 12,000 frames.
    ctx.musical = MusicalPosition::of(song(), position, true, None);
    node.process(
        &ctx,
        AudioRef::new(input, ic, stride, frames),
        AudioMut::new(output, oc, stride, frames),
    );
}

/// Feeds alternating stretches of signal and silence in odd block sizes (enough for FFT
/// frames, note onsets and silence skips) and sets every live parameter every 50 blocks,
/// alternating between its two values. Returns how many `set_param` calls were accepted.
fn exercise(
    node: &mut dyn Node,
    live: &[(usize, f32, f32)],
    input: &[f32],
    silence: &[f32],
    output: &mut [f32],
) -> usize {
    let mut position = 0u64;
    let mut accepted = 0;
    for (round, &frames) in [511usize, 1, 100, 512, 37]
        .iter()
        .cycle()
        .take(600)
        .enumerate()
    {
        let src = if (round / 100) % 2 == 0 {
            input
        } else {
            silence
        };
        process(node, src, output, frames, position);
        if round % 50 == 0 {
            for &(i, a, b) in live {
                let value = if (round / 50) % 2 == 0 { a } else { b };
                accepted += usize::from(node.set_param(i, value));
            }
        }
        if round % 50 == 25 {
            // Half way between sets, ramps: the paths that follow a moving parameter
            // sample by sample (a node that does not follow one refuses).
            for &(i, a, b) in live {
                node.follow_param(i, ParamCurve::ramp(Shape::Linear, a, b, 300));
            }
        }
        position += frames as u64;
    }
    accepted
}

/// The table is complete and its values are meaningful: every parameter documented as live
/// is listed, every value is in range and not the default, and every parameter not listed
/// is refused while running.
#[test]
fn live_table_covers_every_live_parameter() {
    assert_eq!(
        LIVE.len(),
        node_types().len(),
        "one LIVE entry per node type"
    );
    for &(t, p, v) in REFUSED_IN_RANGE {
        let ty = node_types().iter().find(|ty| ty.name == t).unwrap();
        let listed = LIVE
            .iter()
            .any(|(n, live)| *n == t && live.iter().any(|l| l.0 == p));
        assert!(
            listed,
            "REFUSED_IN_RANGE names {t}.{p}, which is not in LIVE"
        );
        let spec = ty.params.iter().find(|s| s.name == p).unwrap();
        let ParamKind::Float { min, max, .. } = spec.kind else {
            panic!("{t}.{p} is not a float");
        };
        assert!(
            (min..=max).contains(&f64::from(v)),
            "{t}.{p}: {v} is out of range"
        );
    }
    for ty in node_types() {
        let live = live_params(ty);
        let mut node = build(ty);
        for (i, spec) in ty.params.iter().enumerate() {
            match live.iter().find(|(j, ..)| *j == i) {
                Some(&(_, a, b)) => {
                    let ParamKind::Float { min, max, default } = spec.kind else {
                        panic!("{}.{} is live but not a float", ty.name, spec.name);
                    };
                    for v in [a, b] {
                        let v = f64::from(v);
                        assert!(v >= min && v <= max, "{}.{}: {v}", ty.name, spec.name);
                        assert_ne!(v, default, "{}.{} set to its default", ty.name, spec.name);
                    }
                    assert_ne!(a, b, "{}.{}", ty.name, spec.name);
                }
                None => {
                    assert!(
                        !spec.doc.contains("(live)"),
                        "{}.{} is documented as live but not in LIVE",
                        ty.name,
                        spec.name
                    );
                    if let ParamKind::Float { default, .. } = spec.kind {
                        assert!(
                            !node.set_param(i, default as f32),
                            "{}.{} is accepted live but not in LIVE",
                            ty.name,
                            spec.name
                        );
                    }
                }
            }
        }
    }
}

/// Each value in the table changes what the node outputs: two nodes fed the same blocks
/// differ once one of them has had the parameter set.
#[test]
fn every_live_value_changes_the_output() {
    for ty in node_types() {
        for (i, a, b) in live_params(ty) {
            let name = ty.params[i].name;
            for value in [a, b] {
                let mut changed = build(ty);
                let mut reference = build(ty);
                let (ic, oc) = (changed.input_channels(), changed.output_channels());
                let mut out_changed = vec![0.0f32; oc * CFG.max_block];
                let mut out_reference = vec![0.0f32; oc * CFG.max_block];
                let mut differs = false;
                for round in 0..40 {
                    if round == 8 {
                        assert!(changed.set_param(i, value), "{}.{name} = {value}", ty.name);
                    }
                    let input = signal(ic, level(round));
                    let position = (round * CFG.max_block) as u64;
                    process(
                        changed.as_mut(),
                        &input,
                        &mut out_changed,
                        CFG.max_block,
                        position,
                    );
                    process(
                        reference.as_mut(),
                        &input,
                        &mut out_reference,
                        CFG.max_block,
                        position,
                    );
                    if round < 8 {
                        assert_eq!(out_changed, out_reference, "{} is deterministic", ty.name);
                    }
                    differs |= out_changed != out_reference;
                }
                assert!(
                    differs,
                    "setting {}.{name} to {value} did not change the output",
                    ty.name
                );
            }
        }
    }
}

#[test]
fn processing_and_live_params_are_real_time_safe() {
    song();
    for ty in node_types() {
        let mut node = build(ty);
        let (ic, oc) = (node.input_channels(), node.output_channels());
        let input = signal(ic, 1.0);
        let silence = vec![0.0f32; ic * CFG.max_block];
        let mut output = vec![0.0f32; oc * CFG.max_block];
        let live = live_params(ty);
        // Warm-up outside the guard: first touches of lazily mapped memory are not the
        // node's steady state.
        exercise(node.as_mut(), &live, &input, &silence, &mut output);
        let (accepted, report) = guard::check_with(&guard::Options::new(), || {
            exercise(node.as_mut(), &live, &input, &silence, &mut output)
        });
        assert!(
            report.is_clean(),
            "`{}` is not real-time safe:\n{report}",
            ty.name
        );
        // 600 blocks, a round of sets every 50.
        assert_eq!(
            accepted,
            12 * live.len(),
            "`{}` refused a live parameter",
            ty.name
        );
    }
}

/// Refusing a value is on the audio thread too: out-of-range, non-finite and (for
/// frequencies) above-Nyquist values are refused without allocating or anything else the
/// guard sees, and leave the output as it was.
#[test]
fn refused_values_are_refused_in_real_time() {
    song();
    for ty in node_types() {
        let mut node = build(ty);
        let mut refusals: Vec<(usize, f32)> = Vec::new();
        for (i, ..) in live_params(ty) {
            let ParamKind::Float { min, max, .. } = ty.params[i].kind else {
                unreachable!("live parameters are floats (checked above)");
            };
            refusals.extend(
                [f32::NAN, f32::INFINITY, min as f32 - 1.0, max as f32 + 1.0].map(|v| (i, v)),
            );
            refusals.extend(
                REFUSED_IN_RANGE
                    .iter()
                    .filter(|(t, p, _)| *t == ty.name && *p == ty.params[i].name)
                    .map(|&(.., v)| (i, v)),
            );
        }
        let (ic, oc) = (node.input_channels(), node.output_channels());
        let input = signal(ic, 1.0);
        let mut before = vec![0.0f32; oc * CFG.max_block];
        let mut after = vec![0.0f32; oc * CFG.max_block];
        let mut twin = build(ty);
        let (accepted, report) = guard::check_with(&guard::Options::new(), || {
            refusals
                .iter()
                .filter(|&&(i, v)| node.set_param(i, v))
                .count()
        });
        assert_eq!(accepted, 0, "`{}` accepted one of {refusals:?}", ty.name);
        assert!(
            report.is_clean(),
            "refusing a value in `{}`:\n{report}",
            ty.name
        );
        process(node.as_mut(), &input, &mut after, CFG.max_block, 0);
        process(twin.as_mut(), &input, &mut before, CFG.max_block, 0);
        assert_eq!(
            after, before,
            "`{}` changed although every value was refused",
            ty.name
        );
    }
}
