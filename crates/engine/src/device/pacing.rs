//! Pacing a renderer in real time by the clock: the virtual device, and where a real-time
//! device that lost its server or sound card falls back to.

use std::time::{Duration, Instant};

use downbeat_rt::clock::{Ticker, TickerOptions};

use super::Renderer;

/// What [`pace`] hands back.
pub(crate) struct Paced {
    pub(crate) renderer: Renderer,
    pub(crate) wall_seconds: f64,
    pub(crate) late: u64,
}

/// Runs `renderer` to its end in blocks of `block` frames, one per block period, on a
/// callback thread of its own: the virtual device, and where a lost device falls back to.
pub(crate) fn pace(mut renderer: Renderer, block: usize, rate: u32) -> Paced {
    let period = Duration::from_secs_f64(block as f64 / rate as f64);
    let callback = move || {
        // The callback thread's own settings: real-time priority where the system allows
        // (silently an ordinary thread otherwise) and a 1 ns timer slack, gone with the
        // thread.
        let options = TickerOptions {
            timer_slack: Some(Duration::from_nanos(1)),
            ..TickerOptions::default()
        };
        // Read before the ticker starts, so the wall time covers every period it waits.
        let started = Instant::now();
        // Burst (the default late policy): a late block is still due, like a real card's
        // buffer that must be filled; it is counted, not dropped.
        let mut ticker = Ticker::with_options(period, &options);
        let mut late = 0;
        let mut first = true;
        while !renderer.done() {
            // The first callback comes at once, as a sound card's does; each later one a
            // period after the one before.
            if !std::mem::take(&mut first) && ticker.wait().lateness > period {
                late += 1;
            }
            let frames = (block as u64).min(renderer.remaining()) as usize;
            renderer.render(frames);
        }
        Paced {
            renderer,
            wall_seconds: started.elapsed().as_secs_f64(),
            late,
        }
    };
    std::thread::Builder::new()
        .name("downbeat-virtual".into())
        .spawn(callback)
        .expect("spawn the virtual device's callback thread")
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}
