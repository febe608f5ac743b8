//! Meters from the audio thread to the message thread: level and load samples, delivered
//! through [`downbeat_rt::notify`] (the async updater of D. Rowland's "Real-time Trade-offs") to whatever draws them, such as
//! the CLI's progress line.
//!
//! The audio side ([`MeterTap`]) folds each block into a running peak and load maximum and,
//! every few blocks, stores them in atomics and triggers a notifier: no lock, no allocation, no
//! system call. The message side ([`MeterThread`]) owns a [`Dispatcher`] on a thread of its own
//! that polls a few times a second and calls back with a [`MeterSnapshot`]; triggers that come
//! faster than it polls coalesce, so a slow display never slows the audio.
//!
//! ```
//! use std::sync::mpsc;
//! use downbeat::meters;
//!
//! let (seen, updates) = mpsc::channel();
//! let (mut tap, thread) = meters::spawn(2, 1, move |snapshot| {
//!     let _ = seen.send(snapshot);
//! });
//! // Audio thread, after each block: the interleaved stereo samples it produced, and its load.
//! tap.block(&[0.25, -0.5, 0.125, 0.0], 0.3);
//! let snapshot = updates.recv().unwrap();
//! assert_eq!((snapshot.frames, snapshot.blocks, snapshot.peak), (2, 1, 0.5));
//! thread.stop();
//! ```

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use downbeat_rt::notify::{Dispatcher, Notifier, Strategy};

/// How often the message side looks for new meter values: often enough for a display, rarely
/// enough to cost nothing.
pub const POLL_PERIOD: Duration = Duration::from_millis(50);

/// What the message side receives.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MeterSnapshot {
    /// Frames produced so far.
    pub frames: u64,
    /// Blocks produced so far.
    pub blocks: u64,
    /// Highest load (callback time / block period) since the previous snapshot.
    pub load: f32,
    /// Highest absolute sample value since the previous snapshot (1.0 is full scale).
    pub peak: f32,
}

impl MeterSnapshot {
    /// The peak in dBFS (negative infinity for silence).
    pub fn peak_dbfs(&self) -> f32 {
        20.0 * self.peak.log10()
    }
}

/// The values the audio side publishes; floats travel as their bits.
#[derive(Debug, Default)]
struct Shared {
    frames: AtomicU64,
    blocks: AtomicU64,
    load: AtomicU32,
    peak: AtomicU32,
}

/// The audio-thread side: call [`block`](MeterTap::block) once per callback.
#[derive(Debug)]
pub struct MeterTap {
    shared: Arc<Shared>,
    notifier: Notifier,
    channels: usize,
    every: u32,
    pending: u32,
    frames: u64,
    blocks: u64,
    load: f32,
    peak: f32,
}

impl MeterTap {
    /// Folds one callback's output (`out`, interleaved) and load into the meters, and every
    /// `every` blocks publishes them and triggers the message side. Real-time safe: a few
    /// atomic stores and one atomic swap.
    pub fn block(&mut self, out: &[f32], load: f64) {
        self.peak = out.iter().fold(self.peak, |p, s| p.max(s.abs()));
        self.load = self.load.max(load as f32);
        self.frames += (out.len() / self.channels) as u64;
        self.blocks += 1;
        self.pending += 1;
        if self.pending >= self.every {
            let s = &*self.shared;
            s.frames.store(self.frames, Ordering::Relaxed);
            s.blocks.store(self.blocks, Ordering::Relaxed);
            // The maxima since the last delivery: whichever side takes them resets them, so a
            // short spike is never lost between two polls.
            s.load.fetch_max(self.load.to_bits(), Ordering::Relaxed);
            s.peak.fetch_max(self.peak.to_bits(), Ordering::Relaxed);
            // The notifier's swap releases the stores above to the callback that acquires it.
            self.notifier.trigger();
            self.pending = 0;
            self.load = 0.0;
            self.peak = 0.0;
        }
    }
}

/// The message-thread side: a thread running the dispatcher that calls back with snapshots.
#[derive(Debug)]
pub struct MeterThread {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MeterThread {
    /// Stops the thread after it delivers what is pending, and waits for it.
    pub fn stop(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for MeterThread {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Makes a meter pair for audio with `channels` interleaved channels: the [`MeterTap`] for
/// the audio thread, publishing every `every_blocks` blocks, and a running [`MeterThread`] that
/// calls `on_update` on its own thread with each delivery (at most one per [`POLL_PERIOD`]).
pub fn spawn(
    channels: usize,
    every_blocks: u32,
    mut on_update: impl FnMut(MeterSnapshot) + Send + 'static,
) -> (MeterTap, MeterThread) {
    let shared = Arc::new(Shared::default());
    let mut dispatcher = Dispatcher::new(
        Strategy::Poll {
            period: POLL_PERIOD,
        },
        1,
    );
    let seen = Arc::clone(&shared);
    let notifier = dispatcher
        .register(move || {
            on_update(MeterSnapshot {
                frames: seen.frames.load(Ordering::Relaxed),
                blocks: seen.blocks.load(Ordering::Relaxed),
                load: f32::from_bits(seen.load.swap(0, Ordering::Relaxed)),
                peak: f32::from_bits(seen.peak.swap(0, Ordering::Relaxed)),
            })
        })
        .expect("a fresh dispatcher has room for one callback");
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("downbeat-meters".into())
        .spawn(move || {
            dispatcher.run_until(&stopping);
            // A last look, so the final values reach the display.
            dispatcher.dispatch();
        })
        .expect("spawn the meter thread");
    let tap = MeterTap {
        shared,
        notifier,
        channels: channels.max(1),
        every: every_blocks.max(1),
        pending: 0,
        frames: 0,
        blocks: 0,
        load: 0.0,
        peak: 0.0,
    };
    (
        tap,
        MeterThread {
            stop,
            thread: Some(thread),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn next(updates: &mpsc::Receiver<MeterSnapshot>) -> MeterSnapshot {
        updates
            .recv_timeout(Duration::from_secs(5))
            .expect("a delivery within 5 s")
    }

    #[test]
    fn maxima_cover_every_block_since_the_last_delivery_then_reset() {
        let (tx, updates) = mpsc::channel();
        let (mut tap, thread) = spawn(1, 3, move |s| tx.send(s).unwrap());
        tap.block(&[0.1, -0.9], 0.2);
        tap.block(&[0.3], 0.7); // the spike in load
        tap.block(&[0.0, 0.2], 0.1); // third block: published now
        let first = next(&updates);
        assert_eq!((first.frames, first.blocks), (5, 3));
        assert_eq!((first.peak, first.load), (0.9, 0.7));
        tap.block(&[0.05], 0.05);
        tap.block(&[0.05], 0.05);
        tap.block(&[-0.25], 0.3);
        let second = next(&updates);
        assert_eq!((second.frames, second.blocks), (8, 6));
        assert_eq!(
            (second.peak, second.load),
            (0.25, 0.3),
            "earlier maxima were reset"
        );
        thread.stop();
    }

    #[test]
    fn stereo_frames_are_counted_per_frame_and_silence_is_minus_infinity() {
        let (tx, updates) = mpsc::channel();
        let (mut tap, thread) = spawn(2, 1, move |s| tx.send(s).unwrap());
        tap.block(&[0.0; 256], 0.5);
        let s = next(&updates);
        assert_eq!(s.frames, 128);
        assert_eq!(s.peak_dbfs(), f32::NEG_INFINITY);
        assert!((MeterSnapshot { peak: 0.5, ..s }.peak_dbfs() + 6.0206).abs() < 1e-3);
        thread.stop();
    }

    #[test]
    fn triggers_faster_than_the_poll_coalesce() {
        let (tx, updates) = mpsc::channel();
        let (mut tap, thread) = spawn(1, 1, move |s| tx.send(s).unwrap());
        for _ in 0..10_000 {
            tap.block(&[0.5], 0.1);
        }
        drop(tap);
        thread.stop();
        let all: Vec<_> = updates.try_iter().collect();
        assert!(
            all.len() < 100,
            "{} deliveries for 10,000 blocks",
            all.len()
        );
        assert_eq!(all.last().unwrap().frames, 10_000);
    }
}
