//! The atomics and the `Arc` the ring is built on, swapped for loom's models under `cfg(loom)`,
//! plus the slot-access tracker that lets loom see the data the indices are supposed to protect.

#[cfg(not(loom))]
pub(crate) use alloc::sync::Arc;
#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{fence, AtomicU32, Ordering};
// Loom's `Arc` models the reference count, so a model sees the last end to drop synchronise
// with the other before it drops what is left in the ring.
#[cfg(loom)]
pub(crate) use loom::sync::{
    atomic::{fence, AtomicU32, Ordering},
    Arc,
};

/// Records every slot access with loom, so that a missing `Release`/`Acquire` pair shows up as a
/// causality violation instead of going unnoticed: loom runs threads one at a time, so plain
/// memory always looks coherent to it and only tracked cells reveal a data race.
#[cfg(loom)]
pub(crate) struct Tracker {
    cells: alloc::boxed::Box<[loom::cell::UnsafeCell<()>]>,
}

#[cfg(loom)]
impl Tracker {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            cells: (0..capacity)
                .map(|_| loom::cell::UnsafeCell::new(()))
                .collect(),
        }
    }

    fn each(&self, slot: u32, n: u32, f: impl Fn(&loom::cell::UnsafeCell<()>)) {
        let capacity = self.cells.len();
        for i in 0..n as usize {
            f(&self.cells[(slot as usize + i) % capacity]);
        }
    }

    pub(crate) fn write(&self, slot: u32, n: u32) {
        self.each(slot, n, |cell| cell.with_mut(|_| ()));
    }

    pub(crate) fn read(&self, slot: u32, n: u32) {
        self.each(slot, n, |cell| cell.with(|_| ()));
    }
}
