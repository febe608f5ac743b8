//! The synth suite (issue 15): how many `synth` voices one core renders, and what a burst of
//! note ons costs.
//!
//! * `voices` (48 kHz, 256-frame blocks, saw, one core): for each voice count of
//!   [`SWEEP`], a fresh synth holds that many notes (all sounding, none released) and
//!   renders [`BLOCKS`] blocks after a warm-up; the load of a count is the median block time
//!   over the block period (5.33 ms). Counts above one synth's [`MAX_VOICES`] are split
//!   evenly over several synths rendered one after the other in each block. Per run, `voices_at_0.5_load` is the count at which
//!   the load reaches 0.5, interpolated linearly between the two sweep points around it
//!   (the sweep goes in alternating order from run to run). Rows: that count, and the
//!   median load per sweep point.
//! * `burst`: a silent synth of 128 voices gets 128 note ons spread over one block, and the
//!   time of that block (the 128 `note` calls and the process call that allocates the
//!   voices and renders them) is measured; the median over [`BURSTS`] fresh synths per run,
//!   in µs and as a load.

use std::hint::black_box;
use std::time::Instant;

use downbeat::nodes::{Synth, SynthSettings, Wave, MAX_VOICES};
use downbeat_graph::{AudioMut, AudioRef, Node, NoteEvent, ProcessContext};

use crate::report::{quantile, Report};
use crate::Common;

const SR: u32 = 48000;
const FRAMES: usize = 256;
/// Voice counts measured.
pub const SWEEP: [usize; 11] = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 1536, 2048];
/// Blocks measured per voice count.
pub const BLOCKS: usize = 400;
/// Bursts measured per run.
pub const BURSTS: usize = 200;

fn period() -> f64 {
    FRAMES as f64 / f64::from(SR)
}

fn synth(voices: usize) -> Synth {
    let settings = SynthSettings {
        voices,
        wave: Wave::Saw,
        ..SynthSettings::default()
    };
    Synth::new(1, SR, &settings).expect("valid settings")
}

fn on(k: usize) -> NoteEvent {
    NoteEvent::On {
        channel: 0,
        // Spread over five octaves, fractional so that no two voices share a pitch.
        note: 36.0 + (k % 60) as f32 + (k / 60) as f32 * 0.01,
        velocity: 0.8,
    }
}

/// Seconds one `process` call of `s` takes.
fn block(s: &mut Synth, buf: &mut [f32]) -> f64 {
    let ctx = ProcessContext::new(SR, FRAMES, 0);
    let t = Instant::now();
    s.process(
        &ctx,
        AudioRef::new(&[], 0, FRAMES, FRAMES),
        AudioMut::new(buf, 1, FRAMES, FRAMES),
    );
    let dt = t.elapsed().as_secs_f64();
    black_box(&buf[..]);
    dt
}

/// Median load of `voices` held notes: on one synth up to [`MAX_VOICES`], beyond that
/// split evenly over as many synths as needed, all rendered in each block.
fn load_of(voices: usize, blocks: usize) -> f64 {
    let n = voices.div_ceil(MAX_VOICES);
    let mut synths: Vec<Synth> = (0..n).map(|_| synth(voices / n)).collect();
    let mut buf = vec![0.0f32; FRAMES];
    for s in &mut synths {
        for k in 0..voices / n {
            s.note(0, on(k)).expect("room for the notes");
        }
    }
    let mut run = |synths: &mut Vec<Synth>| synths.iter_mut().map(|s| block(s, &mut buf)).sum();
    // Warm-up: past the attack, so every voice is in its sustain.
    for _ in 0..20 {
        run(&mut synths);
    }
    let sounding: usize = synths.iter().map(Synth::active_voices).sum();
    assert_eq!(sounding, voices, "every voice sounds");
    let mut times: Vec<f64> = (0..blocks).map(|_| run(&mut synths)).collect();
    times.sort_by(f64::total_cmp);
    quantile(&times, 0.5) / period()
}

/// The voice count at which the load reaches `target`, interpolated between sweep points.
fn crossing(points: &[(usize, f64)], target: f64) -> f64 {
    for w in points.windows(2) {
        let ((v0, l0), (v1, l1)) = (w[0], w[1]);
        if l1 >= target {
            if l1 <= l0 {
                return v0 as f64;
            }
            return v0 as f64 + (target - l0) / (l1 - l0) * (v1 - v0) as f64;
        }
    }
    // Never reached: extrapolate from the last point, the load being linear in voices.
    let (v, l) = points[points.len() - 1];
    v as f64 * target / l
}

/// Seconds of a block with 128 note ons spread over it, from silence.
fn burst() -> f64 {
    let mut s = synth(128);
    let mut buf = vec![0.0f32; FRAMES];
    block(&mut s, &mut buf);
    let t = Instant::now();
    for k in 0..128 {
        s.note(k * FRAMES / 128, on(k)).expect("room for the notes");
    }
    let notes = t.elapsed().as_secs_f64();
    notes + block(&mut s, &mut buf)
}

/// Runs the suite.
pub fn run(common: &Common) -> Report {
    let mut report = Report::new("synth");
    let runs = common.runs();
    let blocks = if common.quick { 20 } else { BLOCKS };
    let bursts = if common.quick { 5 } else { BURSTS };
    if common.wants("voices") {
        let mut at_half = Vec::new();
        let mut loads = vec![Vec::new(); SWEEP.len()];
        for r in 0..runs {
            let mut order: Vec<usize> = (0..SWEEP.len()).collect();
            if r % 2 == 1 {
                order.reverse();
            }
            for i in order {
                loads[i].push(load_of(SWEEP[i], blocks));
            }
            let points: Vec<(usize, f64)> =
                SWEEP.iter().zip(&loads).map(|(&v, l)| (v, l[r])).collect();
            at_half.push(crossing(&points, 0.5));
        }
        report.add(
            "voices_at_0.5_load",
            "downbeat synth (saw)",
            "voices",
            &at_half,
        );
        for (v, l) in SWEEP.iter().zip(&loads) {
            report.add(
                &format!("load_{v}_voices"),
                "downbeat synth (saw)",
                "load",
                l,
            );
        }
    }
    if common.wants("burst") {
        let mut micros = Vec::new();
        let mut load = Vec::new();
        for _ in 0..runs {
            let mut t: Vec<f64> = (0..bursts).map(|_| burst()).collect();
            t.sort_by(f64::total_cmp);
            let m = quantile(&t, 0.5);
            micros.push(m * 1e6);
            load.push(m / period());
        }
        report.add("burst_128_note_ons", "downbeat synth (saw)", "us", &micros);
        report.add(
            "burst_128_note_ons_load",
            "downbeat synth (saw)",
            "load",
            &load,
        );
    }
    report.notes.push(format!(
        "48 kHz, {FRAMES}-frame blocks (period {:.2} ms), one thread, no pinning; {runs} runs; \
         voices: median of {blocks} blocks per point; burst: median of {bursts} fresh synths",
        period() * 1e3
    ));
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossing_interpolates_between_the_points_around_the_target() {
        let pts = [(8, 0.1), (16, 0.3), (32, 0.7)];
        assert!((crossing(&pts, 0.5) - 24.0).abs() < 1e-9);
        // Below the first point: along the first segment, back from it.
        assert!((crossing(&pts, 0.05) - 6.0).abs() < 1e-9);
        assert!((crossing(&pts, 1.4) - 64.0).abs() < 1e-9);
    }
}
