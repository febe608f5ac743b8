//! [`Editor`]: edits to a running graph that keep every node they do not remove.
//!
//! A [`Graph`] compiles into a [`Schedule`] once; an [`Editor`] goes on from there. It keeps
//! a description of the graph that runs (names, channels, parameters, edges) and takes
//! edits in batches: [`add`](Editor::add), [`remove`](Editor::remove),
//! [`connect`](Editor::connect), [`disconnect`](Editor::disconnect),
//! [`set_output`](Editor::set_output), then [`commit`](Editor::commit), which compiles the
//! edited graph off the audio thread into a schedule holding only the new nodes and
//! stand-ins for the kept ones. On the audio thread,
//! [`Schedule::take_over`](crate::Schedule::take_over) moves the running instances of the
//! kept nodes into it (their state, output buffers, parameter values and ramps) and leaves
//! the stand-ins and the removed nodes in the old schedule, which goes back to a control
//! thread to be dropped. A latency compensation delay whose edge and length the edit
//! leaves alone is kept too, contents and all.
//!
//! The transaction is the batch: every edit between two commits reaches the audio thread
//! at one block boundary, or, when the commit is refused (a cycle, channel counts that do
//! not match), none does and the editor is back where the last commit left it.

mod error;
mod stand_in;

use std::collections::HashMap;

pub use error::EditError;

pub(crate) use stand_in::{Description, StandIn};

use crate::compile::{edit_distance, CompileConfig};
use crate::error::GraphError;
use crate::graph::{Endpoint, Entry, Graph, NodeId};
use crate::node::Node;
use crate::schedule::Schedule;

/// Where a node sits in a compiled schedule: what the next edit's compile needs to keep it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Placed {
    pub(crate) position: usize,
    pub(crate) channels: (usize, usize),
}

/// The layout of the schedule an edit starts from.
#[derive(Clone, Debug, Default)]
pub(crate) struct Previous {
    /// Its [`Schedule::id`].
    pub(crate) schedule: u64,
    /// Every node, latency delays included, by name.
    pub(crate) slots: HashMap<String, Placed>,
}

/// The graph as the editor knows it: no node instances, only what compiling needs.
#[derive(Clone, Default)]
struct Model {
    nodes: Vec<(String, Description)>,
    /// (from, to, level in dB for an edge that has one).
    edges: Vec<(String, String, Option<f64>)>,
    output: String,
}

impl Model {
    fn has(&self, name: &str) -> bool {
        self.nodes.iter().any(|(n, _)| n == name)
    }

    /// The node an edge's end names: `node` or `node:port`.
    fn node_of<'a>(&self, end: &'a str) -> &'a str {
        match end.split_once(':') {
            Some((node, _)) if !self.has(end) => node,
            _ => end,
        }
    }

    fn unknown(&self, name: &str) -> EditError {
        let mut known: Vec<String> = self.nodes.iter().map(|(n, _)| n.clone()).collect();
        known.sort_by_key(|k| (edit_distance(k, name), k.clone()));
        EditError::UnknownNode {
            name: name.to_string(),
            known,
        }
    }

    fn require(&self, name: &str) -> Result<&Description, EditError> {
        self.nodes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| d)
            .ok_or_else(|| self.unknown(name))
    }
}

/// Edits a running graph in batches, keeping every node a batch does not remove.
///
/// ```
/// use downbeat_graph::{CompileConfig, Editor, Graph};
/// use downbeat_nodes::{Gain, Mix, Output, Sine, MixSettings, SineSettings};
///
/// let mut g = Graph::new();
/// let osc = g.add("osc", Sine::new(1, 48_000, &SineSettings { freq: 220.0, amp: 0.5, ..SineSettings::default() }));
/// let mix = g.add("mix", Mix::new(1, &MixSettings { gain_db: 0.0, ..MixSettings::default() }));
/// let out = g.add("out", Output::new(1));
/// g.connect(osc, mix);
/// g.connect(mix, out);
/// g.set_output(out);
/// let cfg = CompileConfig { sample_rate: 48_000, max_block: 64 };
/// let (mut editor, mut running) = Editor::new(g, cfg).unwrap();
/// running.process(64);
///
/// // One batch: a second oscillator through a gain into the mix.
/// editor.add("osc2", Sine::new(1, 48_000, &SineSettings { freq: 330.0, amp: 0.5, ..SineSettings::default() })).unwrap();
/// editor.add("quiet", Gain::new(1, 0.25)).unwrap();
/// editor.connect("osc2", "quiet").unwrap();
/// editor.connect("quiet", "mix").unwrap();
/// let mut next = editor.commit().unwrap();
/// assert_eq!(next.kept_nodes(), 3); // osc, mix and out go on running
///
/// // On the audio thread, at a block boundary:
/// next.take_over(&mut running);
/// std::mem::swap(&mut running, &mut next);
/// running.process(64);
/// drop(next); // the old schedule, with the stand-ins: dropped off the audio thread
///
/// // A refused batch leaves the graph as it was.
/// editor.connect("mix", "osc2").unwrap_err(); // a source takes no input...
/// editor.connect("mix", "quiet").unwrap();
/// assert!(editor.commit().is_err()); // ...and a cycle does not compile
/// assert!(!editor.has_edge("mix", "quiet"));
/// ```
pub struct Editor {
    cfg: CompileConfig,
    committed: Model,
    working: Model,
    /// Nodes added since the last commit, not running yet.
    fresh: HashMap<String, Box<dyn Node>>,
    previous: Previous,
    output_channels: usize,
}

impl std::fmt::Debug for Editor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Editor")
            .field("nodes", &self.committed.nodes.len())
            .field("edges", &self.committed.edges.len())
            .field("pending", &self.has_pending())
            .finish()
    }
}

impl Editor {
    /// Compiles `graph` (as [`Graph::compile`] does) and returns the schedule to run with an
    /// editor for it. Every later [`commit`](Editor::commit) makes a schedule that replaces
    /// the one committed before it, this one first.
    ///
    /// # Errors
    /// What [`Graph::compile`] refuses.
    pub fn new(graph: Graph, cfg: CompileConfig) -> Result<(Editor, Schedule), GraphError> {
        let name_of = |ep: &Endpoint| match ep {
            Endpoint::Name(n) => n.clone(),
            Endpoint::Id(NodeId(i)) => graph
                .nodes
                .get(*i)
                .map_or_else(String::new, |e| e.name.clone()),
            Endpoint::Port(NodeId(i), port) => graph
                .nodes
                .get(*i)
                .map_or_else(String::new, |e| format!("{}:{port}", e.name)),
        };
        let model = Model {
            nodes: graph
                .nodes
                .iter()
                .map(|e| (e.name.clone(), Description::of(e.node.as_ref())))
                .collect(),
            edges: graph
                .edges
                .iter()
                .map(|e| (name_of(&e.from), name_of(&e.to), e.gain_db))
                .collect(),
            output: graph
                .output
                .and_then(|o| graph.nodes.get(o.0))
                .map_or_else(String::new, |e| e.name.clone()),
        };
        let schedule = graph.compile_after(cfg, None)?;
        let editor = Editor {
            cfg,
            working: model.clone(),
            committed: model,
            fresh: HashMap::new(),
            previous: schedule.layout(),
            output_channels: schedule.channels(),
        };
        Ok((editor, schedule))
    }

    /// Adds `node` under `name`, with no edges yet. The node is built here, off the audio
    /// thread, and reaches it with the batch.
    ///
    /// # Errors
    /// [`EditError::Exists`] when a node has that name, [`EditError::ReservedCharacter`]
    /// when it holds `:` or `@`.
    pub fn add(&mut self, name: impl Into<String>, node: impl Node) -> Result<(), EditError> {
        self.add_boxed(name, Box::new(node))
    }

    /// [`add`](Editor::add) for a node already boxed (one a
    /// [`NodeType`](crate::NodeType) built, say).
    ///
    /// # Errors
    /// As [`add`](Editor::add).
    pub fn add_boxed(
        &mut self,
        name: impl Into<String>,
        node: Box<dyn Node>,
    ) -> Result<(), EditError> {
        let name = name.into();
        if name.contains([':', '@']) {
            return Err(EditError::ReservedCharacter { name });
        }
        if self.working.has(&name) {
            return Err(EditError::Exists { name });
        }
        self.working
            .nodes
            .push((name.clone(), Description::of(node.as_ref())));
        self.fresh.insert(name, node);
        Ok(())
    }

    /// Removes the node `name` and every edge to or from it. The running instance is
    /// dropped with the old schedule, off the audio thread.
    ///
    /// # Errors
    /// [`EditError::UnknownNode`], and [`EditError::RemovesOutput`] for the output node.
    pub fn remove(&mut self, name: &str) -> Result<(), EditError> {
        self.working.require(name)?;
        if self.working.output == name {
            return Err(EditError::RemovesOutput {
                name: name.to_string(),
            });
        }
        self.working.nodes.retain(|(n, _)| n != name);
        let model = &self.working;
        let keep: Vec<bool> = model
            .edges
            .iter()
            .map(|(f, t, _)| model.node_of(f) != name && model.node_of(t) != name)
            .collect();
        let mut k = keep.iter();
        self.working
            .edges
            .retain(|_| *k.next().expect("one flag per edge"));
        self.fresh.remove(name);
        Ok(())
    }

    /// Adds an edge from the output of `from` to the input of `to`: each a node's name for
    /// its `main` port, or `node:port` for another (see [`Port`](crate::Port)).
    ///
    /// # Errors
    /// [`EditError::UnknownNode`], [`EditError::EdgeExists`], and
    /// [`EditError::Graph`] with [`GraphError::NoInputs`] when `to` is a source; ports,
    /// channel counts and cycles are checked by [`commit`](Editor::commit).
    pub fn connect(&mut self, from: &str, to: &str) -> Result<(), EditError> {
        self.connect_edge(from, to, None)
    }

    /// [`connect`](Editor::connect) with a level of `gain_db` dB on the edge (see
    /// [`Graph::connect_gain`]): a send. The level is the live parameter `gain_db` of the
    /// node named `"FROM -> TO"`.
    ///
    /// # Errors
    /// As [`connect`](Editor::connect); a level outside -144 to +24 dB at the commit.
    pub fn connect_gain(&mut self, from: &str, to: &str, gain_db: f64) -> Result<(), EditError> {
        self.connect_edge(from, to, Some(gain_db))
    }

    fn connect_edge(
        &mut self,
        from: &str,
        to: &str,
        gain_db: Option<f64>,
    ) -> Result<(), EditError> {
        self.working.require(self.working.node_of(from))?;
        if self.working.require(self.working.node_of(to))?.channels.0 == 0 {
            return Err(EditError::Graph(GraphError::NoInputs {
                edge: self.working.edges.len(),
                from: from.to_string(),
                to: to.to_string(),
            }));
        }
        if self.has_working_edge(from, to) {
            return Err(EditError::EdgeExists {
                from: from.to_string(),
                to: to.to_string(),
            });
        }
        self.working
            .edges
            .push((from.to_string(), to.to_string(), gain_db));
        Ok(())
    }

    /// Removes the edge from `from` to `to`.
    ///
    /// # Errors
    /// [`EditError::UnknownNode`], [`EditError::NoSuchEdge`].
    pub fn disconnect(&mut self, from: &str, to: &str) -> Result<(), EditError> {
        self.working.require(self.working.node_of(from))?;
        self.working.require(self.working.node_of(to))?;
        let before = self.working.edges.len();
        self.working
            .edges
            .retain(|(f, t, _)| !(f == from && t == to));
        if self.working.edges.len() == before {
            return Err(EditError::NoSuchEdge {
                from: from.to_string(),
                to: to.to_string(),
            });
        }
        Ok(())
    }

    /// Makes `name` the graph's output: what the device plays.
    ///
    /// # Errors
    /// [`EditError::UnknownNode`], and [`EditError::OutputChannels`] when its channel count
    /// differs from the running output's (the device was opened with that one).
    pub fn set_output(&mut self, name: &str) -> Result<(), EditError> {
        let channels = self.working.require(name)?.channels.1;
        if channels != self.output_channels {
            return Err(EditError::OutputChannels {
                name: name.to_string(),
                channels,
                expected: self.output_channels,
            });
        }
        self.working.output = name.to_string();
        Ok(())
    }

    /// Compiles the batch into a schedule that replaces the one committed before (or the
    /// one [`new`](Editor::new) returned): send it to the engine, which makes it
    /// [`take_over`](crate::Schedule::take_over) at a block boundary. Only the nodes added
    /// since the last commit are in it; every other node is a stand-in for the running one.
    /// Allocates: call it off the audio thread.
    ///
    /// # Errors
    /// [`EditError::Graph`] when the edited graph does not compile. The batch is dropped
    /// (its new nodes with it) and the editor is back at the last commit.
    pub fn commit(&mut self) -> Result<Schedule, EditError> {
        self.revise();
        let model = std::mem::take(&mut self.working);
        let mut fresh = std::mem::take(&mut self.fresh);
        let mut graph = Graph::new();
        for (name, description) in &model.nodes {
            let (node, keep) = match fresh.remove(name) {
                Some(node) => (node, None),
                None => {
                    let at = self
                        .previous
                        .slots
                        .get(name)
                        .expect("a committed node is placed");
                    let node: Box<dyn Node> = Box::new(StandIn::new(description.clone()));
                    (node, Some(at.position))
                }
            };
            graph.nodes.push(Entry {
                name: name.clone(),
                node,
                keep,
            });
        }
        for (from, to, gain_db) in &model.edges {
            match gain_db {
                Some(db) => graph.connect_gain(from.as_str(), to.as_str(), *db),
                None => graph.connect(from.as_str(), to.as_str()),
            };
        }
        graph.output = model
            .nodes
            .iter()
            .position(|(n, _)| *n == model.output)
            .map(NodeId);
        match graph.compile_after(self.cfg, Some(&self.previous)) {
            Ok(schedule) => {
                self.previous = schedule.layout();
                self.committed = model.clone();
                self.working = model;
                Ok(schedule)
            }
            Err(e) => {
                self.working = self.committed.clone();
                Err(EditError::Graph(e))
            }
        }
    }

    /// Takes the latency and parameter list every node with a
    /// [`Revision`](crate::Revision) last published; true when any changed since the last
    /// look, so that a [`commit`](Editor::commit), with or without other edits, compiles
    /// them in (it looks itself too). Cheap when nothing changed: an atomic load per such
    /// node.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use downbeat_graph::{AudioMut, AudioRef, CompileConfig, Editor, Graph, Node, ProcessContext, Revision, SharedRevision};
    /// use downbeat_nodes::Output;
    ///
    /// /// A pass-through whose latency its owner may change.
    /// struct Lagging(SharedRevision);
    /// impl Node for Lagging {
    ///     fn input_channels(&self) -> usize { 1 }
    ///     fn output_channels(&self) -> usize { 1 }
    ///     fn process(&mut self, _: &ProcessContext, i: AudioRef<'_>, mut o: AudioMut<'_>) {
    ///         o.channel_mut(0).copy_from_slice(i.channel(0));
    ///     }
    ///     fn latency(&self) -> usize { self.0.latency() }
    ///     fn revision(&self) -> Option<SharedRevision> { Some(self.0.clone()) }
    /// }
    ///
    /// let revision = Arc::new(Revision::new(0, &[]));
    /// let mut g = Graph::new();
    /// let lag = g.add("lag", Lagging(revision.clone()));
    /// let out = g.add("out", Output::new(1));
    /// g.connect(lag, out);
    /// g.set_output(out);
    /// let (mut editor, running) = Editor::new(g, CompileConfig { sample_rate: 48_000, max_block: 64 }).unwrap();
    /// assert_eq!(running.latency(), 0);
    /// assert!(!editor.revise());
    /// revision.publish(32, &[]);
    /// assert!(editor.revise());
    /// assert_eq!(editor.commit().unwrap().latency(), 32);
    /// ```
    pub fn revise(&mut self) -> bool {
        let mut revised = false;
        for (_, description) in &mut self.working.nodes {
            revised |= description.revise();
        }
        revised
    }

    /// Drops the edits made since the last commit.
    pub fn discard(&mut self) {
        self.working = self.committed.clone();
        self.fresh.clear();
    }

    /// Whether edits wait for a [`commit`](Editor::commit).
    pub fn has_pending(&self) -> bool {
        !self.fresh.is_empty()
            || self.working.nodes.len() != self.committed.nodes.len()
            || self.working.edges != self.committed.edges
            || self.working.output != self.committed.output
            || self
                .working
                .nodes
                .iter()
                .zip(&self.committed.nodes)
                .any(|(a, b)| a.0 != b.0)
    }

    /// The names of the committed graph's nodes, in the order they were added.
    pub fn nodes(&self) -> impl Iterator<Item = &str> {
        self.committed.nodes.iter().map(|(n, _)| n.as_str())
    }

    /// The committed graph's edges, as (from, to) names.
    pub fn edges(&self) -> impl Iterator<Item = (&str, &str)> {
        self.committed
            .edges
            .iter()
            .map(|(f, t, _)| (f.as_str(), t.as_str()))
    }

    /// Whether the committed graph has the edge `from -> to`.
    pub fn has_edge(&self, from: &str, to: &str) -> bool {
        self.edges().any(|e| e == (from, to))
    }

    /// The committed graph's output node.
    pub fn output(&self) -> &str {
        &self.committed.output
    }

    /// The [id](Schedule::id) of the schedule the next commit replaces: the one the last
    /// commit (or [`new`](Editor::new)) returned.
    pub fn schedule_id(&self) -> u64 {
        self.previous.schedule
    }

    /// The format every schedule of this editor is compiled for.
    pub fn config(&self) -> CompileConfig {
        self.cfg
    }

    fn has_working_edge(&self, from: &str, to: &str) -> bool {
        self.working
            .edges
            .iter()
            .any(|(f, t, _)| f == from && t == to)
    }
}
