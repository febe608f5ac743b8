//! The resampler's audio-thread calls (`process`, `set_speed`, `input_needed`, `reset`) and
//! `map_channels` make no allocation, free, lock or system call: they run under the guard, on
//! inputs that make them do work (checked outside the guard), at speed 1 (exact phases),
//! under varispeed (interpolated phases), across buffer compaction, and for 1, 2 and 6
//! channels (each inner loop).
// Reference signals and measurements may use the platform's math; the engine may not.
#![allow(clippy::disallowed_methods)]

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
