//! The preloaded events timed in beats (a MIDI file played in the song's time, automation
//! in beats): they follow the song, not the engine's frames, so a loop plays them again, a
//! locate skips to the ones it lands on and nothing plays while the song is stopped.

use crate::event::NodeEvent;
use crate::time::TempoMap;

/// One event at a beat of the song.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SongEntry {
    pub(crate) beat: f64,
    /// Order among events at the same beat.
    pub(crate) seq: u64,
    /// The node's key index ([`NodeKey`](crate::NodeKey)), which edits do not change.
    pub(crate) node: u32,
    pub(crate) body: NodeEvent,
}

/// The song's events in beat order, and where the song has got to in them.
#[derive(Debug, Default)]
pub(crate) struct SongTimeline {
    pub(crate) entries: Vec<SongEntry>,
    cursor: usize,
    /// The song frame the next block is expected to start at; any other start (a locate, a
    /// loop wrap, a new tempo map) looks the cursor up again.
    next: Option<u64>,
}

impl SongTimeline {
    /// Adds `entries` (allocates: off the audio thread) and keeps the order.
    pub(crate) fn add(&mut self, entries: impl IntoIterator<Item = SongEntry>) {
        self.entries.extend(entries);
        self.entries
            .sort_by(|a, b| a.beat.total_cmp(&b.beat).then(a.seq.cmp(&b.seq)));
        self.next = None;
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.next = None;
    }

    /// The next sequence number for added events.
    pub(crate) fn next_seq(&self) -> u64 {
        self.entries.iter().map(|e| e.seq + 1).max().unwrap_or(0)
    }

    /// Hands `take` the entries due in the song's frames `song..end` of `map`, in order, with
    /// each one's song frame; stops early when `take` returns `false` (no room), leaving
    /// that entry for the next block (then late). Real-time safe.
    pub(crate) fn due(
        &mut self,
        map: &TempoMap,
        song: u64,
        end: u64,
        mut take: impl FnMut(&SongEntry, u64) -> bool,
    ) {
        if self.entries.is_empty() {
            return;
        }
        if self.next != Some(song) {
            self.cursor = self
                .entries
                .partition_point(|e| map.frame_of(e.beat) < song);
        }
        while let Some(e) = self.entries.get(self.cursor) {
            let f = map.frame_of(e.beat);
            if f >= end || !take(e, f) {
                break;
            }
            self.cursor += 1;
        }
        self.next = Some(end);
    }

    /// Takes over `old`'s entries and place (an edit of the schedule that held them); the
    /// emptied list goes back to be freed off the audio thread.
    pub(crate) fn continue_from(&mut self, old: &mut SongTimeline) {
        std::mem::swap(&mut self.entries, &mut old.entries);
        self.cursor = old.cursor;
        self.next = old.next;
    }

    /// After a swap to a schedule with its own list: look the place up at the next block.
    pub(crate) fn restart(&mut self) {
        self.next = None;
    }
}
