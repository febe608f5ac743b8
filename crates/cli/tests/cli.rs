//! The `downbeat` binary end to end: exit codes, error messages, renders.

mod support;

use std::path::Path;
use std::process::Output;

use support::downbeat;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn every_malformed_project_fails_with_exit_2_and_names_the_line() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 15, "corpus has only {} files", files.len());
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let header = text.lines().next().unwrap();
        let spec = header.strip_prefix("# expect: ").unwrap_or_else(|| {
            panic!("{} lacks an `# expect: LINE | TEXT` header", file.display())
        });
        let (line, needle) = spec.split_once(" | ").unwrap();
        let path = file.to_str().unwrap();
        let out = downbeat(&["check", path]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{path}: exit code\n{err}");
        assert!(
            err.contains(&format!("{path}:{line}:")),
            "{path}: message does not name line {line}:\n{err}"
        );
        assert!(
            err.contains(needle),
            "{path}: message lacks `{needle}`:\n{err}"
        );
        assert!(!err.contains("panicked"), "{path}: panicked\n{err}");
        let run = downbeat(&["run", path, "--device", "offline", "--seconds", "0.1"]);
        assert_eq!(run.status.code(), Some(2), "{path}: `run` exit code");
    }
}

#[test]
fn missing_file_and_bad_arguments_exit_2() {
    let out = downbeat(&["check", "no/such/project.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no/such/project.toml"),
        "{}",
        stderr(&out)
    );

    let hello = "examples/projects/hello.toml";
    for args in [
        &["run", hello, "--seconds", "-1"][..],
        &["run", hello, "--seconds", "soon"],
        &["run", hello, "--device", "soundblaster"],
        &["run", hello, "--out", "no/such/dir/x.wav"],
        &["frobnicate"],
    ] {
        let out = downbeat(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{args:?}");
    }
}

/// `--transport` takes `internal`, `jack` or `jack-master` (a bad value exits 2 naming the
/// valid ones), and JACK's transport only on the JACK device.
#[test]
fn a_bad_transport_exits_2_with_the_valid_values() {
    let hello = "examples/projects/hello.toml";
    let out = downbeat(&["run", hello, "--transport", "bogus"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for value in ["internal", "jack", "jack-master"] {
        assert!(err.contains(value), "`{value}` not named: {err}");
    }
    for transport in ["jack", "jack-master"] {
        let out = downbeat(&[
            "run",
            hello,
            "--device",
            "offline",
            "--transport",
            transport,
        ]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!(
                "--transport {transport} only applies to `--device jack`, not to `--device offline`"
            )),
            "{err}"
        );
    }
    let out = downbeat(&[
        "run",
        hello,
        "--device",
        "offline",
        "--seconds",
        "0.1",
        "--transport",
        "internal",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// The guide's example of exit 1: a WAV file that cannot be written once the run is under way
/// (the device full), as opposed to a path that cannot be opened (bad input, exit 2 above).
#[test]
fn a_recording_that_cannot_be_written_exits_1_and_names_the_file() {
    let out = downbeat(&[
        "run",
        "examples/projects/hello.toml",
        "--device",
        "offline",
        "--seconds",
        "1",
        "--out",
        "/dev/full",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot write `/dev/full`"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn example_projects_check_clean() {
    for p in [
        "examples/projects/hello.toml",
        "examples/projects/fanin84.toml",
    ] {
        let out = downbeat(&["check", p]);
        assert!(out.status.success(), "{p}: {}", stderr(&out));
    }
    let out = downbeat(&["check", "examples/projects/fanin84.toml"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("156 nodes"), "{text}");
}

fn wav_samples(path: &Path) -> (hound::WavSpec, Vec<f32>) {
    let mut r = hound::WavReader::open(path).unwrap();
    let spec = r.spec();
    (spec, r.samples::<f32>().map(Result::unwrap).collect())
}

#[test]
fn fanin84_offline_render_is_long_enough_audible_and_bit_identical() {
    let dir = std::env::temp_dir().join(format!("downbeat-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut renders = Vec::new();
    for k in 0..2 {
        let wav = dir.join(format!("fanin84-{k}.wav"));
        let out = downbeat(&[
            "run",
            "examples/projects/fanin84.toml",
            "--device",
            "offline",
            "--seconds",
            "5",
            "--out",
            wav.to_str().unwrap(),
            "--json",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
        for key in [
            "blocks",
            "load_p50",
            "load_p99",
            "load_p999",
            "load_max",
            "missed",
        ] {
            assert!(json.get(key).is_some(), "JSON lacks {key}: {json}");
        }
        assert_eq!(json["blocks"], 431, "5 s at 44.1 kHz in 512-frame blocks");
        renders.push(wav_samples(&wav));
    }
    let (spec, a) = &renders[0];
    assert_eq!((spec.channels, spec.sample_rate), (2, 44100));
    assert_eq!(a.len(), 5 * 44100 * 2, "5 s of stereo");
    let peak = a.iter().fold(0.0f32, |m, s| m.max(s.abs()));
    assert!(peak > 0.01, "render is silent (peak {peak})");
    assert!(a.iter().all(|s| s.is_finite()));
    assert!(a == &renders[1].1, "two renders differ");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn virtual_device_runs_in_real_time_and_records() {
    let dir = std::env::temp_dir().join(format!("downbeat-virt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let wav = dir.join("hello.wav");
    let out = downbeat(&[
        "run",
        "examples/projects/hello.toml",
        "--seconds",
        "0.5",
        "--out",
        wav.to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["device"], "virtual");
    // Real-time pacing: half a second of audio cannot be produced much faster than that.
    assert!(json["wall_seconds"].as_f64().unwrap() >= 0.45, "{json}");
    let (_, samples) = wav_samples(&wav);
    assert_eq!(samples.len(), 24000 * 2);
    assert!(samples.iter().any(|&s| s.abs() > 0.01));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn text_summary_names_the_percentiles() {
    let out = downbeat(&[
        "run",
        "examples/projects/hello.toml",
        "--device",
        "offline",
        "--seconds",
        "1",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for word in ["blocks", "P50", "P99", "P99.9", "max", "deadline misses"] {
        assert!(text.contains(word), "summary lacks {word}:\n{text}");
    }
}

#[test]
fn nodes_lists_every_type() {
    let out = downbeat(&["nodes"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for t in downbeat::all_node_types() {
        assert!(text.contains(&format!("{}:", t.name())), "{}", t.name());
    }
    // Live parameters are marked, the others are not.
    assert!(
        text.contains("gain           a number from 0 to 16 (default 1), live:"),
        "{text}"
    );
    assert!(
        text.contains("(default 2): number of audio channels"),
        "channels is not live: {text}"
    );
}
