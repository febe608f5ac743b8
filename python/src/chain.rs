//! `downbeat.Chain`: numpy arrays processed through a series of nodes and plugins, the way
//! `pedalboard.Pedalboard` processes them, on Downbeat's graph (an `input` node fed from the
//! array, the stages in a row, an `output` node).

use std::path::PathBuf;

use numpy::{PyArray2, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use downbeat::graph::{
    Change, CompileConfig, Event, Graph, Node, NodeConfig, NodeId, ParamError, ParamValue, Schedule,
};
use downbeat::nodes::{Capture, Input, Mix as MixNode, MixSettings, Output};
use downbeat::Engine;

use crate::arrays::{audio_in, new_audio};
use crate::errors::{AudioFormatError, ParameterError, PluginError, RenderError};
use crate::exclusive::Exclusive;
use crate::values::param_value;

/// The node types that host a plugin.
const PLUGIN_TYPES: [&str; 3] = ["clap", "vst3", "lv2"];
/// Names of the chain's own ends in the graph.
const IN: &str = "chain.in";
const OUT: &str = "chain.out";

/// One stage of a [`Chain`]: a node type and its parameters (see `downbeat.node` and
/// `downbeat.plugin`).
#[pyclass(module = "downbeat", frozen)]
#[derive(Clone)]
pub(crate) struct Stage {
    kind: String,
    name: String,
    params: Vec<(String, ParamValue)>,
}

#[pymethods]
impl Stage {
    /// The node type (`"biquad"`, `"clap"`, ...).
    #[getter]
    fn kind(&self) -> &str {
        &self.kind
    }

    /// The stage's name in the chain: parameters are `"name.param"`.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    fn __repr__(&self) -> String {
        format!("<downbeat.Stage {} ({})>", self.name, self.kind)
    }
}

/// `downbeat.Mix(branches)`: branches side by side, each a stage or a list of stages in a
/// row, all fed what comes before the mix and summed after it. The graph compensates their
/// latencies, and with `threads` above 1 runs them in parallel.
#[pyclass(module = "downbeat", frozen)]
#[derive(Clone)]
pub(crate) struct Mix {
    branches: Vec<Vec<Stage>>,
}

#[pymethods]
impl Mix {
    #[new]
    fn new(branches: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut out = Vec::new();
        let items: Vec<Bound<'_, PyAny>> = branches
            .try_iter()
            .map_err(|_| ParameterError::new_err("Mix takes a list of branches"))?
            .collect::<PyResult<_>>()?;
        for (b, branch) in items.iter().enumerate() {
            let stages = if let Ok(stage) = branch.cast::<Stage>() {
                vec![stage.get().clone()]
            } else {
                let list: Vec<Bound<'_, PyAny>> = branch
                    .try_iter()
                    .map_err(|_| {
                        ParameterError::new_err(format!("branch {b}: a stage or a list of stages"))
                    })?
                    .collect::<PyResult<_>>()?;
                list.iter()
                    .enumerate()
                    .map(|(i, s)| {
                        s.cast::<Stage>().map(|s| s.get().clone()).map_err(|_| {
                            ParameterError::new_err(format!(
                                "branch {b}, stage {i}: expected downbeat.node(...) or \
                                 downbeat.plugin(...)"
                            ))
                        })
                    })
                    .collect::<PyResult<Vec<_>>>()?
            };
            out.push(stages);
        }
        if out.len() < 2 {
            return Err(ParameterError::new_err(
                "Mix needs two branches or more (one branch is a plain run of stages)",
            ));
        }
        Ok(Self { branches: out })
    }

    fn __repr__(&self) -> String {
        format!("<downbeat.Mix of {} branches>", self.branches.len())
    }
}

/// What a chain holds, in order: a stage or a mix, by index into the chain's stages.
#[derive(Clone)]
enum Item {
    Stage(usize),
    Mix(Vec<Vec<usize>>),
}

/// A stage name made of `base`: lower case, `_` for anything but letters and digits.
fn tidy(base: &str) -> String {
    let s: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        "stage".into()
    } else {
        s
    }
}

fn kwargs_params(
    kwargs: Option<&Bound<'_, PyDict>>,
    what: &str,
) -> PyResult<Vec<(String, ParamValue)>> {
    let mut params = Vec::new();
    if let Some(kw) = kwargs {
        for (k, v) in kw.iter() {
            let k: String = k.extract()?;
            let value = param_value(&v, &format!("{what}: `{k}`"))?;
            params.push((k, value));
        }
    }
    Ok(params)
}

/// `downbeat.node(kind, name=None, **params)`: a built-in node type as a stage.
#[pyfunction]
#[pyo3(signature = (kind, name=None, **params))]
pub(crate) fn node(
    kind: &str,
    name: Option<String>,
    params: Option<&Bound<'_, PyDict>>,
) -> PyResult<Stage> {
    if downbeat::lookup_node_type(kind).is_none() {
        let known: Vec<String> = downbeat::all_node_types()
            .iter()
            .map(|t| t.name().to_string())
            .collect();
        return Err(ParameterError::new_err(format!(
            "no node type `{kind}` (the types: {})",
            known.join(", ")
        )));
    }
    Ok(Stage {
        kind: kind.to_string(),
        name: name.unwrap_or_else(|| tidy(kind)),
        params: kwargs_params(params, kind)?,
    })
}

/// `downbeat.plugin(path_or_uri, name=None, **params)`: a CLAP file, a VST3 bundle or an LV2
/// URI as a stage; `id` picks a plugin in a file that holds several, `state` and `preset`
/// start it from a saved state or a preset.
#[pyfunction]
#[pyo3(signature = (path_or_uri, name=None, **params))]
pub(crate) fn plugin(
    path_or_uri: &Bound<'_, PyAny>,
    name: Option<String>,
    params: Option<&Bound<'_, PyDict>>,
) -> PyResult<Stage> {
    let text: String = match path_or_uri.extract::<PathBuf>() {
        Ok(p) => p.display().to_string(),
        Err(_) => path_or_uri.extract()?,
    };
    let trimmed = text.trim_end_matches('/');
    let (kind, key) = if trimmed.ends_with(".clap") {
        ("clap", "path")
    } else if trimmed.ends_with(".vst3") {
        ("vst3", "path")
    } else if text.contains("://") || text.starts_with("urn:") {
        ("lv2", "uri")
    } else {
        return Err(PluginError::new_err(format!(
            "`{text}` is not a plugin: give a .clap file, a .vst3 bundle or an LV2 plugin's URI"
        )));
    };
    if downbeat::lookup_node_type(kind).is_none() {
        return Err(PluginError::new_err(format!(
            "`{text}`: this build of Downbeat has no {kind} host (LV2 needs \
             MATURIN_PEP517_ARGS=\"--features lv2\" and liblilv-dev when installing)"
        )));
    }
    let base = match kind {
        "lv2" => text
            .rsplit(['/', '#', ':'])
            .find(|s| !s.is_empty())
            .unwrap_or("lv2"),
        _ => std::path::Path::new(trimmed)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or(kind),
    };
    let mut all = vec![(key.to_string(), ParamValue::Text(text.clone()))];
    all.extend(kwargs_params(params, &text)?);
    Ok(Stage {
        kind: kind.to_string(),
        name: name.unwrap_or_else(|| tidy(base)),
        params: all,
    })
}

/// `downbeat.Chain(stages, block_size=256, threads=1)`: audio through the stages in order.
#[pyclass(module = "downbeat")]
pub(crate) struct Chain {
    /// Every stage, the mixes' included, in order: their names are unique.
    stages: Vec<Stage>,
    /// How they connect.
    layout: Vec<Item>,
    block_size: usize,
    threads: usize,
    /// Boxed: the engine is aligned to cache lines (128 bytes), more than Python aligns
    /// the objects it allocates.
    /// The chain's graph, built for one sample rate and channel count: its engine, whose
    /// capture the input feeds.
    built: Exclusive<Option<Box<Engine>>>,
    /// Whether the built graph has processed audio since it was built (a reset rebuilds).
    used: bool,
    /// Values set since the last call, which the graph takes at the next one's first frame:
    /// what [`parameters`](Chain::parameters) says until then.
    pending: Vec<(String, f64)>,
}

/// Builds stage `i` for `cfg`, with an error that names it.
fn build_stage(stage: &Stage, cfg: &NodeConfig) -> Result<Box<dyn Node>, PyErr> {
    let ty = downbeat::lookup_node_type(&stage.kind)
        .ok_or_else(|| ParameterError::new_err(format!("no node type `{}`", stage.kind)))?;
    ty.create(stage.params.clone(), cfg).map_err(|e| {
        let text = format!("stage `{}` ({}): {e}", stage.name, stage.kind);
        match e {
            ParamError::Invalid { .. } if PLUGIN_TYPES.contains(&stage.kind.as_str()) => {
                PluginError::new_err(text)
            }
            _ => ParameterError::new_err(text),
        }
    })
}

impl Chain {
    /// The graph for `sample_rate` and `channels` in: input, the stages, output.
    fn build(&self, sample_rate: u32, channels: usize) -> PyResult<Engine> {
        let cfg = NodeConfig {
            sample_rate,
            max_block: self.block_size,
        };
        let capture = Capture::new(channels, self.block_size);
        let mut graph = Graph::new();
        let input = Input::new(&capture, channels)
            .map_err(|e| AudioFormatError::new_err(format!("audio: {e}")))?;
        let mut last = graph.add(IN, input);
        let mut out_channels = channels;
        let mut mixes = 0;
        for item in &self.layout {
            match item {
                Item::Stage(i) => {
                    (last, out_channels) =
                        self.add_row(&mut graph, &cfg, &[*i], last, out_channels)?;
                }
                Item::Mix(branches) => {
                    let mut ends = Vec::with_capacity(branches.len());
                    let mut widest = 0;
                    for branch in branches {
                        let (end, ch) =
                            self.add_row(&mut graph, &cfg, branch, last, out_channels)?;
                        ends.push(end);
                        widest = widest.max(ch);
                    }
                    mixes += 1;
                    let mix = graph.add(
                        format!("chain.mix{mixes}"),
                        MixNode::new(widest, &MixSettings::default()),
                    );
                    for end in ends {
                        graph.connect(end, mix);
                    }
                    (last, out_channels) = (mix, widest);
                }
            }
        }
        let out = graph.add(OUT, Output::new(out_channels));
        graph.connect(last, out);
        graph.set_output(out);
        let schedule = graph
            .compile(CompileConfig {
                sample_rate,
                max_block: self.block_size,
            })
            .map_err(|e| ParameterError::new_err(format!("the chain does not connect: {e}")))?;
        let mut engine = Engine::new(schedule);
        engine.set_capture(capture);
        engine.set_threads(self.threads);
        engine.schedule_mut().set_offline(true);
        Ok(engine)
    }

    /// Stages `row` (indices into the stages) in a row after node `from`, whose output has
    /// `channels` channels; the last node and its output channels.
    fn add_row(
        &self,
        graph: &mut Graph,
        cfg: &NodeConfig,
        row: &[usize],
        from: NodeId,
        channels: usize,
    ) -> PyResult<(NodeId, usize)> {
        let (mut last, mut out_channels) = (from, channels);
        for &i in row {
            let stage = &self.stages[i];
            let node = build_stage(stage, cfg)?;
            out_channels = node.output_channels();
            let id = graph.add_boxed(stage.name.clone(), node);
            graph.connect(last, id);
            last = id;
        }
        Ok((last, out_channels))
    }

    /// The stage and parameter `key` (`"stage.param"`) names.
    fn split<'k>(&self, key: &'k str) -> PyResult<(usize, &'k str)> {
        let Some((stage, param)) = key.split_once('.') else {
            return Err(ParameterError::new_err(format!(
                "`{key}` is not \"stage.param\""
            )));
        };
        match self.stages.iter().position(|s| s.name == stage) {
            Some(i) => Ok((i, param)),
            None => Err(ParameterError::new_err(format!(
                "no stage `{stage}` (the stages: {})",
                self.stages
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }
}

#[pymethods]
impl Chain {
    #[new]
    #[pyo3(signature = (stages, block_size=256, threads=1))]
    fn new(stages: &Bound<'_, PyAny>, block_size: usize, threads: usize) -> PyResult<Self> {
        let list: Vec<Bound<'_, PyAny>> = stages
            .try_iter()
            .map_err(|_| ParameterError::new_err("Chain takes a list of stages"))?
            .collect::<PyResult<_>>()?;
        let mut out: Vec<Stage> = Vec::with_capacity(list.len());
        let mut layout = Vec::with_capacity(list.len());
        // Two stages of one name get `_2`, `_3`... after the first.
        let mut add = |mut stage: Stage| {
            let base = stage.name.clone();
            let mut k = 1;
            while out.iter().any(|o: &Stage| o.name == stage.name) {
                k += 1;
                stage.name = format!("{base}_{k}");
            }
            out.push(stage);
            out.len() - 1
        };
        for (i, s) in list.iter().enumerate() {
            if let Ok(stage) = s.cast::<Stage>() {
                layout.push(Item::Stage(add(stage.get().clone())));
            } else if let Ok(mix) = s.cast::<Mix>() {
                let branches = mix
                    .get()
                    .branches
                    .iter()
                    .map(|b| b.iter().map(|st| add(st.clone())).collect())
                    .collect();
                layout.push(Item::Mix(branches));
            } else {
                return Err(ParameterError::new_err(format!(
                    "stage {i}: expected downbeat.node(...), downbeat.plugin(...) or \
                     downbeat.Mix(...), got {}",
                    s.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                )));
            }
        }
        let (lo, hi) = downbeat::project::BLOCK_SIZES;
        if !(lo as usize..=hi as usize).contains(&block_size) {
            return Err(ParameterError::new_err(format!(
                "block_size {block_size}: give {lo} to {hi} frames"
            )));
        }
        if threads == 0 {
            return Err(ParameterError::new_err("threads: at least 1"));
        }
        Ok(Self {
            stages: out,
            layout,
            block_size,
            threads,
            built: Exclusive(None),
            used: false,
            pending: Vec::new(),
        })
    }

    /// The stages, in order.
    #[getter]
    fn stages(&self) -> Vec<Stage> {
        self.stages.clone()
    }

    /// Processes `audio` (`float32`, shaped `(channels, frames)`, C-contiguous) and returns
    /// the chain's output, shaped `(output channels, frames)`. With `reset` (the default)
    /// the chain starts from silence, as if new; without it, it goes on from the end of the
    /// last call (streaming). `sample_rate` is needed on the first call.
    #[pyo3(signature = (audio, sample_rate=None, reset=true))]
    fn process<'py>(
        &mut self,
        py: Python<'py>,
        audio: &Bound<'py, PyAny>,
        sample_rate: Option<f64>,
        reset: bool,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let array = audio_in(audio)?;
        let (channels, frames) = (array.shape()[0], array.shape()[1]);
        let rate = match (sample_rate, &*self.built.get_mut()) {
            (Some(r), _) => {
                let (lo, hi) = downbeat::project::SAMPLE_RATES;
                if !(r.fract() == 0.0 && r >= lo as f64 && r <= hi as f64) {
                    return Err(AudioFormatError::new_err(format!(
                        "sample_rate {r}: give a whole number of Hz from {lo} to {hi}"
                    )));
                }
                r as u32
            }
            (None, Some(engine)) => engine.sample_rate(),
            (None, None) => {
                return Err(AudioFormatError::new_err(
                    "sample_rate: needed on the first call (e.g. chain(audio, 48000))",
                ))
            }
        };
        let fits = self.built.get_mut().as_ref().is_some_and(|e| {
            e.sample_rate() == rate && e.capture().map(Capture::channels) == Some(channels)
        });
        if !fits || (reset && self.used) {
            if !reset && self.built.get_mut().is_some() {
                return Err(AudioFormatError::new_err(format!(
                    "a streaming call (reset=False) must keep the sample rate and channels: \
                     {channels} channels at {rate} Hz"
                )));
            }
            *self.built.get_mut() = None;
            *self.built.get_mut() = Some(Box::new(self.build(rate, channels)?));
            self.used = false;
            // Built with the stages' parameters, which hold every value set.
            self.pending.clear();
        }
        let engine = self.built.get_mut().as_mut().expect("built above");
        // SAFETY: the array is C-contiguous (checked) and lives, with its memory, as long as
        // `array`. No Rust code writes it. Python code in another thread could while the GIL
        // is released below, as it could beside any numpy function that releases the GIL;
        // the docs say not to. numpy's borrow tracking would not stop such a write either,
        // so it is not used (it cost a tenth of a small call).
        let input = unsafe { array.as_slice() }.expect("checked C-contiguous");
        let output = new_audio(py, engine.channels(), frames);
        // SAFETY: the array was just made and has not reached Python: nothing else can
        // read or write it while this slice lives.
        let out = unsafe { output.as_slice_mut() }.expect("a new array is contiguous");
        // One call: the engine cuts it into pieces of the block size from its first frame,
        // as the offline device's calls of one block each are cut.
        py.detach(|| engine.process_planar(input, out, frames));
        self.used = true;
        self.pending.clear();
        Ok(output)
    }

    #[pyo3(signature = (audio, sample_rate=None, reset=true))]
    fn __call__<'py>(
        &mut self,
        py: Python<'py>,
        audio: &Bound<'py, PyAny>,
        sample_rate: Option<f64>,
        reset: bool,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        self.process(py, audio, sample_rate, reset)
    }

    /// Every live parameter, `{"stage.param": value}`: the values the last call ended with
    /// (or the stages' own, before any).
    fn parameters<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if self.built.get_mut().is_none() {
            // Built for the listing only: 48 kHz stereo, and built again for real audio.
            *self.built.get_mut() = Some(Box::new(self.build(48000, 2)?));
        }
        let schedule = self
            .built
            .get_mut()
            .as_ref()
            .expect("built above")
            .schedule();
        let dict = PyDict::new(py);
        let table = schedule.param_table();
        for id in table.live() {
            let (node, param) = table.names(id);
            if node == IN || node == OUT {
                continue;
            }
            let value = schedule
                .param_value(id)
                .unwrap_or_else(|| table.initial(id));
            dict.set_item(format!("{node}.{param}"), value)?;
        }
        for (key, value) in &self.pending {
            dict.set_item(key, *value as f32)?;
        }
        Ok(dict)
    }

    /// Sets `key` (`"stage.param"`) to `value`: from the next call's first frame when the
    /// chain runs, and in the stage, so that a reset keeps it.
    fn set(&mut self, key: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let (i, param) = self.split(key)?;
        let value = param_value(value, key)?;
        if let Some(engine) = self.built.get_mut() {
            let number = match &value {
                ParamValue::Float(v) => *v,
                ParamValue::Int(v) => *v as f64,
                ParamValue::Bool(b) => f64::from(u8::from(*b)),
                _ => return Err(ParameterError::new_err(format!("{key}: not a number"))),
            };
            let schedule: &mut Schedule = engine.schedule_mut();
            let table = schedule.param_table();
            let id = table
                .resolve(&self.stages[i].name, param)
                .map_err(|e| ParameterError::new_err(format!("{key}: {}", e.message())))?;
            let change = Change::Set(number as f32);
            table
                .check(id, &change)
                .map_err(|e| ParameterError::new_err(e.message()))?;
            schedule
                .push_event(Event::param(None, id, change))
                .map_err(|e| RenderError::new_err(format!("{key}: {}", e.message())))?;
            self.pending.retain(|(k, _)| k != key);
            self.pending.push((key.to_string(), number));
        }
        let stage = &mut self.stages[i];
        match stage.params.iter_mut().find(|(p, _)| p == param) {
            Some(slot) => slot.1 = value,
            None => stage.params.push((param.to_string(), value)),
        }
        Ok(())
    }

    fn __setitem__(&mut self, key: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set(key, value)
    }

    fn __getitem__(&mut self, py: Python<'_>, key: &str) -> PyResult<Py<PyAny>> {
        let params = self.parameters(py)?;
        match params.get_item(key)? {
            Some(v) => Ok(v.unbind()),
            None => {
                self.split(key)?;
                Err(ParameterError::new_err(format!(
                    "no live parameter `{key}` (the chain's: {})",
                    params
                        .keys()
                        .iter()
                        .map(|k| k.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
            }
        }
    }

    /// Writes the state of every stage that has one (plugins) into `folder`, one file per
    /// stage named after it; returns `{stage: path}`. Start a stage from one with
    /// `downbeat.plugin(..., state=path)`.
    fn save_state<'py>(
        &mut self,
        py: Python<'py>,
        folder: PathBuf,
    ) -> PyResult<Bound<'py, PyDict>> {
        let Some(engine) = self.built.get_mut() else {
            return Err(RenderError::new_err(
                "save_state: the chain has not run yet (process audio first)",
            ));
        };
        std::fs::create_dir_all(&folder).map_err(|e| {
            RenderError::new_err(format!("save_state: cannot make {}: {e}", folder.display()))
        })?;
        let saved = PyDict::new(py);
        for (name, state) in engine.schedule_mut().save_states() {
            let state = state.map_err(|e| RenderError::new_err(format!("stage `{name}`: {e}")))?;
            let path = folder.join(format!("{name}.{}", state.extension));
            std::fs::write(&path, &state.bytes).map_err(|e| {
                RenderError::new_err(format!("save_state: cannot write {}: {e}", path.display()))
            })?;
            saved.set_item(name, path)?;
        }
        Ok(saved)
    }

    /// The latency the chain adds, in frames (the stages' reported latencies summed).
    #[getter]
    fn latency(&mut self) -> PyResult<usize> {
        if self.built.get_mut().is_none() {
            *self.built.get_mut() = Some(Box::new(self.build(48000, 2)?));
        }
        Ok(self
            .built
            .get_mut()
            .as_ref()
            .expect("built above")
            .schedule()
            .latency())
    }

    fn __len__(&self) -> usize {
        self.stages.len()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let names = PyList::new(py, self.stages.iter().map(|s| s.name.clone()))
            .map(|l| l.to_string())
            .unwrap_or_default();
        format!("<downbeat.Chain {names}>")
    }
}
