//! Edges with a level (`connect_gain`): sends, sample-accurate and kept across live edits.
// The reference values come from the platform's math: the test checks the node against the
// formula, not against itself.
#![allow(clippy::disallowed_methods)]

use downbeat_graph::{
    Change, CompileConfig, EdgeGain, Editor, Event, Graph, GraphError, Ramp, Schedule, Shape,
};
use downbeat_nodes::{Gain, Mix, MixSettings, Output, Sine, SineSettings};

const CFG: CompileConfig = CompileConfig {
    sample_rate: 48_000,
    max_block: 64,
};

/// A constant 1.0 sent to the output at `db`, beside a dry constant 0.5 on a gain.
fn send(db: f64) -> Graph {
    let mut g = Graph::new();
    g.add(
        "one",
        Sine::new(
            1,
            48_000,
            &SineSettings {
                freq: 0.0,
                amp: 1.0,
                phase: 0.25,
            },
        ),
    );
    g.add(
        "half",
        Sine::new(
            1,
            48_000,
            &SineSettings {
                freq: 0.0,
                amp: 0.5,
                phase: 0.25,
            },
        ),
    );
    g.add("dry", Gain::new(1, 1.0));
    g.add(
        "bus",
        Mix::new(
            1,
            &MixSettings {
                gain_db: 0.0,
                ..MixSettings::default()
            },
        ),
    );
    let out = g.add("out", Output::new(1));
    g.connect_gain("one", "bus", db);
    g.connect("half", "dry");
    g.connect("dry", "bus");
    g.connect("bus", "out");
    g.set_output(out);
    g
}

fn render(s: &mut Schedule, blocks: usize) -> Vec<f32> {
    let mut out = Vec::new();
    for _ in 0..blocks {
        s.process(64);
        out.extend_from_slice(s.output().channel(0));
    }
    out
}

/// A send's level ramped from 0 to -40 dB over 1000 frames from frame 100: every sample is
/// the dry signal plus the send at exactly the ramp's level at that frame (the offline
/// formula: linear in dB, 10^(dB/20)).
#[test]
fn a_ramped_send_level_is_sample_accurate() {
    let mut s = send(0.0).compile(CFG).unwrap();
    let id = s.param_table().resolve("one -> bus", "gain_db").unwrap();
    let ramp = Ramp {
        shape: Shape::Linear,
        from: None,
        to: -40.0,
        frames: 1000,
    };
    s.push_event(Event::param(Some(100), id, Change::Ramp(ramp)))
        .unwrap();
    let out = render(&mut s, 24);
    let mut worst = 0.0f64;
    for (k, &x) in out.iter().enumerate() {
        let db = if k < 100 {
            0.0
        } else {
            -40.0 * ((k - 100).min(1000) as f64 / 1000.0)
        };
        let want = 0.5 + 10f64.powf(db / 20.0);
        worst = worst.max((f64::from(x) - want).abs() / want);
    }
    assert!(worst < 1e-6, "worst relative error {worst:e}");
}

/// The level is a parameter of the node named after the edge, ports included; out of range
/// it is refused.
#[test]
fn a_level_is_named_after_its_edge_and_checked() {
    let s = send(-12.0).compile(CFG).unwrap();
    assert!(
        s.names().iter().any(|n| n == "one -> bus"),
        "{:?}",
        s.names()
    );
    let err = send(30.0).compile(CFG).unwrap_err();
    assert!(
        matches!(err, GraphError::EdgeGain { edge: 0, .. }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "edge `one` -> `bus`: a level of 30 dB is outside -144 to +24 dB"
    );
    assert_eq!(EdgeGain::linear(-144.0), 0.0);
}

/// A live edit elsewhere keeps the send, its level as a controller left it (not the level
/// it was built with) and a ramp under way.
#[test]
fn a_live_edit_keeps_a_send_and_its_level() {
    let (mut editor, mut running) = Editor::new(send(-6.0), CFG).unwrap();
    let id = running
        .param_table()
        .resolve("one -> bus", "gain_db")
        .unwrap();
    running
        .push_event(Event::param(Some(0), id, Change::Step(-20.0)))
        .unwrap();
    running.process(64);
    editor.add("extra", Gain::new(1, 1.0)).unwrap();
    editor.connect("half", "extra").unwrap();
    editor.connect_gain("extra", "bus", -3.0).unwrap();
    let mut next = editor.commit().unwrap();
    assert!(next.kept_nodes() >= 6, "{} kept", next.kept_nodes());
    next.take_over(&mut running);
    let out = render(&mut next, 1);
    let want = 0.5 + 10f64.powf(-20.0 / 20.0) + 0.5 * 10f64.powf(-3.0 / 20.0);
    assert!(
        (f64::from(out[0]) - want).abs() < 1e-6,
        "{} against {want}",
        out[0]
    );
    assert_eq!(next.param_value(id), Some(-20.0));
}
