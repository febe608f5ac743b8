//! `downbeat run --watch`: the project file rewritten while it plays on the virtual device,
//! once in place and once by renaming a new file over it (as editors save), heard in the
//! `--out` recording: a live parameter moves, an added node sounds, a version with a syntax
//! error is reported and changes nothing, a later good one applies, and a node kept across
//! the reloads goes on where it was (no discontinuity).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod support;

const RATE: f64 = 48_000.0;
/// 50 ms: a whole number of periods of both 440 Hz and 220 Hz.
const WINDOW: usize = 2_400;

/// A 440 Hz sine through the gain `g` and the mix `m`; `more` adds nodes (and `edges` their
/// edges).
fn version(gain: &str, edges: &str, more: &str) -> String {
    format!(
        "block_size = 64\n\
         edges = [\"s -> g -> m -> out\"{edges}]\n\
         [nodes.s]\ntype = \"sine\"\nfreq = 440.0\namp = 0.5\nchannels = 1\n\
         [nodes.g]\ntype = \"gain\"\nchannels = 1\ngain = {gain}\n\
         [nodes.m]\ntype = \"mix\"\nchannels = 1\n\
         [nodes.out]\ntype = \"output\"\nchannels = 1\n{more}"
    )
}

/// The amplitude of the `freq` component of `x` (a whole number of its periods long).
fn amplitude(x: &[f32], freq: f64) -> f64 {
    let w = 2.0 * std::f64::consts::PI * freq / RATE;
    let (mut re, mut im) = (0.0, 0.0);
    for (n, &v) in x.iter().enumerate() {
        re += f64::from(v) * (w * n as f64).cos();
        im -= f64::from(v) * (w * n as f64).sin();
    }
    2.0 * (re * re + im * im).sqrt() / x.len() as f64
}

/// Waits up to 10 s for a stderr line holding `what`; returns the lines up to it.
fn wait_for(lines: &mpsc::Receiver<String>, what: &str, log: &mut Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => {
                let found = line.contains(what);
                log.push(line);
                if found {
                    return;
                }
            }
            Err(_) => panic!("no `{what}` on stderr; so far:\n{}", log.join("\n")),
        }
    }
}

#[test]
fn a_watched_project_is_edited_while_it_plays() {
    let project = support::tmp("watch", "p.toml");
    let wav = support::tmp("watch", "out.wav");
    let v1 = version("1.0", "", "");
    let v2 = version("0.5", "", "");
    let sub = "[nodes.n]\ntype = \"sine\"\nfreq = 220.0\namp = 0.25\nchannels = 1\n";
    let v3 = version("0.5", ", \"n -> m\"", sub);
    let v4 = version("1.0", ", \"n -> m\"", sub);
    // Line 4 of it, `type = "sine` without its closing quote.
    let broken = v3.replacen("type = \"sine\"", "type = \"sine", 1);
    std::fs::write(&project, &v1).unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .arg("run")
        .arg(&project)
        .args(["--watch", "--device", "virtual", "--seconds", "5", "--json"])
        .arg("--out")
        .arg(&wav)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, lines) = mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut log = Vec::new();
    wait_for(&lines, "watch: reloading", &mut log);
    let start = Instant::now();
    let at = |seconds: f64| {
        let t = Duration::from_secs_f64(seconds);
        std::thread::sleep(t.saturating_sub(start.elapsed()));
    };

    at(0.8);
    std::fs::write(&project, &v2).unwrap(); // in place
    wait_for(&lines, "watch: reloaded", &mut log);
    at(1.6);
    let tmp = project.with_extension("toml.new");
    std::fs::write(&tmp, &v3).unwrap();
    std::fs::rename(&tmp, &project).unwrap(); // a new file renamed over it
    wait_for(&lines, "watch: reloaded", &mut log);
    at(2.4);
    std::fs::write(&project, &broken).unwrap();
    wait_for(&lines, "not applied", &mut log);
    at(3.2);
    std::fs::write(&project, &v4).unwrap();
    wait_for(&lines, "watch: reloaded", &mut log);

    let out = child.wait_with_output().unwrap();
    log.extend(lines.iter());
    let log = log.join("\n");
    assert!(out.status.success(), "exit {:?}:\n{log}", out.status);
    assert!(
        log.contains("watch: reloaded") && log.contains("1 parameter moved"),
        "{log}"
    );
    assert!(
        log.contains("1 node added, 1 edge connected"),
        "the rename: {log}"
    );
    assert!(
        log.contains("not applied; the run goes on as it was")
            && log.contains("p.toml:4:13")
            && log.contains("invalid basic string"),
        "the syntax error, with its file and line: {log}"
    );

    let (x, channels) = support::read_wav(&wav);
    assert_eq!((channels, x.len()), (1, 5 * 48_000));
    let windows: Vec<(f64, f64)> = x
        .chunks_exact(WINDOW)
        .map(|w| (amplitude(w, 440.0), amplitude(w, 220.0)))
        .collect();
    let near = |a: f64, b: f64| (a - b).abs() < 0.01;
    let first = |from: usize, what: &dyn Fn((f64, f64)) -> bool| {
        (from..windows.len())
            .find(|&i| what(windows[i]))
            .unwrap_or_else(|| panic!("no change after window {from}: {windows:?}"))
    };
    // Where each version starts to sound (half way there): the gain halves, the 220 Hz
    // sine comes in, the gain is back. A change (smoothed over a few ms) may straddle two
    // windows, the one before its half way point and the one after: both skipped.
    let gain_down = first(0, &|(a, _)| a < 0.375);
    let added = first(gain_down + 1, &|(_, b)| b > 0.125);
    let gain_up = first(added + 1, &|(a, _)| a > 0.375);
    let expect = |from: usize, to: usize, a440: f64, a220: f64, what: &str| {
        assert!(to > from + 4, "{what}: windows {from}..{to}: {windows:?}");
        for (i, &(a, b)) in windows.iter().enumerate().take(to).skip(from) {
            assert!(
                near(a, a440) && near(b, a220),
                "{what}: window {i} has 440 Hz at {a:.4}, 220 Hz at {b:.4}; \
                 expected {a440}, {a220}"
            );
        }
    };
    let n = windows.len();
    expect(0, gain_down - 1, 0.5, 0.0, "the first version");
    expect(
        gain_down + 1,
        added - 1,
        0.25,
        0.0,
        "the gain changed in place",
    );
    // Through the version with the syntax error, which changed nothing.
    expect(
        added + 1,
        gain_up - 1,
        0.25,
        0.25,
        "the node added by a rename",
    );
    expect(gain_up + 1, n, 0.5, 0.25, "the good version after the bad");

    // The sine kept across the reloads goes on where it was: no sample-to-sample step
    // larger than the signal's own largest (each sine's amplitude times its phase step per
    // sample), plus what the gain's smoothing adds, anywhere, the edits included.
    let step = |(a, b): (f64, f64)| {
        2.0 * std::f64::consts::PI / RATE * (a * 440.0 + b * 220.0) * 1.02 + 0.002
    };
    for (i, pair) in x.windows(2).enumerate() {
        let w = i / WINDOW;
        let bound = [w.saturating_sub(1), w, (w + 1).min(windows.len() - 1)]
            .iter()
            .map(|&k| step(windows[k]))
            .fold(0.0, f64::max);
        let jump = f64::from(pair[1] - pair[0]).abs();
        assert!(
            jump <= bound,
            "a step of {jump:.4} at sample {i} ({:.3} s), over the signal's {bound:.4}",
            i as f64 / RATE
        );
    }
}
