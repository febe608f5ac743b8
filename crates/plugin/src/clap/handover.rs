//! [`pair`]: a wait-free hand-over of one value between a plugin's main thread and the audio
//! thread and back, for a restart that keeps the node.
//!
//! A restart takes a round trip: the main side [`ask`](MainSide::ask)s, the audio side
//! [`give`](AudioSide::give)s what it holds (the plugin's stopped processor), the main side
//! [`take`](MainSide::take)s it, deactivates and activates the plugin and
//! [`give_back`](MainSide::give_back)s the new processor, the audio side
//! [`take_returned`](AudioSide::take_returned)s it and [`spend`](AudioSide::spend)s what it
//! replaced (memory it must not free itself), and the main side frees that
//! ([`take_spent`](MainSide::take_spent)). One state byte says whose turn it is; only the
//! side whose turn it is touches the value, and it passes the turn on with a release store
//! that the other side's acquire load pairs with. No side ever waits for the other: each
//! call looks and returns.
//!
//! This file is also compiled into the loom model (`tests/loom_handover.rs`), with
//! `super::sync` naming loom's atomics and cell there and std's here.

use super::sync::{Arc, AtomicU8, Ordering, UnsafeCell};

/// The main side's turn; nothing in the cell.
const IDLE: u8 = 0;
/// The audio side's turn: it is asked to give.
const WANTED: u8 = 1;
/// The main side's turn: the cell holds (or held, until taken) what the audio side gave.
const GIVEN: u8 = 2;
/// The audio side's turn: the cell holds what the main side gave back.
const RETURNED: u8 = 3;
/// The main side's turn: the cell holds what the audio side is done with.
const SPENT: u8 = 4;

struct Inner<T> {
    state: AtomicU8,
    cell: UnsafeCell<Option<T>>,
}

// SAFETY: the cell is only touched by the side whose turn `state` says it is (each method
// below checks before touching it), and a turn passes with a release store after the last
// touch, read with an acquire load before the first touch of the other side: the two sides
// never touch the cell at once, and each sees what the other wrote. The value moves between
// threads, hence `T: Send`.
unsafe impl<T: Send> Sync for Inner<T> {}

/// The main thread's end of a hand-over.
pub(crate) struct MainSide<T>(Arc<Inner<T>>);

/// The audio thread's end of a hand-over.
pub(crate) struct AudioSide<T>(Arc<Inner<T>>);

/// A hand-over with nothing under way.
pub(crate) fn pair<T>() -> (MainSide<T>, AudioSide<T>) {
    let inner = Arc::new(Inner {
        state: AtomicU8::new(IDLE),
        cell: UnsafeCell::new(None),
    });
    (MainSide(inner.clone()), AudioSide(inner))
}

impl<T> Inner<T> {
    /// Takes the cell's value. The caller's turn.
    fn take(&self) -> Option<T> {
        // SAFETY: called only in the caller's turn (see `Inner`'s Sync).
        self.cell.with_mut(|c| unsafe { (*c).take() })
    }

    /// Puts `v` in the cell and passes the turn on as `next`. The caller's turn.
    fn put(&self, v: T, next: u8) {
        // SAFETY: as for `take`. What the cell held is `None` in every turn that puts.
        self.cell.with_mut(|c| unsafe { *c = Some(v) });
        self.state.store(next, Ordering::Release);
    }
}

impl<T> MainSide<T> {
    /// Asks the audio side for its value; false when a hand-over is under way already.
    pub(crate) fn ask(&self) -> bool {
        if self.0.state.load(Ordering::Acquire) != IDLE {
            return false;
        }
        self.0.state.store(WANTED, Ordering::Release);
        true
    }

    /// What the audio side gave, once: then it is this side's turn until
    /// [`give_back`](MainSide::give_back).
    pub(crate) fn take(&self) -> Option<T> {
        (self.0.state.load(Ordering::Acquire) == GIVEN)
            .then(|| self.0.take())
            .flatten()
    }

    /// Hands `v` to the audio side, after a [`take`](MainSide::take).
    pub(crate) fn give_back(&self, v: T) {
        debug_assert_eq!(self.0.state.load(Ordering::Relaxed), GIVEN);
        self.0.put(v, RETURNED);
    }

    /// What the audio side is done with, once it is: the hand-over is over, and another
    /// may be [`ask`](MainSide::ask)ed for.
    pub(crate) fn take_spent(&self) -> Option<T> {
        if self.0.state.load(Ordering::Acquire) != SPENT {
            return None;
        }
        let v = self.0.take();
        self.0.state.store(IDLE, Ordering::Release);
        v
    }

    /// Ends the hand-over with the audio side given up: whatever the cell holds, in any
    /// turn, since nobody is left on the other side.
    pub(crate) fn close(&self, audio: AudioSide<T>) -> Option<T> {
        drop(audio);
        // The acquire pairs with the audio side's last release: what it put is visible.
        self.0.state.load(Ordering::Acquire);
        let v = self.0.take();
        self.0.state.store(IDLE, Ordering::Release);
        v
    }
}

impl<T> AudioSide<T> {
    /// True when the main side asked for the value: [`give`](AudioSide::give) it.
    pub(crate) fn wanted(&self) -> bool {
        self.0.state.load(Ordering::Acquire) == WANTED
    }

    /// Gives `v` to the main side, when [`wanted`](AudioSide::wanted).
    pub(crate) fn give(&self, v: T) {
        debug_assert_eq!(self.0.state.load(Ordering::Relaxed), WANTED);
        self.0.put(v, GIVEN);
    }

    /// What the main side gave back, once: then [`spend`](AudioSide::spend) what it
    /// replaces.
    pub(crate) fn take_returned(&self) -> Option<T> {
        (self.0.state.load(Ordering::Acquire) == RETURNED)
            .then(|| self.0.take())
            .flatten()
    }

    /// Gives the main side what the returned value replaced, to free, after a
    /// [`take_returned`](AudioSide::take_returned).
    pub(crate) fn spend(&self, v: T) {
        debug_assert_eq!(self.0.state.load(Ordering::Relaxed), RETURNED);
        self.0.put(v, SPENT);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_passes_each_value_once_and_only_in_turn() {
        let (main, audio) = pair::<u32>();
        assert!(!audio.wanted() && main.take().is_none());
        assert!(main.ask());
        assert!(!main.ask(), "one hand-over at a time");
        assert!(audio.wanted());
        audio.give(1);
        assert!(!audio.wanted() && audio.take_returned().is_none());
        assert_eq!(main.take(), Some(1));
        assert_eq!(main.take(), None);
        main.give_back(2);
        assert!(main.take_spent().is_none());
        assert_eq!(audio.take_returned(), Some(2));
        audio.spend(3);
        assert_eq!(main.take_spent(), Some(3));
        assert!(main.ask(), "idle again");
        assert_eq!(main.close(audio), None);
    }
}
