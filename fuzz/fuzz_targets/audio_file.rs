//! Audio files (WAV, FLAC, Ogg Vorbis, MP3): `downbeat_file::check`, a streaming `Decoder`
//! read and seek, and `decode_all` (what a `sampler` loads), on any bytes handed over as a
//! file in memory (symphonia 0.5 finds the format from the bytes alone; it ignores the name's
//! extension).
#![no_main]

use std::path::Path;

use downbeat_file::{check, decode_all, memory, Decoder};
use libfuzzer_sys::fuzz_target;

/// Frames read from the decoder at most: a few bytes of FLAC can stand for minutes of
/// silence, which is a long file, not a fault.
const READ_LIMIT: u64 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz");
    memory::add_file(path, data);
    if let Err(e) = check(path) {
        let _ = e.to_string();
    }
    if let Ok(mut decoder) = Decoder::open(path) {
        let channels = decoder.info().channels;
        let mut block = vec![0.0f32; 4096 * channels];
        let mut read = 0u64;
        while read < READ_LIMIT {
            match decoder.read(&mut block) {
                Ok(0) => break,
                Ok(n) => read += n as u64,
                // A damaged packet is skipped: reading goes on after it, as the player does.
                Err(e) => {
                    let _ = e.to_string();
                    read += 4096;
                }
            }
        }
        // Back to the middle and to the start, as a player's cue and loop do.
        for frame in [read / 2, 0] {
            if decoder.seek(frame).is_ok() {
                let _ = decoder.read(&mut block);
            }
        }
        if read < READ_LIMIT {
            if let Err(e) = decode_all(path, 48_000) {
                let _ = e.to_string();
            }
        }
    }
    memory::clear();
});
