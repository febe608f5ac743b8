//! Edit to audible on the virtual device: from `LiveEditor::commit` returning on this
//! (control) thread to the end of the watch's work in the first block that plays the added
//! node.
//!
//! Both instants come from the same monotonic clock: this thread reads it when `commit`
//! returns, the [`Watch`] node reads it on the audio thread in the block where the DC first
//! shows in the mix (it runs after every other node but the output, so the block is all but
//! done). The commits fall at random points of the block period (a random 1-3 ms pause
//! before each), as an application's would. A stamp earlier than the commit's can only
//! mean that this thread was preempted between `commit` pushing the schedule and reading
//! the clock; it is kept as measured (a negative figure).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use downbeat::device::Virtual;
use downbeat::edit::LiveEditor;
use downbeat::{start, Engine};
use downbeat_graph::Editor;

use super::nodes::{Dc, Seen, Watch};
use super::systems::{builtin, MIX, PROBE};
use super::{Error, CFG};
use crate::rng::Rng;

/// Longest wait for an edit to be heard or gone: hundreds of blocks.
const PATIENCE: Duration = Duration::from_secs(2);

/// Waits until `done` holds, polling: the audio side stamps the figure itself, so how soon
/// this thread notices does not enter it.
fn wait(what: &str, mut done: impl FnMut() -> bool) -> Result<(), Error> {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > PATIENCE {
            return Err(Error::Timeout(what.to_owned()));
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    Ok(())
}

/// `edits` edits adding the DC to a `size`-node graph playing on the virtual device, each
/// removed again before the next: their latencies in µs, and notes.
pub fn measure(size: usize, edits: usize) -> Result<(Vec<f64>, Vec<String>), Error> {
    let seen = Arc::new(Seen::default());
    let base = Instant::now();
    let graph = builtin(size, Some(Watch::new(Arc::clone(&seen), base)));
    let (editor, schedule) = Editor::new(graph, CFG)?;
    let mut engine = Engine::new(schedule);
    let mut live: LiveEditor = engine.live_editor(editor);
    let running = start(engine, Virtual::new(None));
    // The device's first blocks: its thread starting, its pacing settling.
    std::thread::sleep(Duration::from_millis(100));
    let mut rng = Rng(0xed17 ^ size as u64);
    let mut latencies = Vec::with_capacity(edits);
    let result = (|| {
        for k in 0..edits {
            std::thread::sleep(Duration::from_micros(rng.between(1_000.0, 3_000.0) as u64));
            seen.at.store(0, Ordering::Release);
            live.add(PROBE, Dc)?;
            live.connect(PROBE, MIX)?;
            live.commit()?;
            let committed = base.elapsed().as_nanos() as f64;
            wait(&format!("edit {k} of {size} nodes was never heard"), || {
                seen.at.load(Ordering::Acquire) != 0
            })?;
            let heard = seen.at.load(Ordering::Acquire) as f64;
            latencies.push((heard - committed) / 1e3);
            live.remove(PROBE)?;
            live.commit()?;
            wait(
                &format!("the DC of edit {k} of {size} nodes never went"),
                || !seen.present.load(Ordering::Acquire),
            )?;
            live.reclaim();
        }
        Ok::<(), Error>(())
    })();
    // The device's error first: a device that failed explains any failure above.
    let run = running.stop()?;
    result?;
    let notes = vec![format!(
        "audible_{size}: {} blocks played, {} late wake-ups of the virtual device",
        run.report.frames / CFG.max_block as u64,
        run.report.late_wakeups
    )];
    Ok((latencies, notes))
}
