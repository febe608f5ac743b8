//! Downbeat's graphs and its two systems for the harness: a `Schedule` played directly
//! (`take_over` timed alone) and the whole `LiveEditor`-to-`Engine` path.

use std::time::Instant;

use downbeat::edit::LiveEditor;
use downbeat::nodes::{Mix, MixSettings, Output};
use downbeat::Engine;
use downbeat_graph::{Editor, Graph, Schedule};
use downbeat_ring::{Consumer, Producer, RingBuffer};

use super::harness::{Audio, Control, Halves};
use super::nodes::{sine_nth, Dc, Osc, TwinOsc, TwinSum, Watch};
use super::{Error, CFG, RATE};

/// The name of the node every edit adds and removes, and of the node it feeds.
pub const PROBE: &str = "probe";
pub const MIX: &str = "mix";

/// `size` nodes of Downbeat's own: sines into a `mix` into the output, with `watch` between
/// the mix and the output when given.
pub fn builtin(size: usize, watch: Option<Watch>) -> Graph {
    let fixed = 2 + usize::from(watch.is_some());
    let n = size.saturating_sub(fixed).max(1);
    let mut g = Graph::new();
    let mix = g.add(
        MIX,
        Mix::new(
            1,
            &MixSettings {
                gain_db: 0.0,
                ..MixSettings::default()
            },
        ),
    );
    let out = g.add("out", Output::new(1));
    for i in 0..n {
        let s = g.add(format!("s{i}"), sine_nth(i, n, RATE));
        g.connect(s, mix);
    }
    match watch {
        Some(w) => {
            let w = g.add("watch", w);
            g.connect(mix, w);
            g.connect(w, out);
        }
        None => {
            g.connect(mix, out);
        }
    }
    g.set_output(out);
    g
}

/// `size` nodes on the kernels Firewheel's graph runs too: oscillators into a sum into the
/// output.
pub fn twin(size: usize) -> Graph {
    let n = size.saturating_sub(2).max(1);
    let mut g = Graph::new();
    let mix = g.add(MIX, TwinSum);
    let out = g.add("out", Output::new(1));
    for i in 0..n {
        let o = g.add(format!("o{i}"), TwinOsc(Osc::nth(i, n, RATE)));
        g.connect(o, mix);
    }
    g.connect(mix, out);
    g.set_output(out);
    g
}

/// Makes the batch of one edit: the DC in, connected to the mix, or out again.
fn batch(editor: &mut Editor, add: bool) -> Result<(), Error> {
    if add {
        editor.add(PROBE, Dc)?;
        editor.connect(PROBE, MIX)?;
    } else {
        editor.remove(PROBE)?;
    }
    Ok(())
}

/// Schedules in flight either way; the harness has one at a time.
const RING: usize = 4;

struct ScheduleControl {
    editor: Editor,
    to_audio: Producer<Box<Schedule>>,
    back: Consumer<Box<Schedule>>,
}

impl Control for ScheduleControl {
    fn tidy(&mut self) -> Result<(), Error> {
        while let Some(old) = self.back.pop() {
            drop(old);
        }
        Ok(())
    }

    fn edit(&mut self, add: bool) -> Result<f64, Error> {
        batch(&mut self.editor, add)?;
        let t = Instant::now();
        let schedule = self.editor.commit()?;
        // Boxed and queued inside the timing, as `LiveEditor::commit` does.
        self.to_audio
            .push(Box::new(schedule))
            .map_err(|_| Error::Thread("the schedule ring is full".to_owned()))?;
        Ok(t.elapsed().as_secs_f64())
    }
}

/// The audio side of the `apply` case: what `Engine::process` does with a new schedule
/// (swap it in, `take_over`, retire the old one to a ring), with `take_over` timed alone.
struct ScheduleAudio {
    running: Schedule,
    incoming: Consumer<Box<Schedule>>,
    back: Producer<Box<Schedule>>,
    apply: Option<f64>,
}

impl Audio for ScheduleAudio {
    fn block(&mut self, out: &mut [f32]) {
        if let Some(mut next) = self.incoming.pop() {
            let t = Instant::now();
            std::mem::swap(&mut self.running, &mut *next);
            self.running.take_over(&mut next);
            self.apply = Some(t.elapsed().as_secs_f64());
            // The ring has room (one edit in flight, freed before the next); were it full,
            // dropping the schedule here would only cost this bench's timing.
            let _ = self.back.push(next);
        }
        self.running.process(out.len());
        self.running.output_interleaved(out);
    }

    fn take_apply(&mut self) -> Option<f64> {
        self.apply.take()
    }
}

/// The `apply` case's system: built-in sines into a mix, `size` nodes.
pub fn schedule(size: usize) -> Result<Halves, Error> {
    let (editor, running) = Editor::new(builtin(size, None), CFG)?;
    let (to_audio, incoming) = RingBuffer::new(RING);
    let (back, from_audio) = RingBuffer::new(RING);
    Ok((
        Box::new(ScheduleControl {
            editor,
            to_audio,
            back: from_audio,
        }),
        Box::new(ScheduleAudio {
            running,
            incoming,
            back,
            apply: None,
        }),
    ))
}

struct EngineControl {
    live: LiveEditor,
}

impl Control for EngineControl {
    fn tidy(&mut self) -> Result<(), Error> {
        self.live.reclaim();
        Ok(())
    }

    fn edit(&mut self, add: bool) -> Result<f64, Error> {
        batch(&mut self.live, add)?;
        let t = Instant::now();
        self.live.commit()?;
        Ok(t.elapsed().as_secs_f64())
    }
}

struct EngineAudio {
    engine: Engine,
}

impl Audio for EngineAudio {
    fn block(&mut self, out: &mut [f32]) {
        self.engine.process(out);
    }
}

/// Downbeat's whole path on the twin kernels, `size` nodes.
pub fn engine(size: usize) -> Result<Halves, Error> {
    let (editor, schedule) = Editor::new(twin(size), CFG)?;
    let mut engine = Engine::new(schedule);
    let live = engine.live_editor(editor);
    Ok((
        Box::new(EngineControl { live }),
        Box::new(EngineAudio { engine }),
    ))
}
