//! Deferred reclamation: the audio thread hands over what it no longer needs, another
//! thread frees it.
//!
//! Freeing memory can take a lock inside the allocator or return pages to the kernel, so
//! the audio thread must never drop a heap allocation. [`Retirer::retire`] moves a `Box`
//! into a preallocated wait-free queue instead (one push of the box itself, in the spirit of
//! basedrop); [`Reclaimer::collect`], called from any ordinary thread, drops everything
//! retired so far.
//!
//! ```
//! use downbeat_rt::reclaim;
//!
//! let (mut retirer, mut reclaimer) = reclaim::queue(16);
//! let big = Box::new([0u8; 4096]);
//! // On the audio thread: no free happens here.
//! retirer.retire(big).expect("queue has room");
//! // Elsewhere, later:
//! assert_eq!(reclaimer.collect(), 1);
//! ```

use downbeat_ring::{Consumer, Producer, RingBuffer};

/// One retired allocation. Turning a `Box<T>` into a `Box<dyn Send>` only attaches `T`'s drop
/// to the pointer: it neither allocates nor frees, so retiring stays real-time safe.
type Garbage = Box<dyn Send>;

/// The audio thread's end: retires boxes without freeing them. Real-time safe.
pub struct Retirer {
    tx: Producer<Garbage>,
}

/// The freeing end, for any thread that may block: drops what the [`Retirer`] handed over.
pub struct Reclaimer {
    rx: Consumer<Garbage>,
}

/// A reclamation queue with room for `capacity` retired boxes awaiting collection.
pub fn queue(capacity: usize) -> (Retirer, Reclaimer) {
    let (tx, rx) = RingBuffer::new(capacity);
    (Retirer { tx }, Reclaimer { rx })
}

impl Retirer {
    /// Hands `value` over to the reclaimer without freeing it. When the queue is full the
    /// box comes back untouched: the caller keeps it and may retry after a collection.
    pub fn retire<T: Send + 'static>(&mut self, value: Box<T>) -> Result<(), Box<T>> {
        if self.tx.is_full() {
            return Err(value);
        }
        if self.tx.push(value).is_err() {
            unreachable!("only this producer fills the queue, and it had room");
        }
        Ok(())
    }

    /// Boxes that can be retired before the reclaimer must run.
    pub fn room(&self) -> usize {
        self.tx.available_write()
    }
}

impl Reclaimer {
    /// Drops everything retired so far; returns how many boxes were freed.
    pub fn collect(&mut self) -> usize {
        let mut n = 0;
        while let Some(garbage) = self.rx.pop() {
            drop(garbage);
            n += 1;
        }
        n
    }

    /// Boxes waiting to be freed.
    pub fn pending(&self) -> usize {
        self.rx.available_read()
    }
}

impl Drop for Reclaimer {
    fn drop(&mut self) {
        self.collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn retired_values_are_dropped_by_the_reclaimer_exactly_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        let (mut r, mut c) = queue(4);
        for _ in 0..4 {
            r.retire(Box::new(Counted(drops.clone()))).ok().unwrap();
        }
        let back = r.retire(Box::new(Counted(drops.clone())));
        assert!(back.is_err(), "a full queue hands the box back");
        assert_eq!(drops.load(Ordering::Relaxed), 0);
        drop(back);
        assert_eq!(drops.load(Ordering::Relaxed), 1);
        assert_eq!(c.collect(), 4);
        assert_eq!(drops.load(Ordering::Relaxed), 5);
        r.retire(Box::new(Counted(drops.clone()))).ok().unwrap();
        drop(c);
        assert_eq!(
            drops.load(Ordering::Relaxed),
            6,
            "dropping the reclaimer frees the rest"
        );
    }
}
