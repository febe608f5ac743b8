//! `downbeat latency`: plays a click train, finds each click again in what the device
//! captured, and reports the measured round trip next to what the audio API claims.
//!
//! The clicks are short bursts of deterministic noise, whose autocorrelation has one sharp
//! peak, so the lag at which a captured burst best matches the one played is the round trip
//! to the frame, even through a sample format conversion or a quiet, noisy path.

use std::path::PathBuf;

use clap::ValueEnum;
use downbeat::device::{
    self as devices, DeviceKind, RunLength, TransportSync, MAX_CALLBACK_FRAMES,
};
use downbeat::nodes::{Capture, Output};
use downbeat::Engine;
use downbeat_cli::Failure;
use downbeat_graph::{AudioMut, AudioRef, CompileConfig, Graph, Node, ProcessContext};
use serde::Serialize;

use crate::run::DeviceArgs;
use crate::values::parse_seconds;

/// Frames in one click.
const CLICK: usize = 256;
/// Frames between clicks: room for round trips up to a third of a second at 48 kHz.
const INTERVAL: usize = 24_000;
/// The longest round trip searched for, in frames.
const MAX_LAG: usize = 16_000;
/// Frames per block.
const BLOCK: usize = 256;
/// Normalised correlation a captured click needs to count as found.
const FOUND: f64 = 0.5;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum LatencyDevice {
    /// The computer's sound output and input (build with `--features system`).
    System,
    /// A JACK server (build with `--features jack`); connect the ports with `--connect` and
    /// `--connect-in`.
    Jack,
}

/// The options of `downbeat latency`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The device to measure.
    #[arg(long, value_enum, default_value_t = LatencyDevice::System)]
    device: LatencyDevice,
    /// With `--device system`: the output device (see `downbeat devices`).
    #[arg(long, value_name = "NAME")]
    output_device: Option<String>,
    /// With `--device system`: the input device.
    #[arg(long, value_name = "NAME")]
    input_device: Option<String>,
    /// With `--device jack`: connect the output to the JACK input ports starting with this.
    #[arg(long, value_name = "PORT")]
    connect: Option<String>,
    /// With `--device jack`: connect the input to the JACK output ports starting with this
    /// (e.g. `downbeat:out_1` for a loop inside the server).
    #[arg(long, value_name = "PORT")]
    connect_in: Option<String>,
    /// Seconds of clicks (two a second at 48 kHz).
    #[arg(long, default_value_t = 3.0, value_parser = parse_seconds)]
    seconds: f64,
    /// Print the result as one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

/// The click train: a burst of noise every [`INTERVAL`] frames, on every channel.
struct Clicks {
    channels: usize,
}

/// The burst: deterministic noise (an LCG), the same every time.
fn burst() -> [f32; CLICK] {
    let mut x = 0x2545_f491_u32;
    std::array::from_fn(|_| {
        x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        ((x >> 8) as f32 / (1u32 << 24) as f32 - 0.5) * 1.0
    })
}

impl Node for Clicks {
    fn input_channels(&self) -> usize {
        0
    }

    fn output_channels(&self) -> usize {
        self.channels
    }

    fn process(&mut self, ctx: &ProcessContext, _input: AudioRef<'_>, mut output: AudioMut<'_>) {
        let burst = burst();
        for c in 0..self.channels {
            for (i, o) in output.channel_mut(c).iter_mut().enumerate() {
                let k = (ctx.position as usize + i) % INTERVAL;
                *o = if k < CLICK { burst[k] } else { 0.0 };
            }
        }
    }
}

#[derive(Serialize)]
struct Measured {
    device: &'static str,
    sample_rate: u32,
    clicks: usize,
    found: usize,
    measured_frames: Option<usize>,
    measured_ms: Option<f64>,
    spread_frames: Option<usize>,
    claimed_frames: Option<u64>,
    claimed_ms: Option<f64>,
    xruns: u64,
}

/// For the click played at `at`, the lag (within `0..MAX_LAG`) at which the capture best
/// matches it, and the normalised correlation there.
fn find(played: &[f32], captured: &[f32], at: usize) -> Option<(usize, f64)> {
    let click = played.get(at..at + CLICK)?;
    let energy: f64 = click.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
    let mut best = None::<(usize, f64)>;
    for lag in 0..MAX_LAG {
        let Some(window) = captured.get(at + lag..at + lag + CLICK) else {
            break;
        };
        let (mut dot, mut e) = (0.0f64, 0.0f64);
        for (&a, &b) in click.iter().zip(window) {
            dot += f64::from(a) * f64::from(b);
            e += f64::from(b) * f64::from(b);
        }
        if e > 0.0 {
            let r = dot / (energy * e).sqrt();
            if best.is_none_or(|(_, b)| r > b) {
                best = Some((lag, r));
            }
        }
    }
    best
}

/// Channel `c` of an interleaved WAV file.
fn channel(path: &PathBuf, c: usize) -> Result<Vec<f32>, Failure> {
    let mut r = hound::WavReader::open(path)
        .map_err(|e| Failure::Runtime(format!("cannot read `{}`: {e}", path.display())))?;
    let ch = usize::from(r.spec().channels);
    let all: Vec<f32> = r
        .samples::<f32>()
        .collect::<Result<_, _>>()
        .map_err(|e| Failure::Runtime(format!("cannot read `{}`: {e}", path.display())))?;
    Ok(all.into_iter().skip(c).step_by(ch.max(1)).collect())
}

pub(crate) fn run(args: &Args) -> Result<(), Failure> {
    let dir = std::env::temp_dir().join(format!("downbeat-latency-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| Failure::Runtime(format!("cannot create `{}`: {e}", dir.display())))?;
    let (played_wav, captured_wav) = (dir.join("played.wav"), dir.join("captured.wav"));
    let device = DeviceArgs {
        device: match args.device {
            LatencyDevice::System => DeviceKind::System,
            LatencyDevice::Jack => DeviceKind::Jack,
        },
        connect: args.connect.clone(),
        connect_in: args.connect_in.clone(),
        midi_in: None,
        output_device: args.output_device.clone(),
        input_device: args.input_device.clone(),
        input: None,
        record_input: Some(captured_wav.clone()),
        fallback: None,
        out: Some(played_wav.clone()),
        transport: TransportSync::Internal,
        transport_requests: None,
    };
    device.check()?;
    let result = measure(args, &device, &played_wav, &captured_wav);
    let _ = std::fs::remove_dir_all(&dir);
    let r = result?;
    if args.json {
        println!("{}", serde_json::to_string(&r).expect("result serializes"));
    } else {
        println!(
            "downbeat latency on the {} device, {} Hz: {} of {} clicks came back",
            r.device, r.sample_rate, r.found, r.clicks
        );
        match (r.measured_frames, r.measured_ms, r.spread_frames) {
            (Some(f), Some(ms), Some(spread)) => println!(
                "measured round trip {f} frames ({ms:.2} ms), spread {spread} frames across clicks"
            ),
            _ => println!("measured round trip: none (no click came back)"),
        }
        match (r.claimed_frames, r.claimed_ms) {
            (Some(f), Some(ms)) => {
                println!("the audio API claims {f} frames ({ms:.2} ms) of output and input latency")
            }
            _ => println!("the audio API claims nothing"),
        }
    }
    if r.found == 0 {
        return Err(Failure::Runtime(
            "no click came back: the output does not reach the input (connect them: a cable, \
             a loopback device, or `--connect-in` on JACK)"
                .into(),
        ));
    }
    Ok(())
}

fn measure(
    args: &Args,
    device: &DeviceArgs,
    played_wav: &PathBuf,
    captured_wav: &PathBuf,
) -> Result<Measured, Failure> {
    // Without the files: asking about the device records nothing.
    let spec = DeviceArgs {
        out: None,
        record_input: None,
        ..device.clone()
    }
    .spec(None);
    let rate = spec.sample_rate(48_000, true)?;
    let in_channels = spec.input_channels()?.unwrap_or(1);
    let cfg = CompileConfig {
        sample_rate: rate,
        max_block: BLOCK.min(MAX_CALLBACK_FRAMES),
    };
    let mut g = Graph::new();
    let clicks = g.add("clicks", Clicks { channels: 2 });
    let out = g.add("out", Output::new(2));
    g.connect(clicks, out);
    g.set_output(out);
    let schedule = g
        .compile(cfg)
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    let mut engine = Engine::new(schedule);
    // No node reads it, but the device captures into it and the run records it.
    engine.set_capture(Capture::new(in_channels, BLOCK));
    let length = RunLength::seconds(args.seconds, rate);
    let mut dev = devices::open(&device.spec(None))?;
    let run = dev.run(engine, length)?;
    let played = channel(played_wav, 0)?;
    let captured = channel(captured_wav, 0)?;
    let starts: Vec<usize> = (0..played.len().saturating_sub(CLICK))
        .step_by(INTERVAL)
        .collect();
    let mut lags: Vec<usize> = starts
        .iter()
        .filter_map(|&at| find(&played, &captured, at))
        .filter(|&(_, r)| r >= FOUND)
        .map(|(lag, _)| lag)
        .collect();
    lags.sort_unstable();
    let median = lags.get(lags.len() / 2).copied();
    let ms = |f: f64| f * 1000.0 / f64::from(rate);
    let claimed = run.report.claimed_latency.map(|c| c.output + c.input);
    Ok(Measured {
        device: dev.name(),
        sample_rate: rate,
        clicks: starts.len(),
        found: lags.len(),
        measured_frames: median,
        measured_ms: median.map(|f| ms(f as f64)),
        spread_frames: lags.last().zip(lags.first()).map(|(hi, lo)| hi - lo),
        claimed_frames: claimed,
        claimed_ms: claimed.map(|f| ms(f as f64)),
        xruns: run.report.xruns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delayed_quiet_copy_is_found_at_its_lag() {
        let b = burst();
        let mut played = vec![0.0f32; 3 * INTERVAL];
        played[INTERVAL..INTERVAL + CLICK].copy_from_slice(&b);
        // The capture: the click 777 frames later, at a tenth of the level, in noise.
        let mut captured: Vec<f32> = (0..played.len())
            .map(|i| ((i * 7919 % 1000) as f32 / 1000.0 - 0.5) * 0.01)
            .collect();
        for (i, s) in b.iter().enumerate() {
            captured[INTERVAL + 777 + i] += 0.1 * s;
        }
        let (lag, r) = find(&played, &captured, INTERVAL).unwrap();
        assert_eq!(lag, 777);
        assert!(r > 0.9, "{r}");
        // Nothing came back: the best match is poor.
        let silence = vec![0.001f32; played.len()];
        assert!(find(&played, &silence, INTERVAL).unwrap().1 < FOUND);
    }
}
