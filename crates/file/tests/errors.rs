//! Bad input gets a typed error whose message names the file and the problem: a missing file,
//! garbage bytes, a FLAC cut inside its first frames (caught by `check`, which decodes the first
//! second), a WAV whose data stops before its header's length, a rate the resampler cannot reach.

mod common;

use common::Format;
use downbeat_file::{check, decode_all, Decoder, FileError, Resampler};
use std::path::Path;

fn message_names(err: &FileError, path: &Path, words: &str) {
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("{}: ", path.display())),
        "message does not start with the path: {text}"
    );
    assert!(
        text.contains(words),
        "message {text:?} does not say {words:?}"
    );
}

#[test]
fn a_missing_file_is_an_open_error_naming_it() {
    let path = common::dir().join("no-such-file.wav");
    for err in [
        Decoder::open(&path).unwrap_err(),
        check(&path).unwrap_err(),
        decode_all(&path, 48_000).unwrap_err(),
    ] {
        assert!(matches!(err, FileError::Open { .. }), "{err:?}");
        message_names(&err, &path, "cannot open");
    }
    let err = Decoder::open(common::dir()).unwrap_err();
    assert!(matches!(err, FileError::Open { .. }), "a folder: {err:?}");
}

#[test]
fn garbage_bytes_are_unsupported() {
    for name in ["garbage.wav", "garbage.flac", "garbage.bin"] {
        let path = common::dir().join(name);
        let bytes: Vec<u8> = (0..20_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        std::fs::write(&path, bytes).unwrap();
        let err = check(&path).unwrap_err();
        assert!(
            matches!(err, FileError::Unsupported { .. }),
            "{name}: {err:?}"
        );
        message_names(&err, &path, "unsupported audio file");
    }
    let empty = common::dir().join("empty.wav");
    std::fs::write(&empty, b"").unwrap();
    let err = check(&empty).unwrap_err();
    assert!(
        matches!(
            err,
            FileError::Unsupported { .. } | FileError::Corrupt { .. }
        ),
        "{err:?}"
    );
    message_names(&err, &empty, "");
}

/// The first `keep` bytes of `from`, written next to it under `name`.
fn truncated(from: &Path, keep: usize, name: &str) -> std::path::PathBuf {
    let bytes = std::fs::read(from).unwrap();
    let path = common::dir().join(name);
    std::fs::write(&path, &bytes[..keep.min(bytes.len())]).unwrap();
    path
}

#[test]
fn a_flac_cut_inside_its_first_frames_is_caught_by_check() {
    let full = common::make(Format::Flac16, 44_100, 2, 1.3);
    let size = std::fs::metadata(&full).unwrap().len() as usize;
    // About a third of a second in: the header is whole, the audio stops early.
    let path = truncated(&full, size / 4, "cut.flac");
    // Opening reads the header only, which is whole.
    Decoder::open(&path).unwrap();
    let err = check(&path).unwrap_err();
    assert!(
        matches!(
            err,
            FileError::Corrupt {
                at_frame: Some(_),
                ..
            }
        ),
        "{err:?}"
    );
    message_names(&err, &path, "corrupt audio file at frame");
    // Reading it to the end also reports it.
    let err = decode_all(&path, 44_100).unwrap_err();
    assert!(matches!(err, FileError::Corrupt { .. }), "{err:?}");
    // Cut inside the header.
    let path = truncated(&full, 30, "cut-header.flac");
    let err = check(&path).unwrap_err();
    assert!(
        matches!(
            err,
            FileError::Corrupt { .. } | FileError::Unsupported { .. }
        ),
        "{err:?}"
    );
    message_names(&err, &path, "");
}

#[test]
fn a_wav_shorter_than_its_header_says_is_corrupt() {
    let full = common::make(Format::Wav16, 48_000, 1, 1.3);
    let size = std::fs::metadata(&full).unwrap().len() as usize;
    let path = truncated(&full, size / 2, "cut.wav");
    let err = check(&path).unwrap_err();
    assert!(
        matches!(err, FileError::Corrupt { at_frame: Some(f), .. } if f > 0 && f < 48_000),
        "{err:?}"
    );
    message_names(&err, &path, "but its header says 62400");
}

#[test]
fn a_rate_the_resampler_cannot_reach_is_a_rate_error_naming_the_file() {
    let path = common::make(Format::Wav16, 48_000, 1, 1.3);
    let err = decode_all(&path, 4_000).unwrap_err();
    assert!(
        matches!(
            err,
            FileError::Rate {
                from: 48_000,
                to: 4_000,
                ..
            }
        ),
        "{err:?}"
    );
    message_names(&err, &path, "cannot resample from 48000 Hz to 4000 Hz");
    let err = decode_all(&path, 0).unwrap_err();
    message_names(&err, &path, "cannot resample from 48000 Hz to 0 Hz");
    // Without a file, the message has no path.
    let err = Resampler::new(2, 44_100, 1_000_000).err().unwrap();
    assert!(
        err.to_string()
            .starts_with("cannot resample from 44100 Hz to 1000000 Hz"),
        "{err}"
    );
    assert!(matches!(
        Resampler::new(0, 44_100, 48_000),
        Err(FileError::Channels { channels: 0, .. })
    ));
}
