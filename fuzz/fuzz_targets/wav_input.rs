//! WAV files for `--input`: `InputFile::from_bytes`, the reader `InputFile::open` uses
//! (hound; a recording past 4 GB is RF64, which it must refuse with a message).
#![no_main]

use std::path::Path;

use downbeat::device::InputFile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match InputFile::from_bytes(data, Path::new("fuzz.wav")) {
        Ok(input) => {
            let _ = (input.frames(), input.channels(), input.sample_rate());
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
