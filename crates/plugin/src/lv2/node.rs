//! [`Lv2Node`]: one instantiated plugin as a graph node.

use std::collections::HashMap;
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::sync::{Mutex, OnceLock};

use downbeat_graph::{
    AudioMut, AudioRef, Node, NoteError, NoteEvent, ParamKind, ParamSpec, ProcessContext,
};
use lilv::instance::ActiveInstance;

use super::atom::{to_midi, AtomBuffer, AtomUrids, Midi, NOTE_CAPACITY};
use super::error::Lv2Error;
use super::features::{HostFeatures, SUPPORTED};
use super::port::{connection, ControlProps, ControlSpec, PortKind};

/// Silent blocks run at most while waiting for a plugin's latency report to settle.
const MAX_LATENCY_BLOCKS: usize = 64;

const LV2_CORE: &str = "http://lv2plug.in/ns/lv2core#";

/// The process' lilv world, loaded once with every installed bundle. Plugins' shared
/// libraries stay loaded as long as it lives, which is the whole process.
fn world() -> &'static Mutex<lilv::World> {
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
}

impl PluginInfo {
    /// Reads the plugin's description from the installed bundles, with its control ranges
    /// for `sample_rate`. Off the audio thread.
    ///
    /// # Errors
    /// [`Lv2Error::NotFound`] when no installed plugin has this URI.
    pub fn find(uri: &str, sample_rate: f32) -> Result<PluginInfo, Lv2Error> {
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
        let prop = |name: &str| world.new_uri(&format!("{LV2_CORE}{name}"));
        let (p_rate, p_int, p_toggle, p_enum, p_optional) = (
            prop("sampleRate"),
            prop("integer"),
            prop("toggled"),
            prop("enumeration"),
            prop("connectionOptional"),
        );
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
            ports.push(PortInfo {
                index: port.index(),
                kind,
                optional: port.has_property(&p_optional),
                symbol,
                classes,
                control,
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
}

fn find_plugin(world: &lilv::World, uri: &str) -> Result<lilv::plugin::Plugin, Lv2Error> {
    world
        .plugins()
        .plugin(&world.new_uri(uri))
        .ok_or_else(|| Lv2Error::NotFound {
            uri: uri.to_string(),
        })
}

/// Parameter declarations for a plugin at a sample rate. [`Node::params`] hands out
/// `'static` slices, so they are made once per plugin and rate and kept for the process.
fn param_specs(info: &PluginInfo, sample_rate: f32) -> &'static [ParamSpec] {
    type Key = (String, u32);
    static SPECS: OnceLock<Mutex<HashMap<Key, &'static [ParamSpec]>>> = OnceLock::new();
    let mut specs = SPECS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    specs
        .entry((info.uri.clone(), sample_rate.to_bits()))
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
/// inputs and output channels its audio outputs, in port order, whose live parameters are
/// its control inputs by symbol, and which plays notes when the plugin has a MIDI input.
///
/// ```no_run
/// use downbeat_graph::NodeConfig;
/// use downbeat_plugin::lv2::{ControlValue, Lv2Node};
///
/// let cfg = NodeConfig { sample_rate: 48000.0, max_block: 256 };
/// let drive = [("drive".to_string(), ControlValue::Number(0.7))];
/// let node = Lv2Node::load("http://drobilla.net/plugins/mda/Overdrive", &drive, &cfg)?;
/// assert_eq!(node.input_channels_count(), 2);
/// # Ok::<(), downbeat_plugin::lv2::Lv2Error>(())
/// ```
pub struct Lv2Node {
    // Dropped first, in `Drop`: the plugin's `deactivate` and `cleanup` may still read its
    // features and buffers, which are the fields after it.
    instance: ManuallyDrop<ActiveInstance>,
    _features: Box<HostFeatures>,
    info: PluginInfo,
    audio_in: Vec<usize>,
    audio_out: Vec<usize>,
    /// One value per port index; control ports are connected to their slot for good.
    controls: Box<[f32]>,
    /// (port index, spec) per live parameter, in parameter order.
    params: Vec<(usize, ControlSpec)>,
    specs: &'static [ParamSpec],
    midi_in: Option<(usize, AtomBuffer)>,
    atom_in: Vec<(usize, AtomBuffer)>,
    atom_out: Vec<(usize, AtomBuffer)>,
    _cv: Vec<Box<[f32]>>,
    urids: AtomUrids,
    pending: Vec<Midi>,
    latency: usize,
    max_block: usize,
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
        let mut node = Self::instantiate(uri, values, cfg)?;
        if node.info.latency_port.is_some() {
            // Asking for the latency means running the plugin; the node starts from a
            // fresh instance so that its first block is the plugin's first, as in any
            // other host.
            let latency = node.query_latency();
            drop(node);
            node = Self::instantiate(uri, values, cfg)?;
            node.latency = latency;
        }
        Ok(node)
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
        for (symbol, value) in values {
            let Some((port, spec)) = params.iter().find(|(_, s)| &s.symbol == symbol) else {
                return Err(Lv2Error::UnknownControl {
                    symbol: symbol.clone(),
                    valid: params.iter().map(|(_, s)| s.symbol.clone()).collect(),
                });
            };
            controls[*port] = match value {
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

        let features = HostFeatures::new(cfg.sample_rate, cfg.max_block);
        let instance = {
            let world = world().lock().unwrap_or_else(|p| p.into_inner());
            let plugin = find_plugin(&world, uri)?;
            // SAFETY: the features and everything they point at live in `features`, which
            // the node keeps until after the instance is dropped; the sample rate is the
            // one every port range was read for.
            unsafe { plugin.instantiate(f64::from(cfg.sample_rate), features.features()) }
        }
        .ok_or_else(|| Lv2Error::Instantiate {
            uri: uri.to_string(),
        })?;

        let max_block = cfg.max_block.max(1);
        let mut node_cv = Vec::new();
        let mut midi_in = None;
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
                PortKind::AtomIn { midi } => {
                    let mut buf = AtomBuffer::new();
                    buf.write_sequence(&AtomUrids::new(), [].iter());
                    // SAFETY: the atom buffer is kept by the node; its heap address is stable.
                    unsafe { instance.connect_port_mut(i, buf.as_mut_ptr()) };
                    if midi && midi_in.is_none() {
                        midi_in = Some((i, buf));
                    } else {
                        atom_in.push((i, buf));
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
        // SAFETY: every port the plugin requires is connected (audio ports are connected
        // again before each run, and below to scratch buffers before the latency query).
        let instance = unsafe { instance.activate() };
        let audio_in: Vec<usize> = info
            .ports
            .iter()
            .filter(|p| p.kind == PortKind::AudioIn)
            .map(|p| p.index)
            .collect();
        let audio_out: Vec<usize> = info
            .ports
            .iter()
            .filter(|p| p.kind == PortKind::AudioOut)
            .map(|p| p.index)
            .collect();
        let specs = param_specs(&info, cfg.sample_rate);
        let node = Lv2Node {
            instance: ManuallyDrop::new(instance),
            _features: features,
            audio_in,
            audio_out,
            controls,
            params,
            specs,
            midi_in,
            atom_in,
            atom_out,
            _cv: node_cv,
            urids: AtomUrids::new(),
            pending: Vec::with_capacity(NOTE_CAPACITY),
            latency: 0,
            max_block,
            info,
        };
        debug_assert_eq!(node.audio_in.len(), node.info.count(PortKind::AudioIn));
        Ok(node)
    }

    /// The plugin's reported latency: its latency port after blocks of silence (a run of
    /// zero frames, which the LV2 core allows, does not make every plugin update its
    /// outputs: x42's nodelay waits for audio). The instance has then run; [`load`]
    /// throws it away and uses a fresh one.
    ///
    /// [`load`]: Lv2Node::load
    fn query_latency(&mut self) -> usize {
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
        for _ in 0..MAX_LATENCY_BLOCKS {
            self.prepare_atoms(frames);
            // SAFETY: every port is connected to a buffer of at least `frames`.
            unsafe { self.instance.run(frames) };
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

    /// Writes the atom inputs for a block of `frames`: the notes due in it on the MIDI
    /// input, empty sequences elsewhere; and empty chunks on the outputs.
    fn prepare_atoms(&mut self, frames: usize) {
        let urids = self.urids;
        if let Some((_, buf)) = &mut self.midi_in {
            let due = self.pending.iter().take_while(|m| m.frame < frames).count();
            buf.write_sequence(&urids, self.pending[..due].iter());
            self.pending.drain(..due);
            for m in &mut self.pending {
                m.frame -= frames;
            }
        }
        for (_, buf) in &mut self.atom_in {
            buf.write_sequence(&urids, [].iter());
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
        let _world = world().lock().unwrap_or_else(|p| p.into_inner());
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
        self.prepare_atoms(frames);
        // SAFETY: every port is connected to a buffer of at least `frames` samples (or
        // bytes of a valid atom), `frames` is within the block lengths given in the
        // options, and no other thread touches the instance.
        unsafe { self.instance.run(frames) };
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
        self.params.get(index).map(|(port, _)| self.controls[*port])
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
