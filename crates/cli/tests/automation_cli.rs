//! `[[automation]]` renders the same on every device: `downbeat run` on the offline and the
//! virtual device writes the same file, bit for bit.

use std::path::Path;
use std::process::Command;

mod support;

fn run(dir: &Path, device: &str, wav: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .arg("run")
        .arg(dir.join("p.toml"))
        .args(["--device", device, "--seconds", "0.6", "--out"])
        .arg(wav)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn automation_renders_identically_on_the_offline_and_virtual_devices() {
    let dir = std::env::temp_dir().join(format!("downbeat-automation-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut project = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/projects/hello.toml"),
    )
    .unwrap();
    project.push_str(
        r#"
[[automation]]
node = "lowpass"
param = "freq"
points = [[0.05, 3000.0], [0.3, 150.0, "exp"], [0.45, 900.0, "linear"]]

[[automation]]
node = "mix"
param = "pan"
points = [[0.1, -1.0], [0.5, 1.0, "linear"]]
"#,
    );
    std::fs::write(dir.join("p.toml"), project).unwrap();
    let (offline, live) = (dir.join("offline.wav"), dir.join("virtual.wav"));
    run(&dir, "offline", &offline);
    run(&dir, "virtual", &live);
    let read = |p: &Path| -> Vec<f32> {
        hound::WavReader::open(p)
            .unwrap()
            .samples::<f32>()
            .map(Result::unwrap)
            .collect()
    };
    let (a, b) = (read(&offline), read(&live));
    assert_eq!(a.len(), 2 * 28_800);
    support::assert_bit_identical(&a, &b, "offline against virtual");
    // The automation did something: at 0.5 s the pan is hard right.
    let level = |from: usize| -> f32 {
        a[2 * 24_000 + from..2 * 28_000]
            .iter()
            .step_by(2)
            .map(|x| x.abs())
            .sum()
    };
    let (left, right) = (level(0), level(1));
    assert!(
        right > 0.0 && left < right * 1e-3,
        "hard right leaves the left channel silent: {left} against {right}"
    );
}
