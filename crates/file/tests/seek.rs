//! Seeking is sample-exact in every format: reading after `seek(n)` gives what decoding the
//! whole file from the start gives from frame `n` on, including for MP3 and Vorbis, where the
//! decoder must start from an earlier packet and drop frames.
// Reference measurements may use the platform's math; the engine may not.
#![allow(clippy::disallowed_methods)]

mod common;

use common::Format;
use downbeat_file::{Decoder, FileError};

/// Reads `frames` frames (fewer at the end of the file).
fn read(dec: &mut Decoder, frames: usize) -> Vec<f32> {
    let ch = dec.info().channels;
    let mut out = vec![0.0; frames * ch];
    let mut got = 0;
    while got < frames {
        let n = dec.read(&mut out[got * ch..]).unwrap();
        if n == 0 {
            break;
        }
        got += n;
    }
    out.truncate(got * ch);
    out
}

#[test]
fn reading_after_a_seek_equals_decoding_from_the_start() {
    for format in Format::ALL {
        for channels in [1, 2] {
            let rate = 44_100;
            let path = common::make(format, rate, channels, 1.3);
            let mut dec = Decoder::open(&path).unwrap();
            let whole = downbeat_file::decode_all(&path, rate).unwrap().samples;
            let total = whole.len() / channels;
            // Frame 0, inside the first packet, across packet boundaries, backwards, near the end.
            for target in [
                1000,
                0,
                1,
                577,
                1152,
                4095,
                30_001,
                12_345,
                total as u64 - 10,
            ] {
                dec.seek(target).unwrap();
                assert_eq!(dec.position(), target);
                let got = read(&mut dec, 2000);
                let from = target as usize * channels;
                let want = &whole[from..(from + 2000 * channels).min(whole.len())];
                assert_eq!(
                    got.len(),
                    want.len(),
                    "{}: seek to {target}",
                    path.display()
                );
                let worst = got
                    .iter()
                    .zip(want)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f32::max);
                assert!(
                    worst == 0.0,
                    "{}: after seek({target}) the samples differ from a whole decode by up to {worst}",
                    path.display()
                );
            }
            // The end, and past it.
            dec.seek(total as u64).unwrap();
            assert!(
                read(&mut dec, 10).is_empty(),
                "{}: read after seeking to the end",
                path.display()
            );
            match dec.seek(total as u64 + 1) {
                Err(e @ FileError::SeekOutOfRange { .. }) => {
                    assert!(e.to_string().contains(path.to_str().unwrap()), "{e}")
                }
                other => panic!("{}: seek past the end gave {other:?}", path.display()),
            }
        }
    }
}
