//! What the tests that drive real servers (JACK, PulseAudio) and the `downbeat` binary share.
// Each test binary includes this module and uses a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

pub mod jack_server;

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

#[path = "../../../engine/tests/support/mod.rs"]
mod library;
#[allow(unused_imports)]
pub use library::*;
