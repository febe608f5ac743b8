//! Damage found later in a stream, past the first second that loading checks: the reader
//! reports it, the player plays silence from there and counts it, and the run goes on.
//!
//! The damaged file is real: a sox-made WAV cut short after 1.5 s of its 3 s, so its header
//! promises frames the file does not hold and the decoder fails where the data stops.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::Format;
use downbeat::device::{Device, RunLength, Virtual};
use downbeat::Engine;
use downbeat_file::stream::{Reader, Source, SourceError};
use downbeat_file::{Player, PlayerSettings};
use downbeat_graph::{AudioMut, AudioRef, Node, NodeConfig, ProcessContext};

const RATE: u32 = 48_000;
const BLOCK: usize = 256;
const CFG: NodeConfig = NodeConfig {
    sample_rate: RATE,
    max_block: BLOCK,
};

/// A stereo 16-bit WAV of 3 s cut after `keep_frames` frames of audio (the header is left
/// as it was). Returns the path and the frames it holds.
fn cut_wav(keep_frames: u64) -> (PathBuf, u64) {
    let full = common::make(Format::Wav16, RATE, 2, 3.0);
    let bytes = std::fs::read(&full).unwrap();
    let data_bytes = 3 * RATE as usize * 2 * 2;
    let header = bytes.len() - data_bytes;
    let path = common::dir().join(format!("cut-after-{keep_frames}.wav"));
    std::fs::write(&path, &bytes[..header + keep_frames as usize * 4]).unwrap();
    (path, keep_frames)
}

fn engine(node: Player) -> Engine {
    common::player_engine(node, RATE, BLOCK)
}

#[test]
fn a_file_damaged_after_its_first_second_plays_silence_from_there_and_the_run_goes_on() {
    let (path, good) = cut_wav(72_000); // 1.5 s
    let settings = PlayerSettings {
        path: path.clone(),
        read_ahead: 1.0,
        ..PlayerSettings::default()
    };
    // Loading checks the first second only: this file loads.
    let node = Player::open(&settings, &CFG, &Reader::new(Duration::from_micros(500)))
        .unwrap_or_else(|e| panic!("the first second is whole, so the file loads: {e}"));
    let monitor = node.player_monitor();
    let recorded = common::dir().join("damaged-run.wav");
    let frames = 96_000u64; // 2 s: half a second past the damage
    let run = Virtual::new(Some(recorded.clone()))
        .run(engine(node), RunLength { frames })
        .expect("the run goes on past the damage");
    assert_eq!(run.report.frames, frames);
    drop(run);

    let s = monitor.status();
    assert_eq!(s.damage_reports(), 1, "the reader reported the damage once");
    // Symphonia may drop the last partial packet before the cut: allow a packet's worth.
    let silent = frames - good;
    assert!(
        s.damaged_frames() >= silent && s.damaged_frames() <= silent + 4096,
        "damaged frames: {} (expected about {silent})",
        s.damaged_frames()
    );
    assert_eq!(
        s.underrun_frames(),
        0,
        "silence for damage is not an underrun"
    );

    let out = downbeat_file::decode_all(&recorded, RATE).unwrap();
    assert_eq!(out.frames() as u64, frames, "the whole run was recorded");
    let before = &out.samples[..(good as usize - 4096) * 2];
    let after = &out.samples[(good as usize) * 2..];
    assert!(
        common::rms(before) > 0.1,
        "the file played up to the damage: rms {}",
        common::rms(before)
    );
    assert!(after.iter().all(|&v| v == 0.0), "silence after the damage");
    assert_eq!(
        before,
        &common_decode_prefix(&path, before.len())[..],
        "what played is the file"
    );
}

/// The first `n` samples of the cut file, decoded directly (up to where it is damaged).
fn common_decode_prefix(path: &Path, n: usize) -> Vec<f32> {
    let mut decoder = downbeat_file::Decoder::open(path).unwrap();
    let mut out = vec![0.0f32; n];
    let mut at = 0;
    while at < n {
        let got = decoder.read(&mut out[at..]).unwrap();
        assert!(got > 0);
        at += got * 2;
    }
    out
}

/// Ramp frames up to `good`, then damage: every read from there fails; a seek before it
/// reads again.
struct FailsAt {
    next: u64,
    good: u64,
}

impl Source for FailsAt {
    fn channels(&self) -> usize {
        1
    }
    fn read(&mut self, out: &mut [f32]) -> Result<usize, SourceError> {
        if self.next >= self.good {
            return Err(SourceError::Damaged {
                frame: self.next,
                reason: "test damage".into(),
            });
        }
        let n = (self.good - self.next).min(out.len() as u64) as usize;
        for (k, v) in out[..n].iter_mut().enumerate() {
            *v = 1.0 + (self.next + k as u64) as f32;
        }
        self.next += n as u64;
        Ok(n)
    }
    fn seek(&mut self, frame: u64) -> Result<(), SourceError> {
        self.next = frame;
        Ok(())
    }
}

fn block(node: &mut Player, n: u64, out: &mut [f32]) {
    let ctx = ProcessContext::new(RATE, BLOCK, n * BLOCK as u64);
    node.process(
        &ctx,
        AudioRef::new(&[], 0, BLOCK, BLOCK),
        AudioMut::new(out, 1, BLOCK, BLOCK),
    );
}

#[test]
fn damage_in_a_synthetic_stream_is_counted_frame_for_frame_and_a_seek_plays_again() {
    let reader = Reader::new(Duration::from_micros(200));
    let good = 10 * BLOCK as u64 + 100;
    let settings = PlayerSettings {
        channels: 1,
        read_ahead: 0.02,
        ..PlayerSettings::default()
    };
    let mut node = Player::from_source(
        Box::new(FailsAt { next: 0, good }),
        RATE,
        Some(good * 10),
        Path::new("fails-at"),
        &settings,
        &CFG,
        &reader,
    )
    .unwrap();
    let monitor = node.player_monitor();
    // Waits for the reader as an offline render does, so that no frame is an underrun and
    // the counts are exact.
    node.set_offline(true);
    let mut out = vec![0.0f32; BLOCK];
    let mut heard = Vec::new();
    for n in 0..20 {
        block(&mut node, n, &mut out);
        heard.extend_from_slice(&out);
    }
    let expected: Vec<f32> = (0..good).map(|k| 1.0 + k as f32).collect();
    assert_eq!(
        &heard[..good as usize],
        &expected[..],
        "the good part played"
    );
    assert!(
        heard[good as usize..].iter().all(|&v| v == 0.0),
        "silence from the damage on"
    );
    let s = monitor.status();
    assert_eq!(s.damage_reports(), 1);
    assert_eq!(s.damaged_frames(), 20 * BLOCK as u64 - good);
    assert_eq!(s.underrun_frames(), 0);
    // The run goes on: a seek back before the damage plays the file again.
    node.set_param(11, 0.0);
    block(&mut node, 20, &mut out);
    assert_eq!(
        &out[..],
        &expected[..BLOCK],
        "played again from the seek's frame"
    );
    assert_eq!(s.damage_reports(), 1);
    assert_eq!(s.damaged_frames(), 20 * BLOCK as u64 - good);
}
