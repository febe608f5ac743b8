//! The engine uses the collected heap: `downbeat nodes` lists the `echoes` type of
//! `downbeat-gc-nodes`, and its example project renders offline through the CLI, with echoes
//! sounding in the silences between the plucks that started them.

mod support;

use std::process::{Command, Output};

use support::{read_wav, repo, tmp};

const PROJECT: &str = "examples/projects/echoes.toml";

fn downbeat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("the downbeat binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn nodes_lists_echoes_and_its_parameters() {
    let out = downbeat(&["nodes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let at = text.find("\nechoes: ").expect("`echoes` is listed");
    let mut lines = text[at + 1..].lines();
    let head = lines.next().unwrap();
    assert!(head.contains("collected heap"), "{head}");
    // Its parameters: the indented lines that follow, up to the next type.
    let params: Vec<&str> = lines
        .take_while(|l| l.starts_with("    "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        params,
        [
            "channels",
            "delay",
            "feedback",
            "threshold",
            "max_taps",
            "mix"
        ]
    );
}

#[test]
fn the_example_project_renders_offline_with_echoes_in_the_silences() {
    let check = downbeat(&["check", PROJECT]);
    assert!(check.status.success(), "{}", stderr(&check));
    let wav = tmp("echoes", "echoes.wav");
    let out = downbeat(&[
        "run",
        PROJECT,
        "--device",
        "offline",
        "--seconds",
        "4",
        "--out",
        wav.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (samples, channels) = read_wav(&wav);
    assert_eq!(channels, 2);
    assert_eq!(samples.len(), 4 * 48_000 * 2, "4 s of stereo at 48 kHz");
    assert!(
        samples.iter().all(|s| s.is_finite()),
        "a sample is not finite"
    );
    let peak = samples.iter().fold(0.0f32, |m, s| m.max(s.abs()));
    assert!(peak > 0.01, "the render is silent (peak {peak})");
    // The string sounds for the first 0.2 s of every 0.6 s and is exactly silent for the
    // rest: whatever sounds from 0.25 s to 0.55 s of a period is echoes (0.15 s apart).
    let frame = |t: f64| (t * 48_000.0) as usize * channels;
    for period in 0..6 {
        let start = period as f64 * 0.6;
        let gap = &samples[frame(start + 0.25)..frame(start + 0.55)];
        let gap_peak = gap.iter().fold(0.0f32, |m, s| m.max(s.abs()));
        assert!(
            gap_peak > 0.001,
            "no echo between the plucks of period {period} (peak {gap_peak})"
        );
    }
    std::fs::remove_file(&wav).ok();
}

#[test]
fn the_readme_and_the_project_show_the_same_command() {
    let command = "cargo run --release -- run examples/projects/echoes.toml --device offline \
                   --seconds 8 --out echoes.wav";
    for file in ["README.md", PROJECT] {
        let text = std::fs::read_to_string(repo().join(file)).unwrap();
        assert!(text.contains(command), "{file} lacks `{command}`");
    }
}
