//! [`ClapNode`]: one CLAP plugin instance as a graph node.

use std::ffi::CString;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use clack_extensions::audio_ports::{AudioPortFlags, AudioPortInfoBuffer, PluginAudioPorts};
use clack_extensions::latency::PluginLatency;
use clack_extensions::note_ports::PluginNotePorts;
use clack_extensions::params::{ParamInfoBuffer, ParamInfoFlags, PluginParams};
use clack_extensions::state::PluginState;
use clack_host::events::event_types::{
    MidiEvent, NoteOffEvent, NoteOnEvent, ParamValueEvent, TransportEvent, TransportFlags,
};
use clack_host::events::{EventFlags, EventHeader, Match, Pckn};
use clack_host::prelude::*;
use clack_host::process::PluginAudioProcessor;
use clack_host::utils::{BeatTime, SecondsTime};

use downbeat_graph::time::MusicalPosition;
use downbeat_graph::{
    AudioMut, AudioRef, Node, NodeState, NoteError, NoteEvent, ParamKind, ParamSpec, Port,
    ProcessContext, Revision, SharedRevision, StateError, Unit,
};

use super::error::ClapError;
use super::handover::{self, AudioSide};
use super::host::{Host, HostFlags, HostMain, HostShared};
use super::log::LogSink;
use super::log_drain;
use super::main_thread::{self, Entry, Instances};
use super::thread::AudioScope;
use crate::crash::{self, Label, Phase};
use crate::naming::{port_names, unique_param_name};

/// The file-name extension of a saved CLAP state (`downbeat run --save-state`): the bytes
/// are the plugin's own state stream, as its `clap.state` `save` wrote them.
///
/// ```
/// use downbeat_plugin::clap::STATE_EXTENSION;
/// let file = format!("states/verb.{STATE_EXTENSION}"); // what --save-state writes for `verb`
/// assert_eq!(file, "states/verb.clapstate");
/// ```
pub const STATE_EXTENSION: &str = "clapstate";

/// Events a node holds between blocks (parameter changes and notes, including those that
/// fall in later blocks). Fixed when the node is built, so the audio thread never grows it.
pub const EVENT_CAPACITY: usize = 1024;

/// How long an offline render waits for a plugin's restart before it goes on without it
/// (playing silence for the node until the plugin is back).
pub const OFFLINE_RESTART_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Plugin instances created by this process (every successful instantiation).
static INSTANCES: AtomicU64 = AtomicU64::new(0);

/// How many CLAP plugin instances this process has created so far (one per
/// [`ClapNode::load`]). For tests that check a live edit of a graph keeps a plugin's
/// instance instead of loading the plugin again.
#[doc(hidden)]
pub fn instances_loaded() -> u64 {
    INSTANCES.load(Ordering::Relaxed)
}

/// One parameter of the plugin as the node exposes it.
#[derive(Clone, Copy, Debug)]
struct Param {
    id: ClapId,
    min: f64,
    max: f64,
}

/// A plugin's parameters as the node exposes them: their specs (what a compile sees), the
/// plugin's ids and ranges, and the values now; and its read-only parameters (its meters) as
/// the node's outputs, with their ids and the values the plugin last reported.
struct ParamList {
    specs: &'static [ParamSpec],
    params: Vec<Param>,
    values: Vec<f32>,
    meter_specs: &'static [ParamSpec],
    meter_ids: Vec<ClapId>,
    meter_values: Vec<f32>,
}

impl ParamList {
    fn empty() -> Self {
        Self {
            specs: &[],
            params: Vec::new(),
            values: Vec::new(),
            meter_specs: &[],
            meter_ids: Vec::new(),
            meter_values: Vec::new(),
        }
    }
}

/// What a restart hands back and forth ([`super::main_thread`]): to the main thread, the
/// plugin's stopped processor; back to the node, the new processor with the latency and
/// parameters read after the new activation; back to the main thread again, the parameter
/// lists the node replaced, to be freed there.
pub(crate) struct Restart {
    pub(crate) processor: Option<PluginAudioProcessor<Host>>,
    pub(crate) latency: usize,
    list: ParamList,
}

impl Restart {
    /// What the node hands over: its processor, nothing else yet.
    fn handing(processor: Option<PluginAudioProcessor<Host>>) -> Self {
        Self {
            processor,
            latency: 0,
            list: ParamList::empty(),
        }
    }

    /// The parameter specs read after the activation.
    pub(crate) fn specs(&self) -> &'static [ParamSpec] {
        self.list.specs
    }

    /// The latency and parameters of the plugin as it is now, with no processor yet. Main
    /// thread, after an activation.
    pub(crate) fn read(instance: &mut PluginInstance<Host>, flags: &HostFlags) -> Self {
        let latency = read_latency(instance);
        flags.latency_changed.store(false, Ordering::Release);
        flags.values_changed.store(false, Ordering::Release);
        Self {
            processor: None,
            latency,
            list: read_params(instance),
        }
    }
}

/// An event waiting for its block.
#[derive(Clone, Copy, Debug)]
enum Pending {
    Param {
        frame: usize,
        index: usize,
        value: f64,
    },
    Note {
        frame: usize,
        event: NoteEvent,
    },
}

/// The pending-event list with room for [`EVENT_CAPACITY`] events, its pages written once
/// here: a first touch of fresh capacity on the audio thread would be a page fault.
fn touched_pending() -> Vec<Pending> {
    let mut v = Vec::with_capacity(EVENT_CAPACITY);
    let blank = Pending::Param {
        frame: 0,
        index: 0,
        value: 0.0,
    };
    v.extend(std::iter::repeat_n(blank, EVENT_CAPACITY));
    v.clear();
    v
}

/// A CLAP event list that has held [`EVENT_CAPACITY`] parameter events, so its memory is
/// allocated and written before the audio thread fills it (as for [`touched_pending`]).
fn touched_events() -> EventBuffer {
    let mut buf = EventBuffer::with_capacity(EVENT_CAPACITY);
    let blank = ParamValueEvent::new(0, ClapId::new(0), Pckn::match_all(), 0.0);
    for _ in 0..EVENT_CAPACITY {
        buf.push(&blank);
    }
    buf.clear();
    buf
}

impl Pending {
    fn frame_mut(&mut self) -> &mut usize {
        match self {
            Pending::Param { frame, .. } | Pending::Note { frame, .. } => frame,
        }
    }
}

/// What [`ClapNode::load`] reports about the plugin it loaded.
#[derive(Clone, Debug, PartialEq)]
pub struct ClapInfo {
    /// The file.
    pub path: PathBuf,
    /// The plugin's id.
    pub id: String,
    /// The plugin's name.
    pub name: String,
}

/// A CLAP plugin instance, activated, as a [`Node`].
///
/// The node's input channels are all the plugin's audio input ports' channels, port after
/// port, and so are its output channels; each audio port is one of the node's
/// [`Port`]s, the main one (flagged main, else the first) named `main` and the others by
/// [`port_names`] (a sidechain port called "Sidechain" is `sidechain`: `"kick ->
/// comp:sidechain"`). An input port no edge reaches gets silence. Its parameters are the plugin's, by name (see
/// [`param_name`](super::param_name)), with the plugin's ranges and defaults, all live. It
/// [takes parameter offsets](Node::takes_param_offsets): every block is one call to the
/// plugin's `process`, with the block's parameter changes and notes in CLAP's input event
/// list at their sample offsets. An instrument (a plugin with a note input port) plays the
/// notes given to [`Node::note`].
///
/// Every call hands the plugin the song's transport at the block's first frame
/// (`clap_process.transport`, see [`transport_event`]), stopped or playing: tempo, beats,
/// seconds, bar, signature and loop. The engine cuts blocks wherever the transport jumps or
/// the tempo map changes course, so the one event holds for the whole block and no
/// `CLAP_EVENT_TRANSPORT` is sent inside it.
///
/// Loading, instantiation and activation run in [`load`](ClapNode::load), off the audio
/// thread. CLAP makes `start_processing` an audio-thread call, so the first
/// [`process`](Node::process) makes it (an audit counts what the plugin does there in its
/// first callback). The host side of `process` copies the node's input into buffers it
/// owns, fills a preallocated event list and copies the output back: it does not allocate,
/// lock or make system calls (a guarded test checks it).
pub struct ClapNode {
    info: ClapInfo,
    /// How a crash report names the plugin ([`crash`]).
    label: Label,
    /// The plugin's audio side; `None` while a restart has it, or after a failed one.
    processor: Option<PluginAudioProcessor<Host>>,
    /// The instance's key on the CLAP main thread ([`main_thread`]), which keeps it.
    key: u64,
    /// This end of the restart hand-over; taken only by `drop`.
    restart: Option<AudioSide<Restart>>,
    flags: Arc<HostFlags>,
    log: Arc<LogSink>,
    /// Where the main thread publishes a latency or parameter list a restart changed.
    revision: SharedRevision,
    /// Offline (see [`Node::set_offline`]): a restart is waited for, not played through.
    offline: bool,
    /// Blocks the node played silence for while the plugin restarted.
    blocks_restarting: u64,
    /// The processor is on the main thread for a restart.
    away: bool,
    /// Each audio input port's channels in `in_bufs`, which are the node's input channels.
    in_ports: Vec<Range<usize>>,
    /// Each audio output port's channels in `out_bufs`, the node's output channels.
    out_ports: Vec<Range<usize>>,
    /// The node's input ports: the plugin's, named (see [`port_names`]).
    input_ports: Vec<Port>,
    /// The node's output ports, likewise.
    output_ports: Vec<Port>,
    in_bufs: Vec<Vec<f32>>,
    out_bufs: Vec<Vec<f32>>,
    audio_in: AudioPorts,
    audio_out: AudioPorts,
    /// The parameters, and the meters (read-only parameters) as the node's outputs, each
    /// meter's value the one the plugin last reported (`CLAP_EVENT_PARAM_VALUE` in its
    /// output events), or its value when the node was built.
    list: ParamList,
    pending: Vec<Pending>,
    events_in: EventBuffer,
    events_out: EventBuffer,
    latency: usize,
    instrument: bool,
    failed_calls: u64,
    /// The plugin's last `process` said it may sleep ([`ProcessStatus::Sleep`], or
    /// [`ProcessStatus::ContinueIfNotQuiet`] with quiet output): it is not called again
    /// until a block brings an event, input that is not silent, or its `request_process`.
    asleep: bool,
    /// Blocks the node did not call the plugin for, asleep.
    slept: u64,
    /// The transport of the block being processed: the plugin gets a pointer to it, so it
    /// lives here rather than on the stack of a helper, and is rewritten in place.
    transport: TransportEvent,
}

fn host_info() -> HostInfo {
    HostInfo::new(
        "Downbeat",
        "Downbeat",
        "https://example.invalid/downbeat",
        env!("CARGO_PKG_VERSION"),
    )
    .expect("no NUL in the host's constant strings")
}

fn text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// The audio ports of one direction: each port's channel range in the node's channels, its
/// name as the plugin gives it, and which port is the main one (the one flagged main, else
/// the first).
struct PortList {
    ranges: Vec<Range<usize>>,
    names: Vec<String>,
    main: usize,
}

impl PortList {
    /// The node's ports for this list: one per plugin port, named by [`port_names`].
    fn node_ports(&self) -> Vec<Port> {
        port_names(&self.names, self.main)
            .into_iter()
            .zip(&self.ranges)
            .map(|(name, r)| Port::new(name, r.len()))
            .collect()
    }
}

/// Reads the port list of one direction.
fn ports(
    plugin: &mut PluginMainThreadHandle<'_>,
    ext: Option<PluginAudioPorts>,
    is_input: bool,
) -> PortList {
    let mut list = PortList {
        ranges: Vec::new(),
        names: Vec::new(),
        main: 0,
    };
    let Some(ext) = ext else { return list };
    let mut buffer = AudioPortInfoBuffer::new();
    let mut next = 0;
    let mut main = None;
    for i in 0..ext.count(plugin, is_input) {
        if let Some(info) = ext.get(plugin, i, is_input, &mut buffer) {
            let n = info.channel_count as usize;
            if main.is_none() && info.flags.contains(AudioPortFlags::IS_MAIN) {
                main = Some(list.ranges.len());
            }
            list.ranges.push(next..next + n);
            list.names.push(text(info.name));
            next += n;
        }
    }
    list.main = main.unwrap_or(0);
    list
}

/// The plugin's latency, in frames (0 without the extension). Main thread.
fn read_latency(instance: &mut PluginInstance<Host>) -> usize {
    let handle = instance.plugin_handle();
    handle
        .get_extension::<PluginLatency>()
        .map_or(0, |l| l.get(&handle) as usize)
}

/// The plugin's parameters, their values as the plugin reports them now; its read-only ones
/// apart, as meters. Main thread.
fn read_params(instance: &mut PluginInstance<Host>) -> ParamList {
    let handle = instance.plugin_handle();
    let mut specs = Vec::new();
    let mut params = Vec::new();
    let mut values = Vec::new();
    let mut meter_specs = Vec::new();
    let mut meter_ids = Vec::new();
    let mut meter_values = Vec::new();
    if let Some(ext) = handle.get_extension::<PluginParams>() {
        let mut buffer = ParamInfoBuffer::new();
        for i in 0..ext.count(&handle) {
            let Some(p) = ext.get_info(&handle, i, &mut buffer) else {
                continue;
            };
            // A read-only parameter is the plugin's to set (a meter): a host may not.
            let meter = p.flags.contains(ParamInfoFlags::IS_READONLY);
            let name = unique_param_name(&text(p.name), p.id, |name| {
                specs
                    .iter()
                    .chain(&meter_specs)
                    .any(|s: &ParamSpec| s.name == name)
            });
            let current = ext.get_value(&handle, p.id).unwrap_or(p.default_value);
            let doc = format!(
                "CLAP parameter {} \"{}\" ({} to {})",
                p.id,
                text(p.name),
                p.min_value,
                p.max_value
            );
            let spec = ParamSpec {
                name: Box::leak(name.into_boxed_str()),
                doc: Box::leak(doc.into_boxed_str()),
                kind: ParamKind::Float {
                    min: p.min_value,
                    max: p.max_value,
                    default: p.default_value,
                },
                unit: Unit::None,
                live: !meter,
            };
            if meter {
                meter_specs.push(spec);
                meter_ids.push(p.id);
                meter_values.push(current as f32);
                continue;
            }
            specs.push(spec);
            params.push(Param {
                id: p.id,
                min: p.min_value,
                max: p.max_value,
            });
            values.push(current as f32);
        }
    }
    ParamList {
        // Leaked once per list read: `Node::params` hands out a 'static list, and these
        // names exist only once the plugin is loaded.
        specs: Box::leak(specs.into_boxed_slice()),
        params,
        values,
        meter_specs: Box::leak(meter_specs.into_boxed_slice()),
        meter_ids,
        meter_values,
    }
}

/// The current values of the parameters `ids`, as the plugin reports them (`None` for one
/// it does not). Main thread.
fn read_values(instance: &mut PluginInstance<Host>, ids: &[ClapId]) -> Vec<Option<f64>> {
    let handle = instance.plugin_handle();
    match handle.get_extension::<PluginParams>() {
        Some(ext) => ids.iter().map(|&id| ext.get_value(&handle, id)).collect(),
        None => Vec::new(),
    }
}

/// Reads a saved state file into the inactive plugin. Main thread.
fn load_state(instance: &mut PluginInstance<Host>, file: &Path) -> Result<(), String> {
    let bytes = std::fs::read(file).map_err(|e| format!("cannot read it: {e}"))?;
    let handle = instance.plugin_handle();
    let ext = handle
        .get_extension::<PluginState>()
        .ok_or("the plugin has no state extension (clap.state), so it cannot load one")?;
    ext.load(&handle, &mut bytes.as_slice())
        .map_err(|_| "the plugin refused it (not a state this plugin saved?)".to_string())
}

/// Serves a `request_flush` made while the plugin is inactive: a main-thread `flush` with
/// no events, which lets the plugin settle its parameters. Main thread, inactive plugin.
pub(crate) fn flush_if_requested(instance: &mut PluginInstance<Host>) {
    let requested =
        instance.access_shared_handler(|h| h.flags.flush_requested.swap(false, Ordering::AcqRel));
    if !requested {
        return;
    }
    let Some(mut handle) = instance.inactive_plugin_handle() else {
        return;
    };
    if let Some(params) = handle.get_extension::<PluginParams>() {
        let input = EventBuffer::new();
        let mut output = EventBuffer::new();
        params.flush(&mut handle, &input.as_input(), &mut output.as_output());
    }
}

/// What [`create`] made on the CLAP main thread for the node.
struct Made {
    key: u64,
    info: ClapInfo,
    label: Label,
    processor: PluginAudioProcessor<Host>,
    flags: Arc<HostFlags>,
    log: Arc<LogSink>,
    restart: AudioSide<Restart>,
    revision: SharedRevision,
    in_list: PortList,
    out_list: PortList,
    instrument: bool,
    list: ParamList,
    latency: usize,
}

/// Loads, creates and activates the plugin, and keeps its instance in `instances`. On the
/// CLAP main thread.
fn create(
    instances: &mut Instances,
    path: &Path,
    id: Option<&str>,
    config: PluginAudioConfiguration,
    state: Option<&Path>,
) -> Result<Made, ClapError> {
    let path_buf = path.to_path_buf();
    // dlopen searches the library path for a name without a slash: hand it an absolute
    // path so that `plugin.clap` means the file in the working directory.
    let absolute = std::fs::canonicalize(path).map_err(|e| ClapError::Load {
        path: path_buf.clone(),
        reason: e.to_string(),
    })?;
    let file_label = Label::new(id.unwrap_or("?"), &path.display().to_string());
    let loading = crash::enter(file_label, Phase::Load);
    // SAFETY: loading a library runs its initialisers, and a non-compliant CLAP entry can
    // break clack's assumptions; that is what hosting a plugin means, and the user chose
    // this file by naming it in the project.
    let entry = unsafe { PluginEntry::load(&absolute) }.map_err(|e| ClapError::Load {
        path: path_buf.clone(),
        reason: e.to_string(),
    })?;
    let factory = entry
        .get_plugin_factory()
        .ok_or_else(|| ClapError::NoFactory {
            path: path_buf.clone(),
        })?;
    let mut available = Vec::new();
    let mut names = Vec::new();
    for d in factory.plugin_descriptors() {
        if let Some(i) = d.id() {
            available.push(i.to_string_lossy().into_owned());
            names.push(
                d.name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
        }
    }
    let index = match id {
        Some(id) => available
            .iter()
            .position(|a| a == id)
            .ok_or_else(|| ClapError::UnknownId {
                path: path_buf.clone(),
                id: id.to_string(),
                available: available.clone(),
            })?,
        None if available.len() == 1 => 0,
        None => {
            return Err(ClapError::IdNeeded {
                path: path_buf,
                available,
            })
        }
    };
    let info = ClapInfo {
        path: path_buf.clone(),
        id: available[index].clone(),
        name: names[index].clone(),
    };
    let fail = |step: &str, e: &dyn std::fmt::Display| ClapError::Plugin {
        path: path_buf.clone(),
        id: info.id.clone(),
        reason: format!("{step} failed: {e}"),
    };
    drop(loading);
    let label = Label::new(&info.name, &format!("{}#{}", path.display(), info.id));
    let creating = crash::enter(label, Phase::Create);
    let c_id = CString::new(info.id.clone()).map_err(|e| fail("reading the id", &e))?;
    let mut instance = PluginInstance::<Host>::new(
        |_| HostShared::new(info.name.clone()),
        |shared| HostMain::new(shared),
        &entry,
        &c_id,
        &host_info(),
    )
    .map_err(|e| fail("instantiation", &e))?;
    INSTANCES.fetch_add(1, Ordering::Relaxed);
    let (flags, log) = instance.access_shared_handler(|h| (h.flags.clone(), h.log.clone()));
    log_drain::register(&log);
    if let Some(file) = state {
        load_state(&mut instance, file).map_err(|reason| ClapError::State {
            path: path_buf.clone(),
            id: info.id.clone(),
            file: file.to_path_buf(),
            reason,
        })?;
    }
    flush_if_requested(&mut instance);

    let mut handle = instance.plugin_handle();
    let port_ext = handle.get_extension::<PluginAudioPorts>();
    let in_list = ports(&mut handle, port_ext, true);
    let out_list = ports(&mut handle, port_ext, false);
    let instrument = handle
        .get_extension::<PluginNotePorts>()
        .is_some_and(|n| n.count(&handle, true) > 0);
    if out_list.ranges.iter().all(|r| r.is_empty()) {
        return Err(fail(
            "reading the audio ports",
            &"the plugin has no audio output",
        ));
    }
    drop(creating);
    let activating = crash::enter(label, Phase::Activate);
    let processor = instance
        .activate(|_, _| (), config)
        .map_err(|e| fail("activation", &e))?;
    drop(activating);
    // CLAP: latency is read once the plugin is active (whether or not it said `changed()`
    // in `activate`); the parameters after it too, so a restart reads them the same way.
    let Restart { latency, list, .. } = Restart::read(&mut instance, &flags);
    log.print();
    let revision = Arc::new(Revision::new(latency, list.specs));
    let (main_side, audio_side) = handover::pair();
    let key = instances.insert(Entry {
        instance,
        label,
        config,
        flags: flags.clone(),
        log: log.clone(),
        restart: main_side,
        revision: revision.clone(),
    });
    Ok(Made {
        key,
        info,
        label,
        processor: processor.into(),
        flags,
        log,
        restart: audio_side,
        revision,
        in_list,
        out_list,
        instrument,
        list,
        latency,
    })
}

impl ClapNode {
    /// Loads the plugin `id` (or the only plugin, when `id` is `None`) from the `.clap`
    /// file at `path`, instantiates and activates it for blocks of at most `max_block`
    /// frames at `sample_rate`. Runs off the audio thread.
    ///
    /// ```no_run
    /// use downbeat_plugin::clap::ClapNode;
    /// use downbeat_graph::Node;
    ///
    /// let node = ClapNode::load("gain.clap".as_ref(), Some("org.example.gain"), 48000, 256)?;
    /// assert_eq!(node.output_channels(), 2);
    /// # Ok::<(), downbeat_plugin::clap::ClapError>(())
    /// ```
    ///
    /// # Errors
    /// A [`ClapError`] naming the file (and the id): missing file, not a CLAP library, no
    /// such plugin, or a plugin that fails to instantiate or activate.
    pub fn load(
        path: &Path,
        id: Option<&str>,
        sample_rate: u32,
        max_block: usize,
    ) -> Result<Self, ClapError> {
        Self::load_with_state(path, id, sample_rate, max_block, None)
    }

    /// As [`load`](ClapNode::load), and then, when `state` names a file, loads it into the
    /// plugin before activation (bytes a [`Node::save_state`] of the same plugin wrote: the
    /// plugin's `clap.state` stream). The node's parameter values are read back from the
    /// plugin afterwards, so they are the state's, not the defaults.
    ///
    /// ```no_run
    /// use downbeat_plugin::clap::ClapNode;
    /// use downbeat_graph::Node;
    ///
    /// let node = ClapNode::load_with_state(
    ///     "comp.clap".as_ref(),
    ///     None,
    ///     48000,
    ///     256,
    ///     Some("states/comp.clapstate".as_ref()),
    /// )?;
    /// println!("threshold from the state: {:?}", node.get_param(0));
    /// # Ok::<(), downbeat_plugin::clap::ClapError>(())
    /// ```
    ///
    /// # Errors
    /// As for [`load`](ClapNode::load), and [`ClapError::State`] when the file cannot be
    /// read, the plugin has no `clap.state` extension, or it refuses the bytes.
    pub fn load_with_state(
        path: &Path,
        id: Option<&str>,
        sample_rate: u32,
        max_block: usize,
        state: Option<&Path>,
    ) -> Result<Self, ClapError> {
        let path_buf = path.to_path_buf();
        if !path.is_file() {
            return Err(ClapError::MissingFile { path: path_buf });
        }
        let (id, state) = (id.map(str::to_owned), state.map(Path::to_path_buf));
        let config = PluginAudioConfiguration {
            sample_rate: f64::from(sample_rate),
            min_frames_count: 1,
            max_frames_count: max_block as u32,
        };
        // Every main-thread call of the instance is made there, for as long as it lives.
        let made = main_thread::call(move |instances| {
            create(
                instances,
                &path_buf,
                id.as_deref(),
                config,
                state.as_deref(),
            )
        })
        .map_err(|_| ClapError::Load {
            path: path.to_path_buf(),
            reason: "the CLAP main thread has stopped".into(),
        })??;
        let Made {
            key,
            info,
            label,
            processor,
            flags,
            log,
            restart,
            revision,
            in_list,
            out_list,
            instrument,
            list,
            latency,
        } = made;
        let input_ports = in_list.node_ports();
        let output_ports = out_list.node_ports();
        let (in_ports, out_ports) = (in_list.ranges, out_list.ranges);
        let n_in = in_ports.last().map_or(0, |r| r.end);
        let n_out = out_ports.last().map_or(0, |r| r.end);
        Ok(Self {
            info,
            label,
            processor: Some(processor),
            key,
            restart: Some(restart),
            flags,
            log,
            revision,
            offline: false,
            blocks_restarting: 0,
            away: false,
            audio_in: AudioPorts::with_capacity(n_in, in_ports.len()),
            audio_out: AudioPorts::with_capacity(n_out, out_ports.len()),
            in_ports,
            out_ports,
            input_ports,
            output_ports,
            in_bufs: vec![vec![0.0; max_block]; n_in],
            out_bufs: vec![vec![0.0; max_block]; n_out],
            list,
            pending: touched_pending(),
            events_in: touched_events(),
            events_out: touched_events(),
            latency,
            instrument,
            failed_calls: 0,
            asleep: false,
            slept: 0,
            transport: transport_event(&MusicalPosition::stopped(sample_rate), 1),
        })
    }

    /// The file, id and name of the plugin.
    pub fn info(&self) -> &ClapInfo {
        &self.info
    }

    /// Acts on what the plugin asked of the main thread since the last time: prints the
    /// messages it logged from the audio thread, re-reads its latency after a
    /// `latency.changed()`, and its parameter values after a `params.rescan`. Main thread,
    /// while the node is not processing (a host calls it between runs; the node calls it
    /// itself when it saves its state).
    ///
    /// ```no_run
    /// use downbeat_plugin::clap::ClapNode;
    /// use downbeat_graph::Node;
    ///
    /// let mut node = ClapNode::load("delay.clap".as_ref(), None, 48000, 256)?;
    /// node.main_thread_tick();
    /// println!("latency now {}", node.latency());
    /// # Ok::<(), downbeat_plugin::clap::ClapError>(())
    /// ```
    pub fn main_thread_tick(&mut self) {
        let key = self.key;
        let ids: Vec<ClapId> = self.list.params.iter().map(|p| p.id).collect();
        let read = main_thread::call(move |instances| {
            let e = instances.get(key)?;
            e.log.print();
            let latency = e
                .flags
                .latency_changed
                .swap(false, Ordering::AcqRel)
                .then(|| read_latency(&mut e.instance));
            let values = e
                .flags
                .values_changed
                .swap(false, Ordering::AcqRel)
                .then(|| read_values(&mut e.instance, &ids));
            Some((latency, values))
        });
        let Ok(Some((latency, values))) = read else {
            return;
        };
        if let Some(latency) = latency {
            self.latency = latency;
        }
        for (v, now) in self.list.values.iter_mut().zip(values.unwrap_or_default()) {
            if let Some(now) = now {
                *v = now as f32;
            }
        }
    }

    /// Takes the messages the plugin logged from the audio thread since the last drain, as
    /// the lines the host would print (`[downbeat] clap <name>: <SEVERITY>: <message>`, and
    /// last a line saying how many messages were lost to a full ring since the last drain,
    /// if any were), instead of printing them. Main thread.
    ///
    /// ```no_run
    /// use downbeat_plugin::clap::ClapNode;
    ///
    /// let mut node = ClapNode::load("verb.clap".as_ref(), None, 48000, 256)?;
    /// for line in node.take_log() {
    ///     println!("{line}");
    /// }
    /// # Ok::<(), downbeat_plugin::clap::ClapError>(())
    /// ```
    pub fn take_log(&mut self) -> Vec<String> {
        self.log.take_lines()
    }

    /// True when the plugin said its state changed (`state.mark_dirty()`) since it was
    /// loaded or last saved.
    ///
    /// ```no_run
    /// use downbeat_plugin::clap::ClapNode;
    /// use downbeat_graph::Node;
    ///
    /// let mut node = ClapNode::load("synth.clap".as_ref(), None, 48000, 256)?;
    /// if node.state_dirty() {
    ///     let state = node.save_state().expect("saved");
    ///     assert!(!node.state_dirty() && state.is_some());
    /// }
    /// # Ok::<(), downbeat_plugin::clap::ClapError>(())
    /// ```
    pub fn state_dirty(&self) -> bool {
        self.flags.dirty.load(Ordering::Acquire)
    }

    /// Messages the plugin logged from the audio thread that were lost because the node's
    /// ring of them was full (64 messages between two main-thread drains).
    ///
    /// ```no_run
    /// use downbeat_plugin::clap::ClapNode;
    ///
    /// let node = ClapNode::load("chatty.clap".as_ref(), None, 48000, 256)?;
    /// assert_eq!(node.log_dropped(), 0); // nothing processed yet
    /// # Ok::<(), downbeat_plugin::clap::ClapError>(())
    /// ```
    pub fn log_dropped(&self) -> u64 {
        self.log.ring.dropped()
    }

    /// How many times the CLAP main thread called the plugin's `on_main_thread`, each in
    /// answer to a `request_callback`.
    pub fn main_thread_callbacks(&self) -> u64 {
        self.flags.callbacks.load(Ordering::Relaxed)
    }

    /// Restarts the plugin asked for (`request_restart`) and had: deactivated and activated
    /// again on the CLAP main thread, with the node kept.
    pub fn restarts(&self) -> u64 {
        self.flags.restarts.load(Ordering::Relaxed)
    }

    /// Blocks the node played silence for while the plugin restarted (none offline, where
    /// the render waits for the restart instead).
    pub fn blocks_restarting(&self) -> u64 {
        self.blocks_restarting
    }

    /// Blocks the node did not call the plugin for because it was asleep: its last
    /// `process` returned `CLAP_PROCESS_SLEEP` (or `CONTINUE_IF_NOT_QUIET` with quiet
    /// output), and nothing came to wake it (an event in the block, input that is not
    /// silent, or the plugin's `request_process`). The node output silence for those blocks.
    pub fn blocks_slept(&self) -> u64 {
        self.slept
    }

    /// Whether a sleeping plugin is woken for this block, whose events are in `events_in`
    /// and whose input is in `in_bufs`: also by its `request_process`, and by a
    /// `params.request_flush` (which CLAP has the host answer with a `process` or a `flush`;
    /// [`ClapNode::process`] clears it when it calls the plugin). Real-time safe: atomics and
    /// reads.
    fn wakes(&mut self, frames: usize) -> bool {
        let requested = self.flags.process_requested.swap(false, Ordering::AcqRel)
            || self.flags.flush_requested.load(Ordering::Acquire);
        requested
            || !self.events_in.is_empty()
            || self
                .in_bufs
                .iter()
                .any(|b| b[..frames].iter().any(|&s| s != 0.0))
    }

    /// The node's part of a restart ([`main_thread`]): hands the processor over, stopped,
    /// when the main thread asks for it, and takes the new one with the plugin's new
    /// latency and parameters when it is back, handing the lists it replaces back to be
    /// freed there. False while the processor is away. Real-time safe (atomics, moves and
    /// swaps), but offline, where waiting costs only time, it waits for the main thread to
    /// take up a restart the plugin asked for and to hand the new processor back (each at
    /// most [`OFFLINE_RESTART_WAIT`]), so that no block is skipped and the restart lands
    /// before the block after the request.
    fn follow_restart(&mut self) -> bool {
        let Some(restart) = &self.restart else {
            return true;
        };
        if self.offline && !self.away && self.flags.restart_requested.load(Ordering::Acquire) {
            // Offline, a restart the plugin asked for is served before the next block, so
            // that where it lands does not depend on when the main thread looks.
            let began = std::time::Instant::now();
            while !restart.wanted() && began.elapsed() < OFFLINE_RESTART_WAIT {
                std::thread::yield_now();
            }
        }
        if restart.wanted() {
            // `stop_processing` on the audio thread, as CLAP wants it.
            let processor = self
                .processor
                .take()
                .map(|p| PluginAudioProcessor::from(p.into_stopped()));
            restart.give(Restart::handing(processor));
            self.away = true;
        }
        if !self.away {
            return true;
        }
        let mut back = restart.take_returned();
        if back.is_none() && self.offline {
            let began = std::time::Instant::now();
            while back.is_none() && began.elapsed() < OFFLINE_RESTART_WAIT {
                std::thread::yield_now();
                back = restart.take_returned();
            }
        }
        let Some(mut back) = back else {
            return false;
        };
        self.processor = back.processor.take();
        std::mem::swap(&mut self.list, &mut back.list);
        self.latency = back.latency;
        self.asleep = false;
        self.away = false;
        restart.spend(back);
        true
    }

    /// How many `process` calls the plugin reported as failed (the node output silence
    /// for those blocks).
    pub fn failed_calls(&self) -> u64 {
        self.failed_calls
    }

    /// Queues a change of parameter `index` at `frame`; false when refused.
    fn queue_param(&mut self, frame: usize, index: usize, value: f32) -> bool {
        let Some(p) = self.list.params.get(index) else {
            return false;
        };
        if !value.is_finite() || self.pending.len() == self.pending.capacity() {
            return false;
        }
        let value = f64::from(value).clamp(p.min, p.max);
        self.list.values[index] = value as f32;
        self.pending.push(Pending::Param {
            frame,
            index,
            value,
        });
        true
    }

    /// Moves the events due in a block of `frames` into the CLAP event list, in time order
    /// (ties in the order they were given), and keeps the later ones for the next blocks.
    fn fill_events(&mut self, frames: usize) {
        self.events_in.clear();
        for p in &self.pending {
            match *p {
                Pending::Param {
                    frame,
                    index,
                    value,
                } if frame < frames => {
                    // A restart may have shortened the list since the event was queued.
                    let Some(param) = self.list.params.get(index) else {
                        continue;
                    };
                    let ev = ParamValueEvent::new(frame as u32, param.id, Pckn::match_all(), value);
                    self.events_in.push(&ev);
                }
                Pending::Note { frame, event } if frame < frames => {
                    push_note(&mut self.events_in, frame as u32, event);
                }
                _ => {}
            }
        }
        // An unstable sort keyed on (time, insertion index): no allocation, stable result.
        self.events_in.sort();
        self.pending.retain_mut(|p| {
            let f = p.frame_mut();
            if *f < frames {
                false
            } else {
                *f -= frames;
                true
            }
        });
    }
}

/// The CLAP transport of a block of `frames` frames whose first frame is at `m`: what the
/// node passes as `clap_process.transport`.
///
/// Tempo, both timelines and the signature are always there, stopped too (a plugin syncing
/// an LFO to the bar grid needs them before the song plays); `IS_PLAYING` and
/// `IS_LOOP_ACTIVE` follow the transport. Positions are CLAP fixed point
/// (`CLAP_BEATTIME_FACTOR`, `CLAP_SECTIME_FACTOR`: 2^31), rounded to nearest; the song's
/// seconds are its frame over the sample rate, the frame being what the engine counts
/// exactly. `tempo_inc` is the tempo's change per sample across the block, from its first
/// frame's tempo to the tempo where the next block starts: CLAP draws the tempo as a
/// straight line through each block, and the engine cuts blocks at every tempo point, so
/// a plugin following `tempo_inc` arrives at the next block's tempo (a step is the next
/// block's). Stopped, the tempo stands.
///
/// The loop's seconds are those of the block's tempo segment ([`MusicalPosition::segment`]):
/// the map's own when the loop's ends lie in that segment, always so under one tempo; a loop
/// reaching across tempo changes gets them as if the block's tempo held (the position gives
/// the loop in beats only).
///
/// ```
/// use clack_host::events::event_types::TransportFlags;
/// use downbeat_graph::time::{MusicalPosition, TempoMap};
/// use downbeat_plugin::clap::transport_event;
///
/// let map = TempoMap::constant(120.0, 48000).unwrap();
/// let t = transport_event(&MusicalPosition::of(&map, 120_000, true, None), 256);
/// assert!(t.flags.contains(TransportFlags::IS_PLAYING));
/// assert_eq!(t.song_pos_beats.to_float(), 5.0); // 2.5 s at 120 bpm
/// assert_eq!((t.bar_number, t.bar_start.to_float(), t.tempo_inc), (1, 4.0, 0.0));
/// ```
pub fn transport_event(m: &MusicalPosition, frames: usize) -> TransportEvent {
    let mut flags = TransportFlags::HAS_TEMPO
        | TransportFlags::HAS_BEATS_TIMELINE
        | TransportFlags::HAS_SECONDS_TIMELINE
        | TransportFlags::HAS_TIME_SIGNATURE;
    if m.playing {
        flags |= TransportFlags::IS_PLAYING;
    }
    let tempo_inc = if m.playing && frames > 0 {
        (m.at(frames).bpm - m.bpm) / frames as f64
    } else {
        0.0
    };
    let seconds = |beat: f64| SecondsTime::from_float(m.segment().seconds_at(beat));
    let zero = BeatTime::from_int(0);
    let (loop_start_beats, loop_end_beats, loop_start_seconds, loop_end_seconds) = match m.looping {
        Some((start, end)) => {
            flags |= TransportFlags::IS_LOOP_ACTIVE;
            (
                BeatTime::from_float(start),
                BeatTime::from_float(end),
                seconds(start),
                seconds(end),
            )
        }
        None => (zero, zero, zero, zero),
    };
    TransportEvent {
        header: EventHeader::new_core(0, EventFlags::empty()),
        flags,
        song_pos_beats: BeatTime::from_float(m.beat),
        song_pos_seconds: SecondsTime::from_float(m.song_frame as f64 / f64::from(m.sample_rate())),
        tempo: m.bpm,
        tempo_inc,
        loop_start_beats,
        loop_end_beats,
        loop_start_seconds,
        loop_end_seconds,
        bar_start: BeatTime::from_float(m.bar_beat),
        // No song reaches bar 2^31; saturate rather than wrap if one did.
        bar_number: m.bar.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32,
        time_signature_numerator: u16::from(m.signature.numerator),
        time_signature_denominator: u16::from(m.signature.denominator),
    }
}

fn key(note: f32) -> u16 {
    note.round().clamp(0.0, 127.0) as u16
}

/// Writes a note event as CLAP sees it: note on/off on port 0, any note id; pitch bend and
/// sustain as MIDI 1 messages.
fn push_note(events: &mut EventBuffer, time: u32, event: NoteEvent) {
    match event.normalized() {
        NoteEvent::On {
            channel,
            note,
            velocity,
        } => events.push(&NoteOnEvent::new(
            time,
            Pckn::new(0u16, u16::from(channel), key(note), Match::All),
            f64::from(velocity),
        )),
        NoteEvent::Off { channel, note } => events.push(&NoteOffEvent::new(
            time,
            Pckn::new(0u16, u16::from(channel), key(note), Match::All),
            0.0,
        )),
        NoteEvent::AllNotesOff { channel } => {
            let channel = channel.map_or(Match::All, |c| Match::Specific(u16::from(c)));
            events.push(&NoteOffEvent::new(
                time,
                Pckn::new(0u16, channel, Match::All, Match::All),
                0.0,
            ))
        }
        NoteEvent::PitchBend { channel, value } => {
            let v = ((value.clamp(-1.0, 1.0) + 1.0) * 8191.5)
                .round()
                .min(16383.0) as u16;
            events.push(&MidiEvent::new(
                time,
                0,
                [0xE0 | channel, (v & 0x7F) as u8, (v >> 7) as u8],
            ))
        }
        NoteEvent::Sustain { channel, on } => events.push(&MidiEvent::new(
            time,
            0,
            [0xB0 | channel, 64, if on { 127 } else { 0 }],
        )),
    }
}

impl Node for ClapNode {
    fn input_channels(&self) -> usize {
        self.in_bufs.len()
    }

    fn output_channels(&self) -> usize {
        self.out_bufs.len()
    }

    /// One port per audio input port of the plugin: `main` and the others by name (see
    /// [`port_names`]), in the plugin's port order.
    fn input_ports(&self) -> Vec<Port> {
        self.input_ports.clone()
    }

    /// One port per audio output port of the plugin, named as the inputs are.
    fn output_ports(&self) -> Vec<Port> {
        self.output_ports.clone()
    }

    fn process(&mut self, ctx: &ProcessContext, input: AudioRef<'_>, mut output: AudioMut<'_>) {
        // For `thread-check`: this thread is the audio thread while it is in here.
        let _audio = AudioScope::enter();
        let _inside = crash::enter(self.label, Phase::Process);
        let frames = ctx.frames;
        if !self.follow_restart() {
            self.blocks_restarting += 1;
            for c in 0..self.out_bufs.len() {
                output.channel_mut(c).fill(0.0);
            }
            return;
        }
        // Every port's channels, a sidechain's included (the schedule gives a port no edge
        // reaches silence). Copied every block, whatever the plugin did with the buffers.
        for (c, buf) in self.in_bufs.iter_mut().enumerate() {
            buf[..frames].copy_from_slice(&input.channel(c)[..frames]);
        }
        self.fill_events(frames);
        if self.asleep && !self.wakes(frames) {
            self.slept += 1;
            for c in 0..self.out_bufs.len() {
                output.channel_mut(c).fill(0.0);
            }
            return;
        }
        self.asleep = false;
        // This call serves any flush the plugin asked for.
        self.flags.flush_requested.store(false, Ordering::Release);
        self.events_out.clear();
        self.transport = transport_event(&ctx.musical, frames);
        let status = match self.processor.as_mut() {
            Some(processor) => {
                let in_base = self.in_bufs.as_mut_ptr();
                let out_base = self.out_bufs.as_mut_ptr();
                let inputs = self
                    .audio_in
                    .with_input_buffers(self.in_ports.iter().map(|r| AudioPortBuffer {
                        latency: 0,
                        channels: AudioPortBufferType::f32_input_only((r.start..r.end).map(|c| {
                            // SAFETY: `c` is in one port's range; the ranges are disjoint
                            // and inside `in_bufs`, so each buffer is borrowed once, and
                            // `in_bufs` is not touched otherwise until `inputs` is gone.
                            let buf = unsafe { &mut *in_base.add(c) };
                            InputChannel::variable(&mut buf[..frames])
                        })),
                    }));
                let mut outputs = self
                    .audio_out
                    .with_output_buffers(self.out_ports.iter().map(|r| AudioPortBuffer {
                        latency: 0,
                        channels: AudioPortBufferType::f32_output_only((r.start..r.end).map(|c| {
                            // SAFETY: as for the inputs: disjoint ranges in `out_bufs`,
                            // each buffer borrowed once while `outputs` lives.
                            let buf = unsafe { &mut *out_base.add(c) };
                            &mut buf[..frames]
                        })),
                    }));
                match processor.ensure_processing_started() {
                    Ok(started) => started
                        .process(
                            &inputs,
                            &mut outputs,
                            &self.events_in.as_input(),
                            &mut self.events_out.as_output(),
                            Some(ctx.position),
                            Some(&self.transport),
                        )
                        .ok(),
                    Err(_) => None,
                }
            }
            None => None,
        };
        let ok = status.is_some();
        if !ok {
            self.failed_calls += 1;
        }
        for event in &self.events_out {
            let Some(e) = event.as_event::<ParamValueEvent>() else {
                continue;
            };
            if let Some(i) = e
                .param_id()
                .and_then(|id| self.list.meter_ids.iter().position(|&m| m == id))
            {
                self.list.meter_values[i] = e.value() as f32;
            }
        }
        self.asleep = match status {
            Some(ProcessStatus::Sleep) => true,
            Some(ProcessStatus::ContinueIfNotQuiet) => self
                .out_bufs
                .iter()
                .all(|b| b[..frames].iter().all(|&s| s == 0.0)),
            _ => false,
        };
        for (c, buf) in self.out_bufs.iter().enumerate() {
            let out = output.channel_mut(c);
            if ok {
                out.copy_from_slice(&buf[..frames]);
            } else {
                out.fill(0.0);
            }
        }
    }

    fn set_param(&mut self, index: usize, value: f32) -> bool {
        self.queue_param(0, index, value)
    }

    fn takes_param_offsets(&self) -> bool {
        true
    }

    fn set_param_at(&mut self, frame: usize, index: usize, value: f32) -> bool {
        self.queue_param(frame, index, value)
    }

    fn params(&self) -> &'static [ParamSpec] {
        self.list.specs
    }

    fn get_param(&self, index: usize) -> Option<f32> {
        self.list.values.get(index).copied()
    }

    /// The plugin's read-only parameters (meters: ZamCompX2's `gain_reduction`), by name.
    fn outputs(&self) -> &'static [ParamSpec] {
        self.list.meter_specs
    }

    /// The last value the plugin reported for meter `index` in its output events (or its
    /// value when the node was built, until it reports one).
    fn output_value(&self, index: usize) -> f32 {
        self.list.meter_values.get(index).copied().unwrap_or(0.0)
    }

    fn latency(&self) -> usize {
        self.latency
    }

    fn plays_notes(&self) -> bool {
        self.instrument
    }

    fn save_state(&mut self) -> Result<Option<NodeState>, StateError> {
        self.main_thread_tick();
        let (key, id) = (self.key, self.info.id.clone());
        let bytes = main_thread::call(move |instances| {
            let e = instances
                .get(key)
                .ok_or_else(|| StateError::new(format!("CLAP plugin \"{id}\" is gone")))?;
            let handle = e.instance.plugin_handle();
            let Some(ext) = handle.get_extension::<PluginState>() else {
                return Err(StateError::new(format!(
                    "CLAP plugin \"{id}\" has no state extension (clap.state): it cannot save \
                     a state"
                )));
            };
            let mut bytes = Vec::new();
            ext.save(&handle, &mut bytes).map_err(|_| {
                StateError::new(format!("CLAP plugin \"{id}\" refused to save its state"))
            })?;
            e.flags.dirty.store(false, Ordering::Release);
            Ok(bytes)
        })
        .map_err(|_| StateError::new("the CLAP main thread has stopped".to_string()))??;
        Ok(Some(NodeState {
            bytes,
            extension: STATE_EXTENSION,
        }))
    }

    fn set_offline(&mut self, offline: bool) {
        self.offline = offline;
    }

    fn revision(&self) -> Option<SharedRevision> {
        Some(self.revision.clone())
    }

    fn note(&mut self, frame: usize, event: NoteEvent) -> Result<(), NoteError> {
        if !self.instrument {
            return Err(NoteError::NotAnInstrument);
        }
        event.validate()?;
        if self.pending.len() == self.pending.capacity() {
            return Err(NoteError::Full {
                capacity: self.pending.capacity(),
            });
        }
        self.pending.push(Pending::Note { frame, event });
        Ok(())
    }
}

impl Drop for ClapNode {
    fn drop(&mut self) {
        let (key, processor) = (self.key, self.processor.take());
        if let Some(restart) = self.restart.take() {
            // Deactivated and destroyed on the thread that made it; a main thread that has
            // stopped leaves the instance to the process's exit.
            let _ = main_thread::call(move |instances| {
                main_thread::destroy(instances, key, processor, restart)
            });
        }
        self.log.print();
    }
}
