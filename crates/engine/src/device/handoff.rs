//! [`Handoff`]: a value the audio callback uses and the control thread takes back, without
//! a lock on the audio side.
//!
//! A driver's callback must own its state (`Send + 'static`), yet the control thread needs
//! the engine back when the run ends, also when the driver died mid-run and will never give
//! its callback back. The callback borrows the value for one call at a time by flipping a
//! state word `FREE -> BUSY` and back; the control thread flips it `FREE -> TAKEN` once, and
//! from then on the callback finds nothing and plays silence. The callback never waits; the
//! control thread waits only for one callback to finish.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const FREE: u8 = 0;
const BUSY: u8 = 1;
const TAKEN: u8 = 2;

pub(crate) struct Handoff<T> {
    state: AtomicU8,
    value: UnsafeCell<Option<T>>,
}

// SAFETY: `value` is reached only by the thread that moved `state` to BUSY (the callback,
// until it stores FREE) or to TAKEN (the control thread, for good); the compare-exchanges
// make those holders exclusive, and their Acquire/Release pairs order each holder's accesses
// after the previous holder's. `T: Send` because the value moves between those threads.
unsafe impl<T: Send> Sync for Handoff<T> {}

impl<T: Send> Handoff<T> {
    pub(crate) fn new(value: T) -> Arc<Self> {
        Arc::new(Self {
            state: AtomicU8::new(FREE),
            value: UnsafeCell::new(Some(value)),
        })
    }

    /// Calls `f` with the value unless the control thread has taken it. Never waits, never
    /// allocates: for the audio callback.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        self.state
            .compare_exchange(FREE, BUSY, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        /// Frees the value again when `f` returns or unwinds.
        struct Release<'a>(&'a AtomicU8);
        impl Drop for Release<'_> {
            fn drop(&mut self) {
                self.0.store(FREE, Ordering::Release);
            }
        }
        let _release = Release(&self.state);
        // SAFETY: this thread moved the state to BUSY, which no other thread can leave until
        // `_release` stores FREE, so the access is exclusive (see the `Sync` impl).
        let value = unsafe { &mut *self.value.get() };
        value.as_mut().map(f)
    }

    /// Takes the value for good, waiting for a callback that holds it to return, at most
    /// `timeout`. `None` when it was taken before, or a callback never returned.
    pub(crate) fn take(&self, timeout: Duration) -> Option<T> {
        let deadline = Instant::now() + timeout;
        loop {
            match self
                .state
                .compare_exchange(FREE, TAKEN, Ordering::Acquire, Ordering::Relaxed)
            {
                // SAFETY: the state is TAKEN from now on, so no callback reaches the value
                // again and this is the only access (see the `Sync` impl).
                Ok(_) => return unsafe { (*self.value.get()).take() },
                Err(TAKEN) => return None,
                Err(_) if Instant::now() >= deadline => return None,
                Err(_) => std::thread::sleep(Duration::from_micros(200)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn the_callback_sees_the_value_until_it_is_taken() {
        let h = Handoff::new(5u32);
        assert_eq!(h.with(|v| *v += 1), Some(()));
        assert_eq!(h.take(Duration::from_secs(1)), Some(6));
        assert_eq!(h.with(|v| *v), None, "taken for good");
        assert_eq!(h.take(Duration::ZERO), None);
    }

    #[test]
    fn take_waits_for_a_running_callback_and_never_sees_it_half_done() {
        let h = Handoff::new(0u64);
        let calls = Arc::new(AtomicU64::new(0));
        let (audio, seen) = (Arc::clone(&h), Arc::clone(&calls));
        let t = std::thread::spawn(move || {
            // Each call makes the value odd, then even again: a torn view would be odd.
            while audio
                .with(|v| {
                    *v += 1;
                    std::hint::black_box(&v);
                    *v += 1;
                })
                .is_some()
            {
                seen.fetch_add(1, Ordering::Relaxed);
            }
        });
        while calls.load(Ordering::Relaxed) < 1000 {
            std::thread::yield_now();
        }
        let v = h.take(Duration::from_secs(5)).expect("taken");
        t.join().unwrap();
        assert_eq!(v % 2, 0);
        assert!(v >= 2000);
    }

    #[test]
    fn a_callback_that_never_returns_times_out_the_take() {
        let h = Handoff::new(1u8);
        let (audio, go) = (Arc::clone(&h), Arc::new(std::sync::Barrier::new(2)));
        let started = Arc::clone(&go);
        let t = std::thread::spawn(move || {
            audio.with(|_| {
                started.wait();
                std::thread::sleep(Duration::from_millis(300));
            })
        });
        go.wait();
        assert_eq!(h.take(Duration::from_millis(50)), None);
        t.join().unwrap();
        assert_eq!(h.take(Duration::from_millis(50)), Some(1), "free again");
    }
}
