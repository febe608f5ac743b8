//! `downbeat run --input FILE.wav`: the file feeds the `input` nodes on the offline and
//! virtual devices, and a missing or misplaced input is a clear exit 2.

fn downbeat(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .unwrap()
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("downbeat-devices-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A stereo project whose output is its input at half the level.
fn through_gain() -> std::path::PathBuf {
    let p = tmp("through.toml");
    std::fs::write(
        &p,
        "block_size = 100\nedges = [\"mic -> g -> out\"]\n[nodes.mic]\ntype = \"input\"\n\
         [nodes.g]\ntype = \"gain\"\ngain = 0.5\n[nodes.out]\ntype = \"output\"\n",
    )
    .unwrap();
    p
}

/// A WAV file of `frames` frames of distinct samples.
fn wav(name: &str, frames: usize, rate: u32) -> (std::path::PathBuf, Vec<f32>) {
    let path = tmp(name);
    let spec = hound::WavSpec {
        channels: 2,
        sample_rate: rate,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let samples: Vec<f32> = (0..frames * 2)
        .map(|i| ((i * 7919) % 2001) as f32 / 1000.0 - 1.0)
        .collect();
    let mut w = hound::WavWriter::create(&path, spec).unwrap();
    for &s in &samples {
        w.write_sample(s).unwrap();
    }
    w.finalize().unwrap();
    (path, samples)
}

fn read(path: &std::path::Path) -> Vec<f32> {
    hound::WavReader::open(path)
        .unwrap()
        .samples::<f32>()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn an_input_file_feeds_the_input_nodes_frame_for_frame_on_offline_and_virtual() {
    let project = through_gain();
    let (input, samples) = wav("in.wav", 4321, 48_000);
    for device in ["offline", "virtual"] {
        let out = tmp(&format!("{device}.wav"));
        let run = downbeat(&[
            "run",
            project.to_str().unwrap(),
            "--device",
            device,
            "--seconds",
            "0.1",
            "--input",
            input.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(
            run.status.success(),
            "{device}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let got = read(&out);
        assert_eq!(got.len(), 2 * 4800, "{device}");
        // The file's frames at half the level, then silence after its end.
        let want: Vec<f32> = samples
            .iter()
            .map(|s| 0.5 * s)
            .chain(std::iter::repeat(0.0))
            .take(got.len())
            .collect();
        assert!(got == want, "{device}: the output is not the input halved");
    }
}

#[test]
fn missing_or_misplaced_input_is_a_clear_exit_2() {
    let project = through_gain();
    let p = project.to_str().unwrap();
    let (input, _) = wav("in2.wav", 100, 48_000);
    let (slow, _) = wav("slow.wav", 100, 44_100);
    let i = input.to_str().unwrap();
    let hello = "examples/projects/hello.toml";
    let cases: [(&[&str], &str); 7] = [
        (&["run", p, "--device", "offline"], "--input FILE.wav"),
        (&["run", p, "--device", "virtual"], "--input FILE.wav"),
        (
            &["run", p, "--device", "offline", "--input", "no/such.wav"],
            "no/such.wav",
        ),
        (
            &["run", hello, "--device", "offline", "--input", i],
            "no `input` node",
        ),
        (
            &[
                "run",
                p,
                "--device",
                "offline",
                "--input",
                slow.to_str().unwrap(),
            ],
            "44100 Hz",
        ),
        (
            &[
                "run",
                p,
                "--device",
                "virtual",
                "--input",
                i,
                "--record-input",
                "x.wav",
            ],
            "--record-input",
        ),
        (
            &["run", hello, "--device", "offline", "--fallback", "virtual"],
            "--fallback",
        ),
    ];
    for (args, needle) in cases {
        let out = downbeat(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}
