//! Lossless files resampled by us match `sox F -r 48000 … rate -v` (which also keeps the time
//! origin) frame for frame, with no alignment: the residual is below -60 dB relative to the
//! signal.

mod common;

use common::{Format, CHANNELS};
use downbeat_file::decode_all;

#[test]
fn resampled_lossless_files_match_sox_rate_v_frame_for_frame() {
    for format in [
        Format::Wav16,
        Format::Wav24,
        Format::WavFloat,
        Format::Flac16,
        Format::Flac24,
    ] {
        for (from, to) in [
            (44_100, 48_000),
            (96_000, 48_000),
            (48_000, 44_100),
            (44_100, 96_000),
        ] {
            for channels in CHANNELS {
                let path = common::make(format, from, channels, 1.3);
                let ours = decode_all(&path, to).unwrap();
                let theirs = common::sox_resample(&path, to);
                assert_eq!(ours.rate, to);
                // sox rounds the length to the nearest frame, we round up: at most one apart.
                let frames = ours.frames().min(theirs.len() / channels);
                assert!(
                    ours.frames().abs_diff(theirs.len() / channels) <= 1,
                    "{} -> {to}: {} frames, sox {}",
                    path.display(),
                    ours.frames(),
                    theirs.len() / channels
                );
                let n = frames * channels;
                let db = common::residual_db(&ours.samples[..n], &theirs[..n]);
                println!(
                    "{} -> {to} Hz: residual against sox {db:.1} dB",
                    path.display()
                );
                assert!(
                    db < -60.0,
                    "{} -> {to} Hz: residual against sox {db:.1} dB",
                    path.display()
                );
            }
        }
    }
}
