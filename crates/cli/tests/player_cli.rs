//! The `player` node from the command line: bad input at load (a missing file, a file that
//! is not audio, a WAV cut inside its first second) exits 2 naming the file, from `check`
//! and from `run`; the example project plays. Needs sox.

use std::path::{Path, PathBuf};
use std::process::Command;

mod projects;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("downbeat-player-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn project(dir: &Path, file: &str) -> PathBuf {
    let p = dir.join("p.toml");
    std::fs::write(
        &p,
        format!(
            "edges = [\"f -> out\"]\n[nodes.f]\ntype = \"player\"\npath = \"{file}\"\n\
             [nodes.out]\ntype = \"output\"\n"
        ),
    )
    .unwrap();
    p
}

fn downbeat(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .args(args)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn bad_files_exit_2_naming_the_file() {
    let d = dir("bad");
    std::fs::write(d.join("text.wav"), "this is not audio\n".repeat(100)).unwrap();
    // A 2 s WAV cut to a quarter of a second: its header promises more than it holds.
    let full = d.join("full.wav");
    let status = Command::new("sox")
        .args(["-n", "-r", "48000", "-c", "2", "-b", "16"])
        .arg(&full)
        .args(["synth", "2", "sine", "440"])
        .status()
        .expect("sox is needed (apt-get install sox)");
    assert!(status.success());
    let bytes = std::fs::read(&full).unwrap();
    std::fs::write(d.join("cut.wav"), &bytes[..44 + 48_000]).unwrap();
    for (file, problem) in [
        ("missing.wav", "cannot open"),
        ("text.wav", "unsupported"),
        ("cut.wav", "corrupt"),
    ] {
        let p = project(&d, file);
        let p = p.to_str().unwrap();
        for args in [
            vec!["check", p],
            vec!["run", p, "--device", "offline", "--seconds", "0.1"],
        ] {
            let (code, text) = downbeat(&args);
            assert_eq!(code, 2, "{args:?} on {file}: {text}");
            let first = text.lines().next().unwrap_or("");
            assert!(
                first.contains(&format!("{file}: {problem}")),
                "{args:?}: the error names {file} and says {problem:?}: {text}"
            );
        }
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_example_project_plays() {
    projects::make_player_file();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let project = root.join("examples/projects/player.toml");
    let out = dir("example").join("out.wav");
    let (code, text) = downbeat(&[
        "run",
        project.to_str().unwrap(),
        "--device",
        "offline",
        "--seconds",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
    let audio = downbeat_file::decode_all(&out, 48_000).unwrap();
    assert_eq!(audio.frames(), 48_000);
    assert!(audio.samples.iter().any(|&s| s.abs() > 0.1), "it played");
    std::fs::remove_dir_all(out.parent().unwrap()).unwrap();
}
