//! Every built-in node type builds from its defaults, processes odd-sized blocks, and refuses
//! bad parameter combinations by name.

use downbeat_graph::{AudioMut, AudioRef, NodeConfig, ParamError, ParamKind, ParamValue};
use downbeat_nodes::{node_type, node_types};

const CFG: NodeConfig = NodeConfig {
    sample_rate: 48000,
    max_block: 256,
};

#[test]
fn every_node_type_builds_with_defaults_and_processes_odd_blocks() {
    let names: Vec<&str> = node_types().iter().map(|t| t.name).collect();
    for expected in [
        "output",
        "gain",
        "mix",
        "sine",
        "noise",
        "karplus",
        "biquad",
        "spectral_compressor",
    ] {
        assert!(names.contains(&expected), "`{expected}` is not registered");
    }
    for ty in node_types() {
        assert!(!ty.doc.is_empty(), "{} has no doc", ty.name);
        for p in ty.params {
            assert!(!p.doc.is_empty(), "{}.{} has no doc", ty.name, p.name);
        }
        let mut node = ty
            .instantiate(Vec::new(), &CFG)
            .unwrap_or_else(|e| panic!("{} does not build from defaults: {e}", ty.name));
        let ic = node.input_channels();
        let oc = node.output_channels();
        assert!(oc > 0, "{} has no output", ty.name);
        let stride = CFG.max_block;
        let input: Vec<f32> = (0..ic * stride)
            .map(|i| ((i * 37) % 19) as f32 / 19.0 - 0.5)
            .collect();
        let mut output = vec![0.0f32; oc * stride];
        let mut position = 0;
        // Odd lengths, the maximum and 1, enough blocks to pass an FFT frame and a note.
        for (round, frames) in [101, 255, 1, 256, 77].iter().cycle().take(400).enumerate() {
            output.fill(f32::NAN);
            let ctx = downbeat_graph::ProcessContext::new(CFG.sample_rate, *frames, position);
            node.process(
                &ctx,
                AudioRef::new(&input, ic, stride, *frames),
                AudioMut::new(&mut output, oc, stride, *frames),
            );
            for c in 0..oc {
                let ch = &output[c * stride..c * stride + frames];
                assert!(
                    ch.iter().all(|s| s.is_finite()),
                    "{} wrote a non-finite or no sample in round {round}",
                    ty.name
                );
            }
            position += *frames as u64;
        }
        // No node accepts a live change of an index it does not have.
        assert!(!node.set_param(ty.params.len(), 0.5), "{}", ty.name);
    }
}

#[test]
fn live_float_params_accept_their_default_and_refuse_out_of_range() {
    for ty in node_types() {
        let mut node = ty.instantiate(Vec::new(), &CFG).unwrap();
        for (i, p) in ty.params.iter().enumerate() {
            match p.kind {
                ParamKind::Float { max, default, .. } => {
                    if node.set_param(i, default as f32) {
                        assert!(
                            !node.set_param(i, (max * 2.0 + 1.0) as f32),
                            "{}.{} accepts a value above its range",
                            ty.name,
                            p.name
                        );
                        assert!(!node.set_param(i, f32::NAN), "{}.{}", ty.name, p.name);
                    }
                }
                _ => assert!(
                    !node.set_param(i, 1.0),
                    "{}.{} is not a float and cannot change live",
                    ty.name,
                    p.name
                ),
            }
        }
    }
}

fn refused(ty: &str, params: &[(&str, ParamValue)]) -> String {
    let given = params.iter().map(|(n, v)| (n.to_string(), v.clone()));
    match node_type(ty).unwrap().instantiate(given, &CFG) {
        Err(ParamError::Invalid { name, message }) => {
            assert!(!message.is_empty());
            name
        }
        Err(other) => panic!("{ty}: expected ParamError::Invalid, got {other}"),
        Ok(_) => panic!("{ty}: {params:?} was accepted"),
    }
}

#[test]
fn bad_parameters_are_refused_naming_the_parameter() {
    use ParamValue::{Float, Int, List, Text};
    type Case = (&'static str, Vec<(&'static str, ParamValue)>, &'static str);
    let cases: Vec<Case> = vec![
        (
            "spectral_compressor",
            vec![("fft_size", Int(1000))],
            "fft_size",
        ),
        (
            "spectral_compressor",
            vec![("fft_size", Int(128))],
            "fft_size",
        ),
        ("spectral_compressor", vec![("overlap", Int(3))], "overlap"),
        ("spectral_compressor", vec![("ratio", Float(0.5))], "ratio"),
        ("biquad", vec![("freq", Float(30_000.0))], "freq"),
        ("biquad", vec![("freq", Float(24_000.0))], "freq"),
        ("biquad", vec![("mode", Text("notch".into()))], "mode"),
        (
            "karplus",
            vec![("length", Float(0.6)), ("interval", Float(0.5))],
            "length",
        ),
        (
            "karplus",
            vec![("length", Float(0.5)), ("interval", Float(0.5))],
            "length",
        ),
        ("karplus", vec![("notes", List(vec![]))], "notes"),
        ("karplus", vec![("notes", List(vec![60.0, 10.0]))], "notes"),
        ("sine", vec![("freq", Float(24_000.0))], "freq"),
        ("mix", vec![("pan", Float(2.0))], "pan"),
        ("noise", vec![("seed", Int(-1))], "seed"),
    ];
    for (ty, params, name) in cases {
        assert_eq!(refused(ty, &params), name, "{ty} {params:?}");
    }
}

#[test]
fn good_non_default_parameters_are_accepted() {
    use ParamValue::{Float, Int, List, Text};
    let cases: Vec<(&str, Vec<(&str, ParamValue)>)> = vec![
        (
            "spectral_compressor",
            vec![
                ("fft_size", Int(256)),
                ("overlap", Int(8)),
                ("channels", Int(1)),
            ],
        ),
        (
            "spectral_compressor",
            vec![("fft_size", Int(8192)), ("overlap", Int(2))],
        ),
        (
            "biquad",
            vec![("mode", Text("bandpass".into())), ("freq", Float(23_999.0))],
        ),
        (
            "karplus",
            vec![
                ("notes", List(vec![21.0, 108.0, 60.5])),
                ("length", Float(0.49)),
                ("interval", Float(0.5)),
                ("offset", Float(1.25)),
            ],
        ),
        ("noise", vec![("seed", Int(4_294_967_295))]),
    ];
    for (ty, params) in cases {
        let given = params.iter().map(|(n, v)| (n.to_string(), v.clone()));
        if let Err(e) = node_type(ty).unwrap().instantiate(given, &CFG) {
            panic!("{ty} {params:?} refused: {e}");
        }
    }
}
