//! The VST3 host against another VST3 host: a chain of Debian's zam-plugins VST3 bundles
//! rendered by `downbeat run --device offline` (a project of `vst3` nodes fed by `--input`)
//! and by Spotify's pedalboard, which hosts VST3 through JUCE (PyPI `pedalboard`, in the
//! virtual environment `scripts/deps.sh` makes at `target/pyenv`), from the same input, in
//! blocks of the same size, every plugin at the values it starts with. The two renders
//! agree to within 1e-6 per sample, and the difference's RMS is at least 100 dB below the
//! signal's.
//!
//! Without the virtual environment or the plugins this test fails, naming what is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

mod support;

const RATE: u32 = 48_000;
const BLOCK: usize = 256;
const FRAMES: usize = 2 * RATE as usize;
/// The chain: stereo plugins with no latency (so that neither host's compensation is in
/// play), each a different kind of dynamics processor. (ZamVerb renders the same in both
/// hosts too, but takes pedalboard about 110 s for these 2 s, against 0.2 s for each of
/// these.)
const CHAIN: [&str; 3] = ["ZamCompX2", "ZaMultiCompX2", "ZamGateX2"];

fn python() -> PathBuf {
    let python = support::repo().join("target/pyenv/bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import pedalboard, numpy"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "{} cannot import pedalboard and numpy: run scripts/deps.sh (./test does)",
        python.display()
    );
    python
}

/// Stereo noise and two tones, louder in the middle third (so that the dynamics move).
fn signal() -> Vec<f32> {
    let mut seed = 0x2468_ace1u32;
    (0..FRAMES)
        .flat_map(|i| {
            let t = i as f32 / RATE as f32;
            let loud = if (FRAMES / 3..2 * FRAMES / 3).contains(&i) {
                0.9
            } else {
                0.2
            };
            [0, 1].map(|c| {
                seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let noise = (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5;
                let tone = (std::f32::consts::TAU * (220.0 + 110.0 * c as f32) * t).sin();
                loud * (0.5 * tone + 0.3 * noise)
            })
        })
        .collect()
}

fn rms(v: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x * x, n + 1));
    (sum / n.max(1) as f64).sqrt()
}

#[test]
fn a_chain_of_zam_vst3_plugins_renders_as_pedalboard_renders_it() {
    let python = python();
    let bundles: Vec<PathBuf> = CHAIN
        .iter()
        .map(|n| PathBuf::from(format!("/usr/lib/vst3/{n}.vst3")))
        .collect();
    for b in &bundles {
        assert!(
            b.is_dir(),
            "{} is missing: install zam-plugins (scripts/deps.sh does)",
            b.display()
        );
    }
    let dir = support::tmp("vst3-pedalboard", "");
    std::fs::create_dir_all(&dir).unwrap();
    let input = signal();

    // Downbeat: the input file through the chain, offline.
    let wav = dir.join("in.wav");
    let spec = hound::WavSpec {
        channels: 2,
        sample_rate: RATE,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut w = hound::WavWriter::create(&wav, spec).unwrap();
    input.iter().for_each(|&s| w.write_sample(s).unwrap());
    w.finalize().unwrap();
    let names: Vec<String> = (0..CHAIN.len()).map(|k| format!("p{k}")).collect();
    let mut project = format!(
        "sample_rate = {RATE}\nblock_size = {BLOCK}\nedges = [\"mic -> {} -> out\"]\n\
         [nodes.mic]\ntype = \"input\"\n[nodes.out]\ntype = \"output\"\n",
        names.join(" -> ")
    );
    for (name, bundle) in names.iter().zip(&bundles) {
        project += &format!(
            "[nodes.{name}]\ntype = \"vst3\"\npath = \"{}\"\n",
            bundle.display()
        );
    }
    let toml = dir.join("chain.toml");
    std::fs::write(&toml, project).unwrap();
    let ours = dir.join("downbeat.wav");
    let seconds = format!("{}", FRAMES as f64 / f64::from(RATE));
    let out = support::downbeat(&[
        "run",
        toml.to_str().unwrap(),
        "--device",
        "offline",
        "--input",
        wav.to_str().unwrap(),
        "--seconds",
        &seconds,
        "--out",
        ours.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ours: Vec<f32> = hound::WavReader::open(&ours)
        .unwrap()
        .samples::<f32>()
        .map(Result::unwrap)
        .collect();

    // pedalboard: the same samples, the same chain, the same block size.
    let raw_in = dir.join("in.raw");
    let raw_out = dir.join("pedalboard.raw");
    let bytes: Vec<u8> = input.iter().flat_map(|s| s.to_le_bytes()).collect();
    std::fs::write(&raw_in, bytes).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pedalboard_render.py");
    let rendered = Command::new(&python)
        .arg(&script)
        .args([&raw_in, &raw_out])
        .args(["2".to_string(), RATE.to_string(), BLOCK.to_string()])
        .args(&bundles)
        .output()
        .unwrap();
    assert!(
        rendered.status.success(),
        "pedalboard: {}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let theirs: Vec<f32> = std::fs::read(&raw_out)
        .unwrap()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    std::fs::remove_dir_all(&dir).unwrap();

    assert_eq!(
        ours.len(),
        input.len(),
        "downbeat's render is as long as the input"
    );
    assert_eq!(
        theirs.len(),
        input.len(),
        "pedalboard's render is as long as the input"
    );
    let worst = ours
        .iter()
        .zip(&theirs)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    let signal = rms(theirs.iter().map(|&x| f64::from(x)));
    let residual = rms(ours
        .iter()
        .zip(&theirs)
        .map(|(&a, &b)| f64::from(a) - f64::from(b)));
    let below = 20.0 * (signal / residual.max(1e-300)).log10();
    if residual == 0.0 {
        eprintln!("the renders are identical, bit for bit");
    } else {
        eprintln!("largest difference {worst:e}; residual {below:.1} dB below the signal");
    }
    assert!(signal > 0.01, "the chain is not silent");
    assert!(worst <= 1e-6, "a sample {worst:e} apart");
    assert!(
        below >= 100.0,
        "the residual is only {below:.1} dB below the signal"
    );
}
