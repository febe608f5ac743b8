//! [`StandIn`]: what a new schedule holds in a kept node's place until it takes over.

use crate::buffer::{AudioMut, AudioRef};
use crate::monitor::SharedMonitor;
use crate::node::{Node, Port, ProcessContext};
use crate::param::{ParamKind, ParamSpec};
use crate::revision::SharedRevision;

/// What a compile needs to know of a node without having it: the node itself runs on the
/// audio thread. Read once, when the node is added, while the editor still holds it.
#[derive(Clone)]
pub(crate) struct Description {
    pub(crate) channels: (usize, usize),
    pub(crate) ports: (Vec<Port>, Vec<Port>),
    pub(crate) latency: usize,
    pub(crate) params: &'static [ParamSpec],
    /// Per parameter: whether the node reported a value for it (a live one).
    pub(crate) live: Box<[bool]>,
    pub(crate) outputs: &'static [ParamSpec],
    pub(crate) plays_notes: bool,
    pub(crate) release_seconds: f64,
    pub(crate) monitor: Option<SharedMonitor>,
    /// Where the node publishes a new latency or parameter list, and the generation of it
    /// that `latency` and `params` hold.
    pub(crate) revision: Option<(SharedRevision, u64)>,
}

impl Description {
    pub(crate) fn of(node: &dyn Node) -> Self {
        let params = node.params();
        Self {
            channels: (node.input_channels(), node.output_channels()),
            ports: (node.input_ports(), node.output_ports()),
            latency: node.latency(),
            params,
            live: params
                .iter()
                .enumerate()
                .map(|(i, spec)| {
                    matches!(spec.kind, ParamKind::Float { .. })
                        && spec.live
                        && node.get_param(i).is_some()
                })
                .collect(),
            outputs: node.outputs(),
            plays_notes: node.plays_notes(),
            release_seconds: node.release_seconds(),
            monitor: node.monitor(),
            revision: node.revision().map(|r| {
                let seen = r.generation();
                (r, seen)
            }),
        }
    }

    /// Takes the node's latest published latency and parameters, if they are newer than
    /// what this description holds; true when they were. A revised parameter is live when
    /// it is declared a live float (the node cannot be asked for its value here; it comes
    /// from the running node's state, by position, at the take-over, or is the default).
    pub(crate) fn revise(&mut self) -> bool {
        let Some((revision, seen)) = &mut self.revision else {
            return false;
        };
        if revision.generation() == *seen {
            return false;
        }
        let (generation, latency, params) = revision.current();
        *seen = generation;
        self.latency = latency;
        self.params = params;
        self.live = params
            .iter()
            .map(|spec| matches!(spec.kind, ParamKind::Float { .. }) && spec.live)
            .collect();
        true
    }
}

/// Describes a running node to [`compile`](crate::Graph::compile) exactly as the node
/// would (channels, latency, parameters, outputs, monitor), so the new schedule's tables
/// come out as if the node were there; [`Schedule::take_over`](crate::Schedule::take_over)
/// then swaps the node in, and the stand-in goes back with the old schedule to be dropped.
/// It never processes: a schedule that keeps nodes refuses to run before taking over.
pub(crate) struct StandIn(Description);

impl StandIn {
    pub(crate) fn new(description: Description) -> Self {
        Self(description)
    }
}

impl Node for StandIn {
    fn input_channels(&self) -> usize {
        self.0.channels.0
    }

    fn output_channels(&self) -> usize {
        self.0.channels.1
    }

    fn process(&mut self, _: &ProcessContext, _: AudioRef<'_>, mut output: AudioMut<'_>) {
        for c in 0..output.channels() {
            output.channel_mut(c).fill(0.0);
        }
    }

    fn input_ports(&self) -> Vec<Port> {
        self.0.ports.0.clone()
    }

    fn output_ports(&self) -> Vec<Port> {
        self.0.ports.1.clone()
    }

    fn params(&self) -> &'static [ParamSpec] {
        self.0.params
    }

    fn get_param(&self, index: usize) -> Option<f32> {
        // The value itself comes with the node's parameter state at the take-over; the
        // default stands for a parameter a revision added, which has none there.
        let default = match self.0.params.get(index)?.kind {
            ParamKind::Float { default, .. } => default as f32,
            _ => 0.0,
        };
        self.0
            .live
            .get(index)
            .copied()
            .unwrap_or(false)
            .then_some(default)
    }

    fn outputs(&self) -> &'static [ParamSpec] {
        self.0.outputs
    }

    fn latency(&self) -> usize {
        self.0.latency
    }

    fn plays_notes(&self) -> bool {
        self.0.plays_notes
    }

    fn release_seconds(&self) -> f64 {
        self.0.release_seconds
    }

    fn monitor(&self) -> Option<SharedMonitor> {
        self.0.monitor.clone()
    }
}
