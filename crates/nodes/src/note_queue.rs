//! [`NoteQueue`]: the note events an instrument node has been given for this block and later
//! ones, in frame order, in storage allocated when the node is built.

use downbeat_graph::{NoteError, NoteEvent};

#[derive(Clone, Copy, Debug)]
struct Pending {
    frame: usize,
    event: NoteEvent,
}

/// Note events waiting for their frame, sorted by frame and, at one frame, in the order they
/// came. Fixed capacity: pushing never allocates, so instruments (`synth`, `sampler`) queue
/// notes on the audio thread.
#[derive(Debug)]
pub(crate) struct NoteQueue {
    slots: Box<[Pending]>,
    len: usize,
    /// Events of the current block already handed out by [`next_before`](Self::next_before).
    taken: usize,
}

impl NoteQueue {
    /// A queue for at most `capacity` waiting events.
    pub(crate) fn new(capacity: usize) -> Self {
        let idle = Pending {
            frame: 0,
            event: NoteEvent::AllNotesOff { channel: None },
        };
        Self {
            slots: vec![idle; capacity].into_boxed_slice(),
            len: 0,
            taken: 0,
        }
    }

    /// Queues `event` for `frame`, counted from the first frame of the next block, after every
    /// event already queued for that frame.
    ///
    /// # Errors
    /// [`NoteError::Full`] when the queue holds its capacity; the event is not taken.
    pub(crate) fn push(&mut self, frame: usize, event: NoteEvent) -> Result<(), NoteError> {
        if self.len == self.slots.len() {
            return Err(NoteError::Full {
                capacity: self.slots.len(),
            });
        }
        let at = self.slots[..self.len].partition_point(|p| p.frame <= frame);
        self.slots.copy_within(at..self.len, at + 1);
        self.slots[at] = Pending { frame, event };
        self.len += 1;
        Ok(())
    }

    /// Events waiting.
    pub(crate) fn len(&self) -> usize {
        self.len - self.taken
    }

    /// Bytes of the queue's storage.
    pub(crate) fn bytes(&self) -> usize {
        std::mem::size_of_val(&*self.slots)
    }

    /// The next event of a block of `frames` frames, with its frame: render up to that frame,
    /// then apply it. `None` once the block has no more; then call
    /// [`end_block`](Self::end_block).
    pub(crate) fn next_before(&mut self, frames: usize) -> Option<(usize, NoteEvent)> {
        let p = self.slots[self.taken..self.len].first()?;
        if p.frame >= frames {
            return None;
        }
        self.taken += 1;
        Some((p.frame, p.event))
    }

    /// Ends a block of `frames` frames: the events left move to the front, their frames now
    /// counted from the next block.
    pub(crate) fn end_block(&mut self, frames: usize) {
        self.slots.copy_within(self.taken..self.len, 0);
        self.len -= self.taken;
        self.taken = 0;
        for p in &mut self.slots[..self.len] {
            p.frame -= frames;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(note: f32) -> NoteEvent {
        NoteEvent::On {
            channel: 0,
            note,
            velocity: 1.0,
        }
    }

    #[test]
    fn events_come_in_frame_order_then_carry_over() {
        let mut q = NoteQueue::new(4);
        q.push(70, on(1.0)).unwrap();
        q.push(5, on(2.0)).unwrap();
        q.push(5, on(3.0)).unwrap();
        q.push(64, on(4.0)).unwrap();
        assert_eq!(q.push(0, on(5.0)), Err(NoteError::Full { capacity: 4 }));
        let mut got = Vec::new();
        while let Some((frame, e)) = q.next_before(64) {
            got.push((frame, e));
        }
        assert_eq!(got, vec![(5, on(2.0)), (5, on(3.0))]);
        q.end_block(64);
        assert_eq!(q.len(), 2);
        assert_eq!(q.next_before(64), Some((0, on(4.0))));
        assert_eq!(q.next_before(64), Some((6, on(1.0))));
        assert_eq!(q.next_before(64), None);
        q.end_block(64);
        assert_eq!(q.len(), 0);
    }
}
