//! The progress line of `downbeat run` on a terminal.

use downbeat::watch::{WatchThread, Watcher};
use downbeat::Engine;
use indicatif::{ProgressBar, ProgressStyle};

/// The progress line, drawn from an engine watcher on a terminal: time played, highest
/// load, peak level. Every device's values arrive the same way.
pub(crate) struct Progress {
    bar: ProgressBar,
    thread: Option<WatchThread>,
}

impl Progress {
    /// Connects a progress line to a watcher of `engine` when stderr is a terminal (and `quiet`
    /// is off); does nothing otherwise.
    pub(crate) fn attach(engine: &mut Engine, frames: u64, quiet: bool) -> Self {
        let bar = ProgressBar::new(frames);
        if quiet || bar.is_hidden() {
            return Self {
                bar: ProgressBar::hidden(),
                thread: None,
            };
        }
        bar.set_style(ProgressStyle::with_template("{bar:30} {msg}").expect("template is valid"));
        let (line, rate) = (bar.clone(), engine.sample_rate() as f64);
        let total = frames as f64 / rate;
        let draw = move |w: &Watcher| {
            let m = w.output();
            line.set_position(m.frames);
            line.set_message(format!(
                "{:.1} / {total:.1} s   load {:.2}   peak {:+.1} dBFS",
                m.frames as f64 / rate,
                m.load,
                m.peak_dbfs()
            ));
        };
        let thread = engine.watch_output().follow(draw);
        Self {
            bar,
            thread: Some(thread),
        }
    }

    /// Clears the line after a run that ended in an error (its watcher went with the engine).
    pub(crate) fn abandon(self) {
        if let Some(t) = self.thread {
            t.stop();
        }
        self.bar.finish_and_clear();
    }

    /// Stops the line's watcher and clears the line.
    pub(crate) fn finish(self) {
        if let Some(t) = self.thread {
            t.stop();
        }
        self.bar.finish_and_clear();
    }
}
