//! Live MIDI: raw bytes from a driver's MIDI port turned into note events at the frame the
//! driver stamped them with, on the audio thread, and held until the engine hands them to
//! the running schedule.

use downbeat_graph::{ControlError, Event, NoteEvent, Schedule};
use midly::live::LiveEvent;

use super::{translate, MidiMessage};

/// MIDI messages an [`MidiInput`] holds by default between two deliveries: far more than
/// a MIDI cable carries in a callback (about 1000 messages a second).
pub const MIDI_CAPACITY: usize = 1024;

/// The engine's intake of a device's live MIDI: parses a driver's raw messages into note
/// events and holds them, with their frames, until [`deliver`](Self::deliver) hands them to
/// the running schedule, fanned out to its instruments (the nodes that play notes) as they
/// are then. The [`Engine`](crate::Engine) owns one; devices reach it through
/// [`Engine::midi`](crate::Engine::midi). Every method is real-time safe: it parses in
/// place, and the list has a capacity fixed when it is made.
///
/// Channel messages other than notes, the sustain pedal, pitch bend and all-notes-off
/// (program changes, aftertouch, controllers without a meaning for instruments), system
/// messages and bytes that are not MIDI are counted as [`ignored`](Self::ignored). A note
/// that cannot be delivered (the list full, or no instrument in the schedule) is counted as
/// [`dropped`](Self::dropped), never lost silently; one the schedule's queue has no room for
/// yet waits for the next block.
///
/// ```
/// use downbeat::{midi::MidiInput, project::Project};
///
/// let p = Project::parse(
///     "edges = [\"s -> out\"]\n[nodes.s]\ntype = \"synth\"\n[nodes.out]\ntype = \"output\"\n",
///     "x.toml",
/// ).unwrap();
/// let mut schedule = p.build().unwrap();
/// let mut midi = MidiInput::new(64);
/// midi.push(100, &[0x90, 69, 100]); // A4 at frame 100
/// midi.deliver(&mut schedule);
/// schedule.process(256);
/// let left = schedule.output().channel(0);
/// assert!(left[..100].iter().all(|&x| x == 0.0));
/// assert!(left[100..].iter().any(|&x| x != 0.0));
/// assert_eq!((midi.ignored(), midi.dropped()), (0, 0));
/// ```
#[derive(Debug)]
pub struct MidiInput {
    /// Notes waiting for delivery, in arrival order, with their frames.
    waiting: Vec<(u64, NoteEvent)>,
    ignored: u64,
    dropped: u64,
}

impl MidiInput {
    /// An input holding up to `capacity` messages between deliveries. Allocates.
    ///
    /// # Panics
    /// If `capacity` is 0.
    pub fn new(capacity: usize) -> Self {
        assert!(capacity > 0, "a MIDI input holds at least one message");
        let mut waiting = vec![(0, NoteEvent::AllNotesOff { channel: None }); capacity];
        waiting.clear();
        Self {
            waiting,
            ignored: 0,
            dropped: 0,
        }
    }

    /// Takes the MIDI message `bytes`, to take effect at `frame` of the engine's timeline.
    pub fn push(&mut self, frame: u64, bytes: &[u8]) {
        // Only well-formed channel messages reach the parser: its error path allocates.
        let message = match is_channel_message(bytes).then(|| LiveEvent::parse(bytes)) {
            Some(Ok(LiveEvent::Midi { channel, message })) => translate(channel.as_int(), message),
            _ => None,
        };
        let Some(MidiMessage::Note(note)) = message else {
            self.ignored += 1;
            return;
        };
        if self.waiting.len() == self.waiting.capacity() {
            self.dropped += 1;
            return;
        }
        self.waiting.push((frame, note.normalized()));
    }

    /// Hands the waiting notes to `schedule`'s instruments, oldest first, until its queue
    /// is full; the rest wait for the next call.
    pub fn deliver(&mut self, schedule: &mut Schedule) {
        let mut taken = 0;
        for &(frame, note) in &self.waiting {
            match schedule.push_event(Event::note_to_instruments(Some(frame), note)) {
                Ok(()) => {}
                Err(ControlError::QueueFull { capacity })
                    if schedule.instrument_count() <= capacity =>
                {
                    break
                }
                Err(_) => self.dropped += 1,
            }
            taken += 1;
        }
        // In place, within the capacity: no allocation.
        self.waiting.drain(..taken);
    }

    /// Notes waiting for room in the schedule's queue.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Messages that meant nothing to an instrument.
    pub fn ignored(&self) -> u64 {
        self.ignored
    }

    /// Notes that could not be delivered: the input was full, or the schedule had no
    /// instrument or too small a queue for one entry per instrument.
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
