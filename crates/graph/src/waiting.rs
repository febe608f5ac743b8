//! Events that wait for the song rather than for a frame: anything timed by a beat, and
//! transport commands (which cut the engine's block, so they wait apart from the node
//! events the schedule cuts nodes' blocks for).

use crate::event::Event;

/// What an entry waits for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Due {
    /// The song reaching this beat while it plays.
    Beat(f64),
    /// This frame of the schedule's timeline (transport commands only).
    Frame(u64),
}

/// One waiting event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Entry {
    pub(crate) due: Due,
    pub(crate) event: Event,
}

/// A fixed-capacity list, in arrival order (so that events due at the same frame keep it).
/// Allocated off the audio thread, its memory written there (so that filling it on the audio
/// thread takes no page fault); pushing into a full list is refused.
#[derive(Debug)]
pub(crate) struct Waiting {
    entries: Vec<Entry>,
    capacity: usize,
}

/// Waiting entries a schedule holds unless told otherwise.
pub(crate) const WAITING_CAPACITY: usize = 256;

impl Waiting {
    pub(crate) fn new(capacity: usize) -> Self {
        // Written once, then emptied: a list that fills for the first time on the audio
        // thread would fault its pages in there.
        let filler = Entry {
            due: Due::Frame(0),
            event: Event::transport(None, crate::time::TransportCommand::Stop),
        };
        let mut entries = vec![filler; capacity];
        entries.clear();
        Self { entries, capacity }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Adds `entry`, or gives it back when the list is full.
    pub(crate) fn push(&mut self, entry: Entry) -> Result<(), Entry> {
        if self.entries.len() == self.capacity {
            return Err(entry);
        }
        self.entries.push(entry);
        Ok(())
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter()
    }

    pub(crate) fn get(&self, i: usize) -> Option<Entry> {
        self.entries.get(i).copied()
    }

    /// Takes entry `i` out, keeping the others in order. Does not allocate.
    pub(crate) fn remove(&mut self, i: usize) -> Entry {
        self.entries.remove(i)
    }

    /// Moves every entry out to `to`, in order (for a schedule taking over). Does not
    /// allocate.
    pub(crate) fn drain_into(&mut self, mut to: impl FnMut(Entry)) {
        for &e in &self.entries {
            to(e);
        }
        self.entries.clear();
    }
}
