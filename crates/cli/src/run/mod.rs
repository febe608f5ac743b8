//! `downbeat run PROJECT`: arguments → project → engine → device → report, one function
//! each.

mod control;
mod device;
mod progress;
mod reload;
mod report;
mod summary;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use downbeat::control::osc::OscServer;
use downbeat::device::{self as devices, DeviceReport, InputFile, RunLength, TransportRequests};
use downbeat::edit::LiveEditor;
use downbeat::nodes::Capture;
use downbeat::project::Project;
use downbeat::record::RecordOptions;
use downbeat::revise::{Reviser, REVISE_PERIOD};
use downbeat::watch::Watcher;
use downbeat::Engine;
use downbeat_cli::Failure;
use downbeat_graph::{NodeConfig, SharedMonitor};

use crate::values::parse_seconds;
pub(crate) use device::{check_dir, DeviceArgs};
use device::{DeviceFlag, FallbackKind, TransportFlag};
use progress::Progress;
use summary::{NodeCountsLine, NodeLevelLine, RecordingLine, SavedStatesLine, Summary};

/// `downbeat run` arguments.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The project file (.toml).
    project: PathBuf,
    /// Where the audio goes.
    #[arg(long, value_enum, default_value_t = DeviceFlag::Virtual)]
    device: DeviceFlag,
    /// With `--device system`: play on this output device (see `downbeat devices`)
    /// instead of the default one.
    #[arg(long, value_name = "NAME")]
    output_device: Option<String>,
    /// With `--device system`: capture from this input device instead of the default one.
    #[arg(long, value_name = "NAME")]
    input_device: Option<String>,
    /// With `--device offline` or `virtual`: what the project's `input` nodes hear.
    #[arg(long, value_name = "FILE.wav")]
    input: Option<PathBuf>,
    /// With `--device system` or `jack`: also write what the `input` nodes heard to this
    /// WAV file (replay it with `--device offline --input`).
    #[arg(long, value_name = "FILE.wav")]
    record_input: Option<PathBuf>,
    /// With `--device jack`: connect the input ports, in order, to the JACK output ports
    /// whose names start with this (e.g. `system:capture`).
    #[arg(long, value_name = "PORT")]
    connect_in: Option<String>,
    /// With `--device jack`: whose transport the song plays by. Following JACK's, at the
    /// start of every cycle the song plays while JACK's transport rolls and stops while it
    /// stands, and goes to JACK's frame when it is elsewhere (a locate by `jack_transport` or
    /// any other client); a loop is not used (JACK's transport has none). With `--osc`,
    /// /transport/play, stop and locate then go to JACK at once, so that every client moves
    /// together (with a beat or a timetag, and /transport/loop, they are refused;
    /// /transport/tempo stays the song's).
    #[arg(long, value_enum, value_name = "SOURCE", default_value_t = TransportFlag::Internal)]
    transport: TransportFlag,
    /// With `--device system` or `jack`: when the device or its server goes away mid-run,
    /// go on on this device instead of stopping.
    #[arg(long, value_enum, value_name = "DEVICE")]
    fallback: Option<FallbackKind>,
    /// Seconds of audio to produce [default: 10; with `--midi`, to the file's last event
    /// plus the longest release of the project's instruments].
    #[arg(long, value_parser = parse_seconds)]
    seconds: Option<f64>,
    /// Play this Standard MIDI file (format 0 or 1) into every node that plays notes,
    /// each event at the frame its tick falls on through the file's tempo map. A
    /// malformed file exits 2 naming the byte offset and what was expected there.
    #[arg(long, value_name = "FILE.mid")]
    midi: Option<PathBuf>,
    /// With `--device jack`: register a MIDI input port and connect it from the first
    /// JACK MIDI output port whose name starts with this (e.g. `a2j:` or a sequencer's
    /// client name); its notes, pedal and pitch bend reach every node that plays notes at
    /// the frame JACK gives them.
    #[arg(long, value_name = "PORT")]
    midi_in: Option<String>,
    /// With `--device jack`: connect the outputs, in order, to the JACK input ports whose
    /// names start with this (e.g. `system:playback`).
    #[arg(long, value_name = "PORT")]
    connect: Option<String>,
    /// Also write the audio to this WAV file (32-bit float). Its header is updated at
    /// least every 0.5 s, so if the run dies (a plugin crashing takes the process down with
    /// it) the file is a valid WAV of what was played but its last second at most
    /// (offline, which runs faster, possibly nothing); `downbeat audit` tries a plugin in a
    /// process of its own first.
    #[arg(long, value_name = "FILE.wav")]
    out: Option<PathBuf>,
    /// Threads processing the graph, the audio thread included (1 = serial).
    /// Default: every core.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    threads: Option<u16>,
    /// Print the summary as one JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// Write an HTML load report with plots (load over time, histogram, time per node).
    #[arg(long, value_name = "FILE.html")]
    report: Option<PathBuf>,
    /// Write every parameter event the run applied, with the frame it took effect at,
    /// to this file (JSON lines), for `--replay`.
    #[arg(long, value_name = "FILE")]
    record_events: Option<PathBuf>,
    /// Apply the events recorded in this file (by `--record-events`) at their frames:
    /// with `--device offline --out`, the recorded run again, bit for bit.
    #[arg(long, value_name = "FILE")]
    replay: Option<PathBuf>,
    /// Serve Open Sound Control on this UDP address (e.g. 127.0.0.1:9000):
    /// `/node/<node>/<param> value`, `.../step value`, `.../ramp target seconds`,
    /// `.../exp target seconds`; bundles apply at their timetag. Edits the running graph
    /// with `/graph/add NAME TYPE [PARAM VALUE]...`, `/graph/remove NAME`,
    /// `/graph/connect FROM TO` and `/graph/disconnect FROM TO` (a bundle of them is one
    /// edit). Refused packets are logged and counted in the summary (`osc_rejected`), and
    /// the run goes on.
    #[arg(long, value_name = "ADDR")]
    osc: Option<String>,
    /// Reload the project when its file changes (also when an editor saves by renaming a
    /// new file over it) and apply the difference to the running graph: nodes added and
    /// removed (a node whose type or a parameter that is not live changed is rebuilt),
    /// edges, the output, and live parameters moved smoothly; every other node runs on
    /// untouched. A version that does not load or build is reported on stderr and the run
    /// goes on as it was. Sample rate, block size, `[[automation]]` and `[midi.cc]` keep
    /// what the run started with; a reload that edits the graph (more than live
    /// parameters) ends the automation and the `--midi` or `--replay` events still to come.
    #[arg(long)]
    watch: bool,
    /// Meter every node (peak and RMS over the run, through a watcher) and add the
    /// levels to the summary (`node_levels` in `--json`).
    #[arg(long)]
    meters: bool,
    /// When the run ends, write the state of every node that has one (CLAP, VST3 and LV2
    /// plugins) to this folder, one file per node named after it (`DIR/<node>.clapstate`,
    /// `DIR/<node>.vst3state`, `DIR/<node>.ttl`), for a plugin node's `state = "FILE"` to
    /// start a later run from.
    /// The folder is made when missing.
    #[arg(long, value_name = "DIR")]
    save_state: Option<PathBuf>,
    /// Test hook: the recording's writer thread sleeps this long before each write (a
    /// disk made slow on purpose).
    #[arg(long, hide = true, value_name = "MS")]
    test_record_pause_ms: Option<u64>,
    /// Test hook: seconds of audio the ring to the recording's writer thread holds.
    #[arg(long, hide = true, value_name = "SECONDS", value_parser = parse_seconds)]
    test_record_ring_seconds: Option<f64>,
    /// Test hook: data bytes past which a recording's header becomes RF64.
    #[arg(long, hide = true, value_name = "BYTES")]
    test_rf64_after: Option<u64>,
}

impl Args {
    /// How the recordings are buffered and synced: the defaults, but for the test hooks.
    fn record_options(&self) -> RecordOptions {
        let mut o = RecordOptions::default();
        if let Some(ms) = self.test_record_pause_ms {
            o.write_pause = std::time::Duration::from_millis(ms);
        }
        if let Some(s) = self.test_record_ring_seconds {
            o.ring_seconds = s;
        }
        if let Some(b) = self.test_rf64_after {
            o.rf64_after = b;
        }
        o
    }

    /// The device options among the arguments.
    fn device_args(&self) -> DeviceArgs {
        DeviceArgs {
            device: self.device.into(),
            connect: self.connect.clone(),
            connect_in: self.connect_in.clone(),
            midi_in: self.midi_in.clone(),
            output_device: self.output_device.clone(),
            input_device: self.input_device.clone(),
            input: self.input.clone(),
            record_input: self.record_input.clone(),
            fallback: self.fallback,
            out: self.out.clone(),
            transport: self.transport.into(),
            // Made with the OSC server, which sends them (see `prepare`).
            transport_requests: None,
        }
    }
}

/// The node types that host a plugin.
const PLUGIN_TYPES: [&str; 3] = ["clap", "vst3", "lv2"];

/// Runs the project and prints the summary. `offscreen`: Qt was given its offscreen
/// platform for want of a display ([`downbeat_plugin::headless`]), which the run says when
/// the project hosts a plugin.
pub(crate) fn run(args: Args, offscreen: bool) -> Result<(), Failure> {
    let mut device = args.device_args();
    device.check()?;
    if device.transport.follows() && args.osc.is_some() {
        device.transport_requests = Some(TransportRequests::new());
    }
    check_dir("--report", args.report.as_deref())?;
    check_dir("--record-events", args.record_events.as_deref())?;
    // Before the load: a save between the load and the watch's start is not missed.
    let stamp = args.watch.then(|| reload::stamp(&args.project)).flatten();
    let editable = args.osc.is_some() || args.watch;
    let built = device::build(&args.project, &device, editable)?;
    let offscreen = offscreen
        && built
            .project
            .nodes
            .iter()
            .any(|n| PLUGIN_TYPES.contains(&n.kind.as_str()));
    if let (true, Some((start, end))) =
        (device.transport.follows(), built.project.transport.looping)
    {
        eprintln!(
            "note: the song follows JACK's transport, which does not loop: the project's loop \
             [{start}, {end}] is not used"
        );
    }
    let (engine, run) = prepare(built, &args, &device, stamp)?;
    // What CLAP plugins log from the audio thread is printed while the run goes on.
    #[cfg(feature = "clap")]
    let _log_drain =
        downbeat_plugin::clap::LogDrain::start(std::time::Duration::from_millis(10))
            .map_err(|e| Failure::Runtime(format!("cannot start the CLAP log thread: {e}")))?;
    let ran = play(engine, &run, &device, args.json)?;
    // Said after the run, with the other notes, not before the lines a run starts with
    // (where it listens for OSC, say), which scripts read first.
    if offscreen {
        eprintln!(
            "note: no display (DISPLAY and WAYLAND_DISPLAY are unset): plugins that start Qt \
             ran on its offscreen platform (QT_QPA_PLATFORM=offscreen)"
        );
    }
    finish(ran, run, &args)
}

/// What a run reads back from the engine afterwards, set up with it.
struct Setup {
    project: Project,
    input: Option<InputFile>,
    nodes: usize,
    latency_frames: usize,
    /// The nodes' counters, taken before the schedule moves to the audio thread.
    monitors: Vec<(String, SharedMonitor)>,
    length: RunLength,
    record_options: RecordOptions,
    recorder: Option<control::Recorder>,
    osc: Option<OscServer>,
    reloads: Option<reload::Reloader>,
    watcher: Option<Watcher>,
    /// Recompiles the graph when a plugin changes its latency or parameters.
    _reviser: Option<Reviser>,
}

/// What edits the running graph (`--osc`'s `/graph/...`, `--watch`'s reloads): one editor,
/// shared, since an engine takes edits from one.
pub(crate) struct Edits {
    editor: Arc<Mutex<LiveEditor>>,
    /// The engine's format, which added nodes are built for.
    config: NodeConfig,
    /// What `input` nodes read, when the run has them.
    capture: Option<Capture>,
}

/// Makes the engine: events to replay or play, the recorder, live edits, OSC, reloads,
/// meters, threads, length.
fn prepare(
    built: device::Built,
    args: &Args,
    device: &DeviceArgs,
    stamp: Option<reload::Stamp>,
) -> Result<(Engine, Setup), Failure> {
    let nodes = built.schedule.len();
    let latency_frames = built.schedule.latency();
    let monitors = built.schedule.monitors();
    let mut engine = Engine::new(built.schedule);
    let edits = built.editor.map(|editor| Edits {
        editor: Arc::new(Mutex::new(engine.live_editor(editor))),
        config: NodeConfig {
            sample_rate: engine.sample_rate(),
            max_block: engine.block_size(),
        },
        capture: built.capture.clone(),
    });
    let midi_frames = add_events(&mut engine, &built.project, args)?;
    let recorder = args
        .record_events
        .as_ref()
        .map(|_| control::Recorder::spawn(engine.record_events()));
    if let Some(capture) = built.capture {
        engine.set_capture(capture);
    }
    let osc = args
        .osc
        .as_deref()
        .map(|addr| {
            let requests = device.transport_requests.clone();
            control::serve_osc(addr, &mut engine, edits.as_ref(), requests)
        })
        .transpose()?;
    let reloads = match (&edits, args.watch) {
        (Some(edits), true) => {
            // The version that runs, as the file has it: the diff sees the file's rate.
            let mut running = built.project.clone();
            running.sample_rate = built.file_rate;
            Some(reload::Reloader::spawn(
                &args.project,
                running,
                stamp,
                edits,
                &mut engine,
            ))
        }
        _ => None,
    };
    let reviser = edits
        .as_ref()
        .map(|e| Reviser::spawn(e.editor.clone(), REVISE_PERIOD))
        .transpose()
        .map_err(|e| Failure::Runtime(format!("cannot start the graph's revision thread: {e}")))?;
    let watcher = args.meters.then(|| engine.watch());
    set_threads(&mut engine, args);
    let length = RunLength::of_run(args.seconds, midi_frames, engine.sample_rate());
    let setup = Setup {
        project: built.project,
        input: built.input,
        nodes,
        latency_frames,
        monitors,
        length,
        record_options: args.record_options(),
        recorder,
        osc,
        reloads,
        watcher,
        _reviser: reviser,
    };
    Ok((engine, setup))
}

/// Puts the `--replay` and `--midi` events on the engine's timeline; with `--midi`, how
/// many frames playing the file lasts.
fn add_events(engine: &mut Engine, project: &Project, args: &Args) -> Result<Option<u64>, Failure> {
    if let Some(path) = &args.replay {
        control::replay(path, engine)?;
    }
    args.midi
        .as_deref()
        .map(|path| control::play_midi(path, project, engine))
        .transpose()
}

/// The threads processing the graph (every core by default), and profiling for `--report`.
fn set_threads(engine: &mut Engine, args: &Args) {
    let threads = args
        .threads
        .map_or_else(downbeat_rt::pool::available_cores, usize::from);
    for note in engine.set_threads(threads) {
        eprintln!("note: {note}");
    }
    engine.schedule().set_profiling(args.report.is_some());
}

/// A finished run: the engine back, and what the device reports.
struct Ran {
    engine: Engine,
    device: &'static str,
    report: DeviceReport,
}

/// Opens the device and runs the engine on it, with the progress line on a terminal.
fn play(mut engine: Engine, setup: &Setup, args: &DeviceArgs, quiet: bool) -> Result<Ran, Failure> {
    let mut spec = args.spec(setup.input.clone());
    spec.record_to.options = setup.record_options.clone();
    let mut device = devices::open(&spec)?;
    let progress = Progress::attach(&mut engine, setup.length.frames, quiet);
    match device.run(engine, setup.length) {
        Ok(run) => {
            progress.finish();
            Ok(Ran {
                engine: run.engine,
                device: device.name(),
                report: run.report,
            })
        }
        Err(e) => {
            progress.abandon();
            Err(e.into())
        }
    }
}

/// Stops what ran beside the engine, writes the recorded events, and prints the summary
/// (and writes the report).
fn finish(mut ran: Ran, mut setup: Setup, args: &Args) -> Result<(), Failure> {
    let osc = setup.osc.take().map(OscServer::stop);
    if let Some(r) = setup.reloads.take() {
        r.stop();
    }
    let node_levels = setup.watcher.as_mut().map(run_levels);
    if let (Some(path), Some(recorder)) = (&args.record_events, setup.recorder.take()) {
        recorder.finish(&ran.engine, path)?;
    }
    if let Some(f) = &ran.report.fallback {
        eprintln!(
            "note: {} at {:.3} s; the run went on on the virtual device from that block on, \
             none dropped or repeated",
            f.reason,
            f.at_frame as f64 / f64::from(ran.engine.sample_rate())
        );
    }
    let saved = match &args.save_state {
        Some(dir) => Some(SavedStatesLine {
            dir: dir.clone(),
            nodes: save_states(&mut ran.engine, dir)?,
        }),
        None => None,
    };
    let mut summary = summarize(&ran, setup);
    summary.saved_states = saved;
    summary.osc_applied = osc.map(|c| c.applied);
    summary.osc_rejected = osc.map(|c| c.rejected);
    summary.node_levels = node_levels;
    summary::warn_losses(&summary);
    summary::warn_lost_frames(&summary);
    if let Some(path) = &args.report {
        summary::write_report(path, &summary, &ran.engine)?;
    }
    summary::print(&summary, args.json);
    Ok(())
}

/// Every node's level over the run. The watcher keeps sums since the start and the peak
/// since its last look: one look after the run gives the whole run's levels.
fn run_levels(watcher: &mut Watcher) -> Vec<NodeLevelLine> {
    watcher.wait(std::time::Duration::from_secs(1));
    watcher
        .run_levels()
        .into_iter()
        .map(|(node, l)| NodeLevelLine {
            node,
            peak: l.peak,
            rms: l.rms,
        })
        .collect()
}

/// Writes every node's state into `dir` (see `--save-state`), and how many nodes had one.
/// A node that cannot save its state fails the run (exit 1) after the others are written,
/// so that a missing file is never mistaken for a saved one.
fn save_states(engine: &mut Engine, dir: &std::path::Path) -> Result<usize, Failure> {
    std::fs::create_dir_all(dir).map_err(|e| {
        Failure::Input(format!(
            "--save-state {}: cannot make the folder: {e}",
            dir.display()
        ))
    })?;
    let mut failed = Vec::new();
    let mut saved = 0;
    for (name, state) in engine.schedule_mut().save_states() {
        match state {
            Ok(state) => {
                let path = dir.join(format!("{name}.{}", state.extension));
                std::fs::write(&path, &state.bytes).map_err(|e| {
                    Failure::Runtime(format!("cannot write {}: {e}", path.display()))
                })?;
                saved += 1;
            }
            Err(e) => failed.push(format!("node `{name}`: {e}")),
        }
    }
    if failed.is_empty() {
        Ok(saved)
    } else {
        Err(Failure::Runtime(format!(
            "--save-state {}: {}",
            dir.display(),
            failed.join("; ")
        )))
    }
}

/// The summary of the engine and the device's report (without OSC counts and levels).
fn summarize(ran: &Ran, setup: Setup) -> Summary {
    let engine = &ran.engine;
    let rate = f64::from(engine.sample_rate());
    let fallback_at = ran
        .report
        .fallback
        .as_ref()
        .map(|f| f.at_frame as f64 / rate);
    Summary {
        project: setup.project.file,
        device: ran.device,
        sample_rate: engine.sample_rate(),
        block_size: engine.block_size(),
        channels: engine.channels(),
        nodes: setup.nodes,
        latency_frames: setup.latency_frames,
        threads: engine.threads(),
        pool_wakes: engine.pool_wakes(),
        seconds: ran.report.frames as f64 / rate,
        wall_seconds: ran.report.wall_seconds,
        late_wakeups: ran.report.late_wakeups,
        xruns: ran.report.xruns,
        fallback: fallback_at.map(|_| "virtual"),
        fallback_at_seconds: fallback_at,
        osc_applied: None,
        osc_rejected: None,
        node_levels: None,
        recordings: ran
            .report
            .recorded
            .iter()
            .map(|r| RecordingLine::new(r, rate))
            .collect(),
        node_counts: setup
            .monitors
            .into_iter()
            .map(|(node, m)| NodeCountsLine::read(node, &m))
            .collect(),
        saved_states: None,
        load: engine.summary(),
    }
}
