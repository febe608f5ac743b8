//! An echo added to a synth while it holds a note, then removed, on the virtual device: no
//! click, and the note goes on as if nothing happened, because an edit keeps every node it
//! does not remove (the synth keeps its voice). The run is recorded and checked against a
//! render of the synth alone; the example exits 1 when the check fails.
//!
//! ```text
//! cargo run -p downbeat --example edit
//! ```

use std::error::Error;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use downbeat::control::{Controller, When};
use downbeat::device::{Run, Virtual};
use downbeat::edit::LiveEditor;
use downbeat::nodes::{Gain, Output, Synth, SynthSettings, Wave};
use downbeat::{start, Engine};
use downbeat_graph::denormal::flush;
use downbeat_graph::{
    AudioMut, AudioRef, CompileConfig, Editor, Graph, Node, ProcessContext, Schedule, Shape,
};

const RATE: u32 = 48_000;
const CFG: CompileConfig = CompileConfig {
    sample_rate: RATE,
    max_block: 256,
};

/// A feedback delay line, the one node this example needs that Downbeat does not have:
/// what comes in comes out again every `delay`, `feedback` times as loud each time.
struct Echo {
    line: Vec<f32>,
    at: usize,
    feedback: f32,
}

impl Echo {
    fn new(seconds: f32, feedback: f32) -> Self {
        // Allocated here, off the audio thread; `process` only reads and writes it.
        let line = vec![0.0; (seconds * RATE as f32) as usize];
        Self {
            line,
            at: 0,
            feedback,
        }
    }
}

impl Node for Echo {
    fn input_channels(&self) -> usize {
        1
    }

    fn output_channels(&self) -> usize {
        1
    }

    fn process(&mut self, _: &ProcessContext, input: AudioRef<'_>, mut output: AudioMut<'_>) {
        for (out, &x) in output.channel_mut(0).iter_mut().zip(input.channel(0)) {
            let echo = self.line[self.at];
            // Flushed, so that the dying echoes never become slow subnormal numbers.
            self.line[self.at] = flush(x + self.feedback * echo);
            self.at = (self.at + 1) % self.line.len();
            *out = echo;
        }
    }
}

/// A synth into the output; the synth plays a pure sine, so that any click would stand out.
fn synth() -> Result<Graph, Box<dyn Error>> {
    let settings = SynthSettings {
        wave: Wave::Sine,
        amp: 0.3,
        ..SynthSettings::default()
    };
    let mut g = Graph::new();
    let synth = g.add("synth", Synth::new(1, RATE, &settings)?);
    let out = g.add("out", Output::new(1));
    g.connect(synth, out);
    g.set_output(out);
    Ok(g)
}

/// An engine running `schedule` with A3 held from its first frame, and the controller that
/// sent the note.
fn holding_a3(schedule: Schedule) -> Result<(Engine, Controller), Box<dyn Error>> {
    let mut engine = Engine::new(schedule);
    let mut control = engine.controller(16);
    control.note_on(When::Frame(0), 0, 57.0, 0.8)?;
    Ok((engine, control))
}

/// Waits until the engine has swapped the last commit in: it hands the schedule it
/// replaced back to the editor, to be freed here.
fn taken(live: &mut LiveEditor) -> Result<(), Box<dyn Error>> {
    for _ in 0..1000 {
        if live.reclaim() > 0 {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Err("the engine did not take the edit within 5 s".into())
}

fn sleep(seconds: f64) {
    std::thread::sleep(Duration::from_secs_f64(seconds));
}

/// The synth on the virtual device, recorded to `wav`: an echo added, then removed.
fn run(wav: &Path) -> Result<Run, Box<dyn Error>> {
    let (editor, schedule) = Editor::new(synth()?, CFG)?;
    let (mut engine, mut control) = holding_a3(schedule)?;
    let mut live = engine.live_editor(editor);
    let running = start(engine, Virtual::new(Some(wav.to_path_buf())));
    println!("the synth holds A3");
    sleep(0.3);

    // One batch: synth -> send -> echo -> out, the send closed, so the echo starts silent.
    live.add("send", Gain::new(1, 0.0))?;
    live.add("echo", Echo::new(0.12, 0.45))?;
    live.connect("synth", "send")?;
    live.connect("send", "echo")?;
    live.connect("echo", "out")?;
    live.commit()?;
    taken(&mut live)?;
    // The controller learns the new names, then opens the send: the echo fades in.
    control.set_table(live.table());
    control.ramp(When::Now, "send", "gain", Shape::Linear, 1.0, 0.02)?;
    println!("echo added");
    sleep(1.5);

    // Close the send and let the echoes die away before removing them: cutting them off
    // while they sound would click.
    control.ramp(When::Now, "send", "gain", Shape::Linear, 0.0, 0.02)?;
    sleep(1.2);
    live.remove("echo")?;
    live.remove("send")?;
    live.commit()?;
    taken(&mut live)?;
    println!("echo removed");
    sleep(0.5);
    Ok(running.stop()?)
}

/// The synth alone, with the same note and no edit: what the run must equal bit for bit
/// wherever the echo is silent.
fn alone(frames: usize) -> Result<Vec<f32>, Box<dyn Error>> {
    let (mut engine, _control) = holding_a3(synth()?.compile(CFG)?)?;
    let mut out = vec![0.0; frames.next_multiple_of(CFG.max_block)];
    for block in out.chunks_mut(CFG.max_block) {
        engine.process(block);
    }
    out.truncate(frames);
    Ok(out)
}

/// The largest change from one sample to the next, and where.
fn steepest(x: &[f32]) -> (f32, usize) {
    x.windows(2)
        .enumerate()
        .map(|(i, w)| ((w[1] - w[0]).abs(), i + 1))
        .fold((0.0, 0), |a, b| if b.0 > a.0 { b } else { a })
}

fn check(run: &Run, wav: &Path) -> Result<(), Box<dyn Error>> {
    let lost: u64 = run.report.recorded.iter().map(|r| r.lost_frames).sum();
    if lost > 0 {
        return Err(format!("the recording lost {lost} frames: nothing to check").into());
    }
    let played: Vec<f32> = hound::WavReader::open(wav)?
        .samples::<f32>()
        .collect::<Result<_, _>>()?;
    let alone = alone(played.len())?;
    let differs = |(p, a): (&f32, &f32)| p.to_bits() != a.to_bits();
    let first = played.iter().zip(&alone).position(differs).unwrap_or(0);
    let last = played.iter().zip(&alone).rposition(differs).unwrap_or(0);
    // What the edits added: the echo.
    let echo: Vec<f32> = played.iter().zip(&alone).map(|(p, a)| p - a).collect();
    let loudest = echo.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    let (step, at) = steepest(&echo);
    let (note_step, _) = steepest(&alone);
    let tail = echo[last.saturating_sub(480)..=last]
        .iter()
        .fold(0.0f32, |m, x| m.max(x.abs()));
    let s = |frame: usize| frame as f32 / RATE as f32;
    println!(
        "echo heard from {:.2} s to {:.2} s, peak {loudest:.3}, {tail:.1e} in its last 10 ms; \
         largest step {step:.4} at {:.3} s (the note's own: {note_step:.4}); then the note as \
         if never edited for {:.2} s",
        s(first),
        s(last),
        s(at),
        s(played.len() - 1 - last),
    );
    if loudest < 0.05 {
        return Err("the echo was never heard".into());
    }
    // An echo that fades in and out moves no faster than the note it repeats; cutting it
    // off while it sounds makes a step as large as it is loud...
    if step > 2.0 * note_step {
        return Err(format!("a click at {:.3} s: a step of {step:.4}", s(at)).into());
    }
    // ...or, at a zero crossing, a kink: it must have died away (-60 dBFS) by its removal.
    if tail > 0.001 {
        return Err(format!("the echo was cut off while it sounded ({tail:.4})").into());
    }
    // The note never cut: the synth played on as if there had been no edit, to the bit.
    if played.len() - 1 - last < RATE as usize / 4 {
        return Err("the output did not come back to the synth's own note".into());
    }
    Ok(())
}

fn main() -> ExitCode {
    let wav = std::env::temp_dir().join(format!("downbeat-edit-{}.wav", std::process::id()));
    let result = run(&wav).and_then(|run| check(&run, &wav));
    let _ = std::fs::remove_file(&wav);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("edit: {e}");
            ExitCode::FAILURE
        }
    }
}
