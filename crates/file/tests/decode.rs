//! Our decode of files made by `sox` and `ffmpeg` equals theirs: lossless files within one LSB
//! of the file's bit depth against `sox`, lossy files against `ffmpeg` after the codec's delay.
// Reference measurements may use the platform's math; the engine may not.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{Format, CHANNELS, RATES};
use downbeat_file::{decode_all, Decoder};

#[test]
fn lossless_files_decode_as_sox_decodes_them() {
    for format in Format::LOSSLESS {
        for rate in RATES {
            for channels in CHANNELS {
                let path = common::make(format, rate, channels, 1.3);
                let ours = decode_all(&path, rate).unwrap();
                assert_eq!(ours.channels, channels, "{}", path.display());
                let theirs = common::sox_decode(&path);
                assert_eq!(
                    ours.samples.len(),
                    theirs.len(),
                    "{}: length",
                    path.display()
                );
                // One LSB of the file, or of the f32 output where that is coarser (32-bit
                // integer files: f32 has 24 bits of mantissa).
                let lsb = common::lsb(format);
                for (i, (a, b)) in ours.samples.iter().zip(&theirs).enumerate() {
                    let tolerance = lsb.max(b.abs() * f64::from(f32::EPSILON));
                    assert!(
                        (f64::from(*a) - b).abs() <= tolerance,
                        "{}: sample {i} is {a}, sox says {b} (one LSB is {tolerance})",
                        path.display()
                    );
                }
                let info = Decoder::open(&path).unwrap().info().clone();
                assert_eq!(info.sample_rate, rate);
                assert_eq!(info.frames, Some((theirs.len() / channels) as u64));
            }
        }
    }
}
