//! Deferred reclamation: the audio thread hands over what it no longer needs, another
//! thread frees it.
//!
//! Freeing memory can take a lock inside the allocator or return pages to the kernel, so
//! the audio thread must never drop a heap allocation. [`Retirer::retire`] moves a `Box`
//! into a preallocated wait-free queue instead (one pointer-sized push, in the spirit of
//! basedrop); [`Collector::collect`], called from any ordinary thread, drops everything
//! retired so far.
//!
//! ```
//! use downbeat_rt::reclaim;
//!
//! let (mut retirer, mut collector) = reclaim::queue(16);
//! let big = Box::new([0u8; 4096]);
//! // On the audio thread: no free happens here.
//! retirer.retire(big).expect("queue has room");
//! // Elsewhere, later:
//! assert_eq!(collector.collect(), 1);
//! ```

use downbeat_ring::{Consumer, Producer, RingBuffer};

/// One retired allocation: its address and how to drop it.
#[derive(Clone, Copy)]
struct Garbage {
    addr: usize,
    drop: unsafe fn(usize),
}

/// # Safety
/// `addr` must come from `Box::<T>::into_raw` and not have been dropped yet.
unsafe fn drop_box<T>(addr: usize) {
    // SAFETY: the caller's promise: `addr` is a live `Box<T>` we now own.
    drop(unsafe { Box::from_raw(addr as *mut T) });
}

/// The audio thread's end: retires boxes without freeing them. Real-time safe.
pub struct Retirer {
    tx: Producer<Garbage>,
}

/// The freeing end, for any thread that may block.
pub struct Collector {
    rx: Consumer<Garbage>,
}

/// A reclamation queue with room for `capacity` retired boxes awaiting collection.
pub fn queue(capacity: usize) -> (Retirer, Collector) {
    let (tx, rx) = RingBuffer::new(capacity);
    (Retirer { tx }, Collector { rx })
}

impl Retirer {
    /// Hands `value` over to the collector without freeing it. When the queue is full the
    /// box comes back untouched: the caller keeps it and may retry after a collection.
    pub fn retire<T: Send + 'static>(&mut self, value: Box<T>) -> Result<(), Box<T>> {
        if self.tx.is_full() {
            return Err(value);
        }
        let g = Garbage {
            addr: Box::into_raw(value) as usize,
            drop: drop_box::<T>,
        };
        if self.tx.push(g).is_err() {
            unreachable!("only this producer fills the queue, and it had room");
        }
        Ok(())
    }

    /// Boxes that can be retired before the collector must run.
    pub fn room(&self) -> usize {
        self.tx.available_write()
    }
}

impl Collector {
    /// Drops everything retired so far; returns how many boxes were freed.
    pub fn collect(&mut self) -> usize {
        let mut n = 0;
        while let Some(g) = self.rx.pop() {
            // SAFETY: every `Garbage` in the queue was made by `retire` from a live box,
            // and popping hands it to us exactly once.
            unsafe { (g.drop)(g.addr) };
            n += 1;
        }
        n
    }

    /// Boxes waiting to be freed.
    pub fn pending(&self) -> usize {
        self.rx.available_read()
    }
}

impl Drop for Collector {
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
    fn retired_values_are_dropped_by_the_collector_exactly_once() {
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
            "dropping the collector frees the rest"
        );
    }
}
