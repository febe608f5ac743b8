//! The `echoes` node: what it plays for a click, that its collected heap grows with onsets
//! and shrinks as the taps fade, that it drops and counts onsets it has no room for, and that
//! bad parameters are refused with the parameter named.

use std::time::Duration;

use downbeat_gc_nodes::{Echoes, EchoesSettings, ECHOES, MAX_TAPS};
use downbeat_graph::{
    AudioMut, AudioRef, Node, NodeConfig, ParamError, ParamValue, ProcessContext,
};

const RATE: u32 = 48_000;

/// Runs `node` over `input` (channel after channel, `channels` of them) in blocks of `block`
/// frames; returns the output laid out the same way. `each` sees the node after every block.
fn play(
    node: &mut Echoes,
    input: &[f32],
    channels: usize,
    block: usize,
    mut each: impl FnMut(&Echoes),
) -> Vec<f32> {
    let frames = input.len() / channels;
    let mut out = vec![0.0f32; input.len()];
    let (mut x, mut y) = (
        vec![0.0f32; block * channels],
        vec![0.0f32; block * channels],
    );
    let mut at = 0;
    while at < frames {
        let n = block.min(frames - at);
        for c in 0..channels {
            x[c * block..c * block + n].copy_from_slice(&input[c * frames + at..][..n]);
        }
        let ctx = ProcessContext::new(RATE, n, at as u64);
        node.process(
            &ctx,
            AudioRef::new(&x, channels, block, n),
            AudioMut::new(&mut y, channels, block, n),
        );
        for c in 0..channels {
            out[c * frames + at..][..n].copy_from_slice(&y[c * block..c * block + n]);
        }
        each(node);
        at += n;
    }
    out
}

fn settings(delay: f64, feedback: f32, mix: f32) -> EchoesSettings {
    EchoesSettings {
        delay,
        feedback,
        mix,
        ..EchoesSettings::default()
    }
}

#[test]
fn a_click_echoes_at_the_delay_with_the_feedback_gain_until_minus_60_db() {
    // 48 samples of delay, each echo half the one before: echo k at 48k with gain 2^-k,
    // exact in f32. 2^-10 is below -60 dB, so echoes 1 to 9 sound and the tap then ends.
    let mut node = Echoes::new(1, RATE, &settings(0.001, 0.5, 1.0)).unwrap();
    let mut input = vec![0.0f32; 1000];
    input[0] = 1.0;
    // Blocks of 37 frames: echoes and the tap's end fall inside blocks, not on their edges.
    let out = play(&mut node, &input, 1, 37, |_| {});
    let mut want = vec![0.0f32; 1000];
    for k in 1..=9 {
        want[48 * k] = 0.5f32.powi(k as i32);
    }
    assert_eq!(out, want);
    let counts = node.monitor().counts();
    assert_eq!((counts.started, counts.ended, counts.live), (1, 1, 0));
    assert_eq!(
        (counts.dropped_full, counts.dropped_heap, counts.errors),
        (0, 0, 0)
    );
}

#[test]
fn mix_keeps_the_dry_signal_and_each_channel_echoes_its_own_input() {
    let mut node = Echoes::new(2, RATE, &settings(0.002, 0.6, 0.25)).unwrap();
    let frames = 400;
    let mut input = vec![0.0f32; 2 * frames];
    input[0] = 1.0; // left: a click at 0
    input[frames + 10] = 0.5; // right: a smaller one at 10, inside the left's capture
    let out = play(&mut node, &input, 2, 64, |_| {});
    let (left, right) = out.split_at(frames);
    // One onset (both channels' peak envelope), one tap capturing both channels from 0.
    assert_eq!(node.monitor().counts().started, 1);
    assert_eq!(left[0], 0.75, "dry");
    assert_eq!(right[10], 0.375, "dry");
    assert_eq!(left[96], 0.25 * 0.6, "first echo after 96 samples");
    assert_eq!(right[106], 0.25 * (0.6 * 0.5));
    assert!((left[192] - 0.25 * 0.36).abs() < 1e-7);
    let sounding = |s: &[f32]| s.iter().filter(|&&v| v != 0.0).count();
    assert_eq!(
        sounding(left),
        1 + 4,
        "dry click and echoes at 96, 192, 288 and 384"
    );
    assert_eq!(
        sounding(right),
        1 + 4,
        "dry click and echoes at 106, 202, 298 and 394"
    );
}

#[test]
fn the_heap_grows_with_onsets_and_shrinks_as_taps_fade() {
    // 5 ms delay, 0.8 feedback: a tap lives 32 passes (0.8^31 < 0.001), 7680 samples. A
    // click every 1536 samples (the detector re-arms about 1100 samples after a click)
    // keeps about five taps alive at once.
    let mut node = Echoes::new(1, RATE, &settings(0.005, 0.8, 0.5)).unwrap();
    let clicks = 10;
    let mut input = vec![0.0f32; 1536 * clicks];
    for k in 0..clicks {
        input[1536 * k] = 0.9;
    }
    let (mut most_taps, mut most_objects) = (0, 0);
    play(&mut node, &input, 1, 128, |n| {
        most_taps = most_taps.max(n.monitor().counts().live);
        most_objects = most_objects.max(n.heap().live_objects);
    });
    let grown = node.heap();
    assert_eq!(node.monitor().counts().started, clicks as u64);
    assert!(most_taps >= 5, "taps alive at once: {most_taps}");
    assert!(
        most_objects >= 5,
        "objects in the heap at once: {most_objects}"
    );
    assert!(grown.live_lines >= 4, "{grown:?}");

    // Silence: the taps fade and are unlinked, and the collector returns them. How long the
    // collector takes depends on the machine; the bound only keeps a broken one from
    // hanging the test.
    let silence = vec![0.0f32; 128];
    let mut blocks = 0;
    loop {
        play(&mut node, &silence, 1, 128, |_| {});
        blocks += 1;
        let h = node.heap();
        if h.live_objects == 0 && h.live_lines == 0 {
            break;
        }
        assert!(blocks < 20_000, "the heap never shrank back: {h:?}");
        std::thread::sleep(Duration::from_micros(200));
    }
    let counts = node.monitor().counts();
    assert_eq!((counts.ended, counts.live), (clicks as u64, 0));
    let shrunk = node.heap();
    assert!(shrunk.objects_freed >= clicks as u64, "{shrunk:?}");
    assert!(shrunk.lines_freed >= clicks as u64, "{shrunk:?}");
    assert!(shrunk.collections > 0);
    assert_eq!((counts.dropped_heap, counts.errors), (0, 0));
}

#[test]
fn onsets_beyond_max_taps_are_dropped_and_counted() {
    let s = EchoesSettings {
        max_taps: 2,
        ..settings(0.01, 0.9, 1.0)
    };
    let mut node = Echoes::new(1, RATE, &s).unwrap();
    // Four clicks 0.05 s apart: each tap lives about 0.66 s, so the last two find two alive.
    let mut input = vec![0.0f32; 9600];
    for k in 0..4 {
        input[2400 * k] = 1.0;
    }
    play(&mut node, &input, 1, 256, |_| {});
    let c = node.monitor().counts();
    assert_eq!((c.started, c.dropped_full, c.live), (2, 2, 2));
}

#[test]
fn live_parameters_move_and_refuse_values_out_of_range() {
    let mut node = Echoes::new(1, RATE, &EchoesSettings::default()).unwrap();
    let names: Vec<&str> = node.params().iter().map(|p| p.name).collect();
    let index = |n: &str| names.iter().position(|&m| m == n).unwrap();
    assert!(node.set_param(index("mix"), 0.75));
    assert_eq!(node.get_param(index("mix")), Some(0.75));
    assert!(!node.set_param(index("mix"), 1.5));
    assert!(!node.set_param(index("feedback"), f32::NAN));
    assert!(
        !node.set_param(index("delay"), 0.5),
        "delay sizes the lines"
    );
    assert_eq!(node.get_param(index("mix")), Some(0.75));
    // A louder threshold than the click: no onset.
    assert!(node.set_param(index("threshold"), 0.9));
    let mut input = vec![0.0f32; 256];
    input[3] = 0.5;
    play(&mut node, &input, 1, 64, |_| {});
    assert_eq!(node.monitor().counts().started, 0);
}

fn invalid_name(e: ParamError) -> String {
    match e {
        ParamError::Invalid { name, message } => {
            assert!(!message.is_empty());
            name
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn bad_parameters_are_refused_naming_the_parameter() {
    let cfg = NodeConfig {
        sample_rate: RATE,
        max_block: 256,
    };
    let build = |k: &str, v: ParamValue| {
        ECHOES
            .instantiate(vec![(k.to_string(), v)], &cfg)
            .err()
            .unwrap_or_else(|| panic!("{k} accepted"))
    };
    assert_eq!(
        invalid_name(build("delay", ParamValue::Float(5.0))),
        "delay"
    );
    assert_eq!(
        invalid_name(build("feedback", ParamValue::Float(1.0))),
        "feedback"
    );
    assert_eq!(
        invalid_name(build("max_taps", ParamValue::Int(0))),
        "max_taps"
    );
    assert_eq!(
        invalid_name(build("max_taps", ParamValue::Int(MAX_TAPS as i64 + 1))),
        "max_taps"
    );
    assert_eq!(
        invalid_name(build("mix", ParamValue::Text("wet".into()))),
        "mix"
    );
    let unknown = build("dealy", ParamValue::Float(0.1));
    assert!(
        unknown.to_string().contains("unknown parameter `dealy`"),
        "{unknown}"
    );
    // In range one by one, too large together: the heap it would need is refused.
    let too_big = ECHOES
        .instantiate(
            vec![
                ("channels".into(), ParamValue::Int(32)),
                ("delay".into(), ParamValue::Float(2.0)),
                ("max_taps".into(), ParamValue::Int(64)),
            ],
            &cfg,
        )
        .err()
        .expect("a 32-channel, 2 s, 64-tap node is too large");
    let text = too_big.to_string();
    assert!(text.contains("max_taps") && text.contains("MiB"), "{text}");
    // The Rust constructor checks what the project file's declarations would.
    let direct = |s: EchoesSettings| invalid_name(Echoes::new(1, RATE, &s).err().unwrap());
    let d = EchoesSettings::default();
    assert_eq!(
        direct(EchoesSettings {
            threshold: f32::NAN,
            ..d
        }),
        "threshold"
    );
    assert_eq!(direct(EchoesSettings { delay: 0.0, ..d }), "delay");
    assert_eq!(direct(EchoesSettings { mix: -0.1, ..d }), "mix");
    assert_eq!(
        invalid_name(Echoes::new(0, RATE, &d).err().unwrap()),
        "channels"
    );
}

#[test]
fn the_node_type_builds_with_its_defaults() {
    let cfg = NodeConfig {
        sample_rate: RATE,
        max_block: 256,
    };
    let node = ECHOES.instantiate(Vec::new(), &cfg).unwrap();
    assert_eq!((node.input_channels(), node.output_channels()), (2, 2));
    assert_eq!((ECHOES.name, ECHOES.params.len()), ("echoes", 6));
}

#[test]
fn the_output_does_not_depend_on_block_sizes() {
    // Bursts of a deterministic rattle, some on one channel only, 40 ms delay: onsets, taps
    // and ends fall anywhere in the blocks.
    let frames = 48_000;
    let mut input = vec![0.0f32; 2 * frames];
    let mut state = 1u32;
    for k in 0..frames {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let noise = (state >> 8) as f32 / (1u32 << 24) as f32 - 0.5;
        if k % 4000 < 300 {
            input[k] = noise;
            if k % 8000 < 300 {
                input[frames + k] = -noise;
            }
        }
    }
    let s = settings(0.04, 0.7, 0.5);
    let render = |block: usize| {
        let mut node = Echoes::new(2, RATE, &s).unwrap();
        let out = play(&mut node, &input, 2, block, |_| {});
        (out, node.monitor().counts())
    };
    let (a, counts) = render(64);
    assert_eq!(counts.started, 12, "{counts:?}");
    assert_eq!(counts.dropped_full, 0);
    assert!(a.iter().any(|&v| v != 0.0));
    for block in [1, 100, 512] {
        let (b, c) = render(block);
        assert_eq!(c, counts, "block {block}");
        assert!(a == b, "block {block}: the output differs");
    }
}

#[test]
fn taps_ending_in_the_same_block_are_all_unlinked() {
    // Two onsets 800 samples apart (threshold 0.5: re-armed below 0.25, about 670 samples
    // after a click at 1.0), 10 ms delay, feedback 0.5: each tap ends 10 delays (4800
    // samples) after its onset, both inside the third block of 2048 frames.
    let s = EchoesSettings {
        threshold: 0.5,
        ..settings(0.01, 0.5, 1.0)
    };
    let mut node = Echoes::new(1, RATE, &s).unwrap();
    let mut input = vec![0.0f32; 3 * 2048];
    input[0] = 1.0;
    input[800] = 1.0;
    let out = play(&mut node, &input, 1, 2048, |_| {});
    let c = node.monitor().counts();
    assert_eq!(
        (c.started, c.ended, c.live, c.errors),
        (2, 2, 0, 0),
        "{c:?}"
    );
    let mut want = vec![0.0f32; 3 * 2048];
    for k in 1..=9 {
        want[480 * k] += 0.5f32.powi(k as i32);
        want[800 + 480 * k] += 0.5f32.powi(k as i32);
    }
    assert_eq!(out, want);
}

#[test]
fn the_detector_re_arms_only_6_db_below_the_threshold() {
    // After a click at 1.0 the envelope falls through the threshold (0.1) at about 1100
    // samples and through half of it at about 1440: a 0.12 click at 1200 is the same
    // sound's tail, one at 3000 a new onset.
    let mut node = Echoes::new(1, RATE, &settings(0.01, 0.5, 1.0)).unwrap();
    let mut input = vec![0.0f32; 4096];
    input[0] = 1.0;
    input[1200] = 0.12;
    input[3000] = 0.12;
    play(&mut node, &input, 1, 256, |_| {});
    assert_eq!(node.monitor().counts().started, 2);
}
