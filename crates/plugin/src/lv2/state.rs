//! LV2 state and presets, through lilv: what [`Lv2Node::save_state`] writes (a Turtle
//! description of the plugin's control inputs and, for a plugin with `state:interface`, its
//! own properties), what `state = "FILE"` restores, and `preset = "NAME"`.
//!
//! All of it runs off the audio thread: when the node is built (restoring, before its first
//! run) or after the run (saving, on the node the schedule gave back).
//!
//! [`Lv2Node::save_state`]: downbeat_graph::Node::save_state

use std::ffi::c_void;

use lilv::instance::Instance;
use lilv::state::{GetPortValue, SetPortValue, Value};
use lv2_raw::core::LV2Feature;
use lv2_sys::LV2_State_Flags;

use super::error::Lv2Error;
use super::features::{urid, urid_map, urid_unmap};
use super::node::{find_plugin, world, PluginInfo};
use super::port::PortKind;

/// The subject the saved description is written for (lilv needs one; restoring ignores it).
const STATE_URI: &str = "urn:downbeat:state";
const PRESET_CLASS: &str = "http://lv2plug.in/ns/ext/presets#Preset";
const RDFS_LABEL: &str = "http://www.w3.org/2000/01/rdf-schema#label";

/// Reads the control inputs for lilv when it saves.
struct ReadPorts<'a> {
    info: &'a PluginInfo,
    controls: &'a [f32],
    float: u32,
}

impl GetPortValue for ReadPorts<'_> {
    fn get_port_value(&mut self, symbol: &str) -> (Value, u32, u32) {
        match self
            .info
            .ports
            .iter()
            .find(|p| p.symbol == symbol && p.kind == PortKind::ControlIn)
        {
            Some(p) => (
                std::ptr::from_ref(&self.controls[p.index]).cast::<c_void>(),
                4,
                self.float,
            ),
            None => (std::ptr::null(), 0, 0),
        }
    }
}

/// Writes the control inputs lilv restores; counts them.
struct WritePorts<'a> {
    info: &'a PluginInfo,
    controls: &'a mut [f32],
    set: usize,
}

impl SetPortValue for WritePorts<'_> {
    fn set_port_value(&mut self, symbol: &str, value: Value, size: u32, type_: u32) {
        let Some(port) = self
            .info
            .ports
            .iter()
            .find(|p| p.symbol == symbol && p.kind == PortKind::ControlIn)
        else {
            return;
        };
        if value.is_null() {
            return;
        }
        // SAFETY: lilv hands a value of `size` bytes of type `type_`, valid for the call;
        // each read below checks that the size is the type's.
        let v = unsafe {
            match (size, type_) {
                (4, t) if t == urid(c"http://lv2plug.in/ns/ext/atom#Float") => {
                    value.cast::<f32>().read_unaligned()
                }
                (8, t) if t == urid(c"http://lv2plug.in/ns/ext/atom#Double") => {
                    value.cast::<f64>().read_unaligned() as f32
                }
                (4, t) if t == urid(c"http://lv2plug.in/ns/ext/atom#Int") => {
                    value.cast::<i32>().read_unaligned() as f32
                }
                (8, t) if t == urid(c"http://lv2plug.in/ns/ext/atom#Long") => {
                    value.cast::<i64>().read_unaligned() as f32
                }
                (4, t) if t == urid(c"http://lv2plug.in/ns/ext/atom#Bool") => {
                    f32::from(u8::from(value.cast::<i32>().read_unaligned() != 0))
                }
                _ => return,
            }
        };
        let spec = port.control.as_ref();
        self.controls[port.index] = spec.map_or(v, |s| s.coerce(v));
        self.set += 1;
    }
}

/// The plugin's state as Turtle: its control inputs, and its own properties if it has
/// `state:interface`.
pub(crate) fn save(
    info: &PluginInfo,
    instance: &Instance,
    controls: &[f32],
    features: &[LV2Feature],
) -> Result<String, Lv2Error> {
    let fail = |message: &str| Lv2Error::State {
        uri: info.uri.clone(),
        message: message.to_string(),
    };
    let world = world().lock().unwrap_or_else(|p| p.into_inner());
    let plugin = find_plugin(&world, &info.uri)?;
    let mut map = urid_map();
    let mut unmap = urid_unmap();
    let mut ports = ReadPorts {
        info,
        controls,
        float: urid(c"http://lv2plug.in/ns/ext/atom#Float"),
    };
    let state = plugin
        .new_state_from_instance(
            instance,
            &mut map,
            None,
            None,
            None,
            None,
            Some(&mut ports),
            LV2_State_Flags::LV2_STATE_IS_POD | LV2_State_Flags::LV2_STATE_IS_PORTABLE,
            features,
        )
        .ok_or_else(|| fail("lilv could not take the plugin's state"))?;
    state
        .to_string(&mut map, &mut unmap, STATE_URI, None)
        .ok_or_else(|| fail("lilv could not write the state as Turtle"))
}

/// Where a state to restore comes from.
pub(crate) enum Source<'a> {
    /// Turtle, as [`save`] writes it (a `state = "FILE"` file's contents), and the file's
    /// name for messages.
    Text { text: &'a str, file: &'a str },
    /// A preset of the plugin, by label or URI.
    Preset(&'a str),
}

/// Restores `source` into the instance (its properties, through `state:interface`) and
/// into `controls` (its port values). Returns how many port values it set.
pub(crate) fn restore(
    source: Source<'_>,
    info: &PluginInfo,
    instance: &Instance,
    controls: &mut [f32],
    features: &[LV2Feature],
) -> Result<usize, Lv2Error> {
    let world = world().lock().unwrap_or_else(|p| p.into_inner());
    let mut map = urid_map();
    let state = match source {
        Source::Text { text, file } => {
            let fail = |message: String| Lv2Error::State {
                uri: info.uri.clone(),
                message: format!("state file `{file}`: {message}"),
            };
            if text.contains('\0') {
                return Err(fail("not an LV2 state (it holds a nul byte)".into()));
            }
            let state = world
                .new_state_from_string(&mut map, text)
                .ok_or_else(|| fail("not an LV2 state (lilv could not read it)".into()))?;
            let of = state.plugin_uri();
            let of = of.as_uri().unwrap_or("");
            if of != info.uri {
                return Err(fail(format!(
                    "it is the state of <{of}>, not of this plugin"
                )));
            }
            state
        }
        Source::Preset(name) => {
            let plugin = find_plugin(&world, &info.uri)?;
            let presets = presets_of(&world, &plugin);
            let Some((uri, _)) = presets
                .iter()
                .find(|(uri, label)| label == name || uri == name)
            else {
                return Err(Lv2Error::UnknownPreset {
                    uri: info.uri.clone(),
                    name: name.to_string(),
                    presets: presets.into_iter().map(|(_, label)| label).collect(),
                });
            };
            world
                .new_state(&mut map, &world.new_uri(uri))
                .ok_or_else(|| Lv2Error::State {
                    uri: info.uri.clone(),
                    message: format!("lilv could not read preset `{name}` <{uri}>"),
                })?
        }
    };
    let mut ports = WritePorts {
        info,
        controls,
        set: 0,
    };
    state.restore(
        instance,
        Some(&mut ports),
        LV2_State_Flags::LV2_STATE_IS_POD | LV2_State_Flags::LV2_STATE_IS_PORTABLE,
        features,
    );
    Ok(ports.set)
}

/// The plugin's presets, as (URI, label), in lilv's order.
fn presets_of(world: &lilv::World, plugin: &lilv::plugin::Plugin) -> Vec<(String, String)> {
    let class = world.new_uri(PRESET_CLASS);
    let label = world.new_uri(RDFS_LABEL);
    let Some(related) = plugin.related(Some(&class)) else {
        return Vec::new();
    };
    related
        .iter()
        .filter_map(|preset| {
            let uri = preset.as_uri()?.to_string();
            // The preset's data may be in a file of its own; a failure shows as no label.
            let _ = world.load_resource(&preset);
            let name = world
                .get(Some(&preset), Some(&label), None)
                .and_then(|l| l.as_str().map(str::to_string))
                .unwrap_or_else(|| uri.clone());
            Some((uri, name))
        })
        .collect()
}

/// The presets of the installed plugin `uri`, as (URI, label). Off the audio thread.
///
/// ```no_run
/// let presets = downbeat_plugin::lv2::presets("urn:ardour:a-comp")?;
/// assert!(presets.iter().any(|(_, label)| label == "PoppySnare"));
/// # Ok::<(), downbeat_plugin::lv2::Lv2Error>(())
/// ```
///
/// # Errors
/// [`Lv2Error::NotFound`] when no installed plugin has this URI.
pub fn presets(uri: &str) -> Result<Vec<(String, String)>, Lv2Error> {
    let world = world().lock().unwrap_or_else(|p| p.into_inner());
    let plugin = find_plugin(&world, uri)?;
    Ok(presets_of(&world, &plugin))
}
