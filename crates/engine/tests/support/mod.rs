//! What the tests that drive real servers (JACK, PulseAudio) and the `downbeat` binary share.
// Each test binary includes this module and uses a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// The repository's root, where `examples/` lives.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the `downbeat` binary with `args` in the repository's root and waits for it.
pub fn downbeat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("the downbeat binary runs")
}

/// A path for `name` in a temporary folder of this test binary's own (`suite` names it).
pub fn tmp(suite: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("downbeat-{suite}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Sends `signal` (`"-TERM"`, `"-INT"`) to `child` and waits up to five seconds for it to
/// exit, then kills it: a server stopped this way removes its registrations, a recorder
/// finalises its file.
pub fn terminate(child: &mut Child, signal: &str) {
    if let Ok(None) = child.try_wait() {
        let _ = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status();
        let t = Instant::now();
        while let Ok(None) = child.try_wait() {
            if t.elapsed() > Duration::from_secs(5) {
                let _ = child.kill();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The interleaved samples of a WAV file (integer formats scaled to ±1) and its channel
/// count.
pub fn read_wav(path: &Path) -> (Vec<f32>, usize) {
    let mut r = hound::WavReader::open(path)
        .unwrap_or_else(|e| panic!("{} is not a valid WAV file: {e}", path.display()));
    let spec = r.spec();
    let samples = match spec.sample_format {
        hound::SampleFormat::Float => r.samples::<f32>().map(Result::unwrap).collect(),
        hound::SampleFormat::Int => {
            let scale = 1.0 / (1u64 << (spec.bits_per_sample - 1)) as f32;
            r.samples::<i32>()
                .map(|s| s.unwrap() as f32 * scale)
                .collect()
        }
    };
    (samples, usize::from(spec.channels))
}

/// A project in which a constant 1.0 (a sine at 0 Hz, a quarter turn in) goes through the
/// gain `g` to the output, so the output is the gain, sample for sample. `[nodes.g]` comes
/// last: a caller may append keys of `g` (`gain = 0.0`) and then tables (`[[automation]]`).
pub fn constant_through_gain(block_size: usize) -> String {
    format!(
        r#"block_size = {block_size}
edges = ["s -> g -> out"]
[nodes.s]
type = "sine"
freq = 0.0
phase = 0.25
amp = 1.0
channels = 1
[nodes.out]
type = "output"
channels = 1
[nodes.g]
type = "gain"
channels = 1
"#
    )
}

/// Where two recordings stop being the same, bit for bit: the first sample whose bits
/// differ, or the shorter length when one is a prefix of the other (a truncated file is a
/// difference, which a bare `zip` would hide); `None` when they are identical.
pub fn first_difference(a: &[f32], b: &[f32]) -> Option<usize> {
    a.iter()
        .zip(b)
        .position(|(x, y)| x.to_bits() != y.to_bits())
        .or((a.len() != b.len()).then(|| a.len().min(b.len())))
}

/// Fails with `what`, both lengths and the first differing sample unless `a` and `b` are
/// the same length and identical bit for bit.
pub fn assert_bit_identical(a: &[f32], b: &[f32], what: &str) {
    if let Some(i) = first_difference(a, b) {
        panic!(
            "{what}: {} and {} samples, first difference at sample {i} ({:?} against {:?})",
            a.len(),
            b.len(),
            a.get(i),
            b.get(i)
        );
    }
}
