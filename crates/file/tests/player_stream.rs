//! The player over synthetic sources: its audio-thread paths under the guard (read, seek
//! to a cue and elsewhere, loop wrap, underrun, resampling), an underrun counted on the
//! virtual device when the reader is made slow on purpose, and an offline render that is
//! bit-identical however slow the reader is.

mod common;

use std::path::Path;
use std::time::Duration;

use downbeat::device::{Device, Offline, RunLength, Virtual};
use downbeat::Engine;
use downbeat_file::stream::{Reader, Source, SourceError};
use downbeat_file::{Player, PlayerSettings};
use downbeat_graph::{AudioMut, AudioRef, Node, NodeConfig, ProcessContext};
use downbeat_rt::guard;

downbeat_rt::install_guard_allocator!();

const RATE: u32 = 48_000;
const BLOCK: usize = 256;

/// Frame `n` is `(n % 1000) / 1000` on channel 0 and its negative on channel 1, for
/// `frames` frames; each read sleeps `delay` (a slow disk).
struct Ramp {
    next: u64,
    frames: u64,
    delay: Duration,
}

impl Source for Ramp {
    fn channels(&self) -> usize {
        2
    }
    fn read(&mut self, out: &mut [f32]) -> Result<usize, SourceError> {
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        let n = (self.frames.saturating_sub(self.next)).min(out.len() as u64 / 2) as usize;
        for k in 0..n {
            let v = ((self.next + k as u64) % 1000) as f32 / 1000.0;
            out[2 * k] = v;
            out[2 * k + 1] = -v;
        }
        self.next += n as u64;
        Ok(n)
    }
    fn seek(&mut self, frame: u64) -> Result<(), SourceError> {
        self.next = frame;
        Ok(())
    }
}

fn value(frame: u64) -> f32 {
    (frame % 1000) as f32 / 1000.0
}

fn player(settings: &PlayerSettings, rate: u32, delay: Duration, reader: &Reader) -> Player {
    let cfg = NodeConfig {
        sample_rate: RATE,
        max_block: BLOCK,
    };
    let source = Box::new(Ramp {
        next: 0,
        frames: u64::from(rate) * 4,
        delay,
    });
    Player::from_source(
        source,
        rate,
        Some(u64::from(rate) * 4),
        Path::new("ramp"),
        settings,
        &cfg,
        reader,
    )
    .unwrap()
}

fn block(node: &mut Player, n: u64, out: &mut [f32]) {
    let ctx = ProcessContext::new(RATE, BLOCK, n * BLOCK as u64);
    node.process(
        &ctx,
        AudioRef::new(&[], 0, BLOCK, BLOCK),
        AudioMut::new(out, 2, BLOCK, BLOCK),
    );
}

/// Processes blocks until the node plays audio again (the reader caught up), outside any
/// guard.
fn until_audible(node: &mut Player, out: &mut [f32]) {
    for n in 0..10_000 {
        block(node, n, out);
        if out[BLOCK - 1] != 0.0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("the reader never caught up");
}

#[test]
fn read_seek_loop_and_underrun_are_real_time_safe() {
    let reader = Reader::new(Duration::from_micros(200));
    let settings = PlayerSettings {
        looping: true,
        loop_start: 0.5,
        loop_end: 0.6,
        cues: vec![1.0],
        read_ahead: 0.2,
        ..PlayerSettings::default()
    };
    for rate in [RATE, 44_100] {
        let mut node = player(&settings, rate, Duration::ZERO, &reader);
        let monitor = node.player_monitor();
        let mut out = vec![0.0f32; 2 * BLOCK];
        // Warm up: every path once, outside the guard.
        block(&mut node, 0, &mut out);
        node.set_param(11, 1.0);
        block(&mut node, 1, &mut out);
        node.set_param(11, 2.0);
        block(&mut node, 2, &mut out);
        node.set_param(11, 0.0);
        until_audible(&mut node, &mut out);
        let before = monitor.status().underrun_frames();
        let (heard, report) = guard::check_with(&guard::Options::new(), || {
            let mut heard = [0.0f32; 4];
            // Steady reading through two loop wraps (0.5..0.6 s is 4800 frames).
            for n in 0..30 {
                block(&mut node, n, &mut out);
            }
            heard[0] = out[0];
            // A seek to the cue plays its cache at once.
            node.set_param(11, 1.0);
            block(&mut node, 30, &mut out);
            heard[1] = out[10]; // channel 0, frame 10 (planar: channel 0 first)
                                // A seek elsewhere is silent until the reader has decoded there: an underrun.
            node.set_param(11, 3.0);
            block(&mut node, 31, &mut out);
            heard[2] = out[5];
            heard[3] = out[BLOCK + 5];
            heard
        });
        assert!(report.is_complete(), "{report}");
        report.assert_clean();
        assert!(heard[0] != 0.0, "it played at {rate} Hz");
        if rate == RATE {
            assert_eq!(heard[1], value(48_000 + 10), "the cue played at once");
        } else {
            assert!(heard[1] != 0.0, "the cue played at once at {rate} Hz");
        }
        assert_eq!(
            (heard[2], heard[3]),
            (0.0, 0.0),
            "silence after a seek elsewhere"
        );
        assert!(
            monitor.status().underrun_frames() > before,
            "the seek elsewhere was counted as an underrun"
        );
    }
}

fn engine(node: Player) -> Engine {
    common::player_engine(node, RATE, BLOCK)
}

#[test]
fn a_slow_reader_underruns_on_the_virtual_device_and_is_counted() {
    let reader = Reader::new(Duration::from_micros(200));
    // 0.05 s of read-ahead in chunks of 300 frames (6.25 ms), each read taking 20 ms: the
    // reader delivers about a third of real time.
    let settings = PlayerSettings {
        read_ahead: 0.05,
        ..PlayerSettings::default()
    };
    let node = player(&settings, RATE, Duration::from_millis(20), &reader);
    let monitor = node.player_monitor();
    let run = Virtual::new(None)
        .run(
            engine(node),
            RunLength {
                frames: RATE as u64 / 2,
            },
        )
        .unwrap();
    drop(run);
    let s = monitor.status();
    assert!(
        s.underruns() > 0 && s.underrun_frames() > 0,
        "underruns: {}",
        s.underrun_frames()
    );
    assert_eq!(s.damaged_frames(), 0);
}

#[test]
fn an_offline_render_waits_for_a_slow_reader_and_is_bit_identical() {
    let reader = Reader::new(Duration::from_micros(200));
    let settings = PlayerSettings {
        read_ahead: 0.05,
        start: 0.3,
        ..PlayerSettings::default()
    };
    let dir = std::env::temp_dir().join(format!("downbeat-player-slow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut renders = Vec::new();
    for (delay, name) in [
        (Duration::ZERO, "fast.wav"),
        (Duration::from_millis(5), "slow.wav"),
    ] {
        let node = player(&settings, 44_100, delay, &reader);
        let monitor = node.player_monitor();
        let out = dir.join(name);
        Offline::new(Some(out.clone()))
            .run(engine(node), RunLength { frames: 20_000 })
            .unwrap();
        assert_eq!(
            monitor.status().underrun_frames(),
            0,
            "{name}: no underrun offline"
        );
        renders.push(downbeat_file::decode_all(&out, RATE).unwrap().samples);
    }
    assert!(renders[0].iter().any(|&s| s != 0.0));
    assert!(renders[0] == renders[1], "the slow reader's render differs");
    std::fs::remove_dir_all(&dir).unwrap();
}
