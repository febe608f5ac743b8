//! Project files: a TOML description of a graph, loaded into a [`Schedule`] with errors that
//! point at the file, line and column to fix.
//!
//! ```toml
//! sample_rate = 48000        # Hz, default 48000
//! block_size = 256           # frames per callback, default 256
//! edges = ["osc -> lp -> out"]
//!
//! [nodes.osc]
//! type = "sine"
//! freq = 220.0
//!
//! [nodes.lp]
//! type = "biquad"
//! mode = "lowpass"
//! freq = 1000.0
//!
//! [nodes.out]
//! type = "output"
//! ```
//!
//! `[[automation]]` entries move live parameters at set times; see
//! [`control::automation`](crate::control::automation).

pub mod diff;
pub mod tempo;

use std::fmt;
use std::ops::Range;
use std::path::Path;

use crate::{all_node_types, lookup_node_type};
use downbeat_graph::{
    CompileConfig, Editor, Graph, GraphError, NodeConfig, ParamError, ParamKind, ParamValue,
    Schedule,
};
use indexmap::IndexMap;
use serde::Deserialize;
use toml::Spanned;

use crate::control::automation::{self, Automation, RawAutomation};
use crate::project::tempo::TransportSetup;
use downbeat_graph::time::{TempoMap, TransportCommand};

/// Smallest and largest accepted sample rates, in Hz.
pub const SAMPLE_RATES: (i64, i64) = (8_000, 384_000);
/// Smallest and largest accepted block sizes, in frames.
pub const BLOCK_SIZES: (i64, i64) = (16, 8_192);

/// A problem in a project file, located to the line and column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectError {
    /// The file, as given.
    pub file: String,
    /// 1-based line, 0 when the error is about the file as a whole.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
    /// What would be valid, when there is something to suggest.
    pub help: Option<String>,
    source_line: Option<String>,
    underline: usize,
}

impl ProjectError {
    fn at(src: &Source<'_>, span: Range<usize>, message: impl Into<String>) -> Self {
        let (line, column, text) = src.locate(span.start);
        let width = src.text[span.clone()]
            .lines()
            .next()
            .map_or(1, |l| l.chars().count().max(1));
        Self {
            file: src.name.clone(),
            line,
            column,
            message: message.into(),
            help: None,
            source_line: Some(text.to_string()),
            underline: width,
        }
    }

    fn whole_file(file: &str, message: impl Into<String>) -> Self {
        Self {
            file: file.to_string(),
            line: 0,
            column: 0,
            message: message.into(),
            help: None,
            source_line: None,
            underline: 0,
        }
    }

    fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

impl fmt::Display for ProjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.message)?;
        if self.line == 0 {
            write!(f, "  --> {}", self.file)?;
        } else {
            write!(f, "  --> {}:{}:{}", self.file, self.line, self.column)?;
        }
        if let Some(text) = &self.source_line {
            let num = self.line.to_string();
            let pad = " ".repeat(num.len());
            write!(
                f,
                "\n{pad} |\n{num} | {text}\n{pad} | {}{}",
                " ".repeat(self.column.saturating_sub(1)),
                "^".repeat(self.underline)
            )?;
        }
        if let Some(help) = &self.help {
            write!(f, "\n  = help: {help}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ProjectError {}

struct Source<'a> {
    name: String,
    text: &'a str,
}

impl Source<'_> {
    /// 1-based line and column (in characters) of byte `offset`, and that line's text.
    fn locate(&self, offset: usize) -> (usize, usize, &str) {
        let offset = offset.min(self.text.len());
        let line_start = self.text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let line_end = self.text[offset..]
            .find('\n')
            .map_or(self.text.len(), |i| offset + i);
        let line = self.text[..offset].matches('\n').count() + 1;
        let column = self.text[line_start..offset].chars().count() + 1;
        (
            line,
            column,
            self.text[line_start..line_end].trim_end_matches('\r'),
        )
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProject {
    sample_rate: Option<Spanned<toml::Value>>,
    block_size: Option<Spanned<toml::Value>>,
    #[serde(default)]
    edges: Vec<Spanned<toml::Value>>,
    nodes: Option<Spanned<IndexMap<Spanned<String>, RawNode>>>,
    #[serde(default)]
    automation: Vec<RawAutomation>,
    midi: Option<RawMidi>,
    tempo: Option<Spanned<crate::project::tempo::RawTempo>>,
    transport: Option<Spanned<crate::project::tempo::RawTransport>>,
}

/// The `[midi]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMidi {
    #[serde(default)]
    cc: IndexMap<Spanned<String>, Spanned<String>>,
}

/// One `[midi.cc]` entry: `74 = "synth.cutoff"` maps MIDI controller 74 to parameter
/// `cutoff` of node `synth`. A CC value `0..=127` spans the parameter's range linearly (the
/// parameter specs carry no curve, so a frequency moves linearly in Hz too).
#[derive(Clone, Debug, PartialEq)]
pub struct MidiCc {
    /// The controller number, `0..=127`.
    pub controller: u8,
    /// The node.
    pub node: String,
    /// The live parameter.
    pub param: String,
    span: Range<usize>,
}

/// One node of a project, as written in the file.
#[derive(Clone, Debug, PartialEq)]
pub struct ProjectNode {
    /// The node's name (its key under `[nodes]`).
    pub name: String,
    /// Its `type`.
    pub kind: String,
    /// Its parameters, validated against the node type.
    pub params: Vec<(String, ParamValue)>,
}

/// Where each piece of a project came from, for errors found after parsing.
#[derive(Clone, Debug)]
struct EdgeSpan {
    whole: Range<usize>,
    from: Range<usize>,
    to: Range<usize>,
}

#[derive(Clone, Debug, Default)]
struct Spans {
    node_names: Vec<Range<usize>>,
    node_types: Vec<Range<usize>>,
    /// Per node: each parameter's name and the span of its value.
    params: Vec<Vec<(String, Range<usize>)>>,
    edges: Vec<EdgeSpan>,
    nodes_table: Range<usize>,
}

/// A parsed and checked project file, ready to be [built](Project::build).
///
/// ```
/// use downbeat::project::Project;
/// let src = r#"
///     edges = ["osc -> out"]
///     [nodes.osc]
///     type = "sine"
///     [nodes.out]
///     type = "output"
/// "#;
/// let project = Project::parse(src, "inline.toml").unwrap();
/// assert_eq!(project.nodes.len(), 2);
/// let schedule = project.build().unwrap();
/// assert_eq!(schedule.channels(), 2);
/// ```
#[derive(Clone, Debug)]
pub struct Project {
    /// Where it was loaded from.
    pub file: String,
    /// Sample rate in Hz.
    pub sample_rate: u32,
    /// Frames per block.
    pub block_size: usize,
    /// Nodes, in file order.
    pub nodes: Vec<ProjectNode>,
    /// Edges as `(from, to)` node names (`node:port` for another port than `main`), chains
    /// expanded.
    pub edges: Vec<(String, String)>,
    /// Per edge of [`edges`](Project::edges), its level in dB when the file gives one
    /// (`"vox -> reverb @ -12 dB"`).
    pub edge_gains: Vec<Option<f64>>,
    /// `[[automation]]` entries (see [`automation`]), put in
    /// the schedule's timeline by [`build`](Project::build).
    pub automation: Vec<Automation>,
    /// `[midi.cc]` entries: MIDI control changes mapped to parameters (see
    /// [`cc_mappings`](Project::cc_mappings)).
    pub midi_cc: Vec<MidiCc>,
    /// The song's tempo map, when the file has a `[tempo]` table (see
    /// [`tempo`]); without one the song runs at 120 bpm in
    /// 4/4, and a MIDI file played with it brings its own tempo.
    pub tempo: Option<TempoMap>,
    /// How the transport starts (`[transport]`): playing from beat 0 unless it says
    /// otherwise.
    pub transport: TransportSetup,
    text: String,
    spans: Spans,
}

impl Project {
    /// Reads and parses `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ProjectError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            ProjectError::whole_file(&name, format!("cannot read project file: {e}"))
                .help("pass the path of a .toml project, e.g. examples/projects/hello.toml")
        })?;
        Self::parse_in(&text, name, path.parent())
    }

    /// Parses project text; `name` is used in error messages. Relative file paths in node
    /// parameters stay relative to the working directory ([`load`](Project::load) resolves
    /// them against the project file's folder).
    pub fn parse(text: &str, name: impl Into<String>) -> Result<Self, ProjectError> {
        Self::parse_in(text, name, None)
    }

    fn parse_in(
        text: &str,
        name: impl Into<String>,
        folder: Option<&Path>,
    ) -> Result<Self, ProjectError> {
        let src = Source {
            name: name.into(),
            text,
        };
        let raw: RawProject = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            let msg = e.message().trim().to_string();
            ProjectError::at(&src, span, msg).help(
                "a project has `sample_rate`, `block_size`, `edges` and one `[nodes.NAME]` table per node",
            )
        })?;
        let sample_rate = int_field(
            &src,
            raw.sample_rate.as_ref(),
            "sample_rate",
            SAMPLE_RATES,
            48_000,
        )? as u32;
        let block_size = int_field(
            &src,
            raw.block_size.as_ref(),
            "block_size",
            BLOCK_SIZES,
            256,
        )?;

        let Some(nodes_table) = raw.nodes else {
            return Err(ProjectError::at(&src, 0..0, "the project has no nodes")
                .help("add one `[nodes.NAME]` table per node, with `type = \"...\"`, and one of type \"output\""));
        };
        let mut spans = Spans {
            nodes_table: nodes_table.span(),
            ..Spans::default()
        };
        let mut nodes = Vec::new();
        for (name, table) in nodes_table.into_inner() {
            let node = parse_node(&src, &name, &table, &mut spans, folder)?;
            spans.node_names.push(name.span());
            nodes.push(node);
        }

        let mut edges = Vec::new();
        let mut edge_gains = Vec::new();
        for edge in &raw.edges {
            parse_edge(&src, edge, &mut edges, &mut edge_gains, &mut spans)?;
        }

        let automation = automation::parse(raw.automation).map_err(|e| located(&src, e))?;

        let mut midi_cc = Vec::new();
        for (key, target) in raw.midi.map(|m| m.cc).unwrap_or_default() {
            let controller = key.get_ref().parse::<u8>().ok().filter(|&c| c <= 127);
            let Some(controller) = controller else {
                return Err(ProjectError::at(
                    &src,
                    key.span(),
                    format!("MIDI controller `{}` does not exist", key.get_ref()),
                )
                .help("controller numbers go from 0 to 127, e.g. `74 = \"synth.cutoff\"`"));
            };
            let Some((node, param)) = target.get_ref().split_once('.') else {
                return Err(ProjectError::at(
                    &src,
                    target.span(),
                    format!("`{}` names no parameter", target.get_ref()),
                )
                .help("write the node and the parameter as `node.param`, e.g. \"synth.cutoff\""));
            };
            midi_cc.push(MidiCc {
                controller,
                node: node.to_string(),
                param: param.to_string(),
                span: target.span(),
            });
        }

        let located_table = |e: crate::project::tempo::TableError| {
            ProjectError::at(&src, e.span, e.message).help(e.help)
        };
        let tempo = match &raw.tempo {
            Some(t) => Some(crate::project::tempo::map(t, sample_rate).map_err(located_table)?),
            None => None,
        };
        let transport = match &raw.transport {
            Some(t) => {
                let map = tempo.clone().unwrap_or_else(|| {
                    TempoMap::constant(120.0, sample_rate).expect("120 bpm is valid")
                });
                crate::project::tempo::transport(t, &map).map_err(located_table)?
            }
            None => TransportSetup::default(),
        };

        let project = Project {
            tempo,
            transport,
            midi_cc,
            automation,
            file: src.name.clone(),
            sample_rate,
            block_size: block_size as usize,
            nodes,
            edges,
            edge_gains,
            text: text.to_string(),
            spans,
        };
        project.check_outputs()?;
        Ok(project)
    }

    fn source(&self) -> Source<'_> {
        Source {
            name: self.file.clone(),
            text: &self.text,
        }
    }

    fn check_outputs(&self) -> Result<(), ProjectError> {
        let outputs: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].kind == "output")
            .collect();
        match outputs.as_slice() {
            [] => Err(ProjectError::at(
                &self.source(),
                self.spans.nodes_table.start..self.spans.nodes_table.start,
                "the project has no output node",
            )
            .help("add `[nodes.out]` with `type = \"output\"` and connect the last node to it")),
            [_] => Ok(()),
            [first, second, ..] => Err(ProjectError::at(
                &self.source(),
                self.spans.node_types[*second].clone(),
                format!(
                    "node `{}` is a second output; `{}` is already the output",
                    self.nodes[*second].name, self.nodes[*first].name
                ),
            )
            .help("a project has exactly one node of type \"output\"; use a `mix` node to combine signals")),
        }
    }

    /// An error about node `index` (in [`nodes`](Project::nodes) order), located at its
    /// `type`, worded like the parser's: for a front end that refuses a node the parser
    /// accepts (the browser engine refuses node types that need the operating system).
    ///
    /// ```
    /// use downbeat::project::Project;
    /// let p = Project::parse("[nodes.out]\ntype = \"output\"\n", "x.toml").unwrap();
    /// let e = p.node_error(0, "not here");
    /// assert_eq!((e.line, e.column), (2, 8));
    /// assert!(e.to_string().starts_with("not here\n  --> x.toml:2:8"));
    /// ```
    ///
    /// # Panics
    /// If `index` is not a node's.
    pub fn node_error(&self, index: usize, message: impl Into<String>) -> ProjectError {
        ProjectError::at(
            &self.source(),
            self.spans.node_types[index].clone(),
            message,
        )
    }

    /// Builds every node and compiles the graph into a [`Schedule`].
    pub fn build(&self) -> Result<Schedule, ProjectError> {
        let mut schedule = self
            .graph()?
            .compile(self.compile_config())
            .map_err(|e| self.graph_error(e))?;
        self.preload(&mut schedule)?;
        Ok(schedule)
    }

    /// Whether a node of this project may revise its own latency or parameter list while it
    /// runs: a `clap` or `vst3` plugin asks its host for a restart and comes back changed.
    /// A run of such a project builds it with [`editor`](Project::editor) and commits the
    /// revisions as they come (see [`crate::revise`]); a render that skipped them would
    /// keep the plugin's old latency.
    ///
    /// ```
    /// use downbeat::project::Project;
    ///
    /// let plain = Project::parse("[nodes.out]\ntype = \"output\"\n", "p.toml").unwrap();
    /// assert!(!plain.may_revise());
    /// ```
    pub fn may_revise(&self) -> bool {
        self.nodes
            .iter()
            .any(|n| matches!(n.kind.as_str(), "clap" | "vst3"))
    }

    /// Builds every node and compiles the graph, as [`build`](Project::build) does, and
    /// returns an [`Editor`] for live edits of it with the schedule
    /// (see [`Engine::live_editor`](crate::Engine::live_editor)).
    pub fn editor(&self) -> Result<(Editor, Schedule), ProjectError> {
        let (editor, mut schedule) =
            Editor::new(self.graph()?, self.compile_config()).map_err(|e| self.graph_error(e))?;
        self.preload(&mut schedule)?;
        Ok((editor, schedule))
    }

    /// Builds every node into a [`Graph`], not compiled yet.
    pub fn graph(&self) -> Result<Graph, ProjectError> {
        let cfg = NodeConfig {
            sample_rate: self.sample_rate,
            max_block: self.block_size,
        };
        let mut graph = Graph::new();
        for (i, n) in self.nodes.iter().enumerate() {
            let node = self.build_node(i, &cfg)?;
            let id = graph.add_boxed(n.name.clone(), node);
            if n.kind == "output" {
                graph.set_output(id);
            }
        }
        for ((from, to), gain_db) in self.edges.iter().zip(&self.edge_gains) {
            match gain_db {
                Some(db) => graph.connect_gain(from.as_str(), to.as_str(), *db),
                None => graph.connect(from.as_str(), to.as_str()),
            };
        }
        Ok(graph)
    }

    /// Builds node `index` (in [`nodes`](Project::nodes) order) for `cfg`: what
    /// [`graph`](Project::graph) does for each node, and what a reload does for the nodes it
    /// adds to a running graph ([`diff`]), built for the
    /// running engine's format rather than the file's.
    ///
    /// # Errors
    /// The node type refuses the parameters: located at the value when the file spells it
    /// out, else at the node's name.
    pub(crate) fn build_node(
        &self,
        index: usize,
        cfg: &NodeConfig,
    ) -> Result<Box<dyn downbeat_graph::Node>, ProjectError> {
        let n = &self.nodes[index];
        let ty = lookup_node_type(&n.kind).expect("type checked while parsing");
        ty.create(n.params.clone(), cfg).map_err(|e| {
            // Point at the offending value when the file spells it out.
            let span = match &e {
                ParamError::Invalid { name, .. } | ParamError::Unknown { name, .. } => {
                    self.spans.params[index]
                        .iter()
                        .find(|(p, _)| p == name)
                        .map(|(_, s)| s.clone())
                }
            };
            let span = span.unwrap_or_else(|| self.spans.node_names[index].clone());
            ProjectError::at(&self.source(), span, format!("node `{}`: {e}", n.name))
        })
    }

    fn compile_config(&self) -> CompileConfig {
        CompileConfig {
            sample_rate: self.sample_rate,
            max_block: self.block_size,
        }
    }

    /// The project's automation as the schedule's timeline; its `[midi.cc]` entries checked.
    fn preload(&self, schedule: &mut Schedule) -> Result<(), ProjectError> {
        if let Some(map) = &self.tempo {
            schedule.set_tempo(map.clone());
        }
        let t = schedule.transport_mut();
        if !self.transport.playing {
            t.apply(TransportCommand::Stop)
                .expect("stopping is always possible");
        }
        if let Some((start, end)) = self.transport.looping {
            t.apply(TransportCommand::Loop(start, end))
                .expect("the loop was checked against the map when parsed");
        }
        if !self.automation.is_empty() {
            let table = schedule.param_table();
            let events = automation::events(&self.automation, &table, schedule.transport().map())
                .map_err(|e| located(&self.source(), e))?;
            schedule
                .set_timeline(events)
                .expect("automation names live parameters of this schedule");
        }
        self.cc_mappings(&schedule.param_table())?;
        Ok(())
    }

    /// The `[midi.cc]` entries resolved against the built schedule `table` describes.
    ///
    /// # Errors
    /// An unknown node or parameter, or a parameter that cannot change while running,
    /// pointing at the entry.
    pub fn cc_mappings(
        &self,
        table: &downbeat_graph::ParamTable,
    ) -> Result<Vec<crate::midi::play::CcMapping>, ProjectError> {
        self.midi_cc
            .iter()
            .map(|m| {
                let id = table.resolve(&m.node, &m.param).map_err(|e| {
                    let err = ProjectError::at(
                        &self.source(),
                        m.span.clone(),
                        format!("[midi.cc] {}: {}", m.controller, e.message()),
                    );
                    match e.help() {
                        Some(h) => err.help(h),
                        None => err,
                    }
                })?;
                let (min, max) = table.range(id);
                Ok(crate::midi::play::CcMapping {
                    controller: m.controller,
                    param: id,
                    min: min as f32,
                    max: max as f32,
                })
            })
            .collect()
    }

    /// `e` as an error in this file, located at the edge `e` names (by its index in
    /// [`edges`](Project::edges)) or at what else it is about. Also for the graph errors of
    /// a reload ([`diff`]), with the edge index mapped to this
    /// project's.
    pub(crate) fn graph_error(&self, e: GraphError) -> ProjectError {
        let src = self.source();
        let help = match &e {
            GraphError::Cycle { .. } => Some("audio must flow one way: remove one edge of the cycle".to_string()),
            GraphError::ChannelMismatch { .. } => {
                Some("give both nodes the same `channels` parameter".to_string())
            }
            GraphError::NoInputs { to, .. } => Some(format!(
                "`{to}` generates sound; connect it *from*, or put a `mix` or `gain` node in between"
            )),
            GraphError::UnknownNode { known, .. } => known
                .first()
                .map(|k| format!("did you mean `{k}`?")),
            GraphError::UnknownPort { node, .. } => Some(format!(
                "write `{node}` for its main port, or `{node}:PORT` for one of the ports listed"
            )),
            _ => None,
        };
        let span = match (&e, e.edge()) {
            (GraphError::UnknownNode { name, .. }, Some(k)) => {
                let sp = &self.spans.edges[k];
                // The name may be the node part of `node:port`.
                let end = &self.edges[k].0;
                if end == name || end.split_once(':').is_some_and(|(n, _)| n == name) {
                    sp.from.clone()
                } else {
                    sp.to.clone()
                }
            }
            (_, Some(k)) => self.spans.edges[k].whole.clone(),
            (GraphError::DuplicateName { name }, None) => self
                .nodes
                .iter()
                .position(|n| &n.name == name)
                .map_or(0..0, |i| self.spans.node_names[i].clone()),
            _ => self.spans.nodes_table.clone(),
        };
        let err = ProjectError::at(&src, span, e.to_string());
        match help {
            Some(h) => err.help(h),
            None => err,
        }
    }
}

fn int_field(
    src: &Source<'_>,
    value: Option<&Spanned<toml::Value>>,
    name: &str,
    (min, max): (i64, i64),
    default: i64,
) -> Result<i64, ProjectError> {
    let Some(v) = value else { return Ok(default) };
    match v.get_ref() {
        toml::Value::Integer(i) if (min..=max).contains(i) => Ok(*i),
        other => Err(ProjectError::at(
            src,
            v.span(),
            format!(
                "`{name}` must be an integer from {min} to {max}, got {}",
                show(other)
            ),
        )),
    }
}

fn show(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => format!("the string \"{s}\""),
        toml::Value::Array(_) => "a list".to_string(),
        toml::Value::Table(_) => "a table".to_string(),
        other => other.to_string(),
    }
}

type RawNode = Spanned<IndexMap<Spanned<String>, Spanned<toml::Value>>>;

fn parse_node(
    src: &Source<'_>,
    name: &Spanned<String>,
    table: &RawNode,
    spans: &mut Spans,
    folder: Option<&Path>,
) -> Result<ProjectNode, ProjectError> {
    let valid_types = || {
        all_node_types()
            .iter()
            .map(|t| format!("`{}`", t.name()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if name.get_ref().is_empty() || name.get_ref().contains("->") {
        return Err(ProjectError::at(
            src,
            name.span(),
            format!("invalid node name `{}`", name.get_ref()),
        )
        .help("node names are non-empty and cannot contain `->`"));
    }
    let Some(ty_value) = table.get_ref().get("type") else {
        return Err(ProjectError::at(
            src,
            name.span(),
            format!("node `{}` has no `type`", name.get_ref()),
        )
        .help(format!("add `type = \"...\"`, one of {}", valid_types())));
    };
    let Some(kind) = ty_value.get_ref().as_str() else {
        return Err(
            ProjectError::at(src, ty_value.span(), "`type` must be a string")
                .help(format!("one of {}", valid_types())),
        );
    };
    let Some(ty) = lookup_node_type(kind) else {
        return Err(ProjectError::at(
            src,
            ty_value.span(),
            format!("unknown node type \"{kind}\""),
        )
        .help(format!("valid types are {}", valid_types())));
    };
    spans.node_types.push(ty_value.span());

    let mut params = Vec::new();
    let mut param_spans = Vec::new();
    for (key, value) in table.get_ref() {
        if key.get_ref() == "type" {
            continue;
        }
        let Some(spec) = ty.params().iter().find(|s| s.name == key.get_ref()) else {
            if ty.open_params().is_some() {
                // Checked by the node type when it builds the node, which knows its names.
                match to_param(value.get_ref()) {
                    Ok(v) => {
                        params.push((key.get_ref().clone(), v));
                        param_spans.push((key.get_ref().clone(), value.span()));
                        continue;
                    }
                    Err(message) => {
                        return Err(ProjectError::at(
                            src,
                            value.span(),
                            format!(
                                "bad value for `{}` of node `{}`: {message}",
                                key.get_ref(),
                                name.get_ref()
                            ),
                        ))
                    }
                }
            }
            let valid: Vec<String> = ty
                .params()
                .iter()
                .map(|s| format!("`{}`", s.name))
                .collect();
            let help = if valid.is_empty() {
                format!("`{kind}` takes no parameters")
            } else {
                format!("`{kind}` takes {}", valid.join(", "))
            };
            return Err(ProjectError::at(
                src,
                key.span(),
                format!(
                    "unknown parameter `{}` for node `{}` of type \"{kind}\"",
                    key.get_ref(),
                    name.get_ref()
                ),
            )
            .help(help));
        };
        let converted = if spec.kind == ParamKind::PathMap {
            to_path_map(value.get_ref())
        } else {
            to_param(value.get_ref())
        };
        let converted = converted.and_then(|v| {
            downbeat_graph::Params::validate(
                std::slice::from_ref(spec),
                [(spec.name.to_string(), v.clone())],
            )
            .map(|_| v)
            .map_err(|e| match e {
                ParamError::Invalid { message, .. } => BadValue::Refused(message),
                other => BadValue::Refused(other.to_string()),
            })
        });
        match converted {
            Ok(v) => {
                let v = match (&spec.kind, v, folder) {
                    (ParamKind::Path { .. }, ParamValue::Text(p), Some(folder)) => {
                        ParamValue::Text(resolve(folder, p))
                    }
                    (ParamKind::PathMap, ParamValue::Map(map), Some(folder)) => ParamValue::Map(
                        map.into_iter()
                            .map(|(key, p)| (key, resolve(folder, p)))
                            .collect(),
                    ),
                    (_, v, _) => v,
                };
                params.push((spec.name.to_string(), v));
                param_spans.push((spec.name.to_string(), value.span()));
            }
            Err(message) => {
                return Err(ProjectError::at(
                    src,
                    value.span(),
                    format!(
                        "bad value for `{}` of node `{}`: {message}",
                        spec.name,
                        name.get_ref()
                    ),
                )
                .help(format!(
                    "`{}`: {} (default {})",
                    spec.name,
                    spec.doc,
                    default_text(&spec.kind)
                )))
            }
        }
    }
    spans.params.push(param_spans);
    Ok(ProjectNode {
        name: name.get_ref().clone(),
        kind: kind.to_string(),
        params,
    })
}

/// `path` from a project file in `folder`: as given when absolute, else joined to `folder`.
fn resolve(folder: &Path, path: String) -> String {
    if Path::new(&path).is_relative() {
        folder.join(path).display().to_string()
    } else {
        path
    }
}

fn default_text(kind: &downbeat_graph::ParamKind) -> String {
    match kind.default_value() {
        ParamValue::Float(v) => v.to_string(),
        ParamValue::Int(v) => v.to_string(),
        ParamValue::Bool(v) => v.to_string(),
        ParamValue::Text(v) => format!("\"{v}\""),
        ParamValue::List(v) => format!("{v:?}"),
        ParamValue::Map(v) if v.is_empty() => "{}".to_string(),
        ParamValue::Map(v) => format!("{v:?}"),
    }
}

/// Why a value in a project file is not a parameter value.
#[derive(Debug)]
enum BadValue {
    /// A list element that is not a number, as [`show`] words it.
    ListElement(String),
    /// A table entry whose value is not a string: its key and the value as [`show`] words
    /// it.
    TableEntry(String, String),
    /// A value of a kind no parameter takes (a table, a date), as [`show`] words it.
    Kind(String),
    /// The parameter's own check refused it; its message.
    Refused(String),
}

impl std::fmt::Display for BadValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadValue::ListElement(v) => write!(f, "list element {v} is not a number"),
            BadValue::TableEntry(k, v) => {
                write!(f, "`{k}` is {v}, expected the path of a file as a string")
            }
            BadValue::Kind(v) => write!(f, "{v} is not a parameter value"),
            BadValue::Refused(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for BadValue {}

fn to_param(v: &toml::Value) -> Result<ParamValue, BadValue> {
    Ok(match v {
        toml::Value::Float(f) => ParamValue::Float(*f),
        toml::Value::Integer(i) => ParamValue::Int(*i),
        toml::Value::Boolean(b) => ParamValue::Bool(*b),
        toml::Value::String(s) => ParamValue::Text(s.clone()),
        toml::Value::Array(items) => ParamValue::List(
            items
                .iter()
                .map(|x| match x {
                    toml::Value::Float(f) => Ok(*f),
                    toml::Value::Integer(i) => Ok(*i as f64),
                    other => Err(BadValue::ListElement(show(other))),
                })
                .collect::<Result<_, _>>()?,
        ),
        other => return Err(BadValue::Kind(show(other))),
    })
}

/// The value of a [`ParamKind::PathMap`] parameter: a table whose values are strings; any
/// other value goes through [`to_param`] (whose kind the parameter's check then refuses).
fn to_path_map(v: &toml::Value) -> Result<ParamValue, BadValue> {
    let toml::Value::Table(entries) = v else {
        return to_param(v);
    };
    Ok(ParamValue::Map(
        entries
            .iter()
            .map(|(k, x)| match x {
                toml::Value::String(p) => Ok((k.clone(), p.clone())),
                other => Err(BadValue::TableEntry(k.clone(), show(other))),
            })
            .collect::<Result<_, _>>()?,
    ))
}

fn parse_edge(
    src: &Source<'_>,
    edge: &Spanned<toml::Value>,
    edges: &mut Vec<(String, String)>,
    gains: &mut Vec<Option<f64>>,
    spans: &mut Spans,
) -> Result<(), ProjectError> {
    let syntax =
        "write edges as strings of node names joined by `->`, e.g. \"osc -> filter -> out\", \
                  a port after a colon (\"kick -> comp:sidechain\"), a level after an `@` \
                  (\"vox -> reverb @ -12 dB\")";
    let Some(chain) = edge.get_ref().as_str() else {
        return Err(ProjectError::at(
            src,
            edge.span(),
            format!("an edge must be a string, got {}", show(edge.get_ref())),
        )
        .help(syntax));
    };
    let span = edge.span();
    // Point at a name inside the string when the source spells it out literally.
    let literal = &src.text[span.clone()];
    let inner_start = if literal.len() >= 2 && &literal[1..literal.len() - 1] == chain {
        Some(span.start + 1)
    } else {
        None
    };
    let mut names = Vec::new();
    let mut levels = Vec::new();
    let mut offset = 0;
    for segment in chain.split("->") {
        // `NAME @ LEVEL`: the level of the edge into NAME.
        let (piece, level) = match segment.split_once('@') {
            Some((name, level)) => (name, Some(level)),
            None => (segment, None),
        };
        let level = match level {
            None => None,
            Some(_) if names.is_empty() => {
                return Err(ProjectError::at(
                    src,
                    span,
                    format!("edge \"{chain}\": a level comes after the node the edge goes to"),
                )
                .help(syntax));
            }
            Some(text) => Some(parse_level(text).ok_or_else(|| {
                ProjectError::at(
                    src,
                    span.clone(),
                    format!(
                        "edge \"{chain}\": `{}` is not a level; write a number of dB, e.g. `@ -12 dB`",
                        text.trim()
                    ),
                )
            })?),
        };
        levels.push(level);
        let name = piece.trim();
        let lead = piece.len() - piece.trim_start().len();
        let name_span = match inner_start {
            Some(s) if !name.is_empty() => s + offset + lead..s + offset + lead + name.len(),
            _ => span.clone(),
        };
        if name.is_empty() {
            return Err(ProjectError::at(
                src,
                span,
                format!("edge \"{chain}\" has an empty node name"),
            )
            .help(syntax));
        }
        names.push((name.to_string(), name_span));
        offset += segment.len() + 2;
    }
    if names.len() < 2 {
        return Err(
            ProjectError::at(src, span, format!("edge \"{chain}\" names only one node"))
                .help(syntax),
        );
    }
    for (pair, level) in names.windows(2).zip(&levels[1..]) {
        edges.push((pair[0].0.clone(), pair[1].0.clone()));
        gains.push(*level);
        let whole = if inner_start.is_some() {
            pair[0].1.start..pair[1].1.end
        } else {
            span.clone()
        };
        spans.edges.push(EdgeSpan {
            whole,
            from: pair[0].1.clone(),
            to: pair[1].1.clone(),
        });
    }
    Ok(())
}

/// A level as an edge gives it: a number of dB, `dB` after it or not (`-12 dB`, `-12dB`,
/// `-12`).
fn parse_level(text: &str) -> Option<f64> {
    let text = text.trim();
    let number = text
        .strip_suffix("dB")
        .or_else(|| text.strip_suffix("db"))
        .unwrap_or(text)
        .trim();
    number.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The reference of every node type and its parameters, as `downbeat nodes` prints it.
/// Parameters a controller can move while the graph runs are marked `live`.
pub fn node_reference() -> String {
    let mut s = String::new();
    for t in all_node_types() {
        s.push_str(&format!("{}: {}\n", t.name(), t.doc()));
        for p in t.params() {
            s.push_str(&format!(
                "    {:<14} {} (default {}){}: {}\n",
                p.name,
                p.kind.describe(),
                default_text(&p.kind),
                if p.live { ", live" } else { "" },
                p.doc
            ));
        }
        if let Some(more) = t.open_params() {
            s.push_str(&format!("    {:<14} {more}\n", "(more)"));
        }
    }
    s
}

/// The reference of every node type and its parameters as a Markdown page, as
/// `downbeat nodes --markdown` prints it: a section per type, headed by its name, with its
/// doc and a table of its parameters (what each accepts, its default, its unit, whether it is live,
/// what it means). The page says it is generated; the guide's copy is this output from a
/// `downbeat` built with `--features lv2`, so that every node type is in it.
///
/// It has no code blocks, only prose and tables, so that it can be compiled as a doctest.
///
/// ```
/// let page = downbeat::project::node_reference_markdown();
/// assert!(page.starts_with("# Node types\n"));
/// assert!(page.contains("\n## `sine`\n"));
/// assert!(page.contains("| `freq` | a number from 0 to 96000 | `440` | Hz | yes |"));
/// ```
pub fn node_reference_markdown() -> String {
    let mut s = String::from(
        "# Node types\n\n\
         This page is generated by `downbeat nodes --markdown` from a build with \
         `--features lv2` and must not be edited by hand: `bash scripts/references.sh` \
         regenerates it.\n\n\
         Every node type a project file can name with `type = \"...\"`, with its parameters. \
         A parameter marked live can change while the graph runs (from a controller, over \
         OSC, by automation); the others are fixed when the node is built.\n",
    );
    for t in all_node_types() {
        s.push_str(&format!("\n## `{}`\n\n{}\n", t.name(), md_cell(t.doc())));
        let params = t.params();
        if params.is_empty() {
            if t.open_params().is_none() {
                s.push_str("\nNo parameters.\n");
            }
        } else {
            s.push_str(
                "\n| parameter | accepts | default | unit | live | meaning |\n\
                 |-----------|---------|---------|------|------|---------|\n",
            );
            for p in params {
                s.push_str(&format!(
                    "| `{}` | {} | {} | {} | {} | {} |\n",
                    p.name,
                    md_cell(&p.kind.describe()),
                    md_default(&p.kind),
                    p.unit.symbol(),
                    if p.live { "yes" } else { "no" },
                    md_cell(p.doc)
                ));
            }
        }
        if let Some(more) = t.open_params() {
            s.push_str(&format!(
                "\nIt also takes parameters that are not listed here: {}.\n",
                md_cell(more)
            ));
        }
    }
    s
}

/// Text for one line or one table cell of Markdown: on one line, with `|` escaped, and `<`
/// and `>` outside code spans written as entities (`DIR/<node>.ttl` is not an HTML tag).
fn md_cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    for (i, word) in text.split_whitespace().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        for c in word.chars() {
            match c {
                '`' => {
                    in_code = !in_code;
                    out.push(c);
                }
                '|' => out.push_str("\\|"),
                '<' if !in_code => out.push_str("&lt;"),
                '>' if !in_code => out.push_str("&gt;"),
                _ => out.push(c),
            }
        }
    }
    out
}

/// A parameter's default as the reference page shows it: as it would be written in a
/// project file, or `none` for a path or a table of paths that is empty unless given.
fn md_default(kind: &ParamKind) -> String {
    match kind.default_value() {
        ParamValue::Text(v) if v.is_empty() && matches!(kind, ParamKind::Path { .. }) => {
            "none".to_string()
        }
        ParamValue::Map(v) if v.is_empty() => "none".to_string(),
        ParamValue::List(v) => format!(
            "`[{}]`",
            v.iter().map(f64::to_string).collect::<Vec<_>>().join(", ")
        ),
        _ => format!("`{}`", md_cell(&default_text(kind))),
    }
}

/// The reference of every node type and its parameters as JSON, as `downbeat nodes --json`
/// prints it: an array of types, each
/// `{"name", "doc", "params": [...], "open_params"}`, and each parameter
/// `{"name", "kind", "min", "max", "default", "options", "unit", "live", "doc"}`.
///
/// `kind` is one of `float`, `int`, `bool`, `choice`, `float_list`, `path`, `path_map`;
/// `min` and `max` are numbers for the numeric kinds and `null` otherwise (and for an
/// unbounded end); `options` is the list of words of a `choice` and `null` otherwise;
/// `unit` is the unit's symbol ([`Unit::symbol`](downbeat_graph::Unit::symbol), `""` for
/// none); `open_params` describes the parameters a type takes beyond `params` (a plugin's
/// own), or is `null`.
///
/// ```
/// let json: serde_json::Value =
///     serde_json::from_str(&downbeat::project::node_reference_json()).unwrap();
/// let sine = json.as_array().unwrap().iter().find(|t| t["name"] == "sine").unwrap();
/// let params = sine["params"].as_array().unwrap();
/// let freq = params.iter().find(|p| p["name"] == "freq").unwrap();
/// assert_eq!(freq["kind"], "float");
/// assert_eq!(freq["unit"], "Hz");
/// assert_eq!(freq["default"], 440.0);
/// ```
pub fn node_reference_json() -> String {
    use serde_json::{json, Value};
    let types: Vec<Value> = all_node_types()
        .into_iter()
        .map(|t| {
            let params: Vec<Value> = t
                .params()
                .iter()
                .map(|p| {
                    let (kind, min, max, options) = match p.kind {
                        ParamKind::Float { min, max, .. } => {
                            ("float", json!(min), json!(max), Value::Null)
                        }
                        ParamKind::Int { min, max, .. } => {
                            ("int", json!(min), json!(max), Value::Null)
                        }
                        ParamKind::Bool { .. } => ("bool", Value::Null, Value::Null, Value::Null),
                        ParamKind::Choice { options, .. } => {
                            ("choice", Value::Null, Value::Null, json!(options))
                        }
                        ParamKind::FloatList { min, max, .. } => {
                            ("float_list", json!(min), json!(max), Value::Null)
                        }
                        ParamKind::Path { .. } => ("path", Value::Null, Value::Null, Value::Null),
                        ParamKind::PathMap => ("path_map", Value::Null, Value::Null, Value::Null),
                    };
                    let default = match p.kind.default_value() {
                        ParamValue::Float(v) => json!(v),
                        ParamValue::Int(v) => json!(v),
                        ParamValue::Bool(v) => json!(v),
                        ParamValue::Text(v) => json!(v),
                        ParamValue::List(v) => json!(v),
                        ParamValue::Map(v) => Value::Object(
                            v.into_iter().map(|(k, p)| (k, Value::String(p))).collect(),
                        ),
                    };
                    json!({
                        "name": p.name,
                        "kind": kind,
                        "min": min,
                        "max": max,
                        "default": default,
                        "options": options,
                        "unit": p.unit.symbol(),
                        "live": p.live,
                        "doc": p.doc,
                    })
                })
                .collect();
            json!({
                "name": t.name(),
                "doc": t.doc(),
                "params": params,
                "open_params": t.open_params(),
            })
        })
        .collect();
    let mut text =
        serde_json::to_string_pretty(&Value::Array(types)).expect("a JSON value always serializes");
    text.push('\n');
    text
}

/// What leaving a key of a project file out means: [`ProjectKey::default`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyDefault {
    /// The key must be there.
    Required,
    /// Leaving it out is the same as writing this value (TOML).
    Value(&'static str),
    /// Leaving it out means this (there is no value to write for it).
    Absent(&'static str),
}

/// One key a project file takes: a row of [`KEYS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProjectKey {
    /// The table it goes in: `(top level)`, `[nodes.NAME]`, `[[automation]]`, `[midi]`,
    /// `[midi.cc]`, `[tempo]`, `[tempo] changes` (an entry of `changes`) or `[transport]`.
    pub table: &'static str,
    /// The key; in capitals, a placeholder for keys the file chooses (`PARAM`,
    /// `CONTROLLER`).
    pub key: &'static str,
    /// The type of its value.
    pub kind: &'static str,
    /// What leaving it out means.
    pub default: KeyDefault,
    /// What it does.
    pub meaning: &'static str,
    /// The key with a value, as written in its table (`None` for a key that is a table of
    /// its own, whose keys have rows of their own).
    pub example: Option<&'static str>,
}

/// The tables of a project file, in the order [`keys_markdown`] shows them, each with what
/// it is for.
pub const TABLES: &[(&str, &str)] = &[
    (
        "(top level)",
        "The keys of the file itself, before any table.",
    ),
    (
        "[nodes.NAME]",
        "One table per node; `NAME` is the node's name (not empty, without `->`), which edges, \
         automation, `[midi.cc]` and OSC use. Exactly one node has type `output`.",
    ),
    (
        "[[automation]]",
        "Each entry moves one live parameter at set times, compiled to events at exact \
         frames. A point is `[time, value]` or `[time, value, shape]`: shape `\"step\"` (the \
         default) jumps to the value at that time; `\"linear\"` or `\"exp\"` (also \
         `\"exponential\"`) ends a ramp that starts at the previous point's time (at 0 for \
         the first) from the value the parameter has there. Times go strictly up; an \
         exponential ramp needs a start and an end of one sign, neither 0.",
    ),
    ("[midi]", "MIDI mappings."),
    (
        "[midi.cc]",
        "MIDI control changes (from a `--midi` file, say) mapped to live parameters: a \
         value 0 to 127 spans the parameter's range linearly.",
    ),
    (
        "[tempo]",
        "The song's tempo map. Beats are quarter notes counted from 0. Without a `[tempo]` \
         table the song runs at 120 bpm in 4/4.",
    ),
    (
        "[tempo] changes",
        "An entry of `changes` (an inline table): a change of tempo, of time signature, or \
         both, at a beat.",
    ),
    ("[transport]", "How the song's transport starts."),
];

/// Every key a project file takes, table by table; `downbeat reference project` renders it
/// ([`keys_markdown`]) for the guide. A test checks it against the parser: a key the parser
/// takes and the table lacks, or the other way round, fails, and so does a default that is
/// not what leaving the key out gives.
///
/// ```
/// use downbeat::project::{KeyDefault, KEYS};
/// let rate = KEYS.iter().find(|k| k.key == "sample_rate").unwrap();
/// assert_eq!(rate.default, KeyDefault::Value("48000"));
/// ```
pub const KEYS: &[ProjectKey] = &[
    ProjectKey {
        table: "(top level)",
        key: "sample_rate",
        kind: "integer",
        default: KeyDefault::Value("48000"),
        meaning: "Sample rate in Hz, 8000 to 384000 (a device may impose its own).",
        example: Some("sample_rate = 44100"),
    },
    ProjectKey {
        table: "(top level)",
        key: "block_size",
        kind: "integer",
        default: KeyDefault::Value("256"),
        meaning: "Frames per block, the most one callback processes: 16 to 8192.",
        example: Some("block_size = 128"),
    },
    ProjectKey {
        table: "(top level)",
        key: "edges",
        kind: "list of strings",
        default: KeyDefault::Value("[]"),
        meaning: "The edges, as chains of node names joined by `->` (`\"osc -> lp -> out\"`); \
                  a port other than the main one after a colon (`\"kick -> comp:sidechain\"`); \
                  a level in dB after an `@` behind the node an edge goes to (`\"vox -> \
                  reverb @ -12 dB\"`: the edge `vox -> reverb` at -12 dB), which OSC's \
                  `/edge/...` can move.",
        example: Some("edges = [\"keys -> lowpass -> out\", \"keys -> out @ -12 dB\"]"),
    },
    ProjectKey {
        table: "(top level)",
        key: "nodes",
        kind: "table of tables",
        default: KeyDefault::Required,
        meaning: "The nodes, one `[nodes.NAME]` table each.",
        example: None,
    },
    ProjectKey {
        table: "(top level)",
        key: "automation",
        kind: "array of tables",
        default: KeyDefault::Value("[]"),
        meaning: "Curves that move live parameters, one `[[automation]]` entry each.",
        example: None,
    },
    ProjectKey {
        table: "(top level)",
        key: "midi",
        kind: "table",
        default: KeyDefault::Absent("no MIDI mapping"),
        meaning: "MIDI mappings (`[midi]`).",
        example: None,
    },
    ProjectKey {
        table: "(top level)",
        key: "tempo",
        kind: "table",
        default: KeyDefault::Absent("120 bpm in 4/4"),
        meaning: "The song's tempo map (`[tempo]`).",
        example: None,
    },
    ProjectKey {
        table: "(top level)",
        key: "transport",
        kind: "table",
        default: KeyDefault::Absent("playing from beat 0, no loop"),
        meaning: "How the song's transport starts (`[transport]`).",
        example: None,
    },
    ProjectKey {
        table: "[nodes.NAME]",
        key: "type",
        kind: "string",
        default: KeyDefault::Required,
        meaning: "The node type: one of the [node types](nodes.md) (`downbeat nodes`).",
        example: Some("type = \"biquad\""),
    },
    ProjectKey {
        table: "[nodes.NAME]",
        key: "PARAM",
        kind: "as the parameter takes",
        default: KeyDefault::Absent("the parameter's default"),
        meaning: "A parameter of the node type, checked against it (see [node \
                  types](nodes.md)). A relative file path is relative to the project \
                  file's folder.",
        example: Some("freq = 800.0"),
    },
    ProjectKey {
        table: "[[automation]]",
        key: "node",
        kind: "string",
        default: KeyDefault::Required,
        meaning: "The node.",
        example: Some("node = \"lowpass\""),
    },
    ProjectKey {
        table: "[[automation]]",
        key: "param",
        kind: "string",
        default: KeyDefault::Required,
        meaning: "The parameter, a live one.",
        example: Some("param = \"freq\""),
    },
    ProjectKey {
        table: "[[automation]]",
        key: "points",
        kind: "list of points",
        default: KeyDefault::Required,
        meaning: "The curve, at least one point: `[time, value]` or `[time, value, shape]`.",
        example: Some("points = [[0.0, 200.0], [2.0, 4000.0, \"exp\"], [3.0, 800.0, \"linear\"]]"),
    },
    ProjectKey {
        table: "[[automation]]",
        key: "time",
        kind: "string",
        default: KeyDefault::Value("\"seconds\""),
        meaning: "What the times count: `\"seconds\"` from the start of the run (a time is at \
                  frame `round(seconds × sample_rate)`), or `\"beats\"`, the song's quarter \
                  notes: each point takes effect when the playing song reaches its beat, so \
                  a loop plays the curve again and a stopped song holds it.",
        example: Some("time = \"beats\""),
    },
    ProjectKey {
        table: "[midi]",
        key: "cc",
        kind: "table",
        default: KeyDefault::Value("{}"),
        meaning: "Control changes mapped to parameters (`[midi.cc]`).",
        example: None,
    },
    ProjectKey {
        table: "[midi.cc]",
        key: "CONTROLLER",
        kind: "string `\"NODE.PARAM\"`",
        default: KeyDefault::Absent("the controller moves nothing"),
        meaning: "Maps MIDI controller `CONTROLLER` (0 to 127) to the live parameter `PARAM` \
                  of node `NODE`.",
        example: Some("74 = \"keys.cutoff\""),
    },
    ProjectKey {
        table: "[tempo]",
        key: "bpm",
        kind: "number",
        default: KeyDefault::Value("120"),
        meaning: "The tempo from beat 0, in quarter notes per minute (above 0, at most 999).",
        example: Some("bpm = 140"),
    },
    ProjectKey {
        table: "[tempo]",
        key: "signature",
        kind: "string",
        default: KeyDefault::Value("\"4/4\""),
        meaning: "The time signature from beat 0, `\"n/d\"` with `d` a power of two.",
        example: Some("signature = \"3/4\""),
    },
    ProjectKey {
        table: "[tempo]",
        key: "changes",
        kind: "list of inline tables",
        default: KeyDefault::Value("[]"),
        meaning: "Changes of tempo and time signature (`[tempo] changes`).",
        example: Some(
            "changes = [{ beat = 32, bpm = 90, ramp = 8 }, { beat = 48, signature = \"3/4\" }]",
        ),
    },
    ProjectKey {
        table: "[tempo] changes",
        key: "beat",
        kind: "number",
        default: KeyDefault::Required,
        meaning: "Where the change is, in quarter-note beats; a change of signature is on a \
                  bar line.",
        example: Some("beat = 32"),
    },
    ProjectKey {
        table: "[tempo] changes",
        key: "bpm",
        kind: "number",
        default: KeyDefault::Absent("the tempo does not change (give `bpm`, `signature` or both)"),
        meaning: "The tempo from there.",
        example: Some("bpm = 90"),
    },
    ProjectKey {
        table: "[tempo] changes",
        key: "ramp",
        kind: "number",
        default: KeyDefault::Value("0"),
        meaning: "Beats over which the tempo goes linearly to `bpm` (0: a step); only with \
                  `bpm`.",
        example: Some("ramp = 8"),
    },
    ProjectKey {
        table: "[tempo] changes",
        key: "signature",
        kind: "string",
        default: KeyDefault::Absent("the signature does not change"),
        meaning: "The time signature from there, `\"n/d\"`.",
        example: Some("signature = \"3/4\""),
    },
    ProjectKey {
        table: "[transport]",
        key: "playing",
        kind: "true/false",
        default: KeyDefault::Value("true"),
        meaning: "Whether the song plays from the first block (else it waits for \
                  `/transport/play`).",
        example: Some("playing = false"),
    },
    ProjectKey {
        table: "[transport]",
        key: "loop",
        kind: "list of two numbers",
        default: KeyDefault::Absent("no loop"),
        meaning: "Loops the song from the first beat to the second.",
        example: Some("loop = [0, 16]"),
    },
];

/// The reference of [`KEYS`] as markdown (a chapter's body, a `##` section per table of
/// [`TABLES`]), as `downbeat reference project` prints it.
///
/// ```
/// let md = downbeat::project::keys_markdown();
/// assert!(md.contains("## `[tempo]`"));
/// assert!(md.contains("| `sample_rate` |"));
/// ```
pub fn keys_markdown() -> String {
    let mut s = String::from(
        "A project is a TOML file: its nodes, the edges between them, and optionally \
         automation, MIDI mappings, a tempo map and how the transport starts. `downbeat \
         check PROJECT` reads one and says what is wrong, at the line and column; a key a \
         table does not take is refused. Each key below comes with an example of it written \
         in its table.\n",
    );
    for (table, about) in TABLES {
        let title = if *table == "(top level)" {
            "Top level".to_string()
        } else {
            format!("`{table}`")
        };
        s.push_str(&format!(
            "\n## {title}\n\n{about}\n\n| key | type | default | meaning | example |\n\
             |---|---|---|---|---|\n"
        ));
        for k in KEYS.iter().filter(|k| k.table == *table) {
            let default = match k.default {
                KeyDefault::Required => "required".to_string(),
                KeyDefault::Value(v) => format!("`{v}`"),
                KeyDefault::Absent(what) => format!("none: {what}"),
            };
            let example = k
                .example
                .map_or_else(|| "see its table".to_string(), |e| format!("`{e}`"));
            s.push_str(&format!(
                "| `{}` | {} | {default} | {} | {example} |\n",
                k.key, k.kind, k.meaning
            ));
        }
    }
    s
}

/// An automation error as a project error.
fn located(src: &Source<'_>, e: automation::Located) -> ProjectError {
    let err = ProjectError::at(src, e.span, e.message);
    match e.help {
        Some(h) => err.help(h),
        None => err,
    }
}

#[cfg(test)]
mod tests {
    use super::Project;

    fn error(value: &str) -> String {
        let src = format!(
            "edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\nfreq = {value}\n\
             [nodes.out]\ntype = \"output\"\n"
        );
        Project::parse(&src, "bad.toml").unwrap_err().to_string()
    }

    /// Each way a value can fail to be a parameter value says which, at the value.
    #[test]
    fn bad_values_say_what_is_wrong_with_them() {
        let list = error("[1, \"a\"]");
        assert!(
            list.contains(
                "bad value for `freq` of node `s`: list element the string \"a\" is not a number"
            ),
            "{list}"
        );
        let table = error("{ a = 1 }");
        assert!(
            table.contains("bad value for `freq` of node `s`: a table is not a parameter value"),
            "{table}"
        );
        let range = error("-5.0");
        assert!(
            range.contains("bad value for `freq` of node `s`: "),
            "{range}"
        );
        assert!(range.contains("(default "), "the parameter's help: {range}");
    }
}
