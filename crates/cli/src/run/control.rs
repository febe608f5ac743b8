//! What reaches the engine besides the project during `downbeat run`: recorded events to
//! replay (`--replay`), a MIDI file (`--midi`), Open Sound Control (`--osc`), and the
//! recorder of the events applied (`--record-events`).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use downbeat::control::osc::{self, OscHandler, OscServer};
use downbeat::control::record::{self, RecordReader};
use downbeat::device::TransportRequests;
use downbeat::project::Project;
use downbeat::Engine;
use downbeat_cli::Failure;

/// Puts the events recorded in `path` on the engine's timeline.
pub(crate) fn replay(path: &Path, engine: &mut Engine) -> Result<(), Failure> {
    let table = engine.schedule().param_table();
    let events = record::read_events(path, &table)
        .map_err(|e| Failure::Input(format!("--replay `{}`: {e}", path.display())))?;
    engine
        .schedule_mut()
        .set_timeline(events)
        .map_err(|e| Failure::Input(format!("--replay: {e}")))
}

/// Puts the events of the MIDI file at `path` on the engine's timeline; returns how many
/// frames a run playing it lasts (its last event plus the longest release).
pub(crate) fn play_midi(
    path: &Path,
    project: &Project,
    engine: &mut Engine,
) -> Result<u64, Failure> {
    use downbeat::midi::{play, MidiFile};
    let file = MidiFile::read(path)
        .map_err(|e| Failure::Input(format!("--midi `{}`: {e}", path.display())))?;
    let table = engine.schedule().param_table();
    let cc = project
        .cc_mappings(&table)
        .map_err(|e| Failure::Input(e.to_string()))?;
    let placed = play::place(&file, engine.schedule_mut(), &cc, project.tempo.is_some())
        .map_err(|e| Failure::Input(format!("--midi `{}`: {e}", path.display())))?;
    if let Some(warning) = placed.tempo_warning(&format!("--midi `{}`", path.display())) {
        eprintln!("warning: {warning}");
    }
    Ok(placed.frames)
}

/// Events an OSC server's controller can hold before the audio thread takes them: far more
/// than a network burst between two blocks.
const OSC_QUEUE: usize = 4096;

/// Starts the `--osc` server, editing the graph through `edits` (`/graph/...`) and sending
/// play, stop and locate to `requests` when the song follows JACK's transport; it logs
/// every refused packet to stderr and goes on.
pub(crate) fn serve_osc(
    addr: &str,
    engine: &mut Engine,
    edits: Option<&super::Edits>,
    requests: Option<TransportRequests>,
) -> Result<OscServer, Failure> {
    let mut handler = OscHandler::new(engine.controller(OSC_QUEUE));
    if let Some(r) = requests {
        handler = handler.with_transport_requests(r);
    }
    if let Some(e) = edits {
        handler = handler.with_editor(Arc::clone(&e.editor), e.config);
        if let Some(c) = &e.capture {
            handler = handler.with_capture(c.clone());
        }
    }
    let server = osc::serve_handler(addr, handler, |from, why| {
        eprintln!("osc: rejected a packet from {from}: {why}")
    })
    .map_err(|e| Failure::Input(format!("--osc {addr}: cannot listen there: {e}")))?;
    eprintln!("osc: listening on udp {}", server.local_addr());
    Ok(server)
}

/// Drains a recording of events on a thread of its own while the run goes on.
pub(crate) struct Recorder {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<RecordReader>,
}

impl Recorder {
    /// Starts draining `reader` every 10 ms.
    pub(crate) fn spawn(mut reader: RecordReader) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            while !stopping.load(Ordering::Acquire) {
                reader.read();
                std::thread::sleep(Duration::from_millis(10));
            }
            reader.read();
            reader
        });
        Self { stop, thread }
    }

    /// Takes the last events and writes them all to `path`; refuses to write an incomplete
    /// recording.
    pub(crate) fn finish(self, engine: &Engine, path: &Path) -> Result<(), Failure> {
        self.stop.store(true, Ordering::Release);
        let reader = self
            .thread
            .join()
            .expect("the recorder thread does not panic");
        if engine.unrecorded_events() > 0 {
            return Err(Failure::Runtime(format!(
                "--record-events: {} events could not be recorded (the recorder fell behind); \
                 `{}` would be incomplete",
                engine.unrecorded_events(),
                path.display()
            )));
        }
        reader
            .write(path)
            .map(|_| ())
            .map_err(|e| Failure::Runtime(format!("cannot write `{}`: {e}", path.display())))
    }
}
