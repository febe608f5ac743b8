//! Open Sound Control over UDP: a control thread receives packets and turns them into
//! events through a [`Controller`], so a phone, a sequencer or `oscsend` can play the graph.
//!
//! The addresses it serves, with their arguments, are [`ADDRESSES`], and the ways to time a
//! message [`TIMING`] (the guide's reference is [`reference_markdown`], printed by `downbeat
//! reference osc`): `/node/<node>/<param>` and its `/step`, `/ramp` and `/exp` forms, notes
//! (`/node/<node>/note_on`...), the levels of edges (`/edge/<from>/<to>/gain_db`...), edits of
//! the running graph (`/graph/add`, `remove`, `connect`, `disconnect`) and the song's
//! transport (`/transport/play`, `stop`, `locate`, `loop`, `unloop`, `tempo`), timed by
//! `/beat/<beat>/...`, `/next_beat/...`, `/next_bar/...` in front of an address or a bundle's
//! timetag.
//!
//! When the song follows JACK's transport (a handler made
//! [`with_transport_requests`](OscHandler::with_transport_requests)), `/transport/play`,
//! `/stop` and `/locate` go to JACK's transport instead of the song's, at once: JACK's next
//! cycle moves every JACK client, the song included. A beat or a bundle's timetag in front
//! of them, `/transport/loop` and `/transport/unloop` are then refused;
//! `/transport/tempo` still changes the song's tempo.
//!
//! Notes count as in MIDI, note `0..=127`, where fractions are microtones (69 is A4,
//! 440 Hz); velocity is `0..=1`, as everywhere in Downbeat (Rust, the Web, project files),
//! where 0 is a note off. The node must play notes (`synth`, `karplus`, `strings`, ...).
//!
//! Numbers may be sent as float (`f`), double (`d`), int (`i`) or 64-bit int (`h`): an int
//! is the same number as a float to a gain, and OSC senders differ in which they send for
//! `1`. A `/node/...` message refuses any other argument type (a string, a blob,
//! true/false...).
//!
//! The `/graph/...` messages edit the running graph through a
//! [`LiveEditor`] (a handler made [`with_editor`](OscHandler::with_editor); without one they
//! are refused). Names, types, parameter names and edge ends are strings; a parameter value
//! is a float, double, int, 64-bit int, string or true/false, as the node type takes it
//! (`downbeat nodes`). A message is one transaction, committed on its own; a bundle of
//! `/graph` messages is one transaction, committed once at its end, or, when any of its
//! messages is refused, not at all (a bundle mixes no `/graph` and `/node` messages, and its
//! timetag does not delay edits: the engine takes them at its next block). The nodes an edit
//! adds can be played with `/node/...` as soon as the edit is committed.
//!
//! A message on its own applies at the start of the next block. A bundle applies every
//! message it holds at one frame: the frame its NTP timetag stands for on the engine's
//! timeline, mapped through the wall clock ([`Controller::frame_at`]); the timetag
//! "immediately" (`0.000...1`) is the next block. A timetag already past applies at the
//! next block (the schedule counts it as late).
//!
//! A packet that is not OSC, an address outside the table above, a wrong number or type of
//! arguments, a refusal from the controller (unknown node, parameter not live, value
//! out of range, full queue), or a graph edit refused (unknown node type, bad parameter,
//! unknown node, a cycle...) is a [`Rejection`]: it changes nothing (a bundle is checked
//! whole before any of it is sent) and the server goes on with the next packet.
//!
//! ```
//! use downbeat::control::osc::{OscHandler, Rejection};
//! use downbeat::{project::Project, Engine};
//!
//! let p = Project::parse(
//!     "edges = [\"s -> g -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.g]\ntype = \"gain\"\n\
//!      [nodes.out]\ntype = \"output\"\n",
//!     "x.toml",
//! ).unwrap();
//! let mut engine = Engine::new(p.build().unwrap());
//! let mut osc = OscHandler::new(engine.controller(64));
//! let packet = rosc::encoder::encode(&rosc::OscPacket::Message(rosc::OscMessage {
//!     addr: "/node/g/gain".into(),
//!     args: vec![rosc::OscType::Float(0.5)],
//! })).unwrap();
//! assert_eq!(osc.handle(&packet), Ok(1));
//! assert!(matches!(osc.handle(b"not osc"), Err(Rejection::Malformed(_))));
//! ```

use std::borrow::Cow;
use std::fmt;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::{all_node_types, lookup_node_type};
use downbeat_graph::time::{checked_beat, TransportCommand};
use downbeat_graph::{
    Change, ControlError, EditError, Node, NodeConfig, NodeKey, NoteEvent, ParamError, ParamId,
    ParamValue, Ramp, Shape, MAX_NOTE,
};
use downbeat_nodes::Capture;
use rosc::{OscBundle, OscMessage, OscPacket, OscTime, OscType};

use super::{Controller, When};
use crate::device::{RequestError, TransportRequests};
use crate::edit::{CommitError, LiveEditor};
use crate::project::diff::commit_waiting;

/// Seconds from the NTP epoch (1900) to the Unix epoch (1970), RFC 5905.
const NTP_UNIX_OFFSET: i128 = 2_208_988_800;

/// How often the server thread looks at its stop flag while no packet comes.
const STOP_POLL: Duration = Duration::from_millis(20);

/// Why a packet changed nothing.
#[derive(Clone, Debug, PartialEq)]
pub enum Rejection {
    /// The bytes are not an OSC packet.
    Malformed(String),
    /// The address is not one of `/node/<node>/<param>[/step|/ramp|/exp]`,
    /// `/node/<node>/(note_on|note_off|all_notes_off)` or
    /// `/graph/(add|remove|connect|disconnect)`.
    UnknownAddress(String),
    /// The message has the wrong number or type of arguments.
    BadArguments {
        /// The message's address.
        address: String,
        /// What is wrong and what was expected.
        reason: String,
    },
    /// The controller refused the change (unknown node or parameter, not live, out of range,
    /// full queue), with the project file's wording.
    Control {
        /// The message's address.
        address: String,
        /// Why.
        error: ControlError,
    },
    /// A `/graph/...` edit was refused; the running graph is unchanged.
    Graph {
        /// The message's address (for a refused commit of a bundle, the bundle's).
        address: String,
        /// Why.
        error: GraphRefusal,
    },
    /// A `/transport/...` message the outside transport the song follows cannot take (see
    /// [`OscHandler::with_transport_requests`]).
    Transport {
        /// The message's address.
        address: String,
        /// Why.
        error: RequestError,
    },
}

/// Why a `/graph/...` message (or a bundle of them) changed nothing.
#[derive(Clone, Debug, PartialEq)]
pub enum GraphRefusal {
    /// The handler has no [`LiveEditor`]: it was not made
    /// [`with_editor`](OscHandler::with_editor).
    NotEditable,
    /// No node type has this name.
    UnknownType {
        /// The name given.
        name: String,
        /// The types there are.
        known: Vec<String>,
    },
    /// An `input` node, in a run without a device input to read (see
    /// [`OscHandler::with_capture`]).
    NoInput {
        /// The node to add.
        node: String,
    },
    /// The node type refused a parameter.
    Param {
        /// The node to add.
        node: String,
        /// Why.
        error: ParamError,
    },
    /// The editor refused the edit, or the commit (an unknown node, an edge there already,
    /// a cycle, channel counts that differ across an edge...).
    Edit(EditError),
    /// The engine did not take the edits committed before (it does not run).
    Busy,
    /// A bundle holds both `/graph` and `/node` messages.
    Mixed,
}

impl fmt::Display for GraphRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphRefusal::NotEditable => {
                f.write_str("this server does not edit the graph (it has no live editor)")
            }
            GraphRefusal::UnknownType { name, known } => write!(
                f,
                "unknown node type \"{name}\"; valid types are {}",
                known
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            GraphRefusal::NoInput { node } => write!(
                f,
                "node `{node}`: this run has no device input for an `input` node to read \
                 (start it with one in the project)"
            ),
            GraphRefusal::Param { node, error } => write!(f, "node `{node}`: {error}"),
            GraphRefusal::Edit(e) => e.fmt(f),
            GraphRefusal::Busy => CommitError::Busy.fmt(f),
            GraphRefusal::Mixed => f.write_str(
                "a bundle holds /graph and /node messages; send the edit and the changes in \
                 bundles of their own",
            ),
        }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::Malformed(why) => write!(f, "not an OSC packet: {why}"),
            Rejection::UnknownAddress(a) => write!(
                f,
                "unknown address `{a}`; expected /node/<node>/<param> with an optional \
                 /step, /ramp or /exp, /node/<node>/note_on, note_off or all_notes_off, or \
                 /graph/add, remove, connect or disconnect"
            ),
            Rejection::Graph { address, error } => write!(f, "`{address}`: {error}"),
            Rejection::Transport { address, error } => write!(f, "`{address}`: {error}"),
            Rejection::BadArguments { address, reason } => write!(f, "`{address}`: {reason}"),
            Rejection::Control { address, error } => {
                write!(f, "`{address}`: {}", error.message())?;
                if let Some(help) = error.help() {
                    write!(f, " ({help})")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for Rejection {}

/// Turns OSC packets into controller events and graph edits; [`serve`] runs one on a UDP
/// socket.
#[derive(Debug)]
pub struct OscHandler {
    controller: Controller,
    graph: Option<GraphEdits>,
    /// Where play, stop and locate go when the song follows an outside transport.
    requests: Option<TransportRequests>,
}

/// What `/graph/...` messages need: the editor of the running graph, the format nodes are
/// built for, and the device's input for `input` nodes.
#[derive(Debug)]
struct GraphEdits {
    editor: Arc<Mutex<LiveEditor>>,
    config: NodeConfig,
    capture: Option<Capture>,
}

/// One checked `/graph/...` message.
enum GraphEdit {
    /// A node to build: its name, type and parameters.
    Add(String, String, Vec<(String, ParamValue)>),
    /// A node built, to add.
    Built(String, Box<dyn Node>),
    Remove(String),
    Connect(String, String, Option<f64>),
    Disconnect(String, String),
}

/// One checked message, ready to send.
struct Planned {
    when: When,
    what: Action,
    address: String,
}

/// What a checked message does.
enum Action {
    Param(ParamId, Change),
    Note(NodeKey, NoteEvent),
    Transport(TransportCommand),
    /// Play, stop or locate for the outside transport the song follows.
    Request(TransportCommand),
}

impl OscHandler {
    /// A handler sending through `controller`. It refuses `/graph/...` messages until
    /// given an editor ([`with_editor`](OscHandler::with_editor)).
    pub fn new(controller: Controller) -> Self {
        Self {
            controller,
            graph: None,
            requests: None,
        }
    }

    /// Sends `/transport/play`, `/stop` and `/locate` to `requests` instead of the song's
    /// transport: for a song that follows an outside transport (JACK's, see
    /// [`TransportSync`](crate::device::TransportSync)), whose device sends them on to it.
    /// Those with a beat or a bundle's timetag, `/transport/loop` and `/transport/unloop`
    /// are refused ([`Rejection::Transport`]); `/transport/tempo` goes to the song's
    /// transport as before.
    ///
    /// ```
    /// use downbeat::control::osc::{OscHandler, Rejection};
    /// use downbeat::device::TransportRequests;
    /// use downbeat::{project::Project, Engine};
    /// use downbeat_graph::time::TransportCommand;
    /// use rosc::{OscMessage, OscPacket, OscType};
    ///
    /// let p = Project::parse(
    ///     "edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n",
    ///     "x.toml",
    /// ).unwrap();
    /// let mut engine = Engine::new(p.build().unwrap());
    /// let requests = TransportRequests::new();
    /// let mut osc = OscHandler::new(engine.controller(64)).with_transport_requests(requests.clone());
    /// let message = |addr: &str, args: Vec<OscType>| {
    ///     rosc::encoder::encode(&OscPacket::Message(OscMessage { addr: addr.into(), args }))
    ///         .unwrap()
    /// };
    /// assert_eq!(osc.handle(&message("/transport/stop", vec![])), Ok(1));
    /// assert_eq!(osc.handle(&message("/transport/locate", vec![OscType::Float(8.0)])), Ok(1));
    /// let taken = requests.take();
    /// assert_eq!(taken.run, Some(TransportCommand::Stop));
    /// assert_eq!(taken.locate, Some(TransportCommand::LocateBeat(8.0)));
    /// assert!(matches!(
    ///     osc.handle(&message("/next_bar/transport/play", vec![])),
    ///     Err(Rejection::Transport { .. })
    /// ));
    /// ```
    pub fn with_transport_requests(mut self, requests: TransportRequests) -> Self {
        self.requests = Some(requests);
        self
    }

    /// Takes `/graph/...` messages too: edits through `editor` (shared with whatever else
    /// edits the same graph, behind a mutex held for one packet), nodes built for `config`
    /// (the engine's sample rate and block size). Before each packet the controller takes
    /// the editor's latest table ([`Controller::set_table`]), so `/node/...` reaches the
    /// nodes an edit added, whoever made it.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use downbeat::control::osc::OscHandler;
    /// use downbeat::{project::Project, Engine};
    /// use downbeat_graph::NodeConfig;
    /// use rosc::{OscMessage, OscPacket, OscType};
    ///
    /// let p = Project::parse(
    ///     "edges = [\"m -> out\"]\n[nodes.m]\ntype = \"mix\"\n[nodes.out]\ntype = \"output\"\n",
    ///     "x.toml",
    /// ).unwrap();
    /// let (editor, schedule) = p.editor().unwrap();
    /// let mut engine = Engine::new(schedule);
    /// let live = Arc::new(Mutex::new(engine.live_editor(editor)));
    /// let config = NodeConfig { sample_rate: 48_000, max_block: 256 };
    /// let mut osc = OscHandler::new(engine.controller(64)).with_editor(live, config);
    /// let message = |addr: &str, args: &[&str]| {
    ///     let args = args.iter().map(|a| OscType::String(a.to_string())).collect();
    ///     rosc::encoder::encode(&OscPacket::Message(OscMessage { addr: addr.into(), args }))
    ///         .unwrap()
    /// };
    /// assert_eq!(osc.handle(&message("/graph/add", &["s", "sine"])), Ok(1));
    /// assert_eq!(osc.handle(&message("/graph/connect", &["s", "m"])), Ok(1));
    /// assert!(osc.handle(&message("/graph/add", &["t", "nosuch"])).is_err());
    /// let mut block = vec![0.0; 256 * 2];
    /// engine.process(&mut block);
    /// assert_eq!(engine.swaps(), 2);
    /// assert!(block.iter().any(|&x| x != 0.0));
    /// ```
    pub fn with_editor(mut self, editor: Arc<Mutex<LiveEditor>>, config: NodeConfig) -> Self {
        self.graph = Some(GraphEdits {
            editor,
            config,
            capture: None,
        });
        self
    }

    /// `input` nodes added with `/graph/add` read `capture` (the one the engine's device
    /// writes); without it they are refused. Only with an editor
    /// ([`with_editor`](OscHandler::with_editor)).
    pub fn with_capture(mut self, capture: Capture) -> Self {
        if let Some(g) = &mut self.graph {
            g.capture = Some(capture);
        }
        self
    }

    /// The controller it sends through (for its timeline mapping).
    pub fn controller(&self) -> &Controller {
        &self.controller
    }

    /// Applies one UDP datagram: a message or a bundle. Returns how many messages were sent.
    ///
    /// # Errors
    /// A [`Rejection`]; nothing of the packet was sent, except when the controller's queue
    /// fills in the middle of a bundle (the messages before were sent, the error says so).
    pub fn handle(&mut self, datagram: &[u8]) -> Result<usize, Rejection> {
        let (_, packet) =
            rosc::decoder::decode_udp(datagram).map_err(|e| Rejection::Malformed(e.to_string()))?;
        if let Some(g) = &self.graph {
            // Nodes another editor (a reload, say) added are addressable here too.
            let table = lock(&g.editor).table();
            self.controller.set_table(table);
        }
        let mut messages = Vec::new();
        flatten(&packet, &mut messages);
        let graph = messages.iter().filter(|m| is_graph(&m.addr)).count();
        if graph > 0 {
            if graph < messages.len() {
                return Err(Rejection::Graph {
                    address: bundle_address(messages.len()),
                    error: GraphRefusal::Mixed,
                });
            }
            return self.edit(&messages);
        }
        let mut planned = Vec::new();
        self.plan(&packet, When::Now, &mut planned)?;
        for (i, p) in planned.iter().enumerate() {
            let sent = match p.what {
                Action::Param(id, change) => self.controller.send(p.when, id, change),
                Action::Note(node, event) => self.controller.send_note_to(p.when, node, event),
                Action::Transport(command) => self.controller.transport(p.when, command),
                Action::Request(command) => {
                    // Checked with the plan: taken.
                    if let Some(r) = &self.requests {
                        r.send(p.when, command)
                            .map_err(|error| Rejection::Transport {
                                address: p.address.clone(),
                                error,
                            })?;
                    }
                    Ok(())
                }
            };
            sent.map_err(|error| Rejection::Control {
                address: if i == 0 {
                    p.address.clone()
                } else {
                    format!(
                        "{} (after {i} of the bundle's messages were sent)",
                        p.address
                    )
                },
                error,
            })?;
        }
        Ok(planned.len())
    }

    /// Applies `/graph` messages as one transaction.
    fn edit(&mut self, messages: &[&OscMessage]) -> Result<usize, Rejection> {
        let Some(g) = &self.graph else {
            return Err(Rejection::Graph {
                address: messages[0].addr.clone(),
                error: GraphRefusal::NotEditable,
            });
        };
        // Checked and built before the lock: a malformed message costs the editor nothing,
        // and a node slow to build (a plugin) holds up no other editor meanwhile.
        let edits = messages
            .iter()
            .map(|m| {
                g.build(graph_edit(m)?).map_err(|error| Rejection::Graph {
                    address: m.addr.clone(),
                    error,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut live = lock(&g.editor);
        for (m, edit) in messages.iter().zip(edits) {
            if let Err(error) = g.stage(&mut live, edit) {
                // The bundle's earlier messages are dropped with it.
                live.discard();
                return Err(Rejection::Graph {
                    address: m.addr.clone(),
                    error,
                });
            }
        }
        let committed = commit_waiting(&mut live).map_err(|e| {
            let error = match e {
                CommitError::Edit(e) => GraphRefusal::Edit(e),
                CommitError::Busy => {
                    live.discard();
                    GraphRefusal::Busy
                }
            };
            Rejection::Graph {
                address: if messages.len() == 1 {
                    messages[0].addr.clone()
                } else {
                    bundle_address(messages.len())
                },
                error,
            }
        });
        committed?;
        self.controller.set_table(live.table());
        Ok(messages.len())
    }

    fn plan(
        &self,
        packet: &OscPacket,
        when: When,
        out: &mut Vec<Planned>,
    ) -> Result<(), Rejection> {
        match packet {
            OscPacket::Message(m) => out.push(self.plan_message(m, when)?),
            OscPacket::Bundle(OscBundle { timetag, content }) => {
                // One frame for the whole bundle, so its messages land together.
                let when = match instant_of(*timetag) {
                    None => When::Now,
                    Some(at) => When::Frame(self.controller.frame_at(at)),
                };
                for p in content {
                    self.plan(p, when, out)?;
                }
            }
        }
        Ok(())
    }

    fn plan_message(&self, m: &OscMessage, when: When) -> Result<Planned, Rejection> {
        let parts: Vec<&str> = m.addr.split('/').collect();
        let unknown = || Rejection::UnknownAddress(m.addr.clone());
        // A musical time in front of any address: `/beat/16/node/...`, `/next_bar/...`.
        let (when, parts) = match parts.as_slice() {
            ["", "beat", beat, rest @ ..] if !rest.is_empty() => {
                let beat = beat
                    .parse::<f64>()
                    .ok()
                    .and_then(|b| checked_beat(b).ok())
                    .ok_or_else(|| Rejection::BadArguments {
                        address: m.addr.clone(),
                        reason: format!("`{beat}` is not a beat (a number from 0 up)"),
                    })?;
                (When::Beat(beat), rest)
            }
            ["", "next_bar", rest @ ..] if !rest.is_empty() => (When::NextBar, rest),
            ["", "next_beat", rest @ ..] if !rest.is_empty() => (When::NextBeat, rest),
            _ => (when, &parts[1..]),
        };
        if let ["transport", verb] = parts {
            let command = match *verb {
                "play" => TransportCommand::Play,
                "stop" => TransportCommand::Stop,
                "unloop" => TransportCommand::Unloop,
                "locate" => TransportCommand::LocateBeat(numbers::<1>(m, "a beat")?[0]),
                "loop" => {
                    let [start, end] = numbers::<2>(m, "the loop's start and end beats")?;
                    TransportCommand::Loop(start, end)
                }
                "tempo" if m.args.len() == 2 => {
                    let [bpm, ramp] = numbers::<2>(m, "a tempo and a ramp in beats")?;
                    TransportCommand::Tempo { bpm, ramp }
                }
                "tempo" => {
                    let [bpm] = numbers::<1>(m, "a tempo, and optionally a ramp in beats")?;
                    TransportCommand::Tempo { bpm, ramp: 0.0 }
                }
                _ => return Err(unknown()),
            };
            if matches!(*verb, "play" | "stop" | "unloop") && !m.args.is_empty() {
                numbers::<0>(m, "no argument")?;
            }
            let what = match &self.requests {
                Some(r) if !matches!(command, TransportCommand::Tempo { .. }) => {
                    r.check(when, command)
                        .map_err(|error| Rejection::Transport {
                            address: m.addr.clone(),
                            error,
                        })?;
                    Action::Request(command)
                }
                _ => Action::Transport(command),
            };
            return Ok(Planned {
                when,
                what,
                address: m.addr.clone(),
            });
        }
        let (node, rest) = match parts {
            ["node", node, rest @ ..] => (Cow::Borrowed(*node), rest),
            // An edge's level is the `gain_db` of the node named after the edge.
            ["edge", from, to, rest @ ..]
                if !from.is_empty() && !to.is_empty() && rest.first() == Some(&"gain_db") =>
            {
                (Cow::Owned(format!("{from} -> {to}")), rest)
            }
            _ => return Err(unknown()),
        };
        let (param, verb) = match rest {
            [param] => (*param, None),
            [param, verb @ ("step" | "ramp" | "exp")] => (*param, Some(*verb)),
            _ => return Err(unknown()),
        };
        let node = node.as_ref();
        if node.is_empty() || param.is_empty() {
            return Err(unknown());
        }
        let control = |error| Rejection::Control {
            address: m.addr.clone(),
            error,
        };
        if verb.is_none() {
            if let Some(event) = note_of(m, param)? {
                let key = self.controller.resolve_instrument(node).map_err(control)?;
                return Ok(Planned {
                    when,
                    what: Action::Note(key, event),
                    address: m.addr.clone(),
                });
            }
        }
        let id = self.controller.resolve(node, param).map_err(control)?;
        let table = self.controller.table();
        let change = match verb {
            None | Some("step") => {
                let [value] = numbers::<1>(m, "a value")?;
                let value = value as f32;
                if verb.is_some() {
                    Change::Step(value)
                } else {
                    Change::Set(value)
                }
            }
            Some(verb) => {
                let [target, seconds] = numbers::<2>(m, "a target and a duration in seconds")?;
                Change::Ramp(Ramp {
                    shape: if verb == "exp" {
                        Shape::Exponential
                    } else {
                        Shape::Linear
                    },
                    from: None,
                    to: target as f32,
                    frames: table.ramp_frames(id, seconds).map_err(control)?,
                })
            }
        };
        table.check(id, &change).map_err(control)?;
        Ok(Planned {
            when,
            what: Action::Param(id, change),
            address: m.addr.clone(),
        })
    }
}

impl GraphEdits {
    /// `edit` with the node it adds built.
    fn build(&self, edit: GraphEdit) -> Result<GraphEdit, GraphRefusal> {
        let GraphEdit::Add(name, kind, params) = edit else {
            return Ok(edit);
        };
        let Some(ty) = lookup_node_type(&kind) else {
            return Err(GraphRefusal::UnknownType {
                name: kind,
                known: all_node_types()
                    .iter()
                    .map(|t| t.name().to_string())
                    .collect(),
            });
        };
        let node = match (&self.capture, kind.as_str()) {
            (None, "input") => return Err(GraphRefusal::NoInput { node: name }),
            (Some(c), _) => c.connect(|| ty.create(params, &self.config)),
            (None, _) => ty.create(params, &self.config),
        };
        let node = node.map_err(|error| GraphRefusal::Param {
            node: name.clone(),
            error,
        })?;
        Ok(GraphEdit::Built(name, node))
    }

    /// Makes one edit in the editor's batch, uncommitted.
    fn stage(&self, live: &mut LiveEditor, edit: GraphEdit) -> Result<(), GraphRefusal> {
        match edit {
            GraphEdit::Add(..) => unreachable!("nodes are built before they are staged"),
            GraphEdit::Built(name, node) => live.add_boxed(name, node),
            GraphEdit::Remove(name) => live.remove(&name),
            GraphEdit::Connect(from, to, None) => live.connect(&from, &to),
            GraphEdit::Connect(from, to, Some(db)) => live.connect_gain(&from, &to, db),
            GraphEdit::Disconnect(from, to) => live.disconnect(&from, &to),
        }
        .map_err(GraphRefusal::Edit)
    }
}

/// The editor, also when a thread panicked holding it: every edit is staged and committed
/// (or discarded) under one lock, so a panic leaves at worst a batch the next commit or
/// discard settles.
fn lock(editor: &Mutex<LiveEditor>) -> MutexGuard<'_, LiveEditor> {
    editor.lock().unwrap_or_else(|e| e.into_inner())
}

fn is_graph(address: &str) -> bool {
    address.starts_with("/graph/")
}

fn bundle_address(messages: usize) -> String {
    format!("a bundle of {messages} messages")
}

/// Every message of `packet`, bundles opened.
fn flatten<'a>(packet: &'a OscPacket, out: &mut Vec<&'a OscMessage>) {
    match packet {
        OscPacket::Message(m) => out.push(m),
        OscPacket::Bundle(b) => {
            for p in &b.content {
                flatten(p, out);
            }
        }
    }
}

/// A `/graph/...` message checked: its address and argument types.
fn graph_edit(m: &OscMessage) -> Result<GraphEdit, Rejection> {
    let bad = |reason: String| Rejection::BadArguments {
        address: m.addr.clone(),
        reason,
    };
    let text = |i: usize, what: &str| match &m.args[i] {
        OscType::String(s) => Ok(s.clone()),
        other => Err(bad(format!(
            "argument {} is {}; expected {what} as a string",
            i + 1,
            type_name(other)
        ))),
    };
    let count = |n: usize, what: &str| {
        if m.args.len() == n {
            Ok(())
        } else {
            Err(bad(format!(
                "{} argument(s) given; expected {what}",
                m.args.len()
            )))
        }
    };
    match m.addr.as_str() {
        "/graph/add" => {
            if m.args.len() < 2 || m.args.len() % 2 != 0 {
                return Err(bad(format!(
                    "{} argument(s) given; expected a name, a node type, then parameter names \
                     each followed by its value",
                    m.args.len()
                )));
            }
            let (name, kind) = (text(0, "the node's name")?, text(1, "the node type")?);
            let mut params = Vec::new();
            for i in (2..m.args.len()).step_by(2) {
                let param = text(i, "a parameter name")?;
                let value = match &m.args[i + 1] {
                    OscType::Float(x) => ParamValue::Float(f64::from(*x)),
                    OscType::Double(x) => ParamValue::Float(*x),
                    OscType::Int(x) => ParamValue::Int(i64::from(*x)),
                    OscType::Long(x) => ParamValue::Int(*x),
                    OscType::String(s) => ParamValue::Text(s.clone()),
                    OscType::Bool(b) => ParamValue::Bool(*b),
                    other => {
                        return Err(bad(format!(
                            "argument {} (the value of `{param}`) is {}; expected a number, a \
                             string or true/false",
                            i + 2,
                            type_name(other)
                        )))
                    }
                };
                params.push((param, value));
            }
            Ok(GraphEdit::Add(name, kind, params))
        }
        "/graph/remove" => {
            count(1, "the node's name")?;
            Ok(GraphEdit::Remove(text(0, "the node's name")?))
        }
        "/graph/connect" if m.args.len() == 3 => {
            let (from, to) = (text(0, "the source")?, text(1, "the destination")?);
            let level = match m.args[2] {
                OscType::Float(x) => f64::from(x),
                OscType::Double(x) => x,
                OscType::Int(x) => f64::from(x),
                OscType::Long(x) => x as f64,
                ref other => {
                    return Err(bad(format!(
                        "argument 3 is {}; expected the edge's level in dB as a number",
                        type_name(other)
                    )))
                }
            };
            Ok(GraphEdit::Connect(from, to, Some(level)))
        }
        "/graph/connect" | "/graph/disconnect" => {
            count(
                2,
                "the edge's ends, from and to (`node` or `node:port`), and for a connect \
                 optionally its level in dB",
            )?;
            let (from, to) = (text(0, "the source")?, text(1, "the destination")?);
            Ok(if m.addr == "/graph/connect" {
                GraphEdit::Connect(from, to, None)
            } else {
                GraphEdit::Disconnect(from, to)
            })
        }
        _ => Err(Rejection::UnknownAddress(m.addr.clone())),
    }
}

/// The note event of a `note_on`, `note_off` or `all_notes_off` message (`None` for any
/// other verb), with its arguments checked.
fn note_of(m: &OscMessage, verb: &str) -> Result<Option<NoteEvent>, Rejection> {
    let bad = |reason: String| Rejection::BadArguments {
        address: m.addr.clone(),
        reason,
    };
    let note_number = |x: f64| {
        if (0.0..=f64::from(MAX_NOTE)).contains(&x) {
            Ok(x as f32)
        } else {
            Err(bad(format!(
                "note {x} is outside 0 to 127 (MIDI note numbers; 69 is A4)"
            )))
        }
    };
    let event = match verb {
        "note_on" => {
            let [note, velocity] = numbers::<2>(m, "a note and a velocity")?;
            if !(0.0..=1.0).contains(&velocity) {
                return Err(bad(format!(
                    "velocity {velocity} is outside 0 to 1 (0 is a note off)"
                )));
            }
            NoteEvent::On {
                channel: 0,
                note: note_number(note)?,
                velocity: velocity as f32,
            }
        }
        "note_off" => {
            let [note] = numbers::<1>(m, "a note")?;
            NoteEvent::Off {
                channel: 0,
                note: note_number(note)?,
            }
        }
        "all_notes_off" => {
            numbers::<0>(m, "no argument")?;
            NoteEvent::AllNotesOff { channel: None }
        }
        _ => return Ok(None),
    };
    Ok(Some(event))
}

/// The message's `N` arguments as numbers.
fn numbers<const N: usize>(m: &OscMessage, what: &str) -> Result<[f64; N], Rejection> {
    let bad = |reason: String| Rejection::BadArguments {
        address: m.addr.clone(),
        reason,
    };
    if m.args.len() != N {
        return Err(bad(format!(
            "{} argument(s) given; expected {what} ({N} number(s))",
            m.args.len()
        )));
    }
    let mut out = [0.0; N];
    for (i, (arg, slot)) in m.args.iter().zip(&mut out).enumerate() {
        *slot = match arg {
            OscType::Float(x) => f64::from(*x),
            OscType::Double(x) => *x,
            OscType::Int(x) => f64::from(*x),
            OscType::Long(x) => *x as f64,
            other => {
                return Err(bad(format!(
                    "argument {} is {}; expected a number (float, double or int)",
                    i + 1,
                    type_name(other)
                )))
            }
        };
    }
    Ok(out)
}

fn type_name(arg: &OscType) -> &'static str {
    match arg {
        OscType::String(_) => "a string",
        OscType::Blob(_) => "a blob",
        OscType::Bool(_) => "a boolean",
        OscType::Time(_) => "a timetag",
        OscType::Char(_) => "a character",
        OscType::Color(_) => "a color",
        OscType::Midi(_) => "a MIDI message",
        OscType::Array(_) => "an array",
        OscType::Nil => "nil",
        OscType::Inf => "infinitum",
        _ => "a number",
    }
}

/// The instant an NTP timetag stands for, through the system clock; `None` for
/// "immediately".
fn instant_of(t: OscTime) -> Option<Instant> {
    if (t.seconds, t.fractional) == (0, 1) {
        return None;
    }
    let at_ns = (i128::from(t.seconds) - NTP_UNIX_OFFSET) * 1_000_000_000
        + ((i128::from(t.fractional) * 1_000_000_000) >> 32);
    let (now, sys) = (Instant::now(), SystemTime::now());
    let sys_ns = match sys.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    };
    let ahead = at_ns - sys_ns;
    let span = Duration::from_nanos(ahead.unsigned_abs().min(u128::from(u64::MAX)) as u64);
    Some(if ahead >= 0 {
        now.checked_add(span).unwrap_or(now)
    } else {
        now.checked_sub(span).unwrap_or(now)
    })
}

/// The NTP timetag for `at` (for senders of bundles, such as tests).
pub fn timetag(at: SystemTime) -> OscTime {
    let d = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = (i128::from(d.as_secs() as i64) + NTP_UNIX_OFFSET) as u32;
    let fractional = ((u64::from(d.subsec_nanos()) << 32) / 1_000_000_000) as u32;
    OscTime {
        seconds,
        fractional,
    }
}

/// The type an argument of an [`OscAddress`] takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OscArgType {
    /// A number: float (`f`), double (`d`), int (`i`) or 64-bit int (`h`).
    Number,
    /// A string (`s`).
    String,
    /// A parameter value, as the node type takes it: a number, a string or true/false (`T`,
    /// `F`).
    Value,
}

impl OscArgType {
    /// The name the reference gives the type.
    ///
    /// ```
    /// use downbeat::control::osc::OscArgType;
    /// assert_eq!(OscArgType::Number.name(), "number");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            OscArgType::Number => "number",
            OscArgType::String => "string",
            OscArgType::Value => "value",
        }
    }
}

/// How many times an argument of an [`OscAddress`] comes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OscArgCount {
    /// Exactly once.
    One,
    /// Once or not at all (the last arguments only).
    Optional,
    /// Any number of times, in turn with the other repeated arguments (the last arguments
    /// only): `/graph/add`'s parameter names and values.
    Repeated,
}

/// One argument of an [`OscAddress`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OscArg {
    /// What it is (`value`, `target`, `seconds`...).
    pub name: &'static str,
    /// Its type.
    pub kind: OscArgType,
    /// How many times it comes.
    pub count: OscArgCount,
}

/// One argument of an [`OscExample`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OscExampleArg {
    /// A float (`f`).
    Float(f32),
    /// An int (`i`).
    Int(i32),
    /// A string (`s`).
    String(&'static str),
}

/// A message an [`OscAddress`] takes, written for [`EXAMPLE_PROJECT`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OscExample {
    /// The address.
    pub address: &'static str,
    /// The arguments.
    pub args: &'static [OscExampleArg],
}

impl OscExample {
    /// The message.
    ///
    /// ```
    /// use downbeat::control::osc::{OscExample, OscExampleArg};
    /// use rosc::OscType;
    ///
    /// let example = OscExample { address: "/node/lowpass/freq", args: &[OscExampleArg::Float(800.0)] };
    /// let message = example.message();
    /// assert_eq!(message.addr, "/node/lowpass/freq");
    /// assert_eq!(message.args, vec![OscType::Float(800.0)]);
    /// ```
    pub fn message(&self) -> OscMessage {
        OscMessage {
            addr: self.address.to_string(),
            args: self
                .args
                .iter()
                .map(|a| match *a {
                    OscExampleArg::Float(x) => OscType::Float(x),
                    OscExampleArg::Int(x) => OscType::Int(x),
                    OscExampleArg::String(s) => OscType::String(s.to_string()),
                })
                .collect(),
        }
    }

    /// The message as liblo's `oscsend` takes it after the host and port: the address, the
    /// type tags and the arguments.
    ///
    /// ```
    /// use downbeat::control::osc::{OscExample, OscExampleArg};
    ///
    /// let example = OscExample {
    ///     address: "/node/keys/note_on",
    ///     args: &[OscExampleArg::Float(69.0), OscExampleArg::Float(0.8)],
    /// };
    /// assert_eq!(example.oscsend(), "/node/keys/note_on ff 69 0.8");
    /// ```
    pub fn oscsend(&self) -> String {
        let mut tags = String::new();
        let mut values = String::new();
        for a in self.args {
            let (tag, value) = match *a {
                OscExampleArg::Float(x) => ('f', x.to_string()),
                OscExampleArg::Int(x) => ('i', x.to_string()),
                OscExampleArg::String(s) => ('s', s.to_string()),
            };
            tags.push(tag);
            values.push(' ');
            values.push_str(&value);
        }
        if tags.is_empty() {
            self.address.to_string()
        } else {
            format!("{} {tags}{values}", self.address)
        }
    }
}

/// An address the handler serves: [`ADDRESSES`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OscAddress {
    /// The address, with the parts the sender chooses in angle brackets (`<node>`).
    pub pattern: &'static str,
    /// Its arguments, in order.
    pub args: &'static [OscArg],
    /// What it does.
    pub meaning: &'static str,
    /// A message it takes, written for [`EXAMPLE_PROJECT`].
    pub example: OscExample,
}

/// A way to time a message: a prefix in front of an address, or a bundle ([`TIMING`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OscTiming {
    /// The form.
    pub pattern: &'static str,
    /// When the messages take effect.
    pub meaning: &'static str,
    /// A message of this form, written for [`EXAMPLE_PROJECT`]; `None` for a bundle.
    pub example: Option<OscExample>,
}

/// The project the examples of [`ADDRESSES`] and [`TIMING`] are written for: an instrument
/// `keys` through a filter `lowpass` into a mix, and also straight into the mix with a level
/// (the edge `keys -> mix`, at -12 dB).
pub const EXAMPLE_PROJECT: &str = r#"edges = ["keys -> lowpass -> mix", "keys -> mix @ -12 dB", "mix -> out"]

[nodes.keys]
type = "synth"

[nodes.lowpass]
type = "biquad"
mode = "lowpass"

[nodes.mix]
type = "mix"

[nodes.out]
type = "output"
"#;

const fn arg(name: &'static str, kind: OscArgType) -> OscArg {
    OscArg {
        name,
        kind,
        count: OscArgCount::One,
    }
}

const fn optional(name: &'static str, kind: OscArgType) -> OscArg {
    OscArg {
        name,
        kind,
        count: OscArgCount::Optional,
    }
}

const fn repeated(name: &'static str, kind: OscArgType) -> OscArg {
    OscArg {
        name,
        kind,
        count: OscArgCount::Repeated,
    }
}

const fn example(address: &'static str, args: &'static [OscExampleArg]) -> OscExample {
    OscExample { address, args }
}

/// Every address [`OscHandler::handle`] takes, with its arguments; `downbeat reference osc`
/// renders it ([`reference_markdown`]) for the guide. A test sends each example to a
/// handler, and each with an argument of the wrong type, which must be refused as
/// [`Rejection::BadArguments`].
///
/// ```
/// use downbeat::control::osc::ADDRESSES;
/// assert!(ADDRESSES.iter().any(|a| a.pattern == "/transport/play"));
/// ```
pub const ADDRESSES: &[OscAddress] = {
    use OscArgType::{Number, String as Text, Value};
    use OscExampleArg::{Float as F, String as S};
    const VALUE: &[OscArg] = &[arg("value", Number)];
    const RAMP: &[OscArg] = &[arg("target", Number), arg("seconds", Number)];
    &[
        OscAddress {
            pattern: "/node/<node>/<param>",
            args: VALUE,
            meaning: "Moves a live parameter to the value, smoothed.",
            example: example("/node/lowpass/freq", &[F(800.0)]),
        },
        OscAddress {
            pattern: "/node/<node>/<param>/step",
            args: VALUE,
            meaning: "Jumps to the value, unsmoothed.",
            example: example("/node/lowpass/freq/step", &[F(800.0)]),
        },
        OscAddress {
            pattern: "/node/<node>/<param>/ramp",
            args: RAMP,
            meaning: "A linear ramp from the value reached to the target, over that many seconds.",
            example: example("/node/lowpass/freq/ramp", &[F(200.0), F(1.5)]),
        },
        OscAddress {
            pattern: "/node/<node>/<param>/exp",
            args: RAMP,
            meaning: "An exponential ramp from the value reached to the target, over that many \
                  seconds (start and target of one sign, neither 0).",
            example: example("/node/lowpass/freq/exp", &[F(200.0), F(1.5)]),
        },
        OscAddress {
            pattern: "/node/<node>/note_on",
            args: &[arg("note", Number), arg("velocity", Number)],
            meaning: "Starts a note on a node that plays notes (`synth`, `karplus`, `strings`, \
                  ...), on MIDI channel 1: note 0 to 127, where fractions are microtones (69 \
                  is A4, 440 Hz), velocity 0 to 1, where 0 is a note off.",
            example: example("/node/keys/note_on", &[F(69.0), F(0.8)]),
        },
        OscAddress {
            pattern: "/node/<node>/note_off",
            args: &[arg("note", Number)],
            meaning: "Releases the note.",
            example: example("/node/keys/note_off", &[F(69.0)]),
        },
        OscAddress {
            pattern: "/node/<node>/all_notes_off",
            args: &[],
            meaning: "Releases every note of the node.",
            example: example("/node/keys/all_notes_off", &[]),
        },
        OscAddress {
            pattern: "/edge/<from>/<to>/gain_db",
            args: VALUE,
            meaning: "Moves the level of the edge `from -> to` in dB (-144 to 24), smoothed. The \
                  edge must have been made with a level (`\"a -> b @ 0 dB\"` in a project, a \
                  level in `/graph/connect`).",
            example: example("/edge/keys/mix/gain_db", &[F(-6.0)]),
        },
        OscAddress {
            pattern: "/edge/<from>/<to>/gain_db/step",
            args: VALUE,
            meaning: "Jumps to the level, unsmoothed.",
            example: example("/edge/keys/mix/gain_db/step", &[F(-6.0)]),
        },
        OscAddress {
            pattern: "/edge/<from>/<to>/gain_db/ramp",
            args: RAMP,
            meaning: "A linear ramp of the level, in dB.",
            example: example("/edge/keys/mix/gain_db/ramp", &[F(-24.0), F(2.0)]),
        },
        OscAddress {
            pattern: "/edge/<from>/<to>/gain_db/exp",
            args: RAMP,
            meaning: "An exponential ramp of the level, in dB.",
            example: example("/edge/keys/mix/gain_db/exp", &[F(-24.0), F(2.0)]),
        },
        OscAddress {
            pattern: "/graph/add",
            args: &[
                arg("name", Text),
                arg("type", Text),
                repeated("param", Text),
                repeated("value", Value),
            ],
            meaning: "Adds a node of that type (see `downbeat nodes`) with those parameters, each \
                  name followed by its value; no edges yet.",
            example: example("/graph/add", &[S("tone"), S("sine"), S("freq"), F(440.0)]),
        },
        OscAddress {
            pattern: "/graph/remove",
            args: &[arg("name", Text)],
            meaning: "Removes a node and its edges.",
            example: example("/graph/remove", &[S("lowpass")]),
        },
        OscAddress {
            pattern: "/graph/connect",
            args: &[
                arg("from", Text),
                arg("to", Text),
                optional("level", Number),
            ],
            meaning: "Adds an edge (`node` or `node:port` at each end), with that level in dB (a \
                  send, which `/edge/...` then moves) when one is given.",
            example: example("/graph/connect", &[S("lowpass"), S("out"), F(-6.0)]),
        },
        OscAddress {
            pattern: "/graph/disconnect",
            args: &[arg("from", Text), arg("to", Text)],
            meaning: "Removes an edge.",
            example: example("/graph/disconnect", &[S("keys"), S("lowpass")]),
        },
        OscAddress {
            pattern: "/transport/play",
            args: &[],
            meaning: "Plays the song from where it is.",
            example: example("/transport/play", &[]),
        },
        OscAddress {
            pattern: "/transport/stop",
            args: &[],
            meaning: "Stops the song; the position stays.",
            example: example("/transport/stop", &[]),
        },
        OscAddress {
            pattern: "/transport/locate",
            args: &[arg("beat", Number)],
            meaning: "Goes to that quarter-note beat (counted from 0).",
            example: example("/transport/locate", &[F(16.0)]),
        },
        OscAddress {
            pattern: "/transport/loop",
            args: &[arg("start", Number), arg("end", Number)],
            meaning: "Loops the song from start to end, in beats.",
            example: example("/transport/loop", &[F(0.0), F(16.0)]),
        },
        OscAddress {
            pattern: "/transport/unloop",
            args: &[],
            meaning: "Stops looping.",
            example: example("/transport/unloop", &[]),
        },
        OscAddress {
            pattern: "/transport/tempo",
            args: &[arg("bpm", Number), optional("ramp", Number)],
            meaning: "From where the song is, the tempo goes to bpm (over the ramp, in beats) and \
                  stays.",
            example: example("/transport/tempo", &[F(140.0), F(8.0)]),
        },
    ]
};

/// Every way to time a message: prefixes in front of an address of [`ADDRESSES`] but
/// `/graph/...`, and bundles. A test sends each example to a handler.
///
/// ```
/// use downbeat::control::osc::TIMING;
/// assert!(TIMING.iter().any(|t| t.pattern == "/next_bar/<address>"));
/// ```
pub const TIMING: &[OscTiming] = {
    use OscExampleArg::Float as F;
    &[
        OscTiming {
            pattern: "<address>",
            meaning: "A message on its own takes effect at the start of the next block.",
            example: Some(example("/node/lowpass/freq", &[F(800.0)])),
        },
        OscTiming {
            pattern: "/beat/<beat>/<address>",
            meaning: "When the playing song reaches that quarter-note beat (a number from 0 up), \
                  on the exact frame of the beat.",
            example: Some(example("/beat/16/node/keys/note_on", &[F(60.0), F(0.8)])),
        },
        OscTiming {
            pattern: "/next_beat/<address>",
            meaning: "On the next beat of the song's time signature.",
            example: Some(example("/next_beat/node/lowpass/freq/step", &[F(400.0)])),
        },
        OscTiming {
            pattern: "/next_bar/<address>",
            meaning: "On the song's next bar line.",
            example: Some(example("/next_bar/transport/play", &[])),
        },
        OscTiming {
            pattern: "#bundle",
            meaning: "Every message of the bundle at one frame: the frame its NTP timetag stands \
                  for on the engine's timeline, mapped through the wall clock; the timetag \
                  \"immediately\" (`0.000...1`) and a timetag already past are the next block. \
                  A bundle is checked whole before any of it is sent. Its timetag does not \
                  delay `/graph/...` edits; a bundle of them is one edit, made whole or not at \
                  all, and holds no other messages.",
            example: None,
        },
    ]
};

/// The reference of [`ADDRESSES`] and [`TIMING`] as markdown (a chapter's body, headed
/// `##`), as `downbeat reference osc` prints it.
///
/// ```
/// let md = downbeat::control::osc::reference_markdown();
/// assert!(md.contains("| `/transport/play` |"));
/// ```
pub fn reference_markdown() -> String {
    let mut s = String::new();
    s.push_str(
        "`downbeat run PROJECT --osc ADDR` serves Open Sound Control on the UDP address \
         `ADDR` (e.g. `127.0.0.1:9000`). Argument types: a *number* is a float (`f`), a \
         double (`d`), an int (`i`) or a 64-bit int (`h`); a *string* is `s`; a *value* is a \
         number, a string or true/false (`T`, `F`), as the node type takes it. A message \
         with an address not below, a wrong number or type of arguments, or one the engine \
         refuses (an unknown node, a parameter that is not live, a value out of range, a \
         graph edit that would make a cycle...) changes nothing; `downbeat run` logs it on \
         stderr and counts it (`osc_rejected`).\n\n\
         The examples are what liblo's `oscsend` takes after the host and port (`oscsend \
         127.0.0.1 9000 /node/lowpass/freq f 800`), written for this project:\n\n",
    );
    s.push_str("```toml\n");
    s.push_str(EXAMPLE_PROJECT);
    s.push_str("```\n\n## Addresses\n\n");
    s.push_str("| address | arguments | meaning | example |\n|---|---|---|---|\n");
    for a in ADDRESSES {
        let args = if a.args.is_empty() {
            "none".to_string()
        } else {
            a.args
                .iter()
                .map(|x| {
                    let count = match x.count {
                        OscArgCount::One => "",
                        OscArgCount::Optional => ", optional",
                        OscArgCount::Repeated => ", repeated",
                    };
                    format!("`{}` ({}{count})", x.name, x.kind.name())
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        s.push_str(&format!(
            "| `{}` | {args} | {} | `{}` |\n",
            a.pattern,
            a.meaning,
            a.example.oscsend()
        ));
    }
    s.push_str(
        "\n## Timing\n\n\
         A prefix goes in front of any address above but `/graph/...`, and takes the \
         arguments of that address.\n\n\
         | form | takes effect | example |\n|---|---|---|\n",
    );
    for t in TIMING {
        let example = t.example.map_or_else(
            || "(sent with `rosc`; `oscsend` sends no bundles)".to_string(),
            |e| format!("`{}`", e.oscsend()),
        );
        s.push_str(&format!(
            "| `{}` | {} | {example} |\n",
            t.pattern, t.meaning
        ));
    }
    s
}

/// What a server did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OscCounts {
    /// Messages sent to the engine.
    pub applied: u64,
    /// Packets refused (each logged with its reason).
    pub rejected: u64,
}

/// A running OSC server: a thread reading a UDP socket. Stop it with [`stop`](Self::stop).
#[derive(Debug)]
pub struct OscServer {
    local: SocketAddr,
    stop: Arc<AtomicBool>,
    applied: Arc<AtomicU64>,
    rejected: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

/// Serves OSC on `addr` (e.g. `127.0.0.1:9000`; port 0 picks a free one, see
/// [`OscServer::local_addr`]) on a thread of its own, sending through `controller`.
/// `on_reject` is called on that thread with the sender and the reason of every refused
/// packet; the server goes on.
///
/// # Errors
/// The socket cannot be bound.
pub fn serve(
    addr: impl ToSocketAddrs,
    controller: Controller,
    on_reject: impl FnMut(SocketAddr, &Rejection) + Send + 'static,
) -> io::Result<OscServer> {
    serve_handler(addr, OscHandler::new(controller), on_reject)
}

/// The server thread's `SCHED_FIFO` priority where the system grants one: below the
/// recorder's writer (20), the pool's workers (70) and the audio thread (80), above every
/// ordinary thread. A server at normal priority fell behind while builds held both cores of
/// a 2-core machine, and its socket's buffer overflowed (94 of 3.6 million messages lost in
/// an hour's soak); it sleeps in `recv` whenever no packet waits, so it takes little from
/// anyone.
const SERVER_PRIORITY: i32 = 15;

/// [`serve`] with a handler made beforehand: one that edits the graph too
/// ([`OscHandler::with_editor`]).
///
/// # Errors
/// The socket cannot be bound.
pub fn serve_handler(
    addr: impl ToSocketAddrs,
    mut handler: OscHandler,
    mut on_reject: impl FnMut(SocketAddr, &Rejection) + Send + 'static,
) -> io::Result<OscServer> {
    let socket = UdpSocket::bind(addr)?;
    socket.set_read_timeout(Some(STOP_POLL))?;
    let local = socket.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let applied = Arc::new(AtomicU64::new(0));
    let rejected = Arc::new(AtomicU64::new(0));
    let (stopping, sent, refused) = (
        Arc::clone(&stop),
        Arc::clone(&applied),
        Arc::clone(&rejected),
    );
    let thread = std::thread::Builder::new()
        .name("downbeat-osc".into())
        .spawn(move || {
            // Refused without the privilege: the server then competes as any thread.
            let _ = downbeat_rt::pool::set_current_thread_realtime(SERVER_PRIORITY);
            // The largest UDP payload: a datagram is never cut short.
            let mut buf = vec![0u8; 65_536];
            // Packets that arrived before a stop are still handled.
            loop {
                match socket.recv_from(&mut buf) {
                    Ok((len, from)) => match handler.handle(&buf[..len]) {
                        Ok(n) => {
                            sent.fetch_add(n as u64, Ordering::Relaxed);
                        }
                        Err(why) => {
                            refused.fetch_add(1, Ordering::Relaxed);
                            on_reject(from, &why);
                        }
                    },
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                        ) =>
                    {
                        if stopping.load(Ordering::Acquire) {
                            break;
                        }
                    }
                    // An ICMP error from an earlier send and the like: not a reason to stop.
                    Err(_) => {}
                }
            }
        })?;
    Ok(OscServer {
        local,
        stop,
        applied,
        rejected,
        thread: Some(thread),
    })
}

impl OscServer {
    /// The address the socket is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// What the server did so far.
    pub fn counts(&self) -> OscCounts {
        OscCounts {
            applied: self.applied.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
        }
    }

    /// Stops the server once no packet is waiting, and returns what it did.
    pub fn stop(mut self) -> OscCounts {
        self.finish();
        self.counts()
    }

    fn finish(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for OscServer {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::Project;
    use crate::Engine;

    fn packet(addr: &str, args: Vec<OscType>) -> Vec<u8> {
        rosc::encoder::encode(&OscPacket::Message(OscMessage {
            addr: addr.into(),
            args,
        }))
        .unwrap()
    }

    fn text(s: &str) -> OscType {
        OscType::String(s.into())
    }

    /// A mono mix into the output, silent, edited over OSC: a constant 1.0 connected at a
    /// level, played with `/node`, refusals that leave nothing behind.
    #[test]
    fn graph_messages_edit_the_running_graph() {
        let p = Project::parse(
            "block_size = 64\nedges = [\"m -> out\"]\n[nodes.m]\ntype = \"mix\"\nchannels = 1\n\
             [nodes.out]\ntype = \"output\"\nchannels = 1\n",
            "x.toml",
        )
        .unwrap();
        let (editor, schedule) = p.editor().unwrap();
        let mut engine = Engine::new(schedule);
        let live = Arc::new(Mutex::new(engine.live_editor(editor)));
        let config = NodeConfig {
            sample_rate: 48_000,
            max_block: 64,
        };
        // Without an editor, refused.
        let mut plain = OscHandler::new(engine.controller(8));
        let refused = plain.handle(&packet("/graph/remove", vec![text("m")]));
        assert!(
            matches!(
                refused,
                Err(Rejection::Graph {
                    error: GraphRefusal::NotEditable,
                    ..
                })
            ),
            "{refused:?}"
        );
        let mut osc = OscHandler::new(engine.controller(64)).with_editor(Arc::clone(&live), config);
        let add = packet(
            "/graph/add",
            vec![
                text("one"),
                text("sine"),
                text("freq"),
                OscType::Int(0),
                text("phase"),
                OscType::Double(0.25),
                text("amp"),
                OscType::Float(1.0),
                text("channels"),
                OscType::Long(1),
            ],
        );
        assert_eq!(osc.handle(&add), Ok(1));
        // -20 dB: a tenth.
        let connect = vec![text("one"), text("m"), OscType::Float(-20.0)];
        assert_eq!(osc.handle(&packet("/graph/connect", connect)), Ok(1));
        let mut block = vec![0.0; 64];
        engine.process(&mut block);
        assert!(block.iter().all(|&x| (x - 0.1).abs() < 1e-5), "{block:?}");

        // No input for an `input` node in this run; a bad level; a refused bundle drops
        // its first message too.
        let input = osc.handle(&packet("/graph/add", vec![text("i"), text("input")]));
        assert!(input.unwrap_err().to_string().contains("no device input"));
        let level = vec![text("one"), text("m"), text("loud")];
        assert!(osc.handle(&packet("/graph/connect", level)).is_err());
        let bundle = rosc::encoder::encode(&OscPacket::Bundle(OscBundle {
            timetag: OscTime::from((0, 1)),
            content: vec![
                OscPacket::Message(OscMessage {
                    addr: "/graph/disconnect".into(),
                    args: vec![text("one"), text("m")],
                }),
                OscPacket::Message(OscMessage {
                    addr: "/graph/remove".into(),
                    args: vec![text("nosuch")],
                }),
            ],
        }))
        .unwrap();
        let e = osc.handle(&bundle).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("`/graph/remove`: the graph has no node `nosuch`"),
            "{e}"
        );
        assert!(!live.lock().unwrap().has_pending());
        assert!(live.lock().unwrap().has_edge("one", "m"));

        // The added node is a node like any: its parameters move over OSC.
        let step = packet("/node/one/amp/step", vec![OscType::Float(0.5)]);
        assert_eq!(osc.handle(&step), Ok(1));
        engine.process(&mut block);
        assert_eq!(engine.swaps(), 2);
        assert!(block.iter().all(|&x| (x - 0.05).abs() < 1e-5), "{block:?}");

        // So does the edge's level: up to 0 dB at once, then a ramp down to -6.02 dB (a
        // half) over the first 32 frames of the next block.
        let level = packet("/edge/one/m/gain_db/step", vec![OscType::Float(0.0)]);
        assert_eq!(osc.handle(&level), Ok(1));
        engine.process(&mut block);
        assert!(block.iter().all(|&x| (x - 0.5).abs() < 1e-5), "{block:?}");
        let ramp = vec![OscType::Float(-6.0206), OscType::Float(32.0 / 48_000.0)];
        assert_eq!(osc.handle(&packet("/edge/one/m/gain_db/ramp", ramp)), Ok(1));
        engine.process(&mut block);
        assert!(
            block[32..].iter().all(|&x| (x - 0.25).abs() < 1e-4),
            "{block:?}"
        );
        assert!(block[0] > block[16] && block[16] > block[31], "{block:?}");
        // An edge made without a level has none to move; an edge has no other parameter.
        let none = osc.handle(&packet("/edge/m/out/gain_db", vec![OscType::Float(0.0)]));
        assert!(
            none.as_ref().unwrap_err().to_string().contains("m -> out"),
            "{none:?}"
        );
        let other = osc.handle(&packet("/edge/one/m/pan", vec![OscType::Float(0.0)]));
        assert!(
            matches!(other, Err(Rejection::UnknownAddress(_))),
            "{other:?}"
        );
    }

    #[test]
    fn timetags_round_trip_through_the_system_clock() {
        let at = SystemTime::now() + Duration::from_millis(250);
        let instant = instant_of(timetag(at)).unwrap();
        let ahead = instant.saturating_duration_since(Instant::now());
        // The lower bound leaves room for the thread being descheduled on a loaded machine.
        assert!(
            ahead > Duration::from_millis(50) && ahead <= Duration::from_millis(251),
            "{ahead:?}"
        );
        assert_eq!(instant_of(OscTime::from((0, 1))), None);
    }
}
