//! The atomics the ring is built on, swapped for loom's models under `cfg(loom)`, plus the
//! slot-access tracker that lets loom see the data the indices are supposed to protect.

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicU32, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, Ordering};

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
