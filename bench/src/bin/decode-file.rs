//! `decode-file PATH [RATE]`: decodes PATH with `downbeat-file` (resampled to RATE if given)
//! and discards the samples, so `downbeat-bench files` can time it as a whole process beside
//! `sox` and `ffmpeg` doing the same to /dev/null. Prints the frames decoded.

use std::path::Path;
use std::process::ExitCode;

use downbeat_file::{Decoder, Resampler};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: decode-file PATH [RATE]");
        return ExitCode::from(2);
    };
    match decode(Path::new(path), args.get(2).and_then(|r| r.parse().ok())) {
        Ok(frames) => {
            println!("{frames}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("decode-file: {e}");
            ExitCode::from(2)
        }
    }
}

fn decode(path: &Path, rate: Option<u32>) -> Result<u64, downbeat_file::FileError> {
    let mut dec = Decoder::open(path)?;
    let ch = dec.info().channels;
    let mut resampler = match rate {
        Some(r) if r != dec.info().sample_rate => {
            Some(Resampler::new(ch, dec.info().sample_rate, r)?)
        }
        _ => None,
    };
    let mut block = vec![0.0f32; 4096 * ch];
    let mut out = vec![0.0f32; 4096 * 9 * ch];
    let mut frames = 0u64;
    let mut check = 0.0f32;
    loop {
        let n = dec.read(&mut block)?;
        if n == 0 {
            break;
        }
        match resampler.as_mut() {
            Some(r) => {
                let mut used = 0;
                while used < n {
                    let (u, w) = r.process(&block[used * ch..n * ch], &mut out);
                    used += u;
                    frames += w as u64;
                    check += out.first().copied().unwrap_or(0.0);
                }
            }
            None => {
                frames += n as u64;
                check += block[0];
            }
        }
    }
    std::hint::black_box(check);
    Ok(frames)
}
