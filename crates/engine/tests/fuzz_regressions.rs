//! Inputs the fuzz targets of `fuzz/` found, kept with their fixes: each once made the
//! engine's readers panic, hang or ask for gigabytes. The input is in `fuzz_regressions/`,
//! named after its target.

use std::path::{Path, PathBuf};

use downbeat::device::InputFile;

fn input(name: &str) -> (PathBuf, Vec<u8>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz_regressions")
        .join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path, bytes)
}

/// `wav_input`: an extensible header whose valid-bits field says 43280 bits per sample;
/// computing the integer scale from it shifted a `u64` by 43279 (a panic in debug builds,
/// garbage in release). Refused now, naming the file and the bits.
#[test]
fn an_input_wav_with_impossible_sample_bits_is_refused_by_name() {
    let (path, bytes) = input("wav_input-extensible-valid-bits.bin");
    let err = InputFile::from_bytes(&bytes, &path)
        .unwrap_err()
        .to_string();
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("43280-bit"), "{err}");
}
