//! Lossy files (Ogg Vorbis, MP3 made by `ffmpeg`) decode as `ffmpeg` decodes them, once the
//! codec's delay is accounted for: we find the frame offset between the two decodes (symphonia
//! removes the encoder delay and padding the file declares; ffmpeg may keep part of it) and
//! require the residual after that offset to be small.

mod common;

use common::{Format, CHANNELS};
use downbeat_file::decode_all;

/// Largest offset searched, in frames (MP3's decoder delay is 529 frames plus the encoder's
/// 576-1152; Vorbis' pre-skip is at most a block).
const MAX_OFFSET: usize = 4096;

/// The largest residual against ffmpeg's decode, relative to the signal: both decoders are
/// floating point implementations of the same standard, so they differ by rounding only
/// (measured: -118 to -138 dB).
const TOLERANCE_DB: f64 = -100.0;

/// Best offset `d` (ours[n] ≈ theirs[n + d], d may be negative) and the residual there, in dB
/// relative to the signal.
fn align(ours: &[f32], theirs: &[f32], ch: usize) -> (i64, f64) {
    let mut best = (0i64, f64::INFINITY);
    for d in -(MAX_OFFSET as i64)..=MAX_OFFSET as i64 {
        let (a, b) = if d >= 0 {
            (ours, theirs.get(d as usize * ch..).unwrap_or(&[]))
        } else {
            (ours.get((-d) as usize * ch..).unwrap_or(&[]), theirs)
        };
        let n = a.len().min(b.len());
        if n < ch * 1000 {
            continue;
        }
        // Compare a stretch in the middle, where both have the signal.
        let mid = n / 2 / ch * ch;
        let (a, b) = (&a[mid..mid + 2048 * ch], &b[mid..mid + 2048 * ch]);
        let db = common::residual_db(a, b);
        if db < best.1 {
            best = (d, db);
        }
    }
    best
}

#[test]
fn lossy_files_decode_as_ffmpeg_decodes_them() {
    for format in [Format::Vorbis, Format::Mp3] {
        for rate in common::rates(format) {
            for channels in CHANNELS {
                let path = common::make(format, rate, channels, 1.3);
                let ours = decode_all(&path, rate).unwrap();
                let theirs = common::ffmpeg_decode(&path);
                let (offset, db) = align(&ours.samples, &theirs, channels);
                let whole = common::residual_db(&ours.samples, &theirs);
                println!(
                    "{}: offset {offset} frames, residual {db:.1} dB in the middle, {whole:.1} dB \
                     over the whole file, lengths {} vs {}",
                    path.display(),
                    ours.frames(),
                    theirs.len() / channels
                );
                // Both decoders remove the delay and padding the encoder declared (LAME's
                // header, Vorbis' granule positions): no offset is left.
                assert_eq!(offset, 0, "{}: offset against ffmpeg", path.display());
                assert_eq!(
                    ours.samples.len(),
                    theirs.len(),
                    "{}: length",
                    path.display()
                );
                assert!(
                    whole < TOLERANCE_DB,
                    "{}: residual against ffmpeg {whole:.1} dB (tolerance {TOLERANCE_DB} dB)",
                    path.display()
                );
            }
        }
    }
}
