//! The resampler's audio-thread calls (`process`, `set_speed`, `input_needed`, `reset`) and
//! `map_channels` make no allocation, free, lock or system call: they run under the guard, on
//! inputs that make them do work (checked outside the guard), at speed 1 (exact phases),
//! under varispeed (interpolated phases), across buffer compaction, and for 1, 2 and 6
//! channels (each inner loop). So does a `sampler` node in one-shot mode, built from files
//! by this crate's node type, playing the notes a device hands the engine.
// Reference signals and measurements may use the platform's math; the engine may not.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use downbeat::project::Project;
use downbeat::Engine;
use downbeat_file::{map_channels, Resampler};
use downbeat_rt::guard;

downbeat_rt::install_guard_allocator!();

/// Fails unless the guard could watch everything it watches on this platform: a clean report
/// from a guard that saw nothing proves nothing.
fn assert_clean(report: &guard::Report, what: &str) {
    if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        assert!(
            report.is_complete(),
            "{what}: the guard could not track everything:\n{report}"
        );
    }
    assert!(report.is_clean(), "{what}:\n{report}");
}

#[test]
fn resampler_calls_do_not_allocate_lock_or_make_system_calls() {
    for (channels, from, to) in [
        (1, 44_100, 48_000),
        (2, 48_000, 44_100),
        (6, 44_100, 96_000),
        (2, 44_100, 47_999),
    ] {
        let mut r = Resampler::new(channels, from, to).unwrap();
        let input: Vec<f32> = (0..48_000 * channels)
            .map(|i| ((i / channels) as f32 * 0.03).sin())
            .collect();
        let mut output = vec![0.0f32; 256 * channels];
        let mut used = 0;
        let mut energy = 0.0f32;
        // Many blocks: the internal buffer fills and compacts, speed changes every block.
        let speeds = [1.0, 1.5, 0.7, 1.0, 4.0, 0.25, 1.0];
        let (_, report) = guard::check_with(&guard::Options::new(), || {
            for block in 0..100 {
                r.set_speed(speeds[block % speeds.len()]);
                let need = r.input_needed(256);
                let need = need.min(input.len() / channels - used);
                let (u, w) = r.process(
                    &input[used * channels..(used + need) * channels],
                    &mut output,
                );
                used += u;
                energy += output[..w * channels].iter().map(|x| x * x).sum::<f32>();
                if block == 50 {
                    r.reset();
                }
            }
        });
        assert_clean(&report, &format!("Resampler {channels} ch {from} -> {to}"));
        assert!(used > 10_000, "the resampler consumed only {used} frames");
        assert!(
            energy > 100.0,
            "the resampler wrote silence (energy {energy})"
        );
    }
}

#[test]
fn map_channels_does_not_allocate_lock_or_make_system_calls() {
    let input: Vec<f32> = (0..512 * 6).map(|i| i as f32).collect();
    let mut output = vec![0.0f32; 512 * 6];
    let mut total = 0.0f32;
    let (_, report) = guard::check_with(&guard::Options::new(), || {
        for (i, o) in [(1, 2), (2, 1), (2, 2), (6, 2), (2, 6), (3, 4)] {
            let frames = map_channels(&input[..512 * i], i, &mut output[..512 * o], o);
            total += output[..frames * o].iter().sum::<f32>();
        }
    });
    assert_clean(&report, "map_channels");
    assert!(total > 0.0);
}

/// A mono 16-bit WAV file at 44.1 kHz of `frames` frames: a decaying tone at `freq` Hz.
fn write_hit(path: &Path, frames: usize, freq: f32) {
    let data: Vec<u8> = (0..frames)
        .flat_map(|i| {
            let t = i as f32 / 44_100.0;
            let decay = 1.0 - i as f32 / frames as f32;
            let x = 0.8 * decay * (std::f32::consts::TAU * freq * t).sin();
            ((x * 32_767.0) as i16).to_le_bytes()
        })
        .collect();
    let mut b = Vec::with_capacity(44 + data.len());
    b.extend_from_slice(b"RIFF");
    b.extend_from_slice(&(36 + data.len() as u32).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    b.extend_from_slice(&16u32.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes()); // PCM
    b.extend_from_slice(&1u16.to_le_bytes()); // mono
    b.extend_from_slice(&44_100u32.to_le_bytes());
    b.extend_from_slice(&(44_100u32 * 2).to_le_bytes());
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&16u16.to_le_bytes());
    b.extend_from_slice(b"data");
    b.extend_from_slice(&(data.len() as u32).to_le_bytes());
    b.extend_from_slice(&data);
    std::fs::write(path, b).unwrap();
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("downbeat-file-guard-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A count a node's monitor reports.
fn count(engine: &Engine, node: &str, name: &str) -> u64 {
    let monitors = engine.schedule().monitors();
    let (_, monitor) = monitors.iter().find(|(n, _)| n == node).unwrap();
    let counts = monitor.counts();
    counts.iter().find(|c| c.name == name).unwrap().value
}

#[test]
fn a_one_shot_sampler_playing_notes_does_not_allocate_lock_or_make_system_calls() {
    let dir = scratch();
    let (kick, tone) = (dir.join("kick.wav"), dir.join("tone.wav"));
    write_hit(&kick, 3_000, 90.0);
    write_hit(&tone, 9_000, 440.0);
    // A kit and a keyboard, both one-shot and with fewer voices than the notes sent, read
    // from files at 44.1 kHz into a 48 kHz project: every note steals, the keyboard plays at
    // other speeds than 1, note 40 is not in the kit.
    let text = format!(
        "sample_rate = 48000\nblock_size = 128\nedges = [\"kit -> out\", \"keys -> out\"]\n\
         [nodes.kit]\ntype = \"sampler\"\nsamples = {{ 36 = {kick:?}, 38 = {kick:?} }}\n\
         mode = \"oneshot\"\nvoices = 2\n\
         [nodes.keys]\ntype = \"sampler\"\nsample = {tone:?}\nroot = 60\n\
         mode = \"oneshot\"\nvoices = 3\n\
         [nodes.out]\ntype = \"output\"\n"
    );
    let project = Project::parse(&text, "one-shot.toml").unwrap();
    let mut engine = Engine::new(project.build().unwrap());
    let mut block = vec![0.0f32; 128 * engine.channels()];
    for _ in 0..20 {
        engine.process(&mut block);
    }
    const BLOCKS: usize = 300;
    // The last notes start here, their note offs and an all-notes-off follow: a one-shot
    // voice ignores both and plays to its sample's end, where a gated one would be silent
    // 19 blocks later (its default release is 0.05 s).
    const LAST_NOTES: usize = BLOCKS - 30;
    let mut peaks = vec![0.0f32; BLOCKS];
    let report = guard::check(|| {
        for (b, peak) in peaks.iter_mut().enumerate() {
            if b <= LAST_NOTES {
                for (k, note) in [36u8, 38, 40, 60, 72].into_iter().enumerate() {
                    let at = (b * 37 + k * 11) as u32 % 120;
                    engine.midi(at, &[0x90, note, 100]);
                    engine.midi(at + 5, &[0x80, note, 0]);
                }
            }
            if b % 8 == 0 || b == LAST_NOTES + 1 {
                engine.midi(0, &[0xB0, 123, 0]);
            }
            engine.process(&mut block);
            *peak = block
                .iter()
                .fold(0.0f32, |p, x| if x.abs() > p { x.abs() } else { p });
        }
    });
    assert_clean(&report, "sampler, one-shot");
    let midi = engine.midi_input();
    assert_eq!(
        (midi.dropped(), midi.ignored()),
        (0, 0),
        "every note reached the samplers"
    );
    assert!(
        count(&engine, "kit", "steals") > 0,
        "the kit never stole a voice"
    );
    assert!(
        count(&engine, "keys", "steals") > 0,
        "the keyboard never stole a voice"
    );
    assert!(
        count(&engine, "kit", "unmapped_notes") > 0,
        "note 40 was not counted"
    );
    let silent = peaks.iter().filter(|&&p| p == 0.0).count();
    assert_eq!(silent, 0, "{silent} of {BLOCKS} blocks were silent");
    let tail = &peaks[LAST_NOTES + 22..];
    assert!(tail.iter().all(|&p| p > 0.01), "cut short: {tail:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
