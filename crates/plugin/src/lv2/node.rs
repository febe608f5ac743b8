//! [`Lv2Node`]: one instantiated plugin as a graph node.

use std::collections::HashMap;
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use downbeat_graph::time::MusicalPosition;
use downbeat_graph::{
    AudioMut, AudioRef, Node, NodeState, NoteError, NoteEvent, ParamKind, ParamSpec, Port,
    ProcessContext, SharedMonitor, StateError, Unit,
};
use lilv::instance::ActiveInstance;

use super::atom::{prefault_spare, to_midi, AtomBuffer, AtomUrids, Midi, NOTE_CAPACITY};
use super::error::Lv2Error;
use super::features::{HostFeatures, SUPPORTED};
use super::groups::{audio_groups, AudioGroup, PortGroup};
use super::outputs::output_specs;
use super::port::{connection, ControlProps, ControlSpec, PortKind};
use super::state::{self, Source};
use super::time::{position, TimeFollower, TimeUrids, POSITION_WORDS};
use super::worker::{self, Worker, WorkerCounts};
use crate::crash::{self, Label, Phase};

/// Silent blocks run at most while waiting for a plugin's latency report to settle.
const MAX_LATENCY_BLOCKS: usize = 64;

const LV2_CORE: &str = "http://lv2plug.in/ns/lv2core#";
const PORT_GROUPS: &str = "http://lv2plug.in/ns/ext/port-groups#";

/// Plugin instances created by this process (every successful `instantiate`, including the
/// throw-away instance a plugin with a latency port is first queried with).
static INSTANCES: AtomicU64 = AtomicU64::new(0);

/// How many LV2 plugin instances this process has created so far: [`Lv2Node::load`] makes
/// one, or two for a plugin with a latency port (the first only answers the latency query).
/// For tests that check a live edit of a graph keeps a plugin's instance instead of loading
/// the plugin again.
#[doc(hidden)]
pub fn instances_loaded() -> u64 {
    INSTANCES.load(Ordering::Relaxed)
}

/// The process' lilv world, loaded once with every installed bundle. Plugins' shared
/// libraries stay loaded as long as it lives, which is the whole process.
pub(crate) fn world() -> &'static Mutex<lilv::World> {
    static WORLD: OnceLock<Mutex<lilv::World>> = OnceLock::new();
    WORLD.get_or_init(|| Mutex::new(lilv::World::with_load_all()))
}

/// A number from an RDF literal, whether written as a decimal or an integer.
fn number(node: Option<lilv::node::Node>) -> Option<f32> {
    let node = node?;
    node.as_float().or_else(|| node.as_int().map(|i| i as f32))
}

/// One port of a plugin, as read from its data.
#[derive(Clone, Debug)]
pub struct PortInfo {
    /// The port's index.
    pub index: usize,
    /// What it carries.
    pub kind: PortKind,
    /// `lv2:connectionOptional`.
    pub optional: bool,
    /// The port's symbol.
    pub symbol: String,
    /// Its classes, as URIs (for error messages).
    pub classes: Vec<String>,
    /// For a control input, what it accepts.
    pub control: Option<ControlSpec>,
    /// For an audio port, the port group it is in (`pg:group`), if any.
    pub group: Option<PortGroup>,
    /// For an audio port, `lv2:isSideChain`: it feeds a detector, not the signal path.
    pub side_chain: bool,
}

/// What Downbeat knows of a plugin before instantiating it.
#[derive(Clone, Debug)]
pub struct PluginInfo {
    /// The plugin's URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// Every port, in index order.
    pub ports: Vec<PortInfo>,
    /// Features the plugin requires.
    pub required_features: Vec<String>,
    /// The index of the port reporting latency, if any.
    pub latency_port: Option<usize>,
    /// Whether the plugin asks for the worker (`worker:schedule`, required or optional).
    pub wants_worker: bool,
    /// The plugin's main input group (`pg:mainInput`), by [`PortGroup::id`].
    pub main_input: Option<String>,
    /// The plugin's main output group (`pg:mainOutput`), by [`PortGroup::id`].
    pub main_output: Option<String>,
}

impl PluginInfo {
    /// Reads the plugin's description from the installed bundles, with its control ranges
    /// for `sample_rate`. Off the audio thread.
    ///
    /// # Errors
    /// [`Lv2Error::NotFound`] when no installed plugin has this URI.
    pub fn find(uri: &str, sample_rate: u32) -> Result<PluginInfo, Lv2Error> {
        let world = world().lock().unwrap_or_else(|p| p.into_inner());
        let plugin = find_plugin(&world, uri)?;
        let class = |name: &str| world.new_uri(&format!("{LV2_CORE}{name}"));
        let (audio, control, cv, input, output) = (
            class("AudioPort"),
            class("ControlPort"),
            class("CVPort"),
            class("InputPort"),
            class("OutputPort"),
        );
        let atom = world.new_uri("http://lv2plug.in/ns/ext/atom#AtomPort");
        let midi = world.new_uri("http://lv2plug.in/ns/ext/midi#MidiEvent");
        let position = world.new_uri("http://lv2plug.in/ns/ext/time#Position");
        let prop = |name: &str| world.new_uri(&format!("{LV2_CORE}{name}"));
        let (p_rate, p_int, p_toggle, p_enum, p_optional, p_side_chain) = (
            prop("sampleRate"),
            prop("integer"),
            prop("toggled"),
            prop("enumeration"),
            prop("connectionOptional"),
            prop("isSideChain"),
        );
        let pg = |name: &str| world.new_uri(&format!("{PORT_GROUPS}{name}"));
        let (pg_group, pg_side_chain_of) = (pg("group"), pg("sideChainOf"));
        // A group's identity: its URI, or the Turtle token of a blank node.
        let id = |n: &lilv::node::Node| n.as_uri().map_or_else(|| n.turtle_token(), str::to_string);
        let main_group = |name: &str| plugin.value(&pg(name)).iter().next().map(|n| id(&n));
        let mut ports = Vec::new();
        for port in plugin.iter_ports() {
            let symbol = port
                .symbol()
                .and_then(|s| s.as_str().map(str::to_string))
                .unwrap_or_else(|| format!("port{}", port.index()));
            let classes: Vec<String> = port
                .classes()
                .iter()
                .filter_map(|c| c.as_uri().map(str::to_string))
                .collect();
            let is_in = port.is_a(&input);
            let is_out = port.is_a(&output);
            let kind = match () {
                _ if port.is_a(&audio) && is_in => PortKind::AudioIn,
                _ if port.is_a(&audio) && is_out => PortKind::AudioOut,
                _ if port.is_a(&control) && is_in => PortKind::ControlIn,
                _ if port.is_a(&control) && is_out => PortKind::ControlOut,
                _ if port.is_a(&cv) && is_in => PortKind::CvIn,
                _ if port.is_a(&cv) && is_out => PortKind::CvOut,
                _ if port.is_a(&atom) && is_in => PortKind::AtomIn {
                    midi: port.supports_event(&midi),
                    time: port.supports_event(&position),
                },
                _ if port.is_a(&atom) && is_out => PortKind::AtomOut,
                _ => PortKind::Other,
            };
            let control = (kind == PortKind::ControlIn).then(|| {
                let range = port.range();
                let props = ControlProps {
                    sample_rate: port.has_property(&p_rate),
                    integer: port.has_property(&p_int),
                    toggled: port.has_property(&p_toggle),
                    enumeration: port.has_property(&p_enum),
                };
                let points = port
                    .scale_points()
                    .iter()
                    .filter_map(|p| {
                        let v = number(Some(p.value()))?;
                        Some((v, p.label().as_str().unwrap_or("").to_string()))
                    })
                    .collect();
                let name = port
                    .name()
                    .and_then(|n| n.as_str().map(str::to_string))
                    .unwrap_or_else(|| symbol.clone());
                ControlSpec::new(
                    &symbol,
                    &name,
                    number(range.minimum),
                    number(range.maximum),
                    number(range.default),
                    props,
                    points,
                    sample_rate,
                )
            });
            let audio = matches!(kind, PortKind::AudioIn | PortKind::AudioOut);
            // The group's symbol and side-chain flag are triples about the group, which
            // the plugin's data file holds: lilv has them in its world once it read the
            // plugin's ports.
            let group = port.get(&pg_group).filter(|_| audio).map(|g| PortGroup {
                id: id(&g),
                symbol: world
                    .symbol(&g)
                    .and_then(|s| s.as_str().map(str::to_string))
                    .unwrap_or_default(),
                side_chain: world.ask(Some(&g), Some(&pg_side_chain_of), None),
            });
            ports.push(PortInfo {
                index: port.index(),
                kind,
                optional: port.has_property(&p_optional),
                symbol,
                classes,
                control,
                group,
                side_chain: audio && port.has_property(&p_side_chain),
            });
        }
        ports.sort_by_key(|p| p.index);
        Ok(PluginInfo {
            uri: uri.to_string(),
            name: plugin.name().as_str().unwrap_or(uri).to_string(),
            required_features: plugin
                .required_features()
                .iter()
                .filter_map(|f| f.as_uri().map(str::to_string))
                .collect(),
            latency_port: plugin.latency_port_index(),
            wants_worker: plugin
                .required_features()
                .iter()
                .chain(plugin.optional_features().iter())
                .any(|f| f.as_uri() == worker::SCHEDULE.to_str().ok()),
            main_input: main_group("mainInput"),
            main_output: main_group("mainOutput"),
            ports,
        })
    }

    /// Required features Downbeat does not provide.
    pub fn missing_features(&self) -> Vec<String> {
        self.required_features
            .iter()
            .filter(|f| !SUPPORTED.contains(&f.as_str()))
            .cloned()
            .collect()
    }

    /// The control inputs, in port order.
    pub fn controls(&self) -> impl Iterator<Item = &ControlSpec> {
        self.ports.iter().filter_map(|p| p.control.as_ref())
    }

    fn count(&self, kind: PortKind) -> usize {
        self.ports.iter().filter(|p| p.kind == kind).count()
    }

    /// Whether an atom input takes the host's transport (`time:Position`).
    pub fn follows_time(&self) -> bool {
        self.ports
            .iter()
            .any(|p| matches!(p.kind, PortKind::AtomIn { time: true, .. }))
    }
}

pub(crate) fn find_plugin(
    world: &lilv::World,
    uri: &str,
) -> Result<lilv::plugin::Plugin, Lv2Error> {
    world
        .plugins()
        .plugin(&world.new_uri(uri))
        .ok_or_else(|| Lv2Error::NotFound {
            uri: uri.to_string(),
        })
}

/// Parameter declarations for a plugin at a sample rate. [`Node::params`] hands out
/// `'static` slices, so they are made once per plugin and rate and kept for the process.
fn param_specs(info: &PluginInfo, sample_rate: u32) -> &'static [ParamSpec] {
    type Key = (String, u32);
    static SPECS: OnceLock<Mutex<HashMap<Key, &'static [ParamSpec]>>> = OnceLock::new();
    let mut specs = SPECS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    specs
        .entry((info.uri.clone(), sample_rate))
        .or_insert_with(|| {
            let list: Vec<ParamSpec> = info
                .controls()
                .map(|c| ParamSpec {
                    name: Box::leak(c.symbol.clone().into_boxed_str()),
                    doc: Box::leak(c.describe().into_boxed_str()),
                    kind: ParamKind::Float {
                        min: f64::from(c.min),
                        max: f64::from(c.max),
                        default: f64::from(c.default),
                    },
                    unit: Unit::None,
                    live: true,
                })
                .collect();
            Box::leak(list.into_boxed_slice())
        })
}

/// A value for a control input, as a project file or a program gives it.
#[derive(Clone, Debug, PartialEq)]
pub enum ControlValue {
    /// A number.
    Number(f64),
    /// A toggle's state.
    Bool(bool),
    /// A scale point's label.
    Label(String),
}

/// An instantiated LV2 plugin: a [`Node`] whose input channels are the plugin's audio
/// inputs and output channels its audio outputs, grouped in the node's ports by the
/// plugin's port groups (`main`, a side chain such as `sidechain_in`: see
/// [`groups`](super::groups); one `main` port per side, channels in port order, for a
/// plugin without groups), whose live parameters are its control inputs by symbol, and
/// which plays notes when the plugin has a MIDI input.
///
/// ```no_run
/// use downbeat_graph::NodeConfig;
/// use downbeat_plugin::lv2::{ControlValue, Lv2Node};
///
/// let cfg = NodeConfig { sample_rate: 48000, max_block: 256 };
/// let drive = [("drive".to_string(), ControlValue::Number(0.7))];
/// let node = Lv2Node::load("http://drobilla.net/plugins/mda/Overdrive", &drive, &cfg)?;
/// assert_eq!(node.input_channels_count(), 2);
/// # Ok::<(), downbeat_plugin::lv2::Lv2Error>(())
/// ```
pub struct Lv2Node {
    // Dropped first, in `Drop` (after the worker thread is stopped): the plugin's
    // `deactivate` and `cleanup` may still read its features and buffers, which are the
    // fields after it.
    instance: ManuallyDrop<ActiveInstance>,
    /// The worker, for a plugin that asks for one; its thread is joined before the instance
    /// is freed.
    worker: Option<Worker>,
    features: Box<HostFeatures>,
    info: PluginInfo,
    /// How a crash report names the plugin ([`crash`]).
    label: Label,
    /// The audio input port indices, in the node's input channel order.
    audio_in: Vec<usize>,
    /// The audio output port indices, in the node's output channel order.
    audio_out: Vec<usize>,
    /// The node's input ports: ranges of `audio_in`, in order.
    input_ports: Vec<Port>,
    /// The node's output ports: ranges of `audio_out`, in order.
    output_ports: Vec<Port>,
    /// One value per port index; control ports are connected to their slot for good.
    controls: Box<[f32]>,
    /// (port index, spec) per live parameter, in parameter order.
    params: Vec<(usize, ControlSpec)>,
    specs: &'static [ParamSpec],
    midi_in: Option<(usize, AtomBuffer)>,
    /// Whether the MIDI input also takes the transport.
    midi_time: bool,
    /// (port index, buffer, takes the transport) per other atom input.
    atom_in: Vec<(usize, AtomBuffer, bool)>,
    atom_out: Vec<(usize, AtomBuffer)>,
    _cv: Vec<Box<[f32]>>,
    urids: AtomUrids,
    /// For a plugin that follows the transport: what it was last told of the song's time,
    /// and the URIDs its position is written with.
    transport: Option<(TimeFollower, TimeUrids)>,
    /// Control output port indices, in the order of `out_specs`.
    out_ports: Vec<usize>,
    /// The node's outputs: one per control output port.
    out_specs: &'static [ParamSpec],
    pending: Vec<Midi>,
    latency: usize,
    max_block: usize,
}

/// How a plugin node starts, besides its control values: a preset and a saved state,
/// applied in that order before the first run (the control values given to
/// [`Lv2Node::load_with`] then override both).
///
/// ```no_run
/// use downbeat_graph::NodeConfig;
/// use downbeat_plugin::lv2::{Lv2Node, Start};
///
/// let cfg = NodeConfig { sample_rate: 48000, max_block: 256 };
/// let start = Start { preset: Some("PoppySnare".into()), state: None };
/// let comp = Lv2Node::load_with("urn:ardour:a-comp", &[], &start, &cfg)?;
/// assert_eq!(comp.control("rel"), Some(10.0));
/// # Ok::<(), downbeat_plugin::lv2::Lv2Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Start {
    /// A preset of the plugin, by label or URI (`lv2info URI` lists them).
    pub preset: Option<String>,
    /// A state file, as [`Node::save_state`] wrote it (`downbeat run --save-state`).
    pub state: Option<PathBuf>,
}

impl Lv2Node {
    /// Loads the plugin `uri`, gives its control inputs `values` (the others keep their
    /// defaults), instantiates and activates it. Off the audio thread.
    ///
    /// # Errors
    /// [`Lv2Error::NotFound`], [`Lv2Error::MissingFeatures`] (listing them),
    /// [`Lv2Error::UnsupportedPort`], [`Lv2Error::Instantiate`], and for `values`
    /// [`Lv2Error::UnknownControl`] or [`Lv2Error::BadValue`].
    pub fn load(
        uri: &str,
        values: &[(String, ControlValue)],
        cfg: &downbeat_graph::NodeConfig,
    ) -> Result<Lv2Node, Lv2Error> {
        Self::load_with(uri, values, &Start::default(), cfg)
    }

    /// [`load`](Lv2Node::load), starting from a preset or a saved state (see [`Start`]).
    ///
    /// # Errors
    /// As [`load`](Lv2Node::load), and [`Lv2Error::UnknownPreset`] (listing the presets) or
    /// [`Lv2Error::State`] (a state file that cannot be read, or is another plugin's).
    pub fn load_with(
        uri: &str,
        values: &[(String, ControlValue)],
        start: &Start,
        cfg: &downbeat_graph::NodeConfig,
    ) -> Result<Lv2Node, Lv2Error> {
        let text = match &start.state {
            Some(path) => Some(std::fs::read_to_string(path).map_err(|e| Lv2Error::State {
                uri: uri.to_string(),
                message: format!("cannot read the state file `{}`: {e}", path.display()),
            })?),
            None => None,
        };
        let file = start
            .state
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let restore = |node: &mut Lv2Node| -> Result<(), Lv2Error> {
            if let Some(name) = &start.preset {
                node.restore(Source::Preset(name))?;
            }
            if let Some(text) = &text {
                node.restore(Source::Text { text, file: &file })?;
            }
            node.apply_values(values)
        };
        let mut node = Self::instantiate(uri, values, cfg)?;
        restore(&mut node)?;
        if node.info.latency_port.is_some() {
            // Asking for the latency means running the plugin; the node starts from a
            // fresh instance so that its first block is the plugin's first, as in any
            // other host.
            let latency = node.query_latency(cfg.sample_rate);
            drop(node);
            node = Self::instantiate(uri, values, cfg)?;
            restore(&mut node)?;
            node.latency = latency;
        }
        Ok(node)
    }

    /// Restores a preset or a state into the instance and the control inputs.
    fn restore(&mut self, source: Source<'_>) -> Result<(), Lv2Error> {
        state::restore(
            source,
            &self.info,
            self.instance.instance(),
            &mut self.controls,
            self.features.features(),
        )
        .map(|_| ())
    }

    /// Gives the control inputs the project's values.
    fn apply_values(&mut self, values: &[(String, ControlValue)]) -> Result<(), Lv2Error> {
        for (symbol, value) in values {
            let Some((port, spec)) = self.params.iter().find(|(_, s)| &s.symbol == symbol) else {
                let valid: Vec<String> =
                    self.params.iter().map(|(_, s)| s.symbol.clone()).collect();
                return Err(Lv2Error::UnknownControl {
                    symbol: symbol.clone(),
                    valid,
                });
            };
            self.controls[*port] = match value {
                ControlValue::Number(v) => spec.accept(*v)?,
                ControlValue::Bool(b) if spec.props.toggled => f32::from(u8::from(*b)),
                ControlValue::Bool(_) => {
                    return Err(Lv2Error::BadValue {
                        symbol: symbol.clone(),
                        message: format!("not a toggle: expected {}", spec.describe()),
                    })
                }
                ControlValue::Label(l) => spec.accept_label(l)?,
            };
        }
        Ok(())
    }

    fn instantiate(
        uri: &str,
        values: &[(String, ControlValue)],
        cfg: &downbeat_graph::NodeConfig,
    ) -> Result<Lv2Node, Lv2Error> {
        let info = PluginInfo::find(uri, cfg.sample_rate)?;
        let missing = info.missing_features();
        if !missing.is_empty() {
            return Err(Lv2Error::MissingFeatures {
                uri: uri.to_string(),
                missing,
            });
        }
        for p in &info.ports {
            connection(p.kind, p.optional, &p.symbol, &p.classes).map_err(|e| match e {
                Lv2Error::UnsupportedPort {
                    symbol, classes, ..
                } => Lv2Error::UnsupportedPort {
                    uri: uri.to_string(),
                    symbol,
                    classes,
                },
                other => other,
            })?;
        }
        let mut controls = vec![0.0f32; info.ports.len()].into_boxed_slice();
        let params: Vec<(usize, ControlSpec)> = info
            .ports
            .iter()
            .filter_map(|p| p.control.clone().map(|c| (p.index, c)))
            .collect();
        for (port, spec) in &params {
            controls[*port] = spec.default;
        }

        let mut features = HostFeatures::new(cfg.sample_rate, cfg.max_block);
        let mut worker = info.wants_worker.then(Worker::new);
        if let Some(w) = &mut worker {
            features.push(w.feature());
        }
        let label = Label::new(&info.name, uri);
        let creating = crash::enter(label, Phase::Create);
        let instance = {
            let world = world().lock().unwrap_or_else(|p| p.into_inner());
            let plugin = find_plugin(&world, uri)?;
            // SAFETY: the features and everything they point at live in `features` and
            // `worker`, which the node keeps until after the instance is dropped; the
            // sample rate is the one every port range was read for.
            unsafe { plugin.instantiate(f64::from(cfg.sample_rate), features.features()) }
        }
        .ok_or_else(|| Lv2Error::Instantiate {
            uri: uri.to_string(),
        })?;
        INSTANCES.fetch_add(1, Ordering::Relaxed);
        drop(creating);

        let max_block = cfg.max_block.max(1);
        let mut node_cv = Vec::new();
        let mut midi_in = None;
        let mut midi_time = false;
        let mut atom_in = Vec::new();
        let mut atom_out = Vec::new();
        let mut instance = instance;
        for p in &info.ports {
            let i = p.index;
            match p.kind {
                PortKind::ControlIn | PortKind::ControlOut => {
                    // SAFETY: `controls` is a boxed slice the node keeps for the instance's
                    // life; its heap address does not move when the node does.
                    unsafe { instance.connect_port_mut(i, &mut controls[i]) };
                }
                PortKind::CvIn | PortKind::CvOut => {
                    let mut buf = vec![0.0f32; max_block].into_boxed_slice();
                    // SAFETY: as for controls: the box is kept, max_block long, and no
                    // block is longer.
                    unsafe { instance.connect_port_mut(i, buf.as_mut_ptr()) };
                    node_cv.push(buf);
                }
                PortKind::AtomIn { midi, time } => {
                    let mut buf = AtomBuffer::new();
                    buf.write_sequence(&AtomUrids::new(), [].iter());
                    // SAFETY: the atom buffer is kept by the node; its heap address is stable.
                    unsafe { instance.connect_port_mut(i, buf.as_mut_ptr()) };
                    if midi && midi_in.is_none() {
                        midi_in = Some((i, buf));
                        midi_time = time;
                    } else {
                        atom_in.push((i, buf, time));
                    }
                }
                PortKind::AtomOut => {
                    let mut buf = AtomBuffer::new();
                    // SAFETY: as for atom inputs.
                    unsafe { instance.connect_port_mut(i, buf.as_mut_ptr()) };
                    atom_out.push((i, buf));
                }
                PortKind::Other => {
                    // Only optional ports get here (checked above): left unconnected.
                    // SAFETY: `lv2:connectionOptional` ports accept a null connection.
                    unsafe { instance.connect_port_mut::<c_void>(i, std::ptr::null_mut()) };
                }
                PortKind::AudioIn | PortKind::AudioOut => {}
            }
        }
        let instance = {
            let _inside = crash::enter(label, Phase::Activate);
            // SAFETY: every port the plugin requires is connected (audio ports are
            // connected again before each run, and below to scratch buffers before the
            // latency query).
            unsafe { instance.activate() }
        };
        let of_kind = |kind: PortKind| -> Vec<usize> {
            info.ports
                .iter()
                .filter(|p| p.kind == kind)
                .map(|p| p.index)
                .collect()
        };
        // The audio ports in the order of the node's ports (each port one range of
        // channels), which is port order unless a plugin interleaves its groups.
        let layout = |kind: PortKind| -> (Vec<usize>, Vec<Port>) {
            let groups = audio_groups(&info, kind);
            let ports = groups
                .iter()
                .map(|g| Port::new(g.name.clone(), g.ports.len()))
                .collect();
            let channels = groups
                .into_iter()
                .flat_map(|g: AudioGroup| g.ports)
                .collect();
            (channels, ports)
        };
        let (audio_in, input_ports) = layout(PortKind::AudioIn);
        let (audio_out, mut output_ports) = layout(PortKind::AudioOut);
        if output_ports.is_empty() {
            // As the trait's default: one `main` port, of no channels.
            output_ports.push(Port::main(0));
        }
        let out_ports = of_kind(PortKind::ControlOut);
        let out_specs = output_specs(&info);
        let specs = param_specs(&info, cfg.sample_rate);
        let transport = info
            .follows_time()
            .then(|| (TimeFollower::new(), TimeUrids::new()));
        let mut pending = Vec::with_capacity(NOTE_CAPACITY);
        // The notes are queued on the audio thread: their first pages are mapped here.
        prefault_spare(&mut pending);
        let mut node = Lv2Node {
            instance: ManuallyDrop::new(instance),
            worker,
            features,
            label,
            audio_in,
            audio_out,
            input_ports,
            output_ports,
            controls,
            params,
            specs,
            midi_in,
            midi_time,
            atom_in,
            atom_out,
            _cv: node_cv,
            urids: AtomUrids::new(),
            transport,
            out_ports,
            out_specs,
            pending,
            latency: 0,
            max_block,
            info,
        };
        debug_assert_eq!(node.audio_in.len(), node.info.count(PortKind::AudioIn));
        debug_assert_eq!(node.audio_out.len(), node.info.count(PortKind::AudioOut));
        // Started once the node owns the instance, so that a failure drops it the usual way
        // (worker stopped, instance freed under the world's lock).
        node.start_worker()?;
        node.apply_values(values)?;
        Ok(node)
    }

    /// Starts the worker thread of a plugin that has a worker interface.
    fn start_worker(&mut self) -> Result<(), Lv2Error> {
        let Some(w) = &mut self.worker else {
            return Ok(());
        };
        let inner = self.instance.instance();
        // SAFETY: the interface, if the plugin has one, is static data of its library, and
        // the handle is the instance's; both stay valid until the node stops the worker,
        // before it frees the instance (`Drop`).
        let started = unsafe {
            let iface = inner
                .extension_data::<lv2_sys::LV2_Worker_Interface>(worker::INTERFACE)
                .map_or(std::ptr::null(), |p| p.as_ptr().cast_const());
            w.start(inner.handle(), iface)
        };
        started.map_err(|e| Lv2Error::WorkerThread {
            uri: self.info.uri.clone(),
            reason: e.to_string(),
        })
    }

    /// The plugin's reported latency: its latency port after blocks of silence (a run of
    /// zero frames, which the LV2 core allows, does not make every plugin update its
    /// outputs: x42's nodelay waits for audio). The instance has then run; [`load`]
    /// throws it away and uses a fresh one.
    ///
    /// [`load`]: Lv2Node::load
    fn query_latency(&mut self, sample_rate: u32) -> usize {
        let Some(port) = self.info.latency_port else {
            return 0;
        };
        const N: usize = 64;
        let frames = N.min(self.max_block);
        let mut scratch = vec![0.0f32; (self.audio_in.len() + self.audio_out.len()) * N];
        for (k, &p) in self.audio_in.iter().chain(&self.audio_out).enumerate() {
            // SAFETY: `scratch` outlives the run below; the ports are connected again to the
            // graph's buffers before every later run.
            unsafe {
                self.instance
                    .instance_mut()
                    .connect_port_mut(p, scratch[k * N..].as_mut_ptr())
            };
        }
        // Some plugins glide to a new setting (nodelay fades to its delay) and report the
        // latency once there: run silent blocks until the report holds still.
        let mut value = f32::NAN;
        // A stopped song at its start: this instance only answers the query.
        let stopped = MusicalPosition::stopped(sample_rate);
        for _ in 0..MAX_LATENCY_BLOCKS {
            self.run_plugin(frames, &stopped);
            let now = self.controls.get(port).copied().unwrap_or(0.0);
            if now == value {
                break;
            }
            value = now;
        }
        if value.is_finite() && value > 0.0 {
            value.round() as usize
        } else {
            0
        }
    }

    /// The plugin's description.
    pub fn info(&self) -> &PluginInfo {
        &self.info
    }

    /// Audio inputs (the node's input channels).
    pub fn input_channels_count(&self) -> usize {
        self.audio_in.len()
    }

    /// The current value of a control port, by symbol (inputs and outputs).
    pub fn control(&self, symbol: &str) -> Option<f32> {
        let port = self.info.ports.iter().find(|p| p.symbol == symbol)?;
        matches!(port.kind, PortKind::ControlIn | PortKind::ControlOut)
            .then(|| self.controls[port.index])
    }

    /// The worker's counters, for a plugin with a worker, readable from any thread while
    /// the node plays; take it before the node moves to the audio thread. The node's
    /// [`monitor`](Node::monitor) is the same object.
    pub fn worker_counts(&self) -> Option<Arc<WorkerCounts>> {
        self.worker.as_ref().map(Worker::counts)
    }

    /// One block of the plugin, its ports already connected: the atom inputs written, the
    /// worker's responses delivered, `run()`, `end_run()` (the control outputs are then in
    /// their slots, for [`Node::output_value`]). Real-time safe on the host's side
    /// (offline, the worker wait yields).
    fn run_plugin(&mut self, frames: usize, musical: &MusicalPosition) {
        self.prepare_atoms(frames, musical);
        if let Some(w) = &mut self.worker {
            w.begin_run();
        }
        let inside = crash::enter(self.label, Phase::Process);
        // SAFETY: every port is connected to a buffer of at least `frames` samples (or
        // bytes of a valid atom), `frames` is within the block lengths given in the
        // options, and no other thread runs the instance (the worker thread only calls
        // `work()`, which the worker extension allows alongside `run()`).
        unsafe { self.instance.run(frames) };
        drop(inside);
        if let Some(w) = &mut self.worker {
            w.end_run();
        }
        if let Some((t, _)) = &mut self.transport {
            t.ran(musical, frames);
        }
    }

    /// Writes the atom inputs for a block of `frames` starting at `musical`: the song's
    /// position (when due) and the notes due in the block on the MIDI input, the position
    /// or empty sequences elsewhere; and empty chunks on the outputs.
    fn prepare_atoms(&mut self, frames: usize, musical: &MusicalPosition) {
        let urids = self.urids;
        let words: [u64; POSITION_WORDS];
        let time: &[u64] = match &self.transport {
            Some((t, time_urids)) if t.due(musical) => {
                words = position(time_urids, musical);
                &words
            }
            _ => &[],
        };
        if let Some((_, buf)) = &mut self.midi_in {
            let due = self.pending.iter().take_while(|m| m.frame < frames).count();
            let first = if self.midi_time { time } else { &[] };
            buf.write_sequence_after(&urids, first, self.pending[..due].iter());
            self.pending.drain(..due);
            for m in &mut self.pending {
                m.frame -= frames;
            }
        }
        for (_, buf, takes_time) in &mut self.atom_in {
            let first = if *takes_time { time } else { &[] };
            buf.write_sequence_after(&urids, first, [].iter());
        }
        for (_, buf) in &mut self.atom_out {
            buf.prepare_output(&urids);
        }
    }
}

impl Drop for Lv2Node {
    /// Deactivates and frees the instance. Off the audio thread: freeing goes through the
    /// lilv world (which closes the plugin's library when its last instance goes), so it
    /// takes the world's lock, as loading does, and lilv's library list is never changed
    /// by two threads at once.
    fn drop(&mut self) {
        // The worker thread calls into the instance: it stops first.
        if let Some(w) = &mut self.worker {
            w.stop();
        }
        let _world = world().lock().unwrap_or_else(|p| p.into_inner());
        let _inside = crash::enter(self.label, Phase::Deactivate);
        // SAFETY: `instance` is not used after this; the features and buffers it may read
        // while deactivating are fields dropped after this function returns.
        unsafe { ManuallyDrop::drop(&mut self.instance) };
    }
}

impl Node for Lv2Node {
    fn input_channels(&self) -> usize {
        self.audio_in.len()
    }

    fn output_channels(&self) -> usize {
        self.audio_out.len()
    }

    /// `main` and the plugin's other input groups, side chains among them (see
    /// [`groups`](super::groups)).
    fn input_ports(&self) -> Vec<Port> {
        self.input_ports.clone()
    }

    /// `main` and the plugin's other output groups (see [`groups`](super::groups)).
    fn output_ports(&self) -> Vec<Port> {
        self.output_ports.clone()
    }

    fn process(&mut self, ctx: &ProcessContext, input: AudioRef<'_>, mut output: AudioMut<'_>) {
        let frames = ctx.frames.min(self.max_block);
        for (c, &port) in self.audio_in.iter().enumerate() {
            // SAFETY: the plugin only reads an input port, and only during the run below,
            // while `input` is borrowed; the slice holds `frames` samples.
            unsafe {
                self.instance
                    .instance_mut()
                    .connect_port(port, input.channel(c).as_ptr())
            };
        }
        for (c, &port) in self.audio_out.iter().enumerate() {
            // SAFETY: as above, for writing: `output` is borrowed mutably for the run and
            // the graph never gives a node the same buffer as input and output.
            unsafe {
                self.instance
                    .instance_mut()
                    .connect_port_mut(port, output.channel_mut(c).as_mut_ptr())
            };
        }
        self.run_plugin(frames, &ctx.musical);
    }

    fn set_param(&mut self, index: usize, value: f32) -> bool {
        match self.params.get(index) {
            Some((port, spec)) => {
                self.controls[*port] = spec.coerce(value);
                true
            }
            None => false,
        }
    }

    fn params(&self) -> &'static [ParamSpec] {
        self.specs
    }

    fn get_param(&self, index: usize) -> Option<f32> {
        let (port, _) = self.params.get(index)?;
        Some(self.controls[*port])
    }

    fn set_offline(&mut self, offline: bool) {
        if let Some(w) = &mut self.worker {
            w.set_offline(offline);
        }
    }

    /// The plugin's control outputs, by symbol, in port order (declared unbounded: an LV2
    /// output's range is advice a plugin need not keep).
    fn outputs(&self) -> &'static [ParamSpec] {
        self.out_specs
    }

    /// The value the plugin wrote into control output `index` in its latest run.
    fn output_value(&self, index: usize) -> f32 {
        self.out_ports
            .get(index)
            .map_or(0.0, |&port| self.controls[port])
    }

    /// The worker's counters (`worker_requests`, and the losses `worker_no_space`,
    /// `worker_responses_lost`, `worker_late`), for a plugin with a worker.
    fn monitor(&self) -> Option<SharedMonitor> {
        self.worker_counts().map(|c| c as SharedMonitor)
    }

    /// The plugin's state as Turtle (extension `ttl`), through lilv: the control inputs
    /// and, for a plugin with `state:interface`, its own properties. A later run restores it
    /// with `state = "FILE"`.
    fn save_state(&mut self) -> Result<Option<NodeState>, StateError> {
        let text = state::save(
            &self.info,
            self.instance.instance(),
            &self.controls,
            self.features.features(),
        )
        .map_err(|e| StateError::new(e.to_string()))?;
        Ok(Some(NodeState {
            bytes: text.into_bytes(),
            extension: "ttl",
        }))
    }

    fn latency(&self) -> usize {
        self.latency
    }

    fn plays_notes(&self) -> bool {
        self.midi_in.is_some()
    }

    fn note(&mut self, frame: usize, event: NoteEvent) -> Result<(), NoteError> {
        if self.midi_in.is_none() {
            return Err(NoteError::NotAnInstrument);
        }
        let pending = &mut self.pending;
        to_midi(event, |bytes| {
            if pending.len() == NOTE_CAPACITY {
                return Err(NoteError::Full {
                    capacity: NOTE_CAPACITY,
                });
            }
            // After every message at the same frame or earlier: same-frame events keep
            // their order. Inserting within capacity does not allocate.
            let at = pending.partition_point(|m| m.frame <= frame);
            pending.insert(
                at,
                Midi {
                    frame,
                    bytes,
                    len: if bytes[0] & 0xF0 == 0xC0 || bytes[0] & 0xF0 == 0xD0 {
                        2
                    } else {
                        3
                    },
                },
            );
            Ok(())
        })
    }
}
