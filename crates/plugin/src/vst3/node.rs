//! [`Vst3Node`]: one VST3 plugin (component, processor and controller) as a graph node.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use vst3::Steinberg::Vst::{
    AudioBusBuffers, AudioBusBuffers__type0, BusDirections_, BusInfo, Event, Event_::EventTypes_,
    Event__type0, IAudioProcessor, IAudioProcessorTrait, IComponent, IComponentHandler,
    IComponentTrait, IConnectionPoint, IConnectionPointTrait, IEditController,
    IEditControllerTrait, IEventList, IParameterChanges, MediaTypes_, NoteOffEvent, NoteOnEvent,
    ParameterInfo, ParameterInfo_::ParameterFlags_, ProcessContext,
    ProcessContext_::StatesAndFlags_, ProcessData, ProcessModes_, ProcessSetup,
    SymbolicSampleSizes_, TChar,
};
use vst3::Steinberg::{
    kResultOk, FUnknown, IBStream, IPluginBaseTrait, IPluginFactoryTrait, PClassInfo, TUID,
};
use vst3::{ComPtr, ComWrapper, Interface};

use downbeat_graph::time::MusicalPosition;
use downbeat_graph::{
    AudioMut, AudioRef, Node, NodeState, NoteError, NoteEvent, ParamKind, ParamSpec, Port,
    ProcessContext as Context, Revision, SharedRevision, StateError, Unit,
};

use super::com::{ComponentHandler, EventList, HostApplication, MemoryStream, ParamChanges};
use super::error::Vst3Error;
use super::module::{main_calls, Module};
use super::restart::{Restarter, Turn};
use crate::crash::{self, Label, Phase};
use crate::naming::{port_names, unique_param_name};

/// The file-name extension of a saved VST3 state (`downbeat run --save-state`): behind the
/// magic `DBVST3S1`, the class's 16-byte id, then the component's state stream and the
/// controller's, each after its length (8 bytes, little endian).
pub const STATE_EXTENSION: &str = "vst3state";

const STATE_MAGIC: &[u8; 8] = b"DBVST3S1";

/// How long an offline render waits for a plugin's restart before it goes on without it
/// (playing silence for the node until the plugin is back).
pub const OFFLINE_RESTART_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Events (parameter changes and notes) a node holds between blocks. Fixed when the node is
/// built, so the audio thread never grows it.
pub const EVENT_CAPACITY: usize = 1024;

/// The VST3 category of the classes a `vst3` node can be.
const AUDIO_MODULE: &str = "Audio Module Class";

/// What [`Vst3Node::load`] reports about the plugin it loaded.
#[derive(Clone, Debug, PartialEq)]
pub struct Vst3Info {
    /// The bundle.
    pub path: PathBuf,
    /// The class's name.
    pub name: String,
    /// The class's id, 32 hexadecimal digits.
    pub id: String,
}

/// One parameter as the node exposes it: its plain range, and how a plain value becomes
/// the normalized one the plugin takes.
#[derive(Clone, Debug)]
struct Param {
    id: u32,
    min: f64,
    max: f64,
    /// How the plugin maps normalized values to plain ones.
    mapping: Mapping,
}

/// A plugin's mapping of a parameter's normalized values (0 to 1) to plain ones, as sampled
/// at [`CURVE_POINTS`] points when the node is built.
#[derive(Clone, Debug)]
enum Mapping {
    /// `min + n * (max - min)`: the SDK's `RangeParameter`, and how DPF maps every
    /// continuous parameter, the ones it marks logarithmic too.
    Straight,
    /// A discrete parameter of this many steps: `n = step / steps` (the SDK's convention).
    Stepped(u32),
    /// `min * (max / min)^n`: a logarithmic parameter (a frequency) of a plugin that maps
    /// it so.
    Exponential,
    /// Anything else: the sampled plain values, in order of `n`.
    Sampled(Box<[f64]>),
}

impl Mapping {
    /// The mapping of a parameter the plugin says has `step_count` steps (0 for a continuous
    /// one) and whose plain values at evenly spaced normalized values are `curve`.
    fn new(step_count: i32, curve: Vec<f64>) -> Self {
        match u32::try_from(step_count) {
            Ok(steps) if steps > 0 => Mapping::Stepped(steps),
            _ => Mapping::of(curve),
        }
    }

    /// The mapping the samples `curve` (from `n = 0` to `n = 1`) follow.
    fn of(curve: Vec<f64>) -> Self {
        let (min, max) = (curve[0], curve[curve.len() - 1]);
        let last = (curve.len() - 1) as f64;
        let close = |f: &dyn Fn(f64) -> f64| {
            curve.iter().enumerate().all(|(k, &v)| {
                let want = f(k as f64 / last);
                (v - want).abs() <= 1e-6 * want.abs().max((max - min).abs() * 1e-3).max(1e-9)
            })
        };
        if close(&|n| min + (max - min) * n) {
            Mapping::Straight
        } else if min > 0.0 && max > 0.0 && close(&|n| min * (max / min).powf(n)) {
            Mapping::Exponential
        } else {
            Mapping::Sampled(curve.into_boxed_slice())
        }
    }
}

/// Normalized values the mapping is sampled at to tell a straight line from a curve.
const CURVE_POINTS: usize = 257;

impl Param {
    /// The plain value of normalized `n`: real-time safe (arithmetic).
    fn plain(&self, n: f64) -> f64 {
        let n = n.clamp(0.0, 1.0);
        let span = self.max - self.min;
        match &self.mapping {
            Mapping::Straight => self.min + n * span,
            Mapping::Stepped(steps) => {
                let steps = f64::from(*steps);
                self.min + (n * steps).round() / steps * span
            }
            Mapping::Exponential => self.min * (self.max / self.min).powf(n),
            Mapping::Sampled(curve) => {
                let at = n * (curve.len() - 1) as f64;
                let k = (at.floor() as usize).min(curve.len() - 2);
                curve[k] + (curve[k + 1] - curve[k]) * (at - k as f64)
            }
        }
    }

    /// The normalized value of plain `v`: real-time safe (arithmetic, or a binary search).
    fn normalize(&self, v: f64) -> f64 {
        let span = self.max - self.min;
        if span == 0.0 {
            return 0.0;
        }
        let n = match &self.mapping {
            Mapping::Straight => (v - self.min) / span,
            Mapping::Stepped(steps) => {
                let steps = f64::from(*steps);
                (((v - self.min) / span) * steps).round() / steps
            }
            Mapping::Exponential => (v / self.min).ln() / (self.max / self.min).ln(),
            Mapping::Sampled(curve) => {
                let rising = span > 0.0;
                let at = curve.partition_point(|&p| if rising { p < v } else { p > v });
                if at == 0 {
                    return 0.0;
                }
                if at >= curve.len() {
                    return 1.0;
                }
                let (a, b) = (curve[at - 1], curve[at]);
                let t = if b == a { 0.0 } else { (v - a) / (b - a) };
                ((at - 1) as f64 + t) / (curve.len() - 1) as f64
            }
        };
        n.clamp(0.0, 1.0)
    }
}

/// An event waiting for its block.
#[derive(Clone, Copy, Debug)]
enum Pending {
    Param {
        frame: usize,
        index: usize,
        normalized: f64,
    },
    Note {
        frame: usize,
        event: NoteEvent,
    },
}

impl Pending {
    fn frame_mut(&mut self) -> &mut usize {
        match self {
            Pending::Param { frame, .. } | Pending::Note { frame, .. } => frame,
        }
    }
}

/// A VST3 plugin, set up and active, as a [`Node`].
///
/// The node's channels are all the plugin's audio buses' channels, bus after bus, each bus
/// one of its [`Port`]s: the main bus (the first, `kMain`) is `main`, the others are named
/// from their names ([`port_names`]: ZamComp's "Sidechain Input" is `sidechain_input`).
/// Every bus is activated; one no edge reaches hears silence. Its read-only parameters (the
/// plugin's meters) are its [outputs](Node::outputs), following what the plugin reports in
/// its output parameter changes. Its parameters are the controller's others (not hidden or
/// a program change), by title ([`param_name`](crate::naming::param_name)), in plain units
/// with the plugin's ranges and defaults, all live: each change reaches the plugin in `IParameterChanges` at its sample offset, as a normalized
/// value (through the plugin's own mapping, sampled when the node is built: a straight line,
/// an exponential curve and a stepped parameter are inverted by their formulas, to rounding,
/// any other by interpolation). An instrument (a plugin with an event input bus) gets notes
/// through `IEventList`.
///
/// Loading, `initialize`, the bus set-up and `setActive` happen in
/// [`load`](Vst3Node::load), off the audio thread; `setProcessing(true)` is an audio-thread
/// call, made by the first [`process`](Node::process). The host side of `process` copies the
/// input into buffers it owns, hands the plugin the output buffers themselves, and fills
/// lists allocated when the node was built: it does not allocate, lock or make system calls
/// (a guarded test checks it).
pub struct Vst3Node {
    info: Vst3Info,
    /// The class's id, which a saved state records.
    class: TUID,
    label: Label,
    // Field order matters for drop: the processor's reference goes before the component's
    // (DPF counts them apart), the COM objects before the module.
    processor: ComPtr<IAudioProcessor>,
    component: ComPtr<IComponent>,
    controller: Option<ComPtr<IEditController>>,
    connected: Option<(ComPtr<IConnectionPoint>, ComPtr<IConnectionPoint>)>,
    /// The controller's handler: kept alive while the controller may call it.
    _handler: ComWrapper<ComponentHandler>,
    _host: ComWrapper<HostApplication>,
    changes: ComWrapper<ParamChanges>,
    changes_ptr: ComPtr<IParameterChanges>,
    /// What the plugin reports back (its meters): taken, not used yet.
    out_changes: ComWrapper<ParamChanges>,
    out_changes_ptr: ComPtr<IParameterChanges>,
    events: ComWrapper<EventList>,
    events_ptr: ComPtr<IEventList>,
    context: ProcessContext,
    input_ports: Vec<Port>,
    output_ports: Vec<Port>,
    in_bufs: Vec<Vec<f32>>,
    /// Each input channel's buffer, as the plugin gets it (pointing into `in_bufs`): never
    /// read here, but `in_buses` point into it.
    _in_ptrs: Vec<*mut f32>,
    /// Each output channel's buffer, pointed at the node's output each block.
    out_ptrs: Vec<*mut f32>,
    in_buses: Vec<AudioBusBuffers>,
    out_buses: Vec<AudioBusBuffers>,
    specs: &'static [ParamSpec],
    params: Vec<Param>,
    values: Vec<f32>,
    /// The plugin's read-only parameters (its meters), as the node's outputs.
    out_specs: &'static [ParamSpec],
    out_params: Vec<Param>,
    out_values: Vec<f32>,
    pending: Vec<Pending>,
    latency: usize,
    instrument: bool,
    processing: bool,
    failed_calls: u64,
    dropped_events: u64,
    sample_rate: u32,
    /// Restarts the plugin asks for (see `super::restart`).
    restarter: Arc<Restarter>,
    /// Where a restart publishes a new latency.
    revision: SharedRevision,
    offline: bool,
    /// Blocks the node played silence for while the plugin restarted.
    blocks_restarting: u64,
    /// The library, kept loaded while the plugin's objects live (dropped after them).
    _module: Arc<Module>,
}

// SAFETY: VST3 objects are not thread-safe in general, but the SDK's threading model is
// the node's: the component's and controller's set-up and state calls come from one thread
// (the one that builds the node, off the audio thread, and the one that drops it or saves
// its state, also off it), `process` and `setProcessing` from the audio thread, never two
// at once, since the node is not shared (`&Vst3Node` reaches no plugin call). The raw
// pointers are into buffers the node owns or into the output of the block being processed.
unsafe impl Send for Vst3Node {}

fn text(bytes: &[i8]) -> String {
    let v: Vec<u8> = bytes
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&v).into_owned()
}

fn wide(chars: &[TChar]) -> String {
    let v: Vec<u16> = chars.iter().take_while(|&&c| c != 0).copied().collect();
    String::from_utf16_lossy(&v)
}

fn hex(id: &TUID) -> String {
    id.iter().map(|b| format!("{:02X}", *b as u8)).collect()
}

/// The bytes of a state stream the plugin writes through `save`.
fn save_stream(save: impl FnOnce(*mut IBStream) -> i32) -> Option<Vec<u8>> {
    let stream = ComWrapper::new(MemoryStream::default());
    let ptr = stream.to_com_ptr::<IBStream>()?;
    (save(ptr.as_ptr()) == kResultOk).then(|| stream.bytes())
}

/// Hands the plugin `bytes` to read through `load`; its result.
fn load_stream(bytes: &[u8], load: impl FnOnce(*mut IBStream) -> i32) -> i32 {
    let stream = MemoryStream::reading(bytes.to_vec());
    match stream.to_com_ptr::<IBStream>() {
        Some(ptr) => load(ptr.as_ptr()),
        None => -1,
    }
}

/// The class id and the two streams of a state file.
fn split_state(bytes: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let rest = bytes.strip_prefix(STATE_MAGIC.as_slice())?;
    let (class, rest) = (rest.get(..16)?, rest.get(16..)?);
    let take = |b: &[u8]| -> Option<(usize, usize)> {
        let n = u64::from_le_bytes(b.get(..8)?.try_into().ok()?) as usize;
        (b.len() - 8 >= n).then_some((8, 8 + n))
    };
    let (s, e) = take(rest)?;
    let (component, rest) = (&rest[s..e], &rest[e..]);
    let (s, e) = take(rest)?;
    Some((class, component, &rest[s..e]))
}

impl Vst3Node {
    /// Loads the audio processor class `id` (its name or its 32-digit hex id; may be left
    /// out when the bundle holds one) from the VST3 bundle at `path`, sets it up for blocks
    /// of at most `max_block` frames at `sample_rate`, and activates it. Off the audio
    /// thread.
    ///
    /// ```no_run
    /// use downbeat_graph::Node;
    /// use downbeat_plugin::vst3::Vst3Node;
    ///
    /// let node = Vst3Node::load("/usr/lib/vst3/ZamComp.vst3".as_ref(), None, 48000, 256, None)?;
    /// assert_eq!(node.input_ports()[1].name, "sidechain_input");
    /// # Ok::<(), downbeat_plugin::vst3::Vst3Error>(())
    /// ```
    ///
    /// # Errors
    /// A [`Vst3Error`] naming the bundle: missing, no library for this machine, not a VST3
    /// module, no such class, a step the plugin refuses, a state it cannot read.
    pub fn load(
        path: &Path,
        id: Option<&str>,
        sample_rate: u32,
        max_block: usize,
        state: Option<&Path>,
    ) -> Result<Self, Vst3Error> {
        let file_label = Label::new(id.unwrap_or("?"), &path.display().to_string());
        // Every call below is a main-thread call of the plugin's.
        let main = main_calls();
        let loading = crash::enter(file_label, Phase::Load);
        let module = Arc::new(Module::load(path, &main)?);
        let factory = module.factory();
        let mut classes = Vec::new();
        // SAFETY: plain calls on the factory, with out-structures of the SDK's types.
        unsafe {
            for i in 0..factory.countClasses() {
                let mut c: PClassInfo = std::mem::zeroed();
                if factory.getClassInfo(i, &mut c) == kResultOk && text(&c.category) == AUDIO_MODULE
                {
                    classes.push((text(&c.name), c.cid));
                }
            }
        }
        let names: Vec<String> = classes.iter().map(|c| c.0.clone()).collect();
        let (name, cid) = match id {
            Some(id) => classes
                .iter()
                .find(|(n, c)| n == id || hex(c).eq_ignore_ascii_case(id))
                .cloned()
                .ok_or_else(|| Vst3Error::UnknownClass {
                    path: path.to_path_buf(),
                    id: id.to_string(),
                    available: names.clone(),
                })?,
            None if classes.len() == 1 => classes[0].clone(),
            None => {
                return Err(Vst3Error::ClassNeeded {
                    path: path.to_path_buf(),
                    available: names,
                })
            }
        };
        drop(loading);
        let info = Vst3Info {
            path: path.to_path_buf(),
            name: name.clone(),
            id: hex(&cid),
        };
        let fail = |step: &str, result: i32| Vst3Error::Plugin {
            path: path.to_path_buf(),
            name: name.clone(),
            reason: format!("{step} failed (result {result})"),
        };
        let label = Label::new(&name, &format!("{}#{}", path.display(), info.id));
        let creating = crash::enter(label, Phase::Create);
        let host = ComWrapper::new(HostApplication);
        let context = host
            .to_com_ptr::<FUnknown>()
            .expect("HostApplication is an FUnknown");
        let handler = ComWrapper::new(ComponentHandler::default());
        // SAFETY: the SDK's set-up sequence, each call with the types it declares; the
        // objects created are owned by `ComPtr`s, which release them.
        let (component, controller, connected) = unsafe {
            let mut obj = std::ptr::null_mut();
            let r = factory.createInstance(cid.as_ptr(), IComponent::IID.as_ptr().cast(), &mut obj);
            let component = ComPtr::<IComponent>::from_raw(obj.cast())
                .filter(|_| r == kResultOk)
                .ok_or_else(|| fail("creating the component", r))?;
            let r = component.initialize(context.as_ptr());
            if r != kResultOk {
                return Err(fail("initialize", r));
            }
            let controller = match component.cast::<IEditController>() {
                Some(c) => Some(c),
                None => {
                    let mut ccid: TUID = [0; 16];
                    let mut obj = std::ptr::null_mut();
                    if component.getControllerClassId(&mut ccid) == kResultOk
                        && factory.createInstance(
                            ccid.as_ptr(),
                            IEditController::IID.as_ptr().cast(),
                            &mut obj,
                        ) == kResultOk
                    {
                        let c = ComPtr::<IEditController>::from_raw(obj.cast());
                        if let Some(c) = &c {
                            let r = c.initialize(context.as_ptr());
                            if r != kResultOk {
                                return Err(fail("initializing the controller", r));
                            }
                        }
                        c
                    } else {
                        None
                    }
                }
            };
            let connected = match (&controller, component.cast::<IConnectionPoint>()) {
                (Some(c), Some(a)) => c.cast::<IConnectionPoint>().map(|b| {
                    a.connect(b.as_ptr());
                    b.connect(a.as_ptr());
                    (a, b)
                }),
                _ => None,
            };
            if let Some(c) = &controller {
                if let Some(h) = handler.to_com_ptr::<IComponentHandler>() {
                    c.setComponentHandler(h.as_ptr());
                }
            }
            (component, controller, connected)
        };
        let processor = component
            .cast::<IAudioProcessor>()
            .ok_or_else(|| fail("finding the audio processor", -1))?;
        let restart_flags = handler.restart_flags.clone();
        // State: the file's, else the component's own, given to the controller.
        // SAFETY: state calls with streams the host owns for their duration.
        unsafe {
            match state {
                Some(file) => {
                    let err = |reason: &str| Vst3Error::State {
                        path: path.to_path_buf(),
                        file: file.to_path_buf(),
                        reason: reason.to_string(),
                    };
                    let bytes =
                        std::fs::read(file).map_err(|e| err(&format!("cannot read it: {e}")))?;
                    let (class, comp, ctrl) = split_state(&bytes)
                        .ok_or_else(|| err("not a VST3 state saved by Downbeat"))?;
                    if class != cid.map(|b| b as u8) {
                        let id: String = class.iter().map(|b| format!("{b:02X}")).collect();
                        return Err(err(&format!(
                            "it was saved by another plugin (class {id}), not by `{name}`"
                        )));
                    }
                    if load_stream(comp, |s| component.setState(s)) != kResultOk {
                        return Err(err(
                            "the plugin refused it (not a state this plugin saved?)",
                        ));
                    }
                    if let Some(c) = &controller {
                        load_stream(comp, |s| c.setComponentState(s));
                        if !ctrl.is_empty() {
                            load_stream(ctrl, |s| c.setState(s));
                        }
                    }
                }
                None => {
                    if let (Some(c), Some(bytes)) =
                        (&controller, save_stream(|s| component.getState(s)))
                    {
                        if !bytes.is_empty() {
                            load_stream(&bytes, |s| c.setComponentState(s));
                        }
                    }
                }
            }
        }
        // Buses: every audio bus active, each a port.
        let buses = |dir: i32| -> (Vec<Range<usize>>, Vec<String>) {
            let mut ranges = Vec::new();
            let mut names = Vec::new();
            let mut next = 0;
            // SAFETY: bus queries with an out-structure of the SDK's type.
            unsafe {
                for i in 0..component.getBusCount(MediaTypes_::kAudio as i32, dir) {
                    let mut b: BusInfo = std::mem::zeroed();
                    if component.getBusInfo(MediaTypes_::kAudio as i32, dir, i, &mut b) != kResultOk
                    {
                        continue;
                    }
                    component.activateBus(MediaTypes_::kAudio as i32, dir, i, 1);
                    let n = b.channelCount.max(0) as usize;
                    ranges.push(next..next + n);
                    names.push(wide(&b.name));
                    next += n;
                }
            }
            (ranges, names)
        };
        let (in_ports, in_names) = buses(BusDirections_::kInput as i32);
        let (out_ports, out_names) = buses(BusDirections_::kOutput as i32);
        // SAFETY: as above.
        let instrument = unsafe {
            let n =
                component.getBusCount(MediaTypes_::kEvent as i32, BusDirections_::kInput as i32);
            if n > 0 {
                component.activateBus(
                    MediaTypes_::kEvent as i32,
                    BusDirections_::kInput as i32,
                    0,
                    1,
                );
            }
            n > 0
        };
        let n_in = in_ports.last().map_or(0, |r| r.end);
        let n_out = out_ports.last().map_or(0, |r| r.end);
        if n_out == 0 {
            return Err(fail("reading the audio buses (no audio output)", -1));
        }
        // Parameters, from the controller.
        let mut specs = Vec::new();
        let mut params = Vec::new();
        let mut values = Vec::new();
        let (mut out_specs, mut out_params, mut out_values) = (Vec::new(), Vec::new(), Vec::new());
        if let Some(c) = &controller {
            let hidden = ParameterFlags_::kIsHidden | ParameterFlags_::kIsProgramChange;
            // SAFETY: parameter queries with an out-structure of the SDK's type.
            unsafe {
                for i in 0..c.getParameterCount() {
                    let mut p: ParameterInfo = std::mem::zeroed();
                    if c.getParameterInfo(i, &mut p) != kResultOk || p.flags & hidden != 0 {
                        continue;
                    }
                    let meter = p.flags & ParameterFlags_::kIsReadOnly != 0;
                    let title = wide(&p.title);
                    let units = wide(&p.units);
                    let name = unique_param_name(&title, p.id, |n| {
                        specs
                            .iter()
                            .chain(&out_specs)
                            .any(|s: &ParamSpec| s.name == n)
                    });
                    let plain = |n: f64| c.normalizedParamToPlain(p.id, n);
                    let curve: Vec<f64> = (0..CURVE_POINTS)
                        .map(|k| plain(k as f64 / (CURVE_POINTS - 1) as f64))
                        .collect();
                    let (min, max) = (curve[0], curve[CURVE_POINTS - 1]);
                    let default = plain(p.defaultNormalizedValue);
                    let (lo, hi) = (min.min(max), min.max(max));
                    let doc = format!(
                        "VST3 parameter {} \"{title}\"{} ({lo} to {hi})",
                        p.id,
                        if units.trim().is_empty() {
                            String::new()
                        } else {
                            format!(" in {}", units.trim())
                        },
                    );
                    let spec = ParamSpec {
                        // Leaked once per node built: `Node::params` hands out a 'static
                        // list, and these names exist only once the plugin is loaded.
                        name: Box::leak(name.into_boxed_str()),
                        doc: Box::leak(doc.into_boxed_str()),
                        kind: ParamKind::Float {
                            min: lo,
                            max: hi,
                            default,
                        },
                        unit: Unit::None,
                        live: !meter,
                    };
                    let value = plain(c.getParamNormalized(p.id)) as f32;
                    let (specs, params, values) = if meter {
                        (&mut out_specs, &mut out_params, &mut out_values)
                    } else {
                        (&mut specs, &mut params, &mut values)
                    };
                    specs.push(spec);
                    values.push(value);
                    params.push(Param {
                        id: p.id,
                        min,
                        max,
                        mapping: Mapping::new(p.stepCount, curve),
                    });
                }
            }
        }
        // SAFETY: the processing set-up, with the SDK's structure.
        let latency = unsafe {
            if processor.canProcessSampleSize(SymbolicSampleSizes_::kSample32 as i32) != kResultOk {
                return Err(fail("32-bit float processing", -1));
            }
            let mut setup = ProcessSetup {
                processMode: ProcessModes_::kRealtime as i32,
                symbolicSampleSize: SymbolicSampleSizes_::kSample32 as i32,
                maxSamplesPerBlock: max_block as i32,
                sampleRate: f64::from(sample_rate),
            };
            let r = processor.setupProcessing(&mut setup);
            if r != kResultOk {
                return Err(fail("setupProcessing", r));
            }
            drop(creating);
            let _activating = crash::enter(label, Phase::Activate);
            let r = component.setActive(1);
            if r != kResultOk {
                return Err(fail("setActive", r));
            }
            processor.getLatencySamples() as usize
        };
        let mut in_bufs = vec![vec![0.0f32; max_block]; n_in];
        let mut in_ptrs: Vec<*mut f32> = in_bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
        let mut out_ptrs: Vec<*mut f32> = vec![std::ptr::null_mut(); n_out];
        let bus = |ptrs: &mut Vec<*mut f32>, r: &Range<usize>| AudioBusBuffers {
            numChannels: r.len() as i32,
            silenceFlags: 0,
            __field0: AudioBusBuffers__type0 {
                // SAFETY: `r` lies inside `ptrs`, whose length never changes after this.
                channelBuffers32: unsafe { ptrs.as_mut_ptr().add(r.start) },
            },
        };
        let in_buses = in_ports.iter().map(|r| bus(&mut in_ptrs, r)).collect();
        let out_buses = out_ports.iter().map(|r| bus(&mut out_ptrs, r)).collect();
        let node_ports = |names: &[String], ranges: &[Range<usize>]| -> Vec<Port> {
            port_names(names, 0)
                .into_iter()
                .zip(ranges)
                .map(|(n, r)| Port::new(n, r.len()))
                .collect()
        };
        let input_ports = node_ports(&in_names, &in_ports);
        let output_ports = node_ports(&out_names, &out_ports);
        let changes = ComWrapper::new(ParamChanges::new(params.len()));
        let changes_ptr = changes
            .to_com_ptr::<IParameterChanges>()
            .expect("ParamChanges implements IParameterChanges");
        let all_params = controller
            .as_ref()
            // SAFETY: a plain query.
            .map_or(0, |c| unsafe { c.getParameterCount() }.max(0) as usize);
        let out_changes = ComWrapper::new(ParamChanges::new(all_params));
        let out_changes_ptr = out_changes
            .to_com_ptr::<IParameterChanges>()
            .expect("ParamChanges implements IParameterChanges");
        let events = ComWrapper::new(EventList::new(EVENT_CAPACITY));
        let events_ptr = events
            .to_com_ptr::<IEventList>()
            .expect("EventList implements IEventList");
        let mut pending = Vec::with_capacity(EVENT_CAPACITY);
        pending.resize(
            EVENT_CAPACITY,
            Pending::Param {
                frame: 0,
                index: 0,
                normalized: 0.0,
            },
        );
        pending.clear();
        // SAFETY: `ProcessContext` is plain data, for which all zeroes is a valid value.
        let context: ProcessContext = unsafe { std::mem::zeroed() };
        let specs: &'static [ParamSpec] = Box::leak(specs.into_boxed_slice());
        let revision = Arc::new(Revision::new(latency, specs));
        let restarter = Restarter::new(
            restart_flags,
            component.clone(),
            processor.clone(),
            revision.clone(),
            label,
            module.clone(),
        );
        Ok(Self {
            info,
            class: cid,
            label,
            component,
            processor,
            controller,
            connected,
            _handler: handler,
            _host: host,
            changes,
            changes_ptr,
            out_changes,
            out_changes_ptr,
            events,
            events_ptr,
            context,
            input_ports,
            output_ports,
            in_bufs,
            _in_ptrs: in_ptrs,
            out_ptrs,
            in_buses,
            out_buses,
            specs,
            params,
            values,
            out_specs: Box::leak(out_specs.into_boxed_slice()),
            out_params,
            out_values,
            pending,
            latency,
            instrument,
            processing: false,
            failed_calls: 0,
            dropped_events: 0,
            sample_rate,
            restarter,
            revision,
            offline: false,
            blocks_restarting: 0,
            _module: module,
        })
    }

    /// The bundle, name and id of the plugin.
    pub fn info(&self) -> &Vst3Info {
        &self.info
    }

    /// Blocks the node played silence for while the plugin restarted (none offline, where
    /// the render waits for the restart instead).
    pub fn blocks_restarting(&self) -> u64 {
        self.blocks_restarting
    }

    /// How many `process` calls the plugin refused (the node output silence for those).
    pub fn failed_calls(&self) -> u64 {
        self.failed_calls
    }

    /// Parameter points and notes dropped because a block's lists were full.
    pub fn dropped_events(&self) -> u64 {
        self.dropped_events
    }

    /// Restarts the plugin asked for (`restartComponent(kLatencyChanged)`) and had:
    /// deactivated and activated again off the audio thread, with the node kept.
    pub fn restarts(&self) -> u64 {
        self.restarter.restarts()
    }

    fn queue(&mut self, p: Pending) -> bool {
        if self.pending.len() == self.pending.capacity() {
            return false;
        }
        self.pending.push(p);
        true
    }

    /// Moves the events due in a block of `frames` frames into the plugin's lists (in
    /// time order, ties in the order given) and keeps the later ones.
    fn fill_lists(&mut self, frames: usize) {
        self.changes.clear();
        self.events.clear();
        // Insertion sort: stable, in place, and the list is short and mostly in order.
        for i in 1..self.pending.len() {
            let mut j = i;
            while j > 0 && frame_of(&self.pending[j - 1]) > frame_of(&self.pending[j]) {
                self.pending.swap(j - 1, j);
                j -= 1;
            }
        }
        for p in &self.pending {
            let ok = match *p {
                Pending::Param {
                    frame,
                    index,
                    normalized,
                } if frame < frames => self.params.get(index).is_some_and(|param| {
                    self.changes.push(index, param.id, frame as i32, normalized)
                }),
                Pending::Note { frame, event } if frame < frames => {
                    note_event(frame as i32, event).is_none_or(|e| self.events.push(e))
                }
                _ => true,
            };
            if !ok {
                self.dropped_events += 1;
            }
        }
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

    /// The transport at the block's first frame, as VST3's `ProcessContext`.
    fn fill_context(&mut self, ctx: &Context) {
        let m: &MusicalPosition = &ctx.musical;
        let c = &mut self.context;
        let mut state = StatesAndFlags_::kTempoValid
            | StatesAndFlags_::kTimeSigValid
            | StatesAndFlags_::kProjectTimeMusicValid
            | StatesAndFlags_::kBarPositionValid
            | StatesAndFlags_::kContTimeValid;
        if m.playing {
            state |= StatesAndFlags_::kPlaying;
        }
        if let Some((start, end)) = m.looping {
            state |= StatesAndFlags_::kCycleActive | StatesAndFlags_::kCycleValid;
            c.cycleStartMusic = start;
            c.cycleEndMusic = end;
        }
        c.state = state;
        c.sampleRate = f64::from(self.sample_rate);
        c.projectTimeSamples = m.song_frame as i64;
        c.continousTimeSamples = ctx.position as i64;
        c.projectTimeMusic = m.beat;
        c.barPositionMusic = m.bar_beat;
        c.tempo = m.bpm;
        c.timeSigNumerator = i32::from(m.signature.numerator);
        c.timeSigDenominator = i32::from(m.signature.denominator);
    }
}

fn frame_of(p: &Pending) -> usize {
    match *p {
        Pending::Param { frame, .. } | Pending::Note { frame, .. } => frame,
    }
}

/// A note as a VST3 event on bus 0; `None` for what VST3 events do not carry (pitch bend
/// and sustain are parameters in VST3, through `IMidiMapping`, which the node does not map).
fn note_event(offset: i32, event: NoteEvent) -> Option<Event> {
    let key = |note: f32| note.round().clamp(0.0, 127.0) as i16;
    let (kind, body) = match event.normalized() {
        NoteEvent::On {
            channel,
            note,
            velocity,
        } => (
            EventTypes_::kNoteOnEvent,
            Event__type0 {
                noteOn: NoteOnEvent {
                    channel: i16::from(channel),
                    pitch: key(note),
                    tuning: 0.0,
                    velocity,
                    length: 0,
                    noteId: -1,
                },
            },
        ),
        NoteEvent::Off { channel, note } => (
            EventTypes_::kNoteOffEvent,
            Event__type0 {
                noteOff: NoteOffEvent {
                    channel: i16::from(channel),
                    pitch: key(note),
                    velocity: 0.0,
                    noteId: -1,
                    tuning: 0.0,
                },
            },
        ),
        _ => return None,
    };
    Some(Event {
        busIndex: 0,
        sampleOffset: offset,
        ppqPosition: 0.0,
        flags: 0,
        r#type: kind as u16,
        __field0: body,
    })
}

impl Node for Vst3Node {
    fn input_channels(&self) -> usize {
        self.in_bufs.len()
    }

    fn output_channels(&self) -> usize {
        self.out_ptrs.len()
    }

    fn input_ports(&self) -> Vec<Port> {
        self.input_ports.clone()
    }

    fn output_ports(&self) -> Vec<Port> {
        self.output_ports.clone()
    }

    fn process(&mut self, ctx: &Context, input: AudioRef<'_>, mut output: AudioMut<'_>) {
        let _inside = crash::enter(self.label, Phase::Process);
        let frames = ctx.frames;
        match self
            .restarter
            .turn(&mut self.processing, self.offline, OFFLINE_RESTART_WAIT)
        {
            Turn::Away => {
                self.blocks_restarting += 1;
                for c in 0..self.out_ptrs.len() {
                    output.channel_mut(c).fill(0.0);
                }
                return;
            }
            Turn::Process(Some(latency)) => self.latency = latency,
            Turn::Process(None) => {}
        }
        for (c, buf) in self.in_bufs.iter_mut().enumerate() {
            buf[..frames].copy_from_slice(&input.channel(c)[..frames]);
        }
        for (c, ptr) in self.out_ptrs.iter_mut().enumerate() {
            *ptr = output.channel_mut(c).as_mut_ptr();
        }
        self.fill_lists(frames);
        self.out_changes.clear();
        self.fill_context(ctx);
        if !self.processing {
            // SAFETY: an audio-thread call of the SDK, once before the first `process`.
            unsafe { self.processor.setProcessing(1) };
            self.processing = true;
        }
        let mut data = ProcessData {
            processMode: ProcessModes_::kRealtime as i32,
            symbolicSampleSize: SymbolicSampleSizes_::kSample32 as i32,
            numSamples: frames as i32,
            numInputs: self.in_buses.len() as i32,
            numOutputs: self.out_buses.len() as i32,
            inputs: self.in_buses.as_mut_ptr(),
            outputs: self.out_buses.as_mut_ptr(),
            inputParameterChanges: self.changes_ptr.as_ptr(),
            outputParameterChanges: self.out_changes_ptr.as_ptr(),
            inputEvents: if self.instrument {
                self.events_ptr.as_ptr()
            } else {
                std::ptr::null_mut()
            },
            outputEvents: std::ptr::null_mut(),
            processContext: &mut self.context,
        };
        // SAFETY: every buffer the data points at is valid for `frames` frames: the input
        // copies in `in_bufs`, the output channels of this block (whose pointers were just
        // written), the lists the node owns; nothing else touches them during the call.
        let r = unsafe { self.processor.process(&mut data) };
        let (params, values) = (&self.out_params, &mut self.out_values);
        self.out_changes.each_last(|id, normalized| {
            if let Some(k) = params.iter().position(|p| p.id == id) {
                values[k] = params[k].plain(normalized) as f32;
            }
        });
        if r != kResultOk {
            self.failed_calls += 1;
            for c in 0..self.out_ptrs.len() {
                output.channel_mut(c).fill(0.0);
            }
        }
    }

    fn set_param(&mut self, index: usize, value: f32) -> bool {
        self.set_param_at(0, index, value)
    }

    fn set_offline(&mut self, offline: bool) {
        self.offline = offline;
    }

    fn revision(&self) -> Option<SharedRevision> {
        Some(self.revision.clone())
    }

    fn takes_param_offsets(&self) -> bool {
        true
    }

    fn set_param_at(&mut self, frame: usize, index: usize, value: f32) -> bool {
        let Some(p) = self.params.get(index) else {
            return false;
        };
        if !value.is_finite() {
            return false;
        }
        let (lo, hi) = (p.min.min(p.max), p.min.max(p.max));
        let plain = f64::from(value).clamp(lo, hi);
        let normalized = p.normalize(plain);
        if !self.queue(Pending::Param {
            frame,
            index,
            normalized,
        }) {
            return false;
        }
        self.values[index] = plain as f32;
        true
    }

    fn params(&self) -> &'static [ParamSpec] {
        self.specs
    }

    /// The plugin's read-only parameters (meters: ZamComp's `gain_reduction`), by title, in
    /// plain units.
    fn outputs(&self) -> &'static [ParamSpec] {
        self.out_specs
    }

    /// The last value the plugin reported for meter `index` in its output parameter
    /// changes (or its value when the node was built, until it reports one).
    fn output_value(&self, index: usize) -> f32 {
        self.out_values.get(index).copied().unwrap_or(0.0)
    }

    fn get_param(&self, index: usize) -> Option<f32> {
        self.values.get(index).copied()
    }

    fn latency(&self) -> usize {
        self.latency
    }

    fn plays_notes(&self) -> bool {
        self.instrument
    }

    fn note(&mut self, frame: usize, event: NoteEvent) -> Result<(), NoteError> {
        if !self.instrument {
            return Err(NoteError::NotAnInstrument);
        }
        event.validate()?;
        if !self.queue(Pending::Note { frame, event }) {
            return Err(NoteError::Full {
                capacity: self.pending.capacity(),
            });
        }
        Ok(())
    }

    fn save_state(&mut self) -> Result<Option<NodeState>, StateError> {
        let refused = || {
            StateError::new(format!(
                "VST3 plugin `{}` refused to save its state",
                self.info.name
            ))
        };
        // Not during a restart, nor beside another node's main-thread calls.
        let _main = main_calls();
        // SAFETY: state calls with streams the host owns for their duration.
        let component =
            save_stream(|s| unsafe { self.component.getState(s) }).ok_or_else(refused)?;
        let controller = match &self.controller {
            // SAFETY: as above.
            Some(c) => save_stream(|s| unsafe { c.getState(s) }).unwrap_or_default(),
            None => Vec::new(),
        };
        let mut bytes = STATE_MAGIC.to_vec();
        bytes.extend(self.class.iter().map(|&b| b as u8));
        for part in [&component, &controller] {
            bytes.extend_from_slice(&(part.len() as u64).to_le_bytes());
            bytes.extend_from_slice(part);
        }
        Ok(Some(NodeState {
            bytes,
            extension: STATE_EXTENSION,
        }))
    }
}

impl Drop for Vst3Node {
    fn drop(&mut self) {
        // No restart may touch the plugin from here on.
        self.restarter.close();
        // After `close`: a restart under way holds the lock until it is done.
        let _main = main_calls();
        let _inside = crash::enter(self.label, Phase::Deactivate);
        // SAFETY: the SDK's tear-down sequence, off the audio thread; `setProcessing(false)`
        // is the audio thread's call, made here as the last one.
        unsafe {
            if self.processing {
                self.processor.setProcessing(0);
            }
            self.component.setActive(0);
            if let Some((a, b)) = self.connected.take() {
                a.disconnect(b.as_ptr());
                b.disconnect(a.as_ptr());
            }
            if let Some(c) = self.controller.take() {
                // A single-component plugin is its own controller: terminated once, below.
                if c.cast::<IComponent>().is_none() {
                    c.setComponentHandler(std::ptr::null_mut());
                    c.terminate();
                }
            }
            self.component.terminate();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A parameter as [`Vst3Node::load`] builds it from a plugin whose controller maps
    /// normalized `n` to `plain(n)` and reports `step_count` steps.
    fn param(step_count: i32, plain: impl Fn(f64) -> f64) -> Param {
        let curve: Vec<f64> = (0..CURVE_POINTS)
            .map(|k| plain(k as f64 / (CURVE_POINTS - 1) as f64))
            .collect();
        let (min, max) = (curve[0], curve[CURVE_POINTS - 1]);
        Param {
            id: 0,
            min,
            max,
            mapping: Mapping::new(step_count, curve),
        }
    }

    /// The SDK's `RangeParameter::toPlain`.
    fn straight(min: f64, max: f64) -> impl Fn(f64) -> f64 {
        move |n| n * (max - min) + min
    }

    /// DPF's `normalizedParameterToPlain`: a straight line in single precision, for every
    /// continuous parameter, the ones it marks logarithmic too (ZamEQ2's frequencies). Its
    /// integer parameters are rounded to whole numbers and have a step count.
    fn dpf(min: f32, max: f32, integer: bool) -> impl Fn(f64) -> f64 {
        move |n| {
            let v = n as f32 * (max - min) + min;
            f64::from(if integer { v.round() } else { v })
        }
    }

    fn exponential(min: f64, max: f64) -> impl Fn(f64) -> f64 {
        move |n| min * (max / min).powf(n)
    }

    /// Curves none of the formulas fit: a square law and a steep skew near 0.
    fn square(n: f64) -> f64 {
        20.0 + 14_000.0 * n * n
    }
    fn skewed(n: f64) -> f64 {
        -60.0 + 60.0 * n.powf(0.3)
    }

    /// Normalized values inside the range, none of them a sampled point.
    fn interior() -> impl Iterator<Item = f64> {
        (1..1000).map(|i| i as f64 / 1000.0 + 1e-4)
    }

    /// The largest distance from `n` to the normalized value of the plugin's plain value
    /// at `n`, over the interior.
    fn worst(p: &Param, plain: impl Fn(f64) -> f64) -> f64 {
        interior()
            .map(|n| (p.normalize(plain(n)) - n).abs())
            .fold(0.0, f64::max)
    }

    #[test]
    fn each_mapping_is_told_from_its_samples() {
        for (what, p) in [
            ("SDK -50..20", param(0, straight(-50.0, 20.0))),
            ("SDK falling 1..0", param(0, straight(1.0, 0.0))),
            ("DPF 0.1..6", param(0, dpf(0.1, 6.0, false))),
            ("DPF 20..14000", param(0, dpf(20.0, 14_000.0, false))),
        ] {
            assert!(matches!(p.mapping, Mapping::Straight), "{what}: {p:?}");
        }
        let p = param(0, exponential(20.0, 14_000.0));
        assert!(matches!(p.mapping, Mapping::Exponential), "{p:?}");
        // The steps are the plugin's word, whatever the samples look like.
        let p = param(4, dpf(1.0, 5.0, true));
        assert!(matches!(p.mapping, Mapping::Stepped(4)), "{p:?}");
        for (what, p) in [("square", param(0, square)), ("skewed", param(0, skewed))] {
            assert!(matches!(p.mapping, Mapping::Sampled(_)), "{what}: {p:?}");
        }
    }

    #[test]
    fn formulas_invert_to_rounding_steps_exactly_and_samples_within_their_spacing() {
        // Rounding of a few operations on numbers below 1: what "exactly" can mean in
        // floating point (the worst seen is half an ulp of 1).
        let rounding = 4.0 * f64::EPSILON;
        for (what, f) in [
            ("straight", &straight(-50.0, 20.0) as &dyn Fn(f64) -> f64),
            ("straight 0.1..6", &straight(0.1, 6.0)),
            ("exponential", &exponential(20.0, 14_000.0)),
            ("exponential 0.001..1", &exponential(0.001, 1.0)),
        ] {
            let p = param(0, f);
            let e = worst(&p, f);
            assert!(e <= rounding, "{what}: off by {e:e}");
        }
        // A DPF plugin rounds the value to single precision itself; the host is as close
        // as that rounding lets it be.
        let f = dpf(0.1, 6.0, false);
        let e = worst(&param(0, &f), &f);
        assert!(e <= f64::from(f32::EPSILON), "DPF: off by {e:e}");

        // Every step comes back bit for bit, and a value between steps goes to the nearest.
        let steps = 4;
        let f = dpf(1.0, 5.0, true);
        let p = param(steps, &f);
        for k in 0..=steps {
            let n = f64::from(k) / f64::from(steps);
            assert_eq!(p.normalize(f(n)).to_bits(), n.to_bits(), "step {k}");
        }
        for n in interior() {
            let nearest = (n * f64::from(steps)).round() / f64::from(steps);
            assert_eq!(p.normalize(f(n)), nearest, "between steps at {n}");
        }

        // Interpolation lands between the two samples around the value, so within one
        // sample's spacing of it.
        let spacing = 1.0 / (CURVE_POINTS - 1) as f64;
        for (what, f) in [
            ("square", &square as &dyn Fn(f64) -> f64),
            ("skewed", &skewed),
        ] {
            let e = worst(&param(0, f), f);
            assert!(e <= spacing, "{what}: off by {e:e}");
        }
    }
}
