//! The progress line of `downbeat run` on a terminal.

use downbeat::meters::{self, MeterSnapshot, MeterThread};
use downbeat::Engine;
use indicatif::{ProgressBar, ProgressStyle};

/// The progress line, drawn from the engine's meters on a terminal: time played, highest
/// load, peak level. Every device's meters arrive the same way.
pub(crate) struct Progress {
    bar: ProgressBar,
    thread: Option<MeterThread>,
}

impl Progress {
    /// Connects a progress line to `engine`'s meters when stderr is a terminal (and `quiet`
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
        let draw = move |m: MeterSnapshot| {
            line.set_position(m.frames);
            line.set_message(format!(
                "{:.1} / {total:.1} s   load {:.2}   peak {:+.1} dBFS",
                m.frames as f64 / rate,
                m.load,
                m.peak_dbfs()
            ));
        };
        let (tap, thread) = meters::spawn(engine.channels(), 1, draw);
        engine.set_meters(tap);
        Self {
            bar,
            thread: Some(thread),
        }
    }

    /// Clears the line after a run that ended in an error (the meters went with the engine).
    pub(crate) fn abandon(self) {
        if let Some(t) = self.thread {
            t.stop();
        }
        self.bar.finish_and_clear();
    }

    /// Disconnects the meters from `engine` and clears the line.
    pub(crate) fn finish(self, engine: &mut Engine) {
        drop(engine.take_meters());
        if let Some(t) = self.thread {
            t.stop();
        }
        self.bar.finish_and_clear();
    }
}
