//! The MIDI file on loop: a sequencer thread sends each event a second before its frame
//! through a `Controller`, as a host's sequencer would, to the synth and the string (not to
//! every node that plays notes: fanin84's 71 strings would drop their own patterns for the
//! file's notes, and each note would take 73 places in the schedule's queue).
//!
//! `downbeat run --midi` puts a file on the schedule's preloaded timeline instead, which live
//! edits carry on; the soak sends through a controller so that its events also wait in the
//! live queue when an edit lands, and move to the edited schedule (`Schedule::take_over`).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use downbeat::control::{Controller, When};
use downbeat::midi::{play, MidiFile, MidiMessage};
use downbeat::project::Project;
use downbeat::Engine;
use downbeat_graph::{Change, ControlError, NodeKey, NoteEvent, ParamId};

/// Events the sequencer's controller queue holds: a second of the file many times over.
pub const QUEUE: usize = 4096;
/// How far ahead of the engine's position events are sent: late only if this thread is
/// kept from running for a whole second.
const LOOKAHEAD_SECONDS: f64 = 1.0;
/// How often the sequencer looks at the engine's position.
const POLL: Duration = Duration::from_millis(20);

/// One event of the file, ready to send.
#[derive(Clone, Copy, Debug)]
enum Message {
    Note(NoteEvent),
    Set(ParamId, f32),
}

/// The nodes that play the file's notes.
pub const PLAYERS: [&str; 2] = ["keys", "pluck"];

/// The file's events, one loop of it, and where the run ends.
pub struct Sequence {
    events: Vec<(u64, Message)>,
    /// The nodes of [`PLAYERS`].
    players: Vec<NodeKey>,
    /// Frames from one loop's start to the next: the file's last event plus the longest
    /// release, as `downbeat run --midi` plays it.
    loop_frames: u64,
    /// The run's length in frames: nothing is sent at or after it.
    end: u64,
    lookahead: u64,
}

/// What the sequencer did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Played {
    /// Events sent (a note once per node that plays it).
    pub sent: u64,
    /// Events the run's length holds (every loop's events before its end): all should be
    /// sent.
    pub due: u64,
    /// Times the queue was full (the event waited for the next poll, never dropped).
    pub full: u64,
    /// Events the controller refused for another reason (a bug: each is printed).
    pub refused: u64,
    /// Loops begun.
    pub loops: u64,
}

impl Sequence {
    /// Reads the MIDI file for the engine's schedule (the project's `[midi.cc]` mapped).
    pub fn load(project: &Project, engine: &Engine, path: &Path, end: u64) -> Result<Self, String> {
        let file = MidiFile::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let rate = engine.sample_rate();
        let table = engine.schedule().param_table();
        let cc = project.cc_mappings(&table).map_err(|e| e.to_string())?;
        let mut events = Vec::new();
        for (frame, message) in file.frames(rate) {
            match message {
                MidiMessage::Note(note) => events.push((frame, Message::Note(note.normalized()))),
                MidiMessage::Control {
                    controller, value, ..
                } => events.extend(
                    cc.iter()
                        .filter(|m| m.controller == controller)
                        .map(|m| (frame, Message::Set(m.param, m.value(value)))),
                ),
            }
        }
        if events.is_empty() {
            return Err(format!("{} has no event to play", path.display()));
        }
        let players = PLAYERS
            .iter()
            .map(|n| {
                table
                    .node_key(n)
                    .filter(|k| table.note_nodes().any(|p| p == *k))
                    .ok_or(format!("the project has no node `{n}` that plays notes"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let loop_frames = play::run_frames(&file, &table, rate).max(1);
        Ok(Self {
            events,
            players,
            loop_frames,
            end,
            lookahead: (LOOKAHEAD_SECONDS * f64::from(rate)) as u64,
        })
    }

    /// Events whose frame falls before the end of the run, over every loop (a note once
    /// per node that plays it).
    fn due(&self) -> u64 {
        let mut due = 0;
        let mut base = 0;
        while base < self.end {
            due += self
                .events
                .iter()
                .filter(|(f, _)| base + f < self.end)
                .map(|(_, m)| self.copies(m))
                .sum::<u64>();
            base += self.loop_frames;
        }
        due
    }

    /// Events one message becomes.
    fn copies(&self, message: &Message) -> u64 {
        match message {
            Message::Note(_) => self.players.len() as u64,
            Message::Set(..) => 1,
        }
    }

    /// Sends the events, looping, until `stop`; each at most a lookahead ahead of the
    /// engine's position.
    pub fn play(self, mut control: Controller, stop: &AtomicBool) -> Played {
        let mut played = Played {
            due: self.due(),
            loops: 1,
            ..Played::default()
        };
        let (mut next, mut base) = (0, 0);
        while !stop.load(Ordering::Acquire) {
            let horizon = control.position() + self.lookahead;
            loop {
                let (offset, message) = self.events[next];
                let frame = base + offset;
                if frame >= self.end || frame > horizon {
                    break;
                }
                // A note goes to each player in turn; all of them or, when the queue is
                // full, none (it is sent again at the next poll).
                let room = control.available() as u64;
                let sent = if room < self.copies(&message) {
                    Err(ControlError::QueueFull { capacity: QUEUE })
                } else {
                    match message {
                        Message::Note(n) => self.players.iter().try_for_each(|&node| {
                            control.send_note_to(When::Frame(frame), node, n)
                        }),
                        Message::Set(id, v) => control.send(When::Frame(frame), id, Change::Set(v)),
                    }
                };
                match sent {
                    Ok(()) => played.sent += self.copies(&message),
                    Err(ControlError::QueueFull { .. }) => {
                        played.full += 1;
                        break;
                    }
                    Err(e) => {
                        played.refused += 1;
                        eprintln!("soak: sequencer: event at frame {frame} refused: {e}");
                    }
                }
                next += 1;
                if next == self.events.len() {
                    next = 0;
                    base += self.loop_frames;
                    played.loops += 1;
                }
            }
            std::thread::sleep(POLL);
        }
        played
    }
}
