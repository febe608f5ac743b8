//! Events for a running schedule: what changes ([`NodeEvent`]), where ([`ParamId`]), when
//! ([`Event::frame`]), and the names behind the ids ([`ParamTable`]).
//!
//! The schedule applies an event at exactly its frame: it cuts the block of the node the
//! event is for at that frame, so a node sees every change at the right sample without
//! handling events itself. Events are plain `Copy` data, so they cross threads through
//! wait-free rings and sit in preallocated lists on the audio thread.

use std::fmt;

use crate::key::{NodeKey, Target};
use crate::note::{NoteError, NoteEvent};
use crate::param::{quoted_list, ParamKind, ParamSpec};
use crate::smooth::Shape;
use crate::time::{TransportCommand, TransportError};

/// One live parameter of one node of a [`Schedule`](crate::Schedule), resolved from names by
/// [`ParamTable::resolve`]; or one of its outputs ([`Node::outputs`](crate::Node::outputs)),
/// resolved by [`ParamTable::resolve_watched`], numbered after its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ParamId {
    pub(crate) node: NodeKey,
    pub(crate) param: u16,
}

impl ParamId {
    /// The node's key: the same in every schedule that keeps the node (see [`NodeKey`]).
    pub fn node(self) -> NodeKey {
        self.node
    }

    /// The parameter's index in the node's parameter list; for an output, the number of
    /// parameters plus the output's index.
    pub fn param(self) -> usize {
        usize::from(self.param)
    }
}

/// A ramp to a target over a number of frames, in the spirit of Web Audio's
/// `AudioParam.linearRampToValueAtTime`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ramp {
    /// Linear or exponential.
    pub shape: Shape,
    /// The value to start from; `None` starts from the value the parameter has reached at
    /// the event's frame (so a ramp that interrupts another continues without a jump).
    pub from: Option<f32>,
    /// The value at the end.
    pub to: f32,
    /// Frames from the event's frame to the end of the ramp; 0 is a step.
    pub frames: u32,
}

/// How a parameter changes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Change {
    /// Goes to the value over the schedule's smoothing time (a short linear ramp, 5 ms by
    /// default, see [`Schedule::set_smoothing`](crate::Schedule::set_smoothing)), so that a
    /// jump makes no zipper noise.
    Set(f32),
    /// Jumps to the value at the event's frame, unsmoothed.
    Step(f32),
    /// Ramps to a target.
    Ramp(Ramp),
}

impl Change {
    /// The values the change moves the parameter to or from (the ramp's start, when given).
    fn values(&self) -> [Option<f32>; 2] {
        match *self {
            Change::Set(v) | Change::Step(v) => [Some(v), None],
            Change::Ramp(r) => [Some(r.to), r.from],
        }
    }
}

/// What happens to a node at an event's frame.
///
/// Parameter changes and notes travel through the same lists, so both reach their node at
/// exact frames. Non-exhaustive: more kinds may join.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum NodeEvent {
    /// A parameter changes.
    Param {
        /// The parameter's index in the node's parameter list.
        index: u16,
        /// How it changes.
        change: Change,
    },
    /// A note event for a node that plays notes ([`Node::plays_notes`](crate::Node::plays_notes)):
    /// the schedule cuts the node's block at the event's frame and hands the event to
    /// [`Node::note`](crate::Node::note) for the first frame of the piece that starts there.
    Note(NoteEvent),
    /// A command for the transport ([`Target::Transport`]): play, stop, locate, loop.
    Transport(TransportCommand),
}

/// An event for a running schedule: a [`NodeEvent`] for one node, at a frame.
///
/// ```
/// use downbeat_graph::{Change, CompileConfig, Event, Graph};
/// use downbeat_nodes::{Gain, Output, Sine, SineSettings};
///
/// let mut g = Graph::new();
/// let osc = g.add("osc", Sine::new(1, 48000, &SineSettings { freq: 100.0, amp: 1.0, phase: 0.25 }));
/// let gain = g.add("gain", Gain::new(1, 1.0));
/// let out = g.add("out", Output::new(1));
/// g.connect(osc, gain);
/// g.connect(gain, out);
/// g.set_output(out);
/// let mut s = g.compile(CompileConfig { sample_rate: 48000, max_block: 64 }).unwrap();
/// let id = s.param_table().resolve("gain", "gain").unwrap();
/// s.push_event(Event::param(Some(10), id, Change::Step(0.0))).unwrap();
/// s.process(64);
/// let left = s.output().channel(0);
/// assert!(left[..10].iter().all(|&x| x != 0.0));
/// assert!(left[10..].iter().all(|&x| x == 0.0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Event {
    /// The frame of the schedule's timeline it takes effect at; `None` for the start of the
    /// next block. A frame already past takes effect at the start of the next block and is
    /// counted as late.
    pub frame: Option<u64>,
    /// A musical time to wait for instead of a frame (then `frame` is not read): the event
    /// takes effect on the exact frame at which the playing song reaches it, after
    /// whatever tempo changes, locates and loops come first. Set with
    /// [`on_beat`](Event::on_beat).
    pub beat: Option<OnBeat>,
    /// The node or nodes it is for.
    pub target: Target,
    /// What happens.
    pub body: NodeEvent,
}

impl Event {
    /// A parameter change at `frame` (`None`: at the start of the next block).
    pub fn param(frame: Option<u64>, id: ParamId, change: Change) -> Self {
        Self {
            frame,
            beat: None,
            target: Target::Node(id.node),
            body: NodeEvent::Param {
                index: id.param,
                change,
            },
        }
    }

    /// A note event at `frame` (`None`: at the start of the next block) for the node with
    /// key `node` ([`ParamTable::note_nodes`] lists the nodes that play notes).
    pub fn note(frame: Option<u64>, node: NodeKey, event: NoteEvent) -> Self {
        Self {
            frame,
            beat: None,
            target: Target::Node(node),
            body: NodeEvent::Note(event),
        }
    }

    /// A note event at `frame` for every node that plays notes in the schedule it reaches
    /// ([`Target::Instruments`]): the schedule fans it out when it takes it, so a schedule
    /// swapped in meanwhile is the one whose instruments hear it.
    pub fn note_to_instruments(frame: Option<u64>, event: NoteEvent) -> Self {
        Self {
            frame,
            beat: None,
            target: Target::Instruments,
            body: NodeEvent::Note(event),
        }
    }

    /// A transport command ([`Target::Transport`]) at `frame` (`None`: at the start of the
    /// next block). The engine cuts its block at the command's frame, so the song plays,
    /// stops, locates or loops on exactly that frame.
    ///
    /// ```
    /// use downbeat_graph::{time::TransportCommand, Event, OnBeat};
    /// // Stop on the next bar line.
    /// let stop = Event::transport(None, TransportCommand::Stop).on_beat(OnBeat::NextBar);
    /// assert_eq!(stop.beat, Some(OnBeat::NextBar));
    /// ```
    pub fn transport(frame: Option<u64>, command: TransportCommand) -> Self {
        Self {
            frame,
            beat: None,
            target: Target::Transport,
            body: NodeEvent::Transport(command),
        }
    }

    /// The same event, waiting for a musical time instead of a frame.
    pub fn on_beat(self, beat: OnBeat) -> Self {
        Self {
            beat: Some(beat),
            ..self
        }
    }
}

/// A musical time an event waits for ([`Event::beat`]). `NextBeat` and `NextBar` are
/// counted from where the song is when the audio thread takes the event, in the time
/// signature in force; a position exactly on a line counts as before it, so "next" is
/// always ahead.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OnBeat {
    /// This quarter-note beat of the song, counted from 0.
    Beat(f64),
    /// The next line of the signature's beats.
    NextBeat,
    /// The next bar line.
    NextBar,
}

/// An event as it was applied: the frame it took effect at, for recording and replay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Applied {
    /// The frame it took effect at.
    pub frame: u64,
    /// The node that took it.
    pub node: NodeKey,
    /// What happened.
    pub body: NodeEvent,
}

/// Counters of a schedule's event path since it was compiled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventStats {
    /// Events handed to nodes.
    pub applied: u64,
    /// Events that took effect after their frame: pushed when their frame had passed, or
    /// carried past it because the block's list was full.
    pub late: u64,
    /// Times a due event was carried to the next block because the block's event list was
    /// full (the event is kept, never dropped).
    pub carried: u64,
    /// Values a node refused on the audio thread (e.g. a frequency above half the sample
    /// rate that its declared range allows); the node keeps its previous value.
    pub refused: u64,
    /// Events for a node this schedule does not have (live): refused when pushed, or
    /// waiting in the schedule it took over from for a node it does not keep.
    pub stale: u64,
    /// Events waiting in the schedule it took over from that its event list had no room
    /// for (see [`Schedule::take_over`](crate::Schedule::take_over)).
    pub dropped: u64,
}

/// Why a control request was refused. The wording matches the project file's errors.
#[derive(Clone, Debug, PartialEq)]
pub enum ControlError {
    /// No node has that name.
    UnknownNode {
        /// The name given.
        name: String,
        /// The nodes that exist, closest first.
        known: Vec<String>,
    },
    /// The node has no parameter of that name.
    UnknownParam {
        /// The node.
        node: String,
        /// Its type, when the node names one ([`Node::type_name`](crate::Node::type_name)).
        kind: Option<&'static str>,
        /// The name given.
        name: String,
        /// The parameters it has.
        valid: Vec<&'static str>,
    },
    /// The parameter exists but cannot change while running.
    NotLive {
        /// The node.
        node: String,
        /// Its type, when the node names one ([`Node::type_name`](crate::Node::type_name)).
        kind: Option<&'static str>,
        /// The parameter.
        name: String,
        /// The node's live parameters.
        live: Vec<&'static str>,
    },
    /// The name is one of the node's outputs ([`Node::outputs`](crate::Node::outputs)):
    /// read-only, read through a watcher, never set.
    Output {
        /// The node.
        node: String,
        /// The output.
        name: String,
        /// The node's live parameters.
        live: Vec<&'static str>,
    },
    /// The value is outside the parameter's range (or not a number).
    OutOfRange {
        /// The node.
        node: String,
        /// The parameter.
        name: String,
        /// The value given.
        value: f64,
        /// What would be accepted.
        expected: String,
    },
    /// An exponential ramp to or from 0, or between values of opposite signs.
    BadExponential {
        /// The node.
        node: String,
        /// The parameter.
        name: String,
        /// The value at the end that cannot be reached.
        value: f64,
    },
    /// A ramp longer than the timeline can count (more than `u32::MAX` frames) or of a
    /// negative or non-finite duration.
    BadDuration {
        /// The node.
        node: String,
        /// The parameter.
        name: String,
        /// The duration given, in seconds.
        seconds: f64,
    },
    /// The queue into the audio thread is full: the event was not sent. Retry after a block.
    QueueFull {
        /// Events the queue holds.
        capacity: usize,
    },
    /// The schedule has no such node, or not with that parameter live (a hot swap removed
    /// or changed the node the event was made for).
    Stale,
    /// A note event with a channel, note number, velocity or bend out of range.
    BadNote(NoteError),
    /// A note was sent to a schedule in which no node plays notes.
    NoInstrument,
    /// The transport refused a command (a bad beat, a loop that ends before it starts).
    Transport(TransportError),
    /// A note was sent to a node that does not play notes.
    NotAnInstrument {
        /// The node.
        node: String,
    },
}

impl ControlError {
    /// The first line: what is wrong.
    pub fn message(&self) -> String {
        match self {
            ControlError::UnknownNode { name, .. } => format!("unknown node `{name}`"),
            ControlError::UnknownParam {
                node, kind, name, ..
            } => format!(
                "unknown parameter `{name}` for node `{node}`{}",
                of_type(*kind)
            ),
            ControlError::NotLive {
                node, kind, name, ..
            } => format!(
                "parameter `{name}` of node `{node}`{} cannot change while running",
                of_type(*kind)
            ),
            ControlError::Output { node, name, .. } => {
                format!("`{name}` of node `{node}` is an output, it cannot be set")
            }
            ControlError::OutOfRange {
                node,
                name,
                value,
                expected,
            } => {
                format!("bad value for `{name}` of node `{node}`: got {value}, expected {expected}")
            }
            ControlError::BadExponential { node, name, value } => format!(
                "bad value for `{name}` of node `{node}`: an exponential ramp cannot reach {value} \
                 (it never crosses or touches 0)"
            ),
            ControlError::BadDuration {
                node,
                name,
                seconds,
            } => format!(
                "bad ramp for `{name}` of node `{node}`: {seconds} s is not a duration of 0 s or \
                 more that fits in 2^32 frames"
            ),
            ControlError::QueueFull { capacity } => format!(
                "the event queue into the audio thread is full ({capacity} events); the event \
                 was not sent"
            ),
            ControlError::Stale => {
                "the running schedule does not have this node (a hot swap removed it)".to_string()
            }
            ControlError::BadNote(e) => format!("bad note event: {e}"),
            ControlError::NoInstrument => "no node of this project plays notes".to_string(),
            ControlError::Transport(e) => format!("transport: {e}"),
            ControlError::NotAnInstrument { node } => {
                format!("node `{node}` does not play notes")
            }
        }
    }

    /// What would be valid, when there is something to suggest.
    pub fn help(&self) -> Option<String> {
        match self {
            ControlError::UnknownNode { known, .. } => {
                known.first().map(|k| format!("did you mean `{k}`?"))
            }
            ControlError::UnknownParam {
                kind, valid, node, ..
            } => {
                let who = kind.map_or_else(|| format!("node `{node}`"), |k| format!("`{k}`"));
                Some(if valid.is_empty() {
                    format!("{who} takes no parameters")
                } else {
                    format!("{who} takes {}", quoted_list(valid))
                })
            }
            ControlError::NotLive { live, .. } | ControlError::Output { live, .. }
                if live.is_empty() =>
            {
                Some("this node has no live parameters".to_string())
            }
            ControlError::NotLive { live, .. } | ControlError::Output { live, .. } => {
                Some(format!("live parameters: {}", quoted_list(live)))
            }
            ControlError::BadExponential { .. } => {
                Some("use a linear ramp to reach or leave 0".to_string())
            }
            ControlError::QueueFull { .. } => Some(
                "send fewer events per block, or make the controller with a larger capacity"
                    .to_string(),
            ),
            ControlError::Stale => {
                Some("address a node the running schedule has, by its name".to_string())
            }
            ControlError::NoInstrument | ControlError::NotAnInstrument { .. } => Some(
                "add a node that plays notes (`synth`, or `karplus`) to receive them".to_string(),
            ),
            _ => None,
        }
    }
}

fn of_type(kind: Option<&'static str>) -> String {
    kind.map_or_else(String::new, |k| format!(" of type \"{k}\""))
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())?;
        if let Some(help) = self.help() {
            write!(f, "; {help}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ControlError {}

/// One node's parameters as the control side sees them.
#[derive(Clone, Debug)]
pub(crate) struct NodeParams {
    pub(crate) name: String,
    pub(crate) key: NodeKey,
    pub(crate) kind: Option<&'static str>,
    pub(crate) specs: &'static [ParamSpec],
    /// Per declared parameter: whether it is live here.
    pub(crate) live: Vec<bool>,
    /// Per declared parameter: its value when the schedule was compiled (0 if not live).
    pub(crate) initial: Vec<f32>,
    /// Its outputs ([`Node::outputs`](crate::Node::outputs)).
    pub(crate) outputs: &'static [ParamSpec],
    /// Per output: its value when the table was made.
    pub(crate) reported: Vec<f32>,
    /// Whether the node takes note events.
    pub(crate) plays_notes: bool,
    /// How long its notes sound after their note off, in seconds (0 if it plays none).
    pub(crate) release_seconds: f64,
}

/// The names behind a schedule's [`ParamId`]s, with each live parameter's range: what a
/// controller needs to resolve `node.param` names and check values off the audio thread.
///
/// Made by [`Schedule::param_table`](crate::Schedule::param_table); cheap to clone into an
/// `Arc` and share with control threads.
///
/// ```
/// use downbeat_graph::{Change, CompileConfig, ControlError, Graph};
/// use downbeat_nodes::{Gain, Output};
/// let mut g = Graph::new();
/// let gain = g.add("level", Gain::new(2, 1.0));
/// let out = g.add("out", Output::new(2));
/// g.connect(gain, out);
/// g.set_output(out);
/// let s = g.compile(CompileConfig { sample_rate: 48000, max_block: 64 }).unwrap();
/// let table = s.param_table();
/// let id = table.resolve("level", "gain").unwrap();
/// assert!(table.check(id, &Change::Set(2.0)).is_ok());
/// let err = table.check(id, &Change::Set(20.0)).unwrap_err();
/// assert_eq!(err.message(), "bad value for `gain` of node `level`: got 20, expected a number from 0 to 16");
/// assert!(matches!(table.resolve("level", "channels"), Err(ControlError::NotLive { .. })));
/// ```
#[derive(Clone, Debug)]
pub struct ParamTable {
    pub(crate) schedule: u64,
    pub(crate) sample_rate: u32,
    pub(crate) nodes: Vec<NodeParams>,
    /// Each node's index in `nodes`, by key.
    pub(crate) by_key: std::collections::HashMap<NodeKey, usize>,
}

impl ParamTable {
    /// The [`Schedule::id`](crate::Schedule::id) of the schedule this table describes.
    pub fn schedule_id(&self) -> u64 {
        self.schedule
    }

    /// The sample rate the schedule runs at.
    pub fn sample_rate(&self) -> u32 {
        self.sample_rate
    }

    /// The id of live parameter `param` of node `node`: what an event, a controller, OSC
    /// or automation may set.
    ///
    /// # Errors
    /// [`ControlError::UnknownNode`], [`ControlError::UnknownParam`],
    /// [`ControlError::NotLive`] or, for one of the node's outputs, [`ControlError::Output`],
    /// worded as the project file's errors.
    pub fn resolve(&self, node: &str, param: &str) -> Result<ParamId, ControlError> {
        let n = self.node_position(node)?;
        let entry = &self.nodes[n];
        if entry.outputs.iter().any(|o| o.name == param) {
            return Err(ControlError::Output {
                node: node.to_string(),
                name: param.to_string(),
                live: self.live_names(n),
            });
        }
        self.resolve_param(n, param)
    }

    /// The id of what a watcher reports as `name` of node `node`: a live parameter or an
    /// output ([`Node::outputs`](crate::Node::outputs)). Only reading goes through it.
    ///
    /// # Errors
    /// As [`resolve`](Self::resolve), but never [`ControlError::Output`].
    pub fn resolve_watched(&self, node: &str, name: &str) -> Result<ParamId, ControlError> {
        let n = self.node_position(node)?;
        let entry = &self.nodes[n];
        match entry.outputs.iter().position(|o| o.name == name) {
            Some(k) => Ok(ParamId {
                node: entry.key,
                param: (entry.specs.len() + k) as u16,
            }),
            None => self.resolve_param(n, name),
        }
    }

    /// Whether `id` is an output (from [`resolve_watched`](Self::resolve_watched)) rather
    /// than a parameter.
    ///
    /// # Panics
    /// If `id` did not come from this table.
    pub fn is_output(&self, id: ParamId) -> bool {
        id.param() >= self.entry(id.node).specs.len()
    }

    fn node_position(&self, node: &str) -> Result<usize, ControlError> {
        self.nodes
            .iter()
            .position(|n| n.name == node)
            .ok_or_else(|| {
                let mut known: Vec<String> = self.nodes.iter().map(|n| n.name.clone()).collect();
                known.sort_by_key(|k| (crate::compile::edit_distance(k, node), k.clone()));
                ControlError::UnknownNode {
                    name: node.to_string(),
                    known,
                }
            })
    }

    /// Live parameter `param` of the node at `n`.
    fn resolve_param(&self, n: usize, param: &str) -> Result<ParamId, ControlError> {
        let entry = &self.nodes[n];
        let node = entry.name.as_str();
        let Some(p) = entry.specs.iter().position(|s| s.name == param) else {
            return Err(ControlError::UnknownParam {
                node: node.to_string(),
                kind: entry.kind,
                name: param.to_string(),
                valid: entry.specs.iter().map(|s| s.name).collect(),
            });
        };
        if !entry.live[p] {
            return Err(ControlError::NotLive {
                node: node.to_string(),
                kind: entry.kind,
                name: param.to_string(),
                live: self.live_names(n),
            });
        }
        Ok(ParamId {
            node: entry.key,
            param: p as u16,
        })
    }

    fn live_names(&self, node: usize) -> Vec<&'static str> {
        let e = &self.nodes[node];
        e.specs
            .iter()
            .zip(&e.live)
            .filter(|(_, &l)| l)
            .map(|(s, _)| s.name)
            .collect()
    }

    /// Checks that `change` suits parameter `id`: every value it names is in the
    /// parameter's range, and an exponential ramp neither reaches nor starts from 0.
    ///
    /// # Errors
    /// [`ControlError::OutOfRange`] or [`ControlError::BadExponential`].
    ///
    /// # Panics
    /// If `id` did not come from this table.
    pub fn check(&self, id: ParamId, change: &Change) -> Result<(), ControlError> {
        let (node, spec) = self.spec(id);
        let ParamKind::Float { min, max, .. } = spec.kind else {
            unreachable!("live parameters are floats");
        };
        for v in change.values().into_iter().flatten() {
            let x = f64::from(v);
            if !(x.is_finite() && x >= min && x <= max) {
                return Err(ControlError::OutOfRange {
                    node: node.to_string(),
                    name: spec.name.to_string(),
                    value: x,
                    expected: spec.kind.describe(),
                });
            }
        }
        if let Change::Ramp(Ramp {
            shape: Shape::Exponential,
            from,
            to,
            ..
        }) = *change
        {
            let start_ok = from.is_none_or(|f| f != 0.0 && (f > 0.0) == (to > 0.0));
            if to == 0.0 || !start_ok {
                return Err(ControlError::BadExponential {
                    node: node.to_string(),
                    name: spec.name.to_string(),
                    value: f64::from(to),
                });
            }
        }
        Ok(())
    }

    /// Frames in `seconds` at the schedule's sample rate, for a ramp of parameter `id`.
    ///
    /// # Errors
    /// [`ControlError::BadDuration`] for a negative, non-finite or too long duration.
    pub fn ramp_frames(&self, id: ParamId, seconds: f64) -> Result<u32, ControlError> {
        let frames = (seconds * f64::from(self.sample_rate)).round();
        if seconds.is_finite() && seconds >= 0.0 && frames <= f64::from(u32::MAX) {
            return Ok(frames as u32);
        }
        let (node, spec) = self.spec(id);
        Err(ControlError::BadDuration {
            node: node.to_string(),
            name: spec.name.to_string(),
            seconds,
        })
    }

    fn entry(&self, key: NodeKey) -> &NodeParams {
        &self.nodes[*self.by_key.get(&key).expect("the id came from this table")]
    }

    fn spec(&self, id: ParamId) -> (&str, &'static ParamSpec) {
        let n = self.entry(id.node);
        let spec = match id.param().checked_sub(n.specs.len()) {
            Some(k) => &n.outputs[k],
            None => &n.specs[id.param()],
        };
        (&n.name, spec)
    }

    /// The node and parameter names of `id`.
    ///
    /// # Panics
    /// If `id` did not come from this table.
    pub fn names(&self, id: ParamId) -> (&str, &'static str) {
        let (node, spec) = self.spec(id);
        (node, spec.name)
    }

    /// The range of parameter `id`: its smallest and largest accepted values (for an
    /// output, those it declares; an output declared other than as a float has none:
    /// minus to plus infinity).
    ///
    /// # Panics
    /// If `id` did not come from this table.
    pub fn range(&self, id: ParamId) -> (f64, f64) {
        let (_, spec) = self.spec(id);
        match spec.kind {
            ParamKind::Float { min, max, .. } => (min, max),
            _ if self.is_output(id) => (f64::NEG_INFINITY, f64::INFINITY),
            _ => unreachable!("live parameters are floats"),
        }
    }

    /// The value parameter `id` had when the schedule was compiled; for an output, when
    /// this table was made.
    pub fn initial(&self, id: ParamId) -> f32 {
        let n = self.entry(id.node);
        match id.param().checked_sub(n.specs.len()) {
            Some(k) => n.reported[k],
            None => n.initial[id.param()],
        }
    }

    /// Every live parameter and every output, node by node in processing order (a node's
    /// live parameters, then its outputs): what a watcher reports.
    pub fn watched(&self) -> impl Iterator<Item = ParamId> + '_ {
        self.nodes.iter().flat_map(|e| {
            let params = e
                .live
                .iter()
                .enumerate()
                .filter(|(_, &l)| l)
                .map(|(p, _)| p);
            params
                .chain(e.specs.len()..e.specs.len() + e.outputs.len())
                .map(move |p| ParamId {
                    node: e.key,
                    param: p as u16,
                })
        })
    }

    /// Every live parameter, node by node in processing order.
    pub fn live(&self) -> impl Iterator<Item = ParamId> + '_ {
        self.nodes.iter().flat_map(|e| {
            e.live
                .iter()
                .enumerate()
                .filter(|(_, &l)| l)
                .map(move |(p, _)| ParamId {
                    node: e.key,
                    param: p as u16,
                })
        })
    }

    /// The keys of the nodes that play notes, in processing order: the nodes a note sent
    /// to the whole schedule goes to.
    pub fn note_nodes(&self) -> impl Iterator<Item = NodeKey> + '_ {
        self.nodes.iter().filter(|n| n.plays_notes).map(|n| n.key)
    }

    /// The key of node `name`.
    pub fn node_key(&self, name: &str) -> Option<NodeKey> {
        self.nodes.iter().find(|n| n.name == name).map(|n| n.key)
    }

    /// The name of the node with key `key`, if this schedule has it.
    pub fn node_name(&self, key: NodeKey) -> Option<&str> {
        let &i = self.by_key.get(&key)?;
        Some(self.nodes[i].name.as_str())
    }

    /// The longest release of the nodes that play notes, in seconds, as they were when the
    /// table was made ([`Node::release_seconds`](crate::Node::release_seconds)): how long
    /// the last note off of a performance goes on sounding.
    #[allow(clippy::disallowed_methods)] // durations, never -0.0: the same on every target
    pub fn longest_release(&self) -> f64 {
        self.nodes
            .iter()
            .filter(|n| n.plays_notes)
            .map(|n| n.release_seconds)
            .fold(0.0, f64::max)
    }

    /// Node names in processing order.
    pub fn node_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.nodes.iter().map(|n| n.name.as_str())
    }

    /// The position of node `name` in processing order.
    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True for a schedule without nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}
