//! Live MIDI: raw bytes from a driver's MIDI port turned into note events at the frame the
//! driver stamped them with, on the audio thread.

use downbeat_graph::{Event, Schedule};
use midly::live::LiveEvent;

use super::{translate, MidiMessage};

/// Turns a driver's raw MIDI messages into note events for every node that plays notes.
/// Made off the audio thread (it lists the instruments once); [`push`](Self::push) is
/// real-time safe: it parses in place and queues into the schedule's fixed-capacity event
/// list.
///
/// Channel messages other than notes, the sustain pedal, pitch bend and all-notes-off
/// (program changes, aftertouch, controllers without a meaning for instruments), system
/// messages and bytes that are not MIDI are counted as [`ignored`](Self::ignored); notes
/// the schedule has no room for are counted as [`dropped`](Self::dropped), never lost
/// silently.
///
/// ```
/// use downbeat::{midi::MidiInput, project::Project};
///
/// let p = Project::parse(
///     "edges = [\"s -> out\"]\n[nodes.s]\ntype = \"synth\"\n[nodes.out]\ntype = \"output\"\n",
///     "x.toml",
/// ).unwrap();
/// let mut schedule = p.build().unwrap();
/// let mut midi = MidiInput::new(&schedule);
/// midi.push(&mut schedule, 100, &[0x90, 69, 100]); // A4 at frame 100
/// schedule.process(256);
/// let left = schedule.output().channel(0);
/// assert!(left[..100].iter().all(|&x| x == 0.0));
/// assert!(left[100..].iter().any(|&x| x != 0.0));
/// assert_eq!((midi.ignored(), midi.dropped()), (0, 0));
/// ```
#[derive(Debug)]
pub struct MidiInput {
    instruments: Vec<usize>,
    ignored: u64,
    dropped: u64,
}

impl MidiInput {
    /// An input for `schedule`'s instruments (the nodes that play notes).
    pub fn new(schedule: &Schedule) -> Self {
        let instruments = schedule.param_table().note_nodes().collect();
        Self {
            instruments,
            ignored: 0,
            dropped: 0,
        }
    }

    /// Whether any node plays notes.
    pub fn has_instruments(&self) -> bool {
        !self.instruments.is_empty()
    }

    /// Queues the MIDI message `bytes` to take effect at `frame` of `schedule`'s timeline.
    /// Real-time safe.
    pub fn push(&mut self, schedule: &mut Schedule, frame: u64, bytes: &[u8]) {
        // Only well-formed channel messages reach the parser: its error path allocates.
        let message = match is_channel_message(bytes).then(|| LiveEvent::parse(bytes)) {
            Some(Ok(LiveEvent::Midi { channel, message })) => translate(channel.as_int(), message),
            _ => None,
        };
        let Some(MidiMessage::Note(note)) = message else {
            self.ignored += 1;
            return;
        };
        let note = note.normalized();
        for &node in &self.instruments {
            if schedule
                .push_event(Event::note(Some(frame), node, note))
                .is_err()
            {
                self.dropped += 1;
            }
        }
    }

    /// Messages that meant nothing to an instrument.
    pub fn ignored(&self) -> u64 {
        self.ignored
    }

    /// Note events the schedule had no room for.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

/// Whether `bytes` is one whole channel message: a status byte `0x80..=0xEF` followed by
/// exactly the data bytes (below `0x80`) its kind takes.
fn is_channel_message(bytes: &[u8]) -> bool {
    let Some((&status, data)) = bytes.split_first() else {
        return false;
    };
    let len = match status {
        0x80..=0xBF | 0xE0..=0xEF => 2,
        0xC0..=0xDF => 1,
        _ => return false,
    };
    data.len() == len && data.iter().all(|&b| b < 0x80)
}
