//! The resampler's quality, measured against the analytic signal: a logarithmic sweep from
//! 20 Hz to 20 kHz is computed in f64 at the input rate, resampled, and subtracted from the same
//! sweep computed at the output times `n / to_rate`. What is left (pass-band ripple, images,
//! aliases, rounding, and any time offset — a delay of even 1/100 of a sample at 20 kHz would
//! leave -24 dB) must be at least 100 dB below the sweep.
// Reference signals and measurements may use the platform's math; the engine may not.
#![allow(clippy::disallowed_methods)]

use downbeat_file::Resampler;
use std::f64::consts::PI;

const F0: f64 = 20.0;
const F1: f64 = 20_000.0;
const SECONDS: f64 = 2.0;
/// Raised-cosine fades at both ends, so the analytic signal has no step (a step is not
/// band-limited, and no resampler could reproduce it).
const FADE: f64 = 0.05;

/// The sweep at time `t` seconds.
fn sweep(t: f64) -> f64 {
    if !(0.0..=SECONDS).contains(&t) {
        return 0.0;
    }
    let k = (F1 / F0).ln() / SECONDS;
    let phase = 2.0 * PI * F0 * ((k * t).exp() - 1.0) / k;
    let edge = (t.min(SECONDS - t) / FADE).min(1.0);
    let envelope = 0.5 - 0.5 * (PI * edge).cos();
    0.5 * envelope * phase.sin()
}

/// Residual in dB relative to the sweep, after resampling from `from` to `to` in blocks of
/// `block` output frames with `channels` identical channels.
fn residual_db(from: u32, to: u32, channels: usize, block: usize) -> f64 {
    let n_in = (SECONDS * f64::from(from)) as usize + 1;
    let input: Vec<f32> = (0..n_in)
        .flat_map(|i| std::iter::repeat_n(sweep(i as f64 / f64::from(from)) as f32, channels))
        .collect();
    let n_out = (SECONDS * f64::from(to)) as usize + 1;
    let mut output = vec![0.0f32; n_out * channels];
    let mut r = Resampler::new(channels, from, to).unwrap();
    let zeros = vec![0.0f32; r.taps() * channels];
    let (mut used, mut written) = (0, 0);
    while written < n_out {
        let want = block.min(n_out - written);
        let need = r.input_needed(want);
        let input_left = &input[used * channels..];
        let take = need.min(input_left.len() / channels);
        let (u, w) = if take > 0 || need == 0 {
            r.process(
                &input_left[..take * channels],
                &mut output[written * channels..(written + want) * channels],
            )
        } else {
            // Past the end: silence, as after the end of a file.
            r.process(
                &zeros,
                &mut output[written * channels..(written + want) * channels],
            )
        };
        if take > 0 || need == 0 {
            used += u;
        }
        written += w;
    }
    let (mut err, mut sig) = (0.0f64, 0.0f64);
    for n in 0..n_out {
        let want = sweep(n as f64 / f64::from(to));
        for c in 0..channels {
            let got = f64::from(output[n * channels + c]);
            err += (got - want).powi(2);
            sig += want * want;
        }
    }
    10.0 * (err / sig).log10()
}

#[test]
fn a_sweep_resampled_from_44100_to_48000_keeps_the_rest_100_db_down() {
    let db = residual_db(44_100, 48_000, 1, 480);
    println!("44100 -> 48000: {db:.1} dB");
    assert!(
        db < -100.0,
        "44100 -> 48000: everything but the sweep is at {db:.1} dB"
    );
}

#[test]
fn other_ratios_and_block_sizes_also_keep_the_rest_100_db_down() {
    for (from, to, channels, block) in [
        (48_000, 44_100, 2, 256),
        (44_100, 96_000, 1, 64),
        (44_100, 48_000, 2, 1),
        (44_100, 48_000, 3, 4096),
        (44_100, 44_100, 1, 512),
    ] {
        let db = residual_db(from, to, channels, block);
        println!("{from} -> {to}, {channels} ch, blocks of {block}: {db:.1} dB");
        assert!(
            db < -100.0,
            "{from} -> {to} ({channels} channels, blocks of {block}): {db:.1} dB"
        );
    }
}
