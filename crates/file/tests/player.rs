//! The `player` node rendered offline over WAV files made by `sox`: the output is the file's
//! samples, from `start`, looped, with gain, resampled at another rate exactly as
//! `decode_all`, and moved by seek and play/stop events at their exact frames (from a
//! `Controller` and from `[[automation]]`). Needs `sox` (fails without it).
// Reference measurements may use the platform's math; the engine may not.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::Command;

use downbeat::control::When;
use downbeat::device::{Device, Offline, RunLength};
use downbeat::project::Project;
use downbeat::Engine;
use downbeat_file::decode_all;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("downbeat-player-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A 1 s stereo 32-bit float WAV of noise at `rate`, made by sox.
fn noise(dir: &Path, rate: u32) -> PathBuf {
    let path = dir.join(format!("noise{rate}.wav"));
    let status = Command::new("sox")
        .args([
            "-R",
            "-n",
            "-r",
            &rate.to_string(),
            "-c",
            "2",
            "-b",
            "32",
            "-e",
            "float",
        ])
        .arg(&path)
        .args(["synth", "1", "whitenoise", "vol", "0.5"])
        .status()
        .expect("sox is needed to make the test files (apt-get install sox)");
    assert!(status.success(), "sox failed");
    path
}

fn project(file: &Path, player: &str, extra: &str) -> Project {
    let text = format!(
        "sample_rate = 48000\nblock_size = 256\nedges = [\"p -> out\"]\n\
         [nodes.p]\ntype = \"player\"\npath = {:?}\n{player}\n\
         [nodes.out]\ntype = \"output\"\n{extra}",
        file.display().to_string()
    );
    Project::parse(&text, "player.toml").unwrap()
}

/// Renders `engine` offline for `frames` frames and reads the result back.
fn render(engine: Engine, frames: u64, out: &Path) -> Vec<f32> {
    Offline::new(Some(out.to_path_buf()))
        .run(engine, RunLength { frames })
        .unwrap();
    decode_all(out, 48_000).unwrap().samples
}

/// Asserts `got == want`, naming the first frame (stereo) that differs instead of printing
/// both.
#[track_caller]
fn same(got: &[f32], want: &[f32], what: &str) {
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        if let Ok(f) = std::env::var("PLAYER_DEBUG_FILE") {
            let all = decode_all(Path::new(&f), 48_000).unwrap().samples;
            let at = all.windows(8).position(|w| w == &got[i..i + 8]);
            eprintln!("got[{}..] is the file at sample {at:?}", i);
        }
        panic!(
            "{what}: first difference at frame {} ({} != {})",
            i / 2,
            got[i],
            want[i]
        );
    }
    assert_eq!(got.len(), want.len(), "{what}: lengths");
}

fn file_samples(path: &Path) -> Vec<f32> {
    decode_all(path, 48_000).unwrap().samples
}

#[test]
fn plays_the_file_sample_for_sample_then_silence() {
    let d = dir("plain");
    let wav = noise(&d, 48_000);
    let want = file_samples(&wav);
    assert_eq!(want.len(), 96_000);
    let engine = Engine::new(project(&wav, "", "").build().unwrap());
    let got = render(engine, 49_000, &d.join("out.wav"));
    same(&got[..96_000], &want, "the file");
    assert!(got[96_000..].iter().all(|&s| s == 0.0));
}

#[test]
fn start_gain_and_loop_points() {
    let d = dir("loop");
    let wav = noise(&d, 48_000);
    let want = file_samples(&wav);
    let engine = Engine::new(
        project(&wav, "start = 0.25\ngain = 0.5", "")
            .build()
            .unwrap(),
    );
    let got = render(engine, 1000, &d.join("start.wav"));
    let expect: Vec<f32> = want[24_000..26_000].iter().map(|s| s * 0.5).collect();
    same(&got, &expect, "start and gain");

    // Loop 0.1 s .. 0.3 s, starting at 0.2 s: 0.1 s to the loop's end, then the loop again
    // and again.
    let engine = Engine::new(
        project(
            &wav,
            "start = 0.2\nloop = true\nloop_start = 0.1\nloop_end = 0.3",
            "",
        )
        .build()
        .unwrap(),
    );
    let got = render(engine, 4800 + 2 * 9600 + 100, &d.join("loop.wav"));
    let mut expect = want[9600 * 2..14_400 * 2].to_vec();
    for _ in 0..3 {
        expect.extend_from_slice(&want[4800 * 2..14_400 * 2]);
    }
    expect.truncate(got.len());
    same(&got, &expect, "loop");
}

#[test]
fn another_rate_plays_as_decode_all_resamples_it() {
    let d = dir("rate");
    let wav = noise(&d, 44_100);
    let want = decode_all(&wav, 48_000).unwrap().samples;
    let engine = Engine::new(project(&wav, "", "").build().unwrap());
    let got = render(engine, want.len() as u64 / 2, &d.join("out.wav"));
    assert_eq!(got.len(), want.len());
    let worst = got
        .iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(worst <= 1e-6, "largest difference {worst}");
}

#[test]
fn seek_stop_and_play_events_from_a_controller_land_at_their_frames() {
    let d = dir("controller");
    let wav = noise(&d, 48_000);
    let want = file_samples(&wav);
    let mut engine = Engine::new(project(&wav, "", "").build().unwrap());
    let mut c = engine.controller(16);
    c.step(When::Frame(1000), "p", "seek", 0.5).unwrap();
    c.step(When::Frame(3001), "p", "playing", 0.0).unwrap();
    c.step(When::Frame(4000), "p", "playing", 1.0).unwrap();
    // A smoothed set acts on its target at its first frame.
    c.send(
        When::Frame(5000),
        c.resolve("p", "seek").unwrap(),
        downbeat_graph::Change::Set(0.25),
    )
    .unwrap();
    let got = render(engine, 6000, &d.join("out.wav"));
    let f = |a: usize, b: usize| &want[a * 2..b * 2];
    same(&got[..2000], f(0, 1000), "before the seek");
    same(&got[2000..6002], f(24_000, 26_001), "after the seek");
    assert!(got[6002..8000].iter().all(|&s| s == 0.0), "stopped");
    same(
        &got[8000..10_000],
        f(26_001, 27_001),
        "resumed where it stopped",
    );
    same(&got[10_000..12_000], f(12_000, 13_000), "smoothed seek");
}

#[test]
fn seek_and_play_from_automation_and_autoplay_off() {
    let d = dir("automation");
    let wav = noise(&d, 48_000);
    let want = file_samples(&wav);
    // 0.01 s = frame 480; 0.02 s = frame 960.
    let auto = "[[automation]]\nnode = \"p\"\nparam = \"playing\"\npoints = [[0.01, 1]]\n\
                [[automation]]\nnode = \"p\"\nparam = \"seek\"\npoints = [[0.02, 0.5]]\n";
    let engine = Engine::new(
        project(&wav, "autoplay = false\ncues = [0.5]", auto)
            .build()
            .unwrap(),
    );
    let got = render(engine, 2000, &d.join("out.wav"));
    assert!(
        got[..960].iter().all(|&s| s == 0.0),
        "waits for playing = 1"
    );
    same(&got[960..1920], &want[..960], "played");
    same(&got[1920..4000], &want[48_000..50_080], "seek to the cue");
}
