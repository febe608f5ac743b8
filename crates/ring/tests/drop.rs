//! Owned values: every value pushed is dropped exactly once, by whoever ends up holding it: the
//! consumer that popped it, the producer that got it back from a full ring, or the ring itself
//! when both ends are gone. Each value counts its own drops, so a leak (0) and a double drop (2)
//! both show. Miri runs these too, and also fails a leak of the boxed payloads.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use downbeat_ring::{Full, RingBuffer};

/// One drop counter per value id.
#[derive(Clone)]
struct Tally(Arc<Vec<AtomicU32>>);

impl Tally {
    fn new(n: usize) -> Self {
        Self(Arc::new((0..n).map(|_| AtomicU32::new(0)).collect()))
    }

    fn value(&self, id: usize) -> Counted {
        Counted {
            id,
            tally: self.clone(),
            _heap: Box::new(id as u64),
        }
    }

    fn drops(&self) -> Vec<u32> {
        self.0.iter().map(|c| c.load(Ordering::Relaxed)).collect()
    }
}

/// A value that owns heap memory and reports its drop.
struct Counted {
    id: usize,
    tally: Tally,
    _heap: Box<u64>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.tally.0[self.id].fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn values_left_in_the_ring_are_dropped_once_with_the_last_end() {
    for capacity in [1, 2, 3, 5] {
        // `shift` moves the indices first, so the values left behind straddle the end of the
        // storage and the wrap of the positions past `2 * capacity`.
        for shift in 0..2 * capacity {
            for pushed in 0..=capacity {
                for popped in 0..=pushed {
                    for producer_last in [false, true] {
                        let case = format!(
                            "capacity {capacity}, shift {shift}, {pushed} pushed, {popped} \
                             popped, producer dropped {}",
                            if producer_last { "last" } else { "first" }
                        );
                        let tally = Tally::new(shift + pushed);
                        let (mut tx, mut rx) = RingBuffer::new(capacity);
                        for id in 0..shift + pushed {
                            assert!(tx.push(tally.value(id)).is_ok(), "{case}");
                            if id < shift {
                                assert_eq!(rx.pop().map(|v| v.id), Some(id), "{case}");
                            }
                        }
                        for id in shift..shift + popped {
                            assert_eq!(rx.pop().map(|v| v.id), Some(id), "{case}");
                        }
                        let mut expected: Vec<u32> = (0..shift + pushed)
                            .map(|id| u32::from(id < shift + popped))
                            .collect();
                        assert_eq!(tally.drops(), expected, "{case}: popped values");
                        if producer_last {
                            drop(rx);
                            assert_eq!(tally.drops(), expected, "{case}: one end left");
                            drop(tx);
                        } else {
                            drop(tx);
                            assert_eq!(tally.drops(), expected, "{case}: one end left");
                            drop(rx);
                        }
                        expected.fill(1);
                        assert_eq!(tally.drops(), expected, "{case}: both ends gone");
                    }
                }
            }
        }
    }
}

#[test]
fn a_full_ring_hands_the_value_back_and_peek_only_lends() {
    let tally = Tally::new(3);
    let (mut tx, mut rx) = RingBuffer::new(1);
    assert!(tx.push(tally.value(0)).is_ok());
    let Err(Full(back)) = tx.push(tally.value(1)) else {
        panic!("a ring of one took two values");
    };
    assert_eq!(back.id, 1);
    assert_eq!(tally.drops(), [0, 0, 0]);
    drop(back);
    assert_eq!(rx.peek().map(|v| v.id), Some(0));
    assert_eq!(rx.peek().map(|v| v.id), Some(0));
    assert_eq!(
        tally.drops(),
        [0, 1, 0],
        "peeking dropped or moved the value"
    );
    assert_eq!(rx.pop().map(|v| v.id), Some(0));
    assert!(tx.push(tally.value(2)).is_ok());
    assert_eq!(tally.drops(), [1, 1, 0]);
    drop((rx, tx));
    assert_eq!(tally.drops(), [1, 1, 1]);
}

#[test]
fn ends_dropped_on_two_threads_leave_nothing_behind() {
    let rounds = if cfg!(miri) { 4 } else { 200 };
    for round in 0..rounds {
        let n = 64;
        let tally = Tally::new(n);
        let (mut tx, mut rx) = RingBuffer::new(8);
        let values: Vec<Counted> = (0..n).map(|id| tally.value(id)).collect();
        std::thread::scope(|s| {
            s.spawn(move || {
                for v in values {
                    // Give up on the rest after a while: those are dropped here, by the caller.
                    if let Err(Full(_back)) = tx.push(v) {
                        std::thread::yield_now();
                    }
                }
            });
            s.spawn(move || {
                // Pop a few, then leave: whichever end goes last drops what is in the ring.
                for _ in 0..round % 16 {
                    let _ = rx.pop();
                }
            });
        });
        assert_eq!(tally.drops(), vec![1; n], "round {round}");
    }
}

/// A consumer learns that its producer is gone only after everything it pushed is readable:
/// "abandoned and empty" means nothing is left, which is when the engine frees a dropped
/// controller's queue. The other end is told the same way.
#[test]
fn an_abandoned_ring_still_holds_what_was_pushed() {
    let tally = Tally::new(3);
    let (mut tx, mut rx) = RingBuffer::new(4);
    let producer = std::thread::spawn(move || {
        for id in 0..3 {
            assert!(tx.push(tally.value(id)).is_ok());
        }
    });
    producer.join().unwrap();
    assert!(rx.is_abandoned());
    let ids: Vec<usize> = std::iter::from_fn(|| rx.pop()).map(|v| v.id).collect();
    assert_eq!(ids, [0, 1, 2]);
    assert!(rx.is_empty());

    let (tx, rx) = RingBuffer::<u8>::new(1);
    assert!(!tx.is_abandoned() && !rx.is_abandoned());
    drop(rx);
    assert!(tx.is_abandoned());
}
