//! Playing a [`MidiFile`] into a schedule: its note messages become note events for every
//! node that plays notes, and its control changes mapped by a project's `[midi.cc]` become
//! parameter changes, each at the frame its tick falls on through the tempo map.
//!
//! The events go onto the schedule's preloaded timeline
//! ([`Schedule::add_to_timeline`](downbeat_graph::Schedule::add_to_timeline)), the list
//! automation uses: it holds any number of events, so a long file never fills the bounded
//! queue that live controllers share, no event is dropped, and an offline render is
//! bit-identical between runs. Frames are the engine's own, so on a live device the file
//! starts with the run.

use downbeat_graph::{Change, ControlError, Event, NodeKey, ParamId, ParamTable};

use super::{MidiFile, MidiMessage};

/// A MIDI control change mapped to a live parameter: the CC's `0..=127` spans the
/// parameter's range linearly (`min` at 0, `max` at 127).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CcMapping {
    /// The controller number, `0..=127`.
    pub controller: u8,
    /// The parameter it moves.
    pub param: ParamId,
    /// The parameter's value at CC value 0.
    pub min: f32,
    /// The parameter's value at CC value 127.
    pub max: f32,
}

impl CcMapping {
    /// The parameter value for CC value `value` (`0..=127`).
    pub fn value(&self, value: u8) -> f32 {
        let t = f64::from(value.min(127)) / 127.0;
        (f64::from(self.min) + (f64::from(self.max) - f64::from(self.min)) * t) as f32
    }
}

/// The events of `file` for the schedule `table` describes, at `sample_rate`: one note event
/// per note-playing node for each note message, and a [`Change::Set`] for each control
/// change that `cc` maps (others are ignored).
///
/// # Errors
/// [`ControlError::NoInstrument`] when the file has notes and no node plays notes.
pub fn events(
    file: &MidiFile,
    table: &ParamTable,
    cc: &[CcMapping],
    sample_rate: u32,
) -> Result<Vec<Event>, ControlError> {
    let targets: Vec<NodeKey> = table.note_nodes().collect();
    let mut out = Vec::new();
    for (frame, message) in file.frames(sample_rate) {
        match message {
            MidiMessage::Note(note) => {
                if targets.is_empty() {
                    return Err(ControlError::NoInstrument);
                }
                out.extend(
                    targets
                        .iter()
                        .map(|&n| Event::note(Some(frame), n, note.normalized())),
                );
            }
            MidiMessage::Control {
                controller, value, ..
            } => out.extend(
                cc.iter()
                    .filter(|m| m.controller == controller)
                    .map(|m| Event::param(Some(frame), m.param, Change::Set(m.value(value)))),
            ),
        }
    }
    Ok(out)
}

/// How many frames a run playing `file` lasts at `sample_rate`: to the file's last event,
/// plus the longest release of the schedule's instruments so that the last notes ring out.
pub fn run_frames(file: &MidiFile, table: &ParamTable, sample_rate: u32) -> u64 {
    let release = (table.longest_release() * f64::from(sample_rate)).ceil() as u64;
    file.end_frame(sample_rate) + release
}
