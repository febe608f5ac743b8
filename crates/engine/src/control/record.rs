//! Recording the events a run applied, with the frame each took effect at, and replaying
//! them: a replay on the offline device reproduces a live run bit for bit.
//!
//! The file holds one JSON object per line, in the order the events were applied:
//!
//! ```text
//! {"frame":4800,"node":"lp","param":"freq","change":"set","value":800.0}
//! {"frame":9600,"node":"lp","param":"freq","change":"linear","to":2000.0,"frames":48000}
//! ```
//!
//! `change` is `set` (smoothed), `step`, `linear` or `exponential`; ramps carry `to`,
//! `frames` and, when the event named its start value, `from`. Notes are recorded per node
//! that took them, without `param`: `change` is `note_on` (with `channel`, `note`,
//! `velocity`), `note_off` (`channel`, `note`), `all_notes_off` (`channel` unless every
//! channel), `pitch_bend` (`channel`, `value`) or `sustain` (`channel`, `on`):
//!
//! ```text
//! {"frame":4800,"node":"synth","change":"note_on","channel":0,"note":69.0,"velocity":0.8}
//! ```
//! Values are written as the
//! shortest decimal that reads back to the same `f32`, so a replay applies exactly the
//! recorded values.

use std::fmt;
use std::io::{BufRead, Write};
use std::path::Path;

use downbeat_graph::{
    Applied, Change, ControlError, Event, NodeEvent, NoteEvent, ParamTable, Ramp, Schedule, Shape,
};
use downbeat_ring::{Consumer, Producer, RingBuffer};
use serde::{Deserialize, Serialize};

/// Events the audio thread can hand to the recorder between two of its reads: 2^16, a few
/// seconds of the densest control there is.
pub const RECORD_CAPACITY: usize = 1 << 16;

/// The audio-thread side of a recording: copies each block's applied events into a ring.
pub(crate) struct RecordTap {
    ring: Producer<Applied>,
    /// Events the reader did not take in time: a recording with any is incomplete.
    pub(crate) lost: u64,
}

impl RecordTap {
    /// Copies the events `schedule` applied in its last block. Real-time safe.
    pub(crate) fn take(&mut self, schedule: &Schedule) {
        for a in schedule.applied() {
            if self.ring.push(*a).is_err() {
                self.lost += 1;
            }
        }
    }
}

/// The control side of a recording: drain it often with [`read`](Self::read).
pub struct RecordReader {
    ring: Consumer<Applied>,
    lines: Vec<Line>,
}

impl fmt::Debug for RecordReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordReader")
            .field("events", &self.lines.len())
            .finish()
    }
}

/// The two halves of one recording: the [`RecordTap`] the engine feeds on the audio thread
/// and the [`RecordReader`] that drains it on the control side.
pub(crate) fn channel() -> (RecordTap, RecordReader) {
    let (ring, consumer) = RingBuffer::new(RECORD_CAPACITY);
    (
        RecordTap { ring, lost: 0 },
        RecordReader {
            ring: consumer,
            lines: Vec::new(),
        },
    )
}

impl RecordReader {
    /// Takes what the audio thread has recorded since the last call.
    pub fn read(&mut self) {
        while let Some(a) = self.ring.pop() {
            self.lines.push(Line::of(&a));
        }
    }

    /// Events read so far.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Reads what is left and writes every event to `path`.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn write(mut self, path: &Path) -> std::io::Result<usize> {
        self.read();
        let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
        for line in &self.lines {
            serde_json::to_writer(&mut out, line)?;
            out.write_all(b"\n")?;
        }
        out.flush()?;
        Ok(self.lines.len())
    }
}

/// One recorded event, as written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    frame: u64,
    node: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    param: String,
    change: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    channel: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    velocity: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    on: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    from: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    to: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    frames: Option<u32>,
}

impl Line {
    fn of(a: &Applied) -> Self {
        let (index, change) = match a.body {
            NodeEvent::Param { index, change } => (index, change),
            NodeEvent::Note(note) => return Self::of_note(a, note),
            _ => unreachable!("parameter and note events are the only kinds"),
        };
        // By key, not through the table: the node may be one of a schedule swapped in since.
        let param = a
            .node
            .param_name(usize::from(index))
            .expect("applied events name parameters of their node");
        let mut line = Line {
            frame: a.frame,
            node: a.node.name(),
            param: param.to_string(),
            change: String::new(),
            channel: None,
            note: None,
            velocity: None,
            on: None,
            value: None,
            from: None,
            to: None,
            frames: None,
        };
        match change {
            Change::Set(v) => (line.change, line.value) = ("set".into(), Some(v)),
            Change::Step(v) => (line.change, line.value) = ("step".into(), Some(v)),
            Change::Ramp(r) => {
                line.change = r.shape.name().into();
                (line.from, line.to, line.frames) = (r.from, Some(r.to), Some(r.frames));
            }
        }
        line
    }

    fn of_note(a: &Applied, event: NoteEvent) -> Self {
        let mut line = Line {
            frame: a.frame,
            node: a.node.name(),
            param: String::new(),
            change: String::new(),
            channel: None,
            note: None,
            velocity: None,
            on: None,
            value: None,
            from: None,
            to: None,
            frames: None,
        };
        let change = match event {
            NoteEvent::On {
                channel,
                note,
                velocity,
            } => {
                (line.channel, line.note, line.velocity) =
                    (Some(channel), Some(note), Some(velocity));
                "note_on"
            }
            NoteEvent::Off { channel, note } => {
                (line.channel, line.note) = (Some(channel), Some(note));
                "note_off"
            }
            NoteEvent::AllNotesOff { channel } => {
                line.channel = channel;
                "all_notes_off"
            }
            NoteEvent::PitchBend { channel, value } => {
                (line.channel, line.value) = (Some(channel), Some(value));
                "pitch_bend"
            }
            NoteEvent::Sustain { channel, on } => {
                (line.channel, line.on) = (Some(channel), Some(on));
                "sustain"
            }
        };
        line.change = change.to_string();
        line
    }

    /// The note event of a `note_*`, `pitch_bend` or `sustain` line; `None` for a parameter
    /// change.
    ///
    /// # Errors
    /// The name of a field the line lacks.
    fn note_event(&self) -> Result<Option<NoteEvent>, &'static str> {
        let need = |v: Option<f32>, what: &'static str| v.ok_or(what);
        let channel = || self.channel.ok_or("channel");
        Ok(Some(match self.change.as_str() {
            "note_on" => NoteEvent::On {
                channel: channel()?,
                note: need(self.note, "note")?,
                velocity: need(self.velocity, "velocity")?,
            },
            "note_off" => NoteEvent::Off {
                channel: channel()?,
                note: need(self.note, "note")?,
            },
            "all_notes_off" => NoteEvent::AllNotesOff {
                channel: self.channel,
            },
            "pitch_bend" => NoteEvent::PitchBend {
                channel: channel()?,
                value: need(self.value, "value")?,
            },
            "sustain" => NoteEvent::Sustain {
                channel: channel()?,
                on: self.on.ok_or("on")?,
            },
            _ => return Ok(None),
        }))
    }
}

/// Why a recording could not be replayed.
#[derive(Debug)]
pub enum ReplayError {
    /// The file cannot be read.
    Io(std::io::Error),
    /// A line is not a recorded event.
    Syntax {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A line names a parameter the project does not have live, or a bad value.
    Control {
        /// 1-based line number.
        line: usize,
        /// Why.
        error: ControlError,
    },
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::Io(e) => write!(f, "{e}"),
            ReplayError::Syntax { line, message } => write!(f, "line {line}: {message}"),
            ReplayError::Control { line, error } => write!(f, "line {line}: {error}"),
        }
    }
}

impl std::error::Error for ReplayError {}

/// Reads a recording made for a schedule described by `table`, as events at their
/// recorded frames, in the recorded order.
///
/// # Errors
/// [`ReplayError`] naming the line.
pub fn read_events(path: &Path, table: &ParamTable) -> Result<Vec<Event>, ReplayError> {
    let file = std::fs::File::open(path).map_err(ReplayError::Io)?;
    let mut events = Vec::new();
    for (i, text) in std::io::BufReader::new(file).lines().enumerate() {
        let line = i + 1;
        let text = text.map_err(ReplayError::Io)?;
        if text.trim().is_empty() {
            continue;
        }
        let l: Line = serde_json::from_str(&text).map_err(|e| ReplayError::Syntax {
            line,
            message: e.to_string(),
        })?;
        let control = |error| ReplayError::Control { line, error };
        let note = l.note_event().map_err(|what| ReplayError::Syntax {
            line,
            message: format!("`{}` needs `{what}`", l.change),
        })?;
        if let Some(note) = note {
            note.validate()
                .map_err(|e| control(ControlError::BadNote(e)))?;
            let node = table.node_key(&l.node).ok_or_else(|| {
                control(ControlError::UnknownNode {
                    name: l.node.clone(),
                    known: table.node_names().map(str::to_string).collect(),
                })
            })?;
            if !table.note_nodes().any(|n| n == node) {
                return Err(control(ControlError::NoInstrument));
            }
            events.push(Event::note(Some(l.frame), node, note));
            continue;
        }
        let id = table.resolve(&l.node, &l.param).map_err(control)?;
        let missing = |what: &str| ReplayError::Syntax {
            line,
            message: format!("`{}` needs `{what}`", l.change),
        };
        let change = match l.change.as_str() {
            "set" => Change::Set(l.value.ok_or_else(|| missing("value"))?),
            "step" => Change::Step(l.value.ok_or_else(|| missing("value"))?),
            other => {
                let shape = Shape::from_name(other).ok_or_else(|| ReplayError::Syntax {
                    line,
                    message: format!(
                        "unknown change `{other}`; expected set, step, linear, exponential, \
                         note_on, note_off, all_notes_off, pitch_bend or sustain"
                    ),
                })?;
                Change::Ramp(Ramp {
                    shape,
                    from: l.from,
                    to: l.to.ok_or_else(|| missing("to"))?,
                    frames: l.frames.ok_or_else(|| missing("frames"))?,
                })
            }
        };
        table.check(id, &change).map_err(control)?;
        events.push(Event::param(Some(l.frame), id, change));
    }
    Ok(events)
}
