//! `downbeat.render`: a project rendered offline into memory, as `downbeat run --device
//! offline --out` renders it into a file.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use downbeat::device::{Renderer, RunLength};
use downbeat::midi::play::{self, Placed};
use downbeat::midi::MidiFile;
use downbeat::project::{Project, ProjectError};
use downbeat::revise::{Reviser, REVISE_PERIOD};
use downbeat::Engine;

/// Why a render failed, kept apart from Python so that the render runs without the GIL.
pub(crate) enum Failure {
    Project(ProjectError),
    Midi(String),
    Input(String),
    Runtime(String),
}

/// A finished render: planar samples, channel after channel.
pub(crate) struct Rendered {
    pub(crate) samples: Vec<f32>,
    pub(crate) channels: usize,
    pub(crate) frames: usize,
    /// What the run noted (a thread count lowered, say), for Python's warnings.
    pub(crate) notes: Vec<String>,
}

/// What to render and for how long.
pub(crate) struct Job {
    pub(crate) project: Project,
    pub(crate) seconds: Option<f64>,
    pub(crate) midi: Option<PathBuf>,
    pub(crate) threads: Option<usize>,
}

/// Renders `job` the way `downbeat run --device offline` does: the project built (with an
/// editor when a plugin node may revise its latency, which a reviser thread commits), the
/// MIDI file placed, every core processing unless `threads` says otherwise, the schedule
/// told it runs offline, and blocks of the project's size until the length is done.
pub(crate) fn render(job: Job) -> Result<Rendered, Failure> {
    let Job {
        project,
        seconds,
        midi,
        threads,
    } = job;
    if let Some(n) = project.nodes.iter().find(|n| n.kind == "input") {
        return Err(Failure::Input(format!(
            "`{}` reads an input (node `{}`), which a render has none of: process audio \
             through it with downbeat.Chain, or leave the `input` node out",
            project.file, n.name
        )));
    }
    let (editor, schedule) = if project.may_revise() {
        project
            .editor()
            .map(|(e, s)| (Some(e), s))
            .map_err(Failure::Project)?
    } else {
        (None, project.build().map_err(Failure::Project)?)
    };
    let mut engine = Engine::new(schedule);
    let reviser = match editor {
        Some(editor) => {
            let live = Arc::new(Mutex::new(engine.live_editor(editor)));
            Some(Reviser::spawn(live, REVISE_PERIOD).map_err(|e| {
                Failure::Runtime(format!("cannot start the graph's revision thread: {e}"))
            })?)
        }
        None => None,
    };
    let mut notes = Vec::new();
    let midi_frames = match &midi {
        Some(path) => {
            let placed = place_midi(path, &project, &mut engine)?;
            notes.extend(placed.tempo_warning(&path.display().to_string()));
            Some(placed.frames)
        }
        None => None,
    };
    let threads = threads.unwrap_or_else(downbeat_rt::pool::available_cores);
    notes.extend(engine.set_threads(threads));
    let length = RunLength::of_run(seconds, midi_frames, engine.sample_rate());
    let (channels, block) = (engine.channels(), engine.block_size());
    let frames = usize::try_from(length.frames)
        .map_err(|_| Failure::Input(format!("{} frames do not fit in memory", length.frames)))?;
    let mut samples = vec![0.0f32; channels * frames];
    engine.schedule_mut().set_offline(true);
    let mut renderer = Renderer::new(engine, length.frames);
    if crate::ANNOUNCE.load(std::sync::atomic::Ordering::Relaxed) {
        crate::announce("process");
    }
    let mut at = 0;
    while !renderer.done() {
        let n = (block as u64).min(renderer.remaining()) as usize;
        let out = renderer.render(n);
        for (f, frame) in out.chunks_exact(channels).enumerate() {
            for (c, &s) in frame.iter().enumerate() {
                samples[c * frames + at + f] = s;
            }
        }
        at += n;
    }
    drop(reviser);
    Ok(Rendered {
        samples,
        channels,
        frames,
        notes,
    })
}

/// Puts the MIDI file's events on the engine's timeline, as `--midi` does.
fn place_midi(path: &Path, project: &Project, engine: &mut Engine) -> Result<Placed, Failure> {
    let file =
        MidiFile::read(path).map_err(|e| Failure::Midi(format!("{}: {e}", path.display())))?;
    let table = engine.schedule().param_table();
    let cc = project.cc_mappings(&table).map_err(Failure::Project)?;
    play::place(&file, engine.schedule_mut(), &cc, project.tempo.is_some())
        .map_err(|e| Failure::Midi(format!("{}: {e}", path.display())))
}
