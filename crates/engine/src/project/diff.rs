//! [`diff`]: what changed between two versions of a project file, as edits to the graph that
//! runs the first; [`ProjectDiff::apply`] makes them through a [`LiveEditor`] and a
//! [`Controller`]. `downbeat run --watch` does this on every save.
//!
//! Nodes are matched by name:
//!
//! * A node in both versions, of the same type, whose parameters that cannot change while
//!   running are the same, is **kept**: its running instance goes on (a sine's phase, a
//!   filter's memory, a plugin's state). Each of its live parameters whose value changed is
//!   sent as an event ([`Change::Set`](downbeat_graph::Change::Set)), so it is smoothed like
//!   any live change. A live parameter the new version leaves out goes back to its default.
//! * A node whose type or any other parameter changed is **rebuilt**: removed and added
//!   again, from scratch. A parameter a node type takes beyond those it declares (a
//!   plugin's own, see [`NodeFactory::open_params`](downbeat_graph::NodeFactory::open_params))
//!   is not known to be live before the node is built, so a change to one rebuilds it.
//! * Nodes only in the old version are removed, nodes only in the new one added.
//!
//! Edges only in the old version are disconnected, edges only in the new one connected (and
//! the edges of a rebuilt node connected again, since removing it dropped them). An edge in
//! both whose level (`"vox -> reverb @ -12 dB"`) changed is a live change of the `gain_db`
//! of the node the graph puts on it (named `"vox -> reverb"`); one that gains or loses its
//! level is disconnected and connected again. The output
//! moves to the new version's `output` node. What a running engine cannot change (sample
//! rate, block size) or what lives in the schedule it started with (`[[automation]]`,
//! `[midi.cc]`) is listed in [`ProjectDiff::not_applied`] and not applied. A diff that
//! edits the graph (not only live parameters) ends the running schedule's preloaded
//! timeline, automation included: a schedule a [`LiveEditor`] commits starts without one
//! (see [`Schedule::take_over`](downbeat_graph::Schedule::take_over)); the diff says so in
//! [`not_applied`](ProjectDiff::not_applied) when the old version has automation.
//!
//! The edits are one batch: the audio thread takes all of them at one block boundary, or,
//! when the batch is refused (a cycle, a node that does not build), none, and the running
//! graph is as it was. Refusals are [`ProjectError`]s located in the new file where they
//! can be.
//!
//! ```
//! use downbeat::{project::Project, project::diff::diff, Engine};
//! use downbeat_graph::NodeConfig;
//!
//! let v1 = "edges = [\"s -> g -> out\"]\n[nodes.s]\ntype = \"sine\"\n\
//!           [nodes.g]\ntype = \"gain\"\n[nodes.out]\ntype = \"output\"\n";
//! let old = Project::parse(v1, "p.toml").unwrap();
//! let (editor, schedule) = old.editor().unwrap();
//! let mut engine = Engine::new(schedule);
//! let mut live = engine.live_editor(editor);
//! let mut control = engine.controller(64);
//!
//! // Saved again: the gain is live (an event), the noise is a new node.
//! let v2 = "edges = [\"s -> g -> out\", \"n -> g\"]\n[nodes.s]\ntype = \"sine\"\n\
//!           [nodes.g]\ntype = \"gain\"\ngain = 0.5\n[nodes.n]\ntype = \"noise\"\n\
//!           [nodes.out]\ntype = \"output\"\n";
//! let new = Project::parse(v2, "p.toml").unwrap();
//! let d = diff(&old, &new);
//! assert_eq!(d.added, ["n"]);
//! assert_eq!(d.connected, [("n".to_string(), "g".to_string(), None)]);
//! assert_eq!((d.params[0].node.as_str(), d.params[0].value), ("g", 0.5));
//! let cfg = NodeConfig { sample_rate: 48_000, max_block: 256 };
//! d.apply(&mut live, &mut control, &cfg).unwrap();
//! let mut block = vec![0.0; 256 * 2];
//! engine.process(&mut block);
//! assert_eq!(engine.swaps(), 1);
//! ```
#![cfg(not(target_arch = "wasm32"))]

use std::collections::HashSet;
use std::fmt;
use std::time::{Duration, Instant};

use crate::lookup_node_type;
use downbeat_graph::{ControlError, EditError, GraphError, Node, NodeConfig, ParamValue};

use crate::control::Controller;
use crate::edit::{CommitError, LiveEditor};
use crate::project::{Project, ProjectError, ProjectNode};

/// How long a commit waits for the engine to take the edits committed before it (one per
/// block): far more than a block, so only an engine that does not run is refused.
const COMMIT_PATIENCE: Duration = Duration::from_secs(1);

/// An edge of a project: `(from, to, level in dB)`, the level when it has one.
pub type Edge = (String, String, Option<f64>);

/// A live parameter of a kept node whose value changed.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamChange {
    /// The node.
    pub node: String,
    /// The parameter.
    pub param: String,
    /// Its new value (the default when the new version leaves it out).
    pub value: f64,
}

/// What changed between two versions of a project, as edits to the running graph. Made by
/// [`diff`]; see the [module](self) for what counts as kept, rebuilt, added and removed.
#[derive(Clone, Debug)]
pub struct ProjectDiff {
    /// Nodes to remove: those gone, then those [rebuilt](ProjectDiff::rebuilt).
    pub removed: Vec<String>,
    /// Nodes to add, in the new file's order: those new and those rebuilt.
    pub added: Vec<String>,
    /// Nodes in both lists: their type or a parameter that is not live changed.
    pub rebuilt: Vec<String>,
    /// Edges to remove, as `(from, to)`: those gone, or that gained or lost a level, whose
    /// nodes stay (removing a node removes its edges).
    pub disconnected: Vec<(String, String)>,
    /// Edges to add, as `(from, to, level in dB)`: those new or that gained or lost a
    /// level, and those of rebuilt nodes.
    pub connected: Vec<Edge>,
    /// The new output node, when it is another one.
    pub output: Option<String>,
    /// Live parameters of kept nodes to move.
    pub params: Vec<ParamChange>,
    /// Changes a running engine keeps as it started, each said in a sentence: they apply
    /// when the project starts again.
    pub not_applied: Vec<String>,
    /// The new version: its nodes are built from it, its errors located in it.
    new: Project,
}

/// The nodes a diff adds, built by [`ProjectDiff::build`] for
/// [`ProjectDiff::apply_built`]: each with its index in the new version.
pub struct BuiltNodes(Vec<(usize, Box<dyn Node>)>);

impl fmt::Debug for BuiltNodes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BuiltNodes")
            .field("nodes", &self.0.len())
            .finish()
    }
}

/// Why [`ProjectDiff::apply`] did not apply a diff.
#[derive(Debug)]
pub enum ApplyError {
    /// The new version cannot run (a node that does not build, an edge to a node it does
    /// not have, a cycle, an output with another channel count): located in its file.
    /// Nothing was applied.
    Project(ProjectError),
    /// The running graph refused an edit the new file does not account for: the graph
    /// differs from the old version (it was edited by other means, over OSC say). Nothing
    /// was applied.
    Edit(EditError),
    /// The engine did not take the edits committed before for a second: it does not run.
    /// Nothing was applied.
    Busy,
    /// The graph edits were applied, but a live parameter could not be moved (the
    /// controller's queue is full, say); those before it were.
    Control {
        /// The node.
        node: String,
        /// The parameter.
        param: String,
        /// Why (boxed: it is large, and rare).
        error: Box<ControlError>,
    },
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApplyError::Project(e) => e.fmt(f),
            ApplyError::Edit(e) => write!(
                f,
                "the running graph is not the one the file described before (was it edited \
                 over OSC?): {e}"
            ),
            ApplyError::Busy => CommitError::Busy.fmt(f),
            ApplyError::Control { node, param, error } => write!(
                f,
                "the graph edits were applied, but `{node}.{param}` was not moved: {}",
                error.message()
            ),
        }
    }
}

impl std::error::Error for ApplyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ApplyError::Project(e) => Some(e),
            ApplyError::Edit(e) => Some(e),
            ApplyError::Busy => None,
            ApplyError::Control { error, .. } => Some(error.as_ref()),
        }
    }
}

/// What changed from `old` to `new`, as edits to a graph that runs `old`.
pub fn diff(old: &Project, new: &Project) -> ProjectDiff {
    let mut removed = Vec::new();
    let mut added = Vec::new();
    let mut rebuilt = Vec::new();
    let mut params = Vec::new();
    let find = |p: &'_ Project, name: &str| p.nodes.iter().position(|n| n.name == name);
    for o in &old.nodes {
        if find(new, &o.name).is_none() {
            removed.push(o.name.clone());
        }
    }
    for n in &new.nodes {
        match find(old, &n.name).map(|i| &old.nodes[i]) {
            None => added.push(n.name.clone()),
            Some(o) => match live_changes(o, n) {
                Some(changes) => params.extend(changes),
                None => {
                    removed.push(n.name.clone());
                    added.push(n.name.clone());
                    rebuilt.push(n.name.clone());
                }
            },
        }
    }

    let old_names: HashSet<&str> = old.nodes.iter().map(|n| n.name.as_str()).collect();
    let new_names: HashSet<&str> = new.nodes.iter().map(|n| n.name.as_str()).collect();
    let gone = |names: &HashSet<&str>, from: &str, to: &str| {
        [from, to]
            .iter()
            .any(|end| removed.iter().any(|r| r == node_of(end, names)))
    };
    let (old_edges, new_edges) = (edges_of(old), edges_of(new));
    let find = |edges: &'_ [Edge], e: &Edge| {
        edges
            .iter()
            .find(|x| (&x.0, &x.1) == (&e.0, &e.1))
            .map(|x| x.2)
    };
    // Whether the edge is in `other` too, with a level or without one as it is here.
    let same = |other: &'_ [Edge], e: &Edge| {
        find(other, e).is_some_and(|level| level.is_some() == e.2.is_some())
    };
    let mut disconnected = Vec::new();
    for e in &old_edges {
        let pair = (e.0.clone(), e.1.clone());
        if !same(&new_edges, e) && !gone(&old_names, &e.0, &e.1) && !disconnected.contains(&pair) {
            disconnected.push(pair);
        }
    }
    // Duplicates stay: connecting one twice is refused where the file repeats it.
    let connected: Vec<Edge> = new_edges
        .iter()
        .filter(|e| !same(&old_edges, e) || gone(&new_names, &e.0, &e.1))
        .cloned()
        .collect();
    // A level moved: live, on the node the graph put on the edge (kept with the edge, and
    // by name when the edge is connected again).
    for e in &new_edges {
        if let (Some(to), Some(Some(from))) = (e.2, find(&old_edges, e)) {
            if to != from {
                params.push(ParamChange {
                    node: format!("{} -> {}", e.0, e.1),
                    param: "gain_db".to_string(),
                    value: to,
                });
            }
        }
    }

    let output_of = |p: &Project| {
        p.nodes
            .iter()
            .find(|n| n.kind == "output")
            .map(|n| n.name.clone())
    };
    let output = output_of(new).filter(|o| Some(o) != output_of(old).as_ref());

    let mut d = ProjectDiff {
        removed,
        added,
        rebuilt,
        disconnected,
        connected,
        output,
        params,
        not_applied: not_applied(old, new),
        new: new.clone(),
    };
    if d.has_edits() && !old.automation.is_empty() {
        d.not_applied.push(
            "this reload edits the graph, which ends the run's `[[automation]]`: a graph \
             edited live starts without the timeline the run started with"
                .to_string(),
        );
    }
    d
}

/// The live parameter changes that turn node `o` into `n`; `None` when `n` must be built
/// anew (another type, or another value of a parameter that is not live).
fn live_changes(o: &ProjectNode, n: &ProjectNode) -> Option<Vec<ParamChange>> {
    if o.kind != n.kind {
        return None;
    }
    let specs = lookup_node_type(&n.kind).map_or(&[][..], |t| t.params());
    let given = |node: &ProjectNode, name: &str| {
        node.params
            .iter()
            .find(|(p, _)| p == name)
            .map(|(_, v)| v.clone())
    };
    let mut names: Vec<&str> = o.params.iter().map(|(p, _)| p.as_str()).collect();
    for (p, _) in &n.params {
        if !names.contains(&p.as_str()) {
            names.push(p);
        }
    }
    let mut changes = Vec::new();
    for name in names {
        let spec = specs.iter().find(|s| s.name == name);
        let default = || spec.map(|s| s.kind.default_value());
        let before = given(o, name).or_else(default);
        let after = given(n, name).or_else(default);
        if same_value(before.as_ref(), after.as_ref()) {
            continue;
        }
        match (spec, after.as_ref().and_then(number)) {
            (Some(s), Some(value)) if s.live => changes.push(ParamChange {
                node: n.name.clone(),
                param: name.to_string(),
                value,
            }),
            _ => return None,
        }
    }
    Some(changes)
}

/// Whether two values are the same parameter value: `440` and `440.0` are.
fn same_value(a: Option<&ParamValue>, b: Option<&ParamValue>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => match (number(x), number(y)) {
            (Some(p), Some(q)) => p == q,
            _ => x == y,
        },
        (None, None) => true,
        _ => false,
    }
}

fn number(v: &ParamValue) -> Option<f64> {
    match *v {
        ParamValue::Float(x) => Some(x),
        ParamValue::Int(i) => Some(i as f64),
        _ => None,
    }
}

/// The edges of `p`, each with its level.
fn edges_of(p: &Project) -> Vec<Edge> {
    let levels = p.edge_gains.iter().copied().chain(std::iter::repeat(None));
    p.edges
        .iter()
        .zip(levels)
        .map(|((from, to), level)| (from.clone(), to.clone(), level))
        .collect()
}

/// The node an edge's end names: `node` or `node:port` (a node's whole name wins, as the
/// graph reads it).
fn node_of<'a>(end: &'a str, names: &HashSet<&str>) -> &'a str {
    match end.split_once(':') {
        Some((node, _)) if !names.contains(end) => node,
        _ => end,
    }
}

/// What changed that a running engine keeps as it started.
fn not_applied(old: &Project, new: &Project) -> Vec<String> {
    let mut notes = Vec::new();
    if old.sample_rate != new.sample_rate {
        notes.push(format!(
            "`sample_rate` changed from {} to {} Hz; the engine runs on at the rate it started with",
            old.sample_rate, new.sample_rate
        ));
    }
    if old.block_size != new.block_size {
        notes.push(format!(
            "`block_size` changed from {} to {}; the engine runs on with the block size it started with",
            old.block_size, new.block_size
        ));
    }
    // Compared by what they say, not where the file says it (the spans move with any edit).
    let curves = |p: &Project| {
        p.automation
            .iter()
            .map(|a| {
                let points: Vec<_> = a.points.iter().map(|x| (x.at, x.value, x.shape)).collect();
                (a.node.clone(), a.param.clone(), a.unit, points)
            })
            .collect::<Vec<_>>()
    };
    if old.transport != new.transport {
        notes.push(
            "`[transport]` changed; the running song keeps playing, stopped or looping as it \
             was (move it with /transport/... or a controller)"
                .to_string(),
        );
    }
    if curves(old) != curves(new) {
        notes
            .push("`[[automation]]` changed; it applies when the project starts again".to_string());
    }
    let cc = |p: &Project| {
        p.midi_cc
            .iter()
            .map(|m| (m.controller, m.node.clone(), m.param.clone()))
            .collect::<Vec<_>>()
    };
    if cc(old) != cc(new) {
        notes.push("`[midi.cc]` changed; the mapping the run started with stays".to_string());
    }
    notes
}

impl ProjectDiff {
    /// Whether the two versions run the same: nothing to edit, no parameter to move (there
    /// may still be [notes](ProjectDiff::not_applied)).
    pub fn is_empty(&self) -> bool {
        !self.has_edits() && self.params.is_empty()
    }

    /// Whether the graph itself changes (nodes, edges, output), beyond parameter values.
    pub fn has_edits(&self) -> bool {
        !(self.removed.is_empty()
            && self.added.is_empty()
            && self.disconnected.is_empty()
            && self.connected.is_empty()
            && self.output.is_none())
    }

    /// The new version of the project.
    pub fn project(&self) -> &Project {
        &self.new
    }

    /// Applies the diff to the graph `live` edits, which runs the old version:
    /// [`build`](ProjectDiff::build)s the added nodes for `cfg` (the running engine's
    /// format), then [`apply_built`](ProjectDiff::apply_built). Builds nodes and allocates:
    /// call it from a control thread.
    ///
    /// # Errors
    /// As [`build`](ProjectDiff::build) and [`apply_built`](ProjectDiff::apply_built).
    pub fn apply(
        &self,
        live: &mut LiveEditor,
        controller: &mut Controller,
        cfg: &NodeConfig,
    ) -> Result<(), ApplyError> {
        let nodes = self.build(cfg)?;
        self.apply_built(nodes, live, controller)
    }

    /// Builds the nodes the diff adds, for `cfg` (the running engine's format): apart from
    /// [`apply_built`](ProjectDiff::apply_built), so that a caller sharing the editor need
    /// not hold it while nodes load (a plugin may take its time). A node type that reads
    /// the device's input (`input`) is built under whatever
    /// [`Capture::connect`](downbeat_nodes::Capture::connect) the caller holds.
    ///
    /// # Errors
    /// [`ApplyError::Project`] for a node that does not build, located at its parameter.
    pub fn build(&self, cfg: &NodeConfig) -> Result<BuiltNodes, ApplyError> {
        let nodes = self
            .added
            .iter()
            .map(|name| {
                let i = self.index(name);
                self.new
                    .build_node(i, cfg)
                    .map(|node| (i, node))
                    .map_err(ApplyError::Project)
            })
            .collect::<Result<_, _>>()?;
        Ok(BuiltNodes(nodes))
    }

    /// Applies the diff with the nodes [`build`](ProjectDiff::build) made for it: makes
    /// every graph edit in one batch and commits it (waiting up to a second for the engine
    /// to take the batches before), gives `controller` the new graph's table, then moves the
    /// live parameters through it. Allocates: call it from a control thread.
    ///
    /// # Errors
    /// An [`ApplyError`]; but for [`ApplyError::Control`] nothing was applied, and the
    /// editor is back where its last commit left it.
    ///
    /// # Panics
    /// When `nodes` were not built for this diff.
    pub fn apply_built(
        &self,
        nodes: BuiltNodes,
        live: &mut LiveEditor,
        controller: &mut Controller,
    ) -> Result<(), ApplyError> {
        let fits = nodes.0.len() == self.added.len()
            && nodes
                .0
                .iter()
                .zip(&self.added)
                .all(|((i, _), name)| self.new.nodes[*i].name == *name);
        assert!(fits, "the nodes were built for another diff");
        if self.has_edits() {
            let staged = self.stage(live, nodes).and_then(|final_edges| {
                commit_waiting(live).map_err(|e| match e {
                    CommitError::Busy => ApplyError::Busy,
                    CommitError::Edit(e) => self.commit_error(e, &final_edges),
                })
            });
            if let Err(e) = staged {
                live.discard();
                return Err(e);
            }
        }
        controller.set_table(live.table());
        for p in &self.params {
            controller
                .set(&p.node, &p.param, p.value as f32)
                .map_err(|error| ApplyError::Control {
                    node: p.node.clone(),
                    param: p.param.clone(),
                    error: Box::new(error),
                })?;
        }
        Ok(())
    }

    /// The index of node `name` of the new version.
    fn index(&self, name: &str) -> usize {
        self.new
            .nodes
            .iter()
            .position(|n| n.name == name)
            .expect("a node the diff adds is in the new version")
    }

    /// Makes the edits, uncommitted. Returns the edges the edited graph will have, in the
    /// order the editor compiles them (to find the file's edge a commit error is about).
    fn stage(
        &self,
        live: &mut LiveEditor,
        built: BuiltNodes,
    ) -> Result<Vec<(String, String)>, ApplyError> {
        let new = &self.new;
        let index = |name: &str| self.index(name);
        let old_output = live.output().to_string();
        let new_output = self.output.as_deref().unwrap_or(&old_output);
        if self.rebuilt.contains(&old_output) && new_output == old_output {
            return Err(ApplyError::Project(new.node_error(
                index(&old_output),
                format!(
                    "the output node `{old_output}` cannot be rebuilt while the project runs \
                     (the device was opened for its channels); restart the run to apply this"
                ),
            )));
        }
        let node_error = |i: usize, e: EditError| {
            ApplyError::Project(new.node_error(i, format!("node `{}`: {e}", new.nodes[i].name)))
        };

        let names: HashSet<String> = live.nodes().map(str::to_string).collect();
        let names: HashSet<&str> = names.iter().map(String::as_str).collect();
        let kept_edges: Vec<(String, String)> = live
            .edges()
            .filter(|(f, t)| {
                let gone = [f, t]
                    .iter()
                    .any(|end| self.removed.iter().any(|r| r == node_of(end, &names)));
                !gone
                    && !self
                        .disconnected
                        .iter()
                        .any(|(a, b)| (a.as_str(), b.as_str()) == (*f, *t))
            })
            .map(|(f, t)| (f.to_string(), t.to_string()))
            .collect();

        // The output can only be removed once another is set, and a node can only be added
        // once the one of its name is gone: the old output, when rebuilt or renamed, last.
        for name in self.removed.iter().filter(|r| **r != old_output) {
            live.remove(name).map_err(ApplyError::Edit)?;
        }
        let mut late = None;
        for (i, node) in built.0 {
            let name = &new.nodes[i].name;
            if *name == old_output {
                late = Some((name, i, node));
            } else {
                live.add_boxed(name.clone(), node)
                    .map_err(|e| node_error(i, e))?;
            }
        }
        if new_output != old_output {
            live.set_output(new_output)
                .map_err(|e| node_error(index(new_output), e))?;
        }
        if self.removed.contains(&old_output) {
            live.remove(&old_output).map_err(ApplyError::Edit)?;
        }
        if let Some((name, i, node)) = late {
            live.add_boxed(name.clone(), node)
                .map_err(|e| node_error(i, e))?;
        }
        for (from, to) in &self.disconnected {
            live.disconnect(from, to).map_err(ApplyError::Edit)?;
        }
        for (from, to, level) in &self.connected {
            match level {
                Some(db) => live.connect_gain(from, to, *db),
                None => live.connect(from, to),
            }
            .map_err(|e| self.connect_error(from, to, e))?;
        }
        let connected = self
            .connected
            .iter()
            .map(|(f, t, _)| (f.clone(), t.clone()));
        Ok(kept_edges.into_iter().chain(connected).collect())
    }

    /// A refused `connect`, located at the file's edge (every edge connected is one of the
    /// file's).
    fn connect_error(&self, from: &str, to: &str, e: EditError) -> ApplyError {
        let edges = &self.new.edges;
        let same = |e: &(String, String)| e.0 == from && e.1 == to;
        let Some(first) = edges.iter().position(same) else {
            return ApplyError::Edit(e);
        };
        let located = match e {
            EditError::UnknownNode { name, known } => GraphError::UnknownNode {
                edge: first,
                name,
                known,
            },
            // The file gives the edge twice: point at the second.
            EditError::EdgeExists { from, to } => GraphError::DuplicateEdge {
                edge: edges.iter().rposition(same).unwrap_or(first),
                from,
                to,
            },
            EditError::Graph(g) => with_edge(g, first),
            other => return ApplyError::Edit(other),
        };
        ApplyError::Project(self.new.graph_error(located))
    }

    /// A refused commit, located at the file's edge: the error's edge index counts in
    /// `final_edges`, the order the editor compiled.
    fn commit_error(&self, e: EditError, final_edges: &[(String, String)]) -> ApplyError {
        let EditError::Graph(g) = e else {
            return ApplyError::Edit(e);
        };
        let in_file = g
            .edge()
            .and_then(|k| final_edges.get(k))
            .and_then(|edge| self.new.edges.iter().position(|e| e == edge));
        match (in_file, g.edge()) {
            (Some(k), _) => ApplyError::Project(self.new.graph_error(with_edge(g, k))),
            (None, None) => ApplyError::Project(self.new.graph_error(g)),
            (None, Some(_)) => ApplyError::Edit(EditError::Graph(g)),
        }
    }
}

impl fmt::Display for ProjectDiff {
    /// One line: what the diff does, e.g. `1 node added, 1 rebuilt, 2 edges connected, 1
    /// parameter moved`; `no change` when there is nothing.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = |n: usize, one: &str, many: &str, what: &str| match n {
            0 => None,
            1 => Some(format!("1 {one} {what}")),
            n => Some(format!("{n} {many} {what}")),
        };
        let fresh = self.added.len() - self.rebuilt.len();
        let gone = self.removed.len() - self.rebuilt.len();
        let parts: Vec<String> = [
            count(fresh, "node", "nodes", "added"),
            count(gone, "node", "nodes", "removed"),
            count(self.rebuilt.len(), "node", "nodes", "rebuilt"),
            count(self.connected.len(), "edge", "edges", "connected"),
            count(self.disconnected.len(), "edge", "edges", "disconnected"),
            self.output.as_ref().map(|o| format!("output now `{o}`")),
            count(self.params.len(), "parameter", "parameters", "moved"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if parts.is_empty() {
            f.write_str("no change")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

/// Commits the batch, waiting for the engine to take the batches before (it takes one per
/// block) up to [`COMMIT_PATIENCE`]. On [`CommitError::Busy`] the batch is still pending.
pub(crate) fn commit_waiting(live: &mut LiveEditor) -> Result<(), CommitError> {
    let start = Instant::now();
    loop {
        match live.commit() {
            Err(CommitError::Busy) if start.elapsed() < COMMIT_PATIENCE => {
                std::thread::sleep(Duration::from_millis(1));
            }
            done => return done,
        }
    }
}

/// `e` about edge `edge` instead of the one it names.
fn with_edge(e: GraphError, edge: usize) -> GraphError {
    match e {
        GraphError::UnknownNode { name, known, .. } => {
            GraphError::UnknownNode { edge, name, known }
        }
        GraphError::DanglingEdge { id, .. } => GraphError::DanglingEdge { edge, id },
        GraphError::DuplicateEdge { from, to, .. } => GraphError::DuplicateEdge { edge, from, to },
        GraphError::NoInputs { from, to, .. } => GraphError::NoInputs { edge, from, to },
        GraphError::ChannelMismatch {
            from,
            from_channels,
            to,
            to_channels,
            ..
        } => GraphError::ChannelMismatch {
            edge,
            from,
            from_channels,
            to,
            to_channels,
        },
        GraphError::UnknownPort {
            node,
            port,
            input,
            known,
            ..
        } => GraphError::UnknownPort {
            edge,
            node,
            port,
            input,
            known,
        },
        GraphError::EdgeGain {
            from, to, gain_db, ..
        } => GraphError::EdgeGain {
            edge,
            from,
            to,
            gain_db,
        },
        GraphError::Cycle { nodes, .. } => GraphError::Cycle { nodes, edge },
        other @ (GraphError::DuplicateName { .. } | GraphError::MissingOutput) => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Engine;

    const BLOCK: usize = 64;
    const CFG: NodeConfig = NodeConfig {
        sample_rate: 48_000,
        max_block: BLOCK,
    };

    fn project(text: &str) -> Project {
        Project::parse(&format!("block_size = {BLOCK}\n{text}"), "p.toml").unwrap()
    }

    /// A sine through a gain to a mono output; `extra` goes into `[nodes.s]`.
    fn sine_gain(gain: &str, extra: &str) -> String {
        format!(
            "edges = [\"s -> g -> out\"]\n\
             [nodes.s]\ntype = \"sine\"\nchannels = 1\nfreq = 440\n{extra}\n\
             [nodes.g]\ntype = \"gain\"\nchannels = 1\n{gain}\n\
             [nodes.out]\ntype = \"output\"\nchannels = 1\n"
        )
    }

    struct Running {
        engine: Engine,
        live: LiveEditor,
        control: Controller,
    }

    impl Running {
        fn new(p: &Project) -> Self {
            let (editor, schedule) = p.editor().unwrap();
            let mut engine = Engine::new(schedule);
            let live = engine.live_editor(editor);
            let control = engine.controller(64);
            Running {
                engine,
                live,
                control,
            }
        }

        fn apply(&mut self, d: &ProjectDiff) -> Result<(), ApplyError> {
            d.apply(&mut self.live, &mut self.control, &CFG)
        }

        /// `blocks` blocks of the mono output.
        fn render(&mut self, blocks: usize) -> Vec<f32> {
            let mut out = Vec::new();
            let mut block = vec![0.0; BLOCK];
            for _ in 0..blocks {
                self.engine.process(&mut block);
                out.extend_from_slice(&block);
            }
            out
        }
    }

    #[test]
    fn the_same_project_written_otherwise_is_no_change() {
        let a = project(&sine_gain("gain = 1", ""));
        // `1.0` is the `1` it was, the default spelled out is the default, order and
        // spacing do not count.
        let b = project(&format!(
            "\n\n{}",
            sine_gain("gain = 1.0", "amp = 0.5")
                .replace("channels = 1\nfreq", "freq = 440.0\nchannels = 1\n#")
        ));
        let d = diff(&a, &b);
        assert!(d.is_empty() && d.not_applied.is_empty(), "{d:?}");
        assert_eq!(d.to_string(), "no change");
    }

    #[test]
    fn a_live_parameter_moves_and_any_other_change_rebuilds() {
        let a = project(&sine_gain("gain = 1", "amp = 0.5"));
        let d = diff(&a, &project(&sine_gain("gain = 0.25", "amp = 0.5")));
        assert!(!d.has_edits(), "{d:?}");
        assert_eq!(
            d.params,
            [ParamChange {
                node: "g".into(),
                param: "gain".into(),
                value: 0.25
            }]
        );
        // A live parameter left out goes back to its default (amp 0.5 → the default 0.5 is
        // no change; gain 1 → left out is the default 1, no change either).
        let d = diff(&a, &project(&sine_gain("", "amp = 0.125")));
        assert_eq!(d.params.len(), 1);
        assert_eq!(
            (d.params[0].param.as_str(), d.params[0].value),
            ("amp", 0.125)
        );
        // `phase` is not live: the sine is rebuilt, and its edges connected again.
        let d = diff(
            &a,
            &project(&sine_gain("gain = 1", "amp = 0.5\nphase = 0.25")),
        );
        assert_eq!(
            (d.removed.as_slice(), d.added.as_slice()),
            (&["s".to_string()][..], &["s".to_string()][..])
        );
        assert_eq!(d.rebuilt, ["s"]);
        assert_eq!(d.connected, [("s".to_string(), "g".to_string(), None)]);
        assert!(d.disconnected.is_empty());
        assert_eq!(d.to_string(), "1 node rebuilt, 1 edge connected");
        // Another type: rebuilt.
        let d = diff(
            &a,
            &project(
                &sine_gain("gain = 1", "amp = 0.5")
                    .replace("\"sine\"", "\"noise\"")
                    .replace("freq = 440\n", ""),
            ),
        );
        assert_eq!(d.rebuilt, ["s"]);
    }

    #[test]
    fn nodes_and_edges_added_and_removed_and_the_output_renamed() {
        let a = project(
            "edges = [\"s -> m\", \"t -> m\", \"m -> out\"]\n\
             [nodes.s]\ntype = \"sine\"\n[nodes.t]\ntype = \"sine\"\n\
             [nodes.m]\ntype = \"mix\"\n[nodes.out]\ntype = \"output\"\n",
        );
        let b = project(
            "edges = [\"s -> m\", \"n -> m\", \"m -> main\"]\n\
             [nodes.s]\ntype = \"sine\"\n[nodes.n]\ntype = \"noise\"\n\
             [nodes.m]\ntype = \"mix\"\n[nodes.main]\ntype = \"output\"\n",
        );
        let d = diff(&a, &b);
        assert_eq!(d.removed, ["t", "out"]);
        assert_eq!(d.added, ["n", "main"]);
        assert!(d.rebuilt.is_empty());
        // `t -> m` and `m -> out` go with their nodes.
        assert!(d.disconnected.is_empty(), "{:?}", d.disconnected);
        assert_eq!(
            d.connected,
            [
                ("n".to_string(), "m".to_string(), None),
                ("m".to_string(), "main".to_string(), None)
            ]
        );
        assert_eq!(d.output.as_deref(), Some("main"));

        // Applied: the running graph is the new version's.
        let mut r = Running::new(&a);
        r.apply(&d).unwrap();
        r.render(1);
        assert_eq!(r.engine.swaps(), 1);
        let mut nodes: Vec<&str> = r.live.nodes().collect();
        nodes.sort_unstable();
        assert_eq!(nodes, ["m", "main", "n", "s"]);
        assert_eq!(r.live.output(), "main");
        assert!(r.live.has_edge("n", "m") && !r.live.has_edge("t", "m"));

        // An edge moved between kept nodes is disconnected and connected.
        let c = project(
            "edges = [\"s -> out\", \"t -> m\", \"m -> out\"]\n\
             [nodes.s]\ntype = \"sine\"\n[nodes.t]\ntype = \"sine\"\n\
             [nodes.m]\ntype = \"mix\"\n[nodes.out]\ntype = \"output\"\n",
        );
        let d = diff(&a, &c);
        assert_eq!(d.disconnected, [("s".to_string(), "m".to_string())]);
        assert_eq!(d.connected, [("s".to_string(), "out".to_string(), None)]);
    }

    #[test]
    fn what_a_running_engine_keeps_is_noted() {
        let base =
            "edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n";
        let auto = "[[automation]]\nnode = \"s\"\nparam = \"amp\"\npoints = [[1.0, 0.1]]\n";
        let a = project(&format!("{base}{auto}"));
        // The same automation further down the file (its spans moved) is no change.
        assert!(diff(&a, &project(&format!("\n\n{base}\n{auto}")))
            .not_applied
            .is_empty());
        let b = Project::parse(
            &format!(
                "sample_rate = 44100\nblock_size = 128\n{base}{}",
                auto.replace("0.1", "0.2")
            ),
            "p.toml",
        )
        .unwrap();
        let notes = diff(&a, &b).not_applied.join("\n");
        for what in [
            "`sample_rate` changed from 48000 to 44100",
            "`block_size` changed from 64 to 128",
            "`[[automation]]` changed",
        ] {
            assert!(notes.contains(what), "no `{what}` in {notes}");
        }
        // A graph edit ends the automation the run has: said.
        let c = project(&format!(
            "{}{auto}",
            base.replace("\"s -> out\"", "\"s -> out\", \"n -> out\"")
                + "[nodes.n]\ntype = \"noise\"\n"
        ));
        let notes = diff(&a, &c).not_applied.join("\n");
        assert!(notes.contains("ends the run's `[[automation]]`"), "{notes}");
    }

    /// An edge's level that moves is a live change of the node on the edge; one that comes
    /// or goes is the edge connected again.
    #[test]
    fn edge_levels_move_live_or_reconnect() {
        let constant = "freq = 0\nphase = 0.25\namp = 1.0";
        let at = |level: &str| {
            project(
                &(sine_gain("", constant).replace("freq = 440\n", "").replace(
                    "\"s -> g -> out\"",
                    &format!("\"s -> g{level}\", \"g -> out\""),
                )),
            )
        };
        let (plain, loud, quiet) = (at(""), at(" @ 0 dB"), at(" @ -20 dB"));
        let d = diff(&loud, &quiet);
        assert!(!d.has_edits(), "{d:?}");
        assert_eq!(
            d.params,
            [ParamChange {
                node: "s -> g".into(),
                param: "gain_db".into(),
                value: -20.0
            }]
        );
        let mut r = Running::new(&loud);
        assert!(r.render(1).iter().all(|&x| (x - 1.0).abs() < 1e-6));
        r.apply(&d).unwrap();
        let after = r.render(200);
        assert_eq!(r.engine.swaps(), 0);
        assert!(after[0] > 0.9, "jumped to {}", after[0]);
        assert!(
            (after[after.len() - 1] - 0.1).abs() < 1e-4,
            "{}",
            after[after.len() - 1]
        );

        let d = diff(&plain, &quiet);
        assert_eq!(d.disconnected, [("s".to_string(), "g".to_string())]);
        assert_eq!(
            d.connected,
            [("s".to_string(), "g".to_string(), Some(-20.0))]
        );
        let mut r = Running::new(&plain);
        r.render(1);
        r.apply(&d).unwrap();
        let after = r.render(1);
        assert_eq!(r.engine.swaps(), 1);
        assert!(
            after.iter().all(|&x| (x - 0.1).abs() < 1e-4),
            "{:?}",
            &after[..4]
        );
        let back = diff(&quiet, &plain);
        assert_eq!(back.connected, [("s".to_string(), "g".to_string(), None)]);
    }

    /// A kept sine goes on where it was: with a silent node added beside it, the output is
    /// bit for bit the one of a run without the edit, while the edit took effect.
    #[test]
    fn a_kept_node_keeps_its_state_across_an_edit() {
        let a = project(&sine_gain("gain = 1", ""));
        let b = project(
            &(sine_gain("gain = 1", "")
                .replace("\"s -> g -> out\"", "\"s -> g -> out\", \"z -> g\"")
                + "[nodes.z]\ntype = \"sine\"\nchannels = 1\namp = 0.0\n"),
        );
        let mut reference = Running::new(&a);
        let want = reference.render(20);
        let mut r = Running::new(&a);
        let mut got = r.render(7);
        r.apply(&diff(&a, &b)).unwrap();
        got.extend(r.render(13));
        assert_eq!(r.engine.swaps(), 1);
        assert!(r.live.has_edge("z", "g"));
        assert_eq!(got, want);
    }

    /// A live parameter moves smoothed, as any live change: no jump at the reload, the new
    /// value reached later.
    #[test]
    fn a_live_change_is_smoothed() {
        // A constant 1.0 (a sine at 0 Hz a quarter turn in) through the gain.
        let sine = "freq = 0\nphase = 0.25\namp = 1.0";
        let a = project(&sine_gain("gain = 1", sine).replace("freq = 440\n", ""));
        let b = project(&sine_gain("gain = 0.25", sine).replace("freq = 440\n", ""));
        let mut r = Running::new(&a);
        let before = r.render(4);
        assert!(before.iter().all(|&x| x == 1.0));
        r.apply(&diff(&a, &b)).unwrap();
        let after = r.render(100);
        assert_eq!(r.engine.swaps(), 0, "a parameter change is no graph edit");
        assert!(after[0] > 0.9, "jumped to {}", after[0]);
        assert!(after.windows(2).all(|w| w[1] <= w[0]));
        assert!((after[after.len() - 1] - 0.25).abs() < 1e-6);
    }

    /// A rebuilt node starts anew: a sine whose phase changed starts at that phase.
    #[test]
    fn a_rebuilt_node_starts_from_its_new_parameters() {
        let a = project(&sine_gain("", "freq = 0\namp = 1.0").replace("freq = 440\n", ""));
        let b = project(
            &sine_gain("", "freq = 0\namp = 1.0\nphase = 0.25").replace("freq = 440\n", ""),
        );
        let mut r = Running::new(&a);
        assert!(r.render(2).iter().all(|&x| x == 0.0));
        r.apply(&diff(&a, &b)).unwrap();
        let after = r.render(2);
        assert!(
            after.iter().all(|&x| (x - 1.0).abs() < 1e-6),
            "{:?}",
            &after[..4]
        );
    }

    /// A version that cannot run is refused where the file says why, and the running graph
    /// is as it was.
    #[test]
    fn a_refused_version_leaves_the_graph_and_says_where() {
        let text = sine_gain("gain = 1", "");
        let a = project(&text);
        let mut r = Running::new(&a);
        let before = r.render(1);

        // A cycle: the file's edge on it (the editor compiles the edges in another order,
        // the kept ones first).
        let cycle = project(
            &(text.replace("\"s -> g -> out\"", "\"g -> h -> g\", \"s -> g -> out\"")
                + "[nodes.h]\ntype = \"gain\"\nchannels = 1\n"),
        );
        let e = r.apply(&diff(&a, &cycle)).unwrap_err();
        let shown = e.to_string();
        assert!(matches!(e, ApplyError::Project(_)), "{e:?}");
        assert!(
            shown.contains("cycle")
                && (shown.contains("p.toml:2:11") || shown.contains("p.toml:2:16")),
            "{shown}"
        );

        // An edge to a node the file does not have.
        let unknown =
            project(&text.replace("\"s -> g -> out\"", "\"s -> g -> out\", \"s -> nosuch\""));
        let shown = r.apply(&diff(&a, &unknown)).unwrap_err().to_string();
        assert!(
            shown.contains("unknown node `nosuch`") && shown.contains("p.toml:2:"),
            "{shown}"
        );

        // A node whose parameters the type refuses together (a note longer than its
        // interval): at the value.
        let pluck = project(
            &(text.replace("\"s -> g -> out\"", "\"s -> g -> out\", \"k -> g\"")
                + "[nodes.k]\ntype = \"karplus\"\nchannels = 1\ninterval = 0.5\nlength = 1.0\n"),
        );
        let shown = r.apply(&diff(&a, &pluck)).unwrap_err().to_string();
        assert!(
            shown.contains("node `k`") && shown.contains("length"),
            "{shown}"
        );

        // The output rebuilt (its channels changed): the device was opened for the old.
        let stereo = project(&text.replace(
            "type = \"output\"\nchannels = 1",
            "type = \"output\"\nchannels = 2",
        ));
        let shown = r.apply(&diff(&a, &stereo)).unwrap_err().to_string();
        assert!(
            shown.contains("output node `out` cannot be rebuilt"),
            "{shown}"
        );

        assert!(!r.live.has_pending());
        let after = r.render(1);
        assert_eq!(r.engine.swaps(), 0);
        assert_eq!(r.live.nodes().count(), 3);
        assert_ne!(before, after, "the sine goes on");

        // A graph that differs from the old version (a node removed by other means).
        r.live.remove("s").unwrap();
        r.live.commit().unwrap();
        let phase = project(&sine_gain("gain = 1", "phase = 0.5"));
        let e = r.apply(&diff(&a, &phase)).unwrap_err();
        assert!(
            matches!(e, ApplyError::Edit(EditError::UnknownNode { .. })),
            "{e:?}"
        );
        assert!(e.to_string().contains("edited over OSC"), "{e}");
    }
}
