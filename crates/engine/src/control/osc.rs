//! Open Sound Control over UDP: a control thread receives packets and turns them into
//! events through a [`Controller`], so a phone, a sequencer or `oscsend` can play the graph.
//!
//! | address | arguments | effect |
//! |---|---|---|
//! | `/node/<node>/<param>` | value | moves the parameter to the value, smoothed ([`Change::Set`]) |
//! | `/node/<node>/<param>/step` | value | jumps to the value, unsmoothed ([`Change::Step`]) |
//! | `/node/<node>/<param>/ramp` | target, seconds | a linear ramp from the value reached |
//! | `/node/<node>/<param>/exp` | target, seconds | an exponential ramp from the value reached |
//! | `/node/<node>/note_on` | note, velocity | starts a note on the node (MIDI channel 1) |
//! | `/node/<node>/note_off` | note | releases the note |
//! | `/node/<node>/all_notes_off` | none | releases every note of the node |
//!
//! Notes and velocities count as in MIDI: note `0..=127`, where fractions are microtones
//! (69 is A4, 440 Hz), and velocity `0..=127`, where 0 is a note off. The node must play
//! notes (`synth`, `karplus`).
//!
//! Numbers may be sent as float (`f`), double (`d`), int (`i`) or 64-bit int (`h`): an int
//! is the same number as a float to a gain, and OSC senders differ in which they send for
//! `1`. Any other argument type (a string, a blob, true/false...) is refused.
//!
//! A message on its own applies at the start of the next block. A bundle applies every
//! message it holds at one frame: the frame its NTP timetag stands for on the engine's
//! timeline, mapped through the wall clock ([`Controller::frame_at`]); the timetag
//! "immediately" (`0.000...1`) is the next block. A timetag already past applies at the
//! next block (the schedule counts it as late).
//!
//! A packet that is not OSC, an address outside the table above, a wrong number or type of
//! arguments, or a refusal from the controller (unknown node, parameter not live, value
//! out of range, full queue) is a [`Rejection`]: it changes nothing (a bundle is checked
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

use std::fmt;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use downbeat_graph::{Change, ControlError, NodeKey, NoteEvent, ParamId, Ramp, Shape, MAX_NOTE};
use rosc::{OscBundle, OscMessage, OscPacket, OscTime, OscType};

use super::{Controller, When};

/// Seconds from the NTP epoch (1900) to the Unix epoch (1970), RFC 5905.
const NTP_UNIX_OFFSET: i128 = 2_208_988_800;

/// How often the server thread looks at its stop flag while no packet comes.
const STOP_POLL: Duration = Duration::from_millis(20);

/// Why a packet changed nothing.
#[derive(Clone, Debug, PartialEq)]
pub enum Rejection {
    /// The bytes are not an OSC packet.
    Malformed(String),
    /// The address is not one of `/node/<node>/<param>[/step|/ramp|/exp]` or
    /// `/node/<node>/(note_on|note_off|all_notes_off)`.
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
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::Malformed(why) => write!(f, "not an OSC packet: {why}"),
            Rejection::UnknownAddress(a) => write!(
                f,
                "unknown address `{a}`; expected /node/<node>/<param> with an optional \
                 /step, /ramp or /exp, or /node/<node>/note_on, note_off or all_notes_off"
            ),
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

/// Turns OSC packets into controller events; [`serve`] runs one on a UDP socket.
#[derive(Debug)]
pub struct OscHandler {
    controller: Controller,
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
}

impl OscHandler {
    /// A handler sending through `controller`.
    pub fn new(controller: Controller) -> Self {
        Self { controller }
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
        let mut planned = Vec::new();
        self.plan(&packet, When::Now, &mut planned)?;
        for (i, p) in planned.iter().enumerate() {
            let sent = match p.what {
                Action::Param(id, change) => self.controller.send(p.when, id, change),
                Action::Note(node, event) => self.controller.send_note_to(p.when, node, event),
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
        let (node, param, verb) = match parts.as_slice() {
            ["", "node", node, param] => (*node, *param, None),
            ["", "node", node, param, verb @ ("step" | "ramp" | "exp")] => {
                (*node, *param, Some(*verb))
            }
            _ => return Err(Rejection::UnknownAddress(m.addr.clone())),
        };
        if node.is_empty() || param.is_empty() {
            return Err(Rejection::UnknownAddress(m.addr.clone()));
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
            if !(0.0..=127.0).contains(&velocity) {
                return Err(bad(format!(
                    "velocity {velocity} is outside 0 to 127 (as in MIDI; 0 is a note off)"
                )));
            }
            NoteEvent::On {
                channel: 0,
                note: note_number(note)?,
                velocity: (velocity / 127.0) as f32,
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
    let mut handler = OscHandler::new(controller);
    let thread = std::thread::Builder::new()
        .name("downbeat-osc".into())
        .spawn(move || {
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
