//! Blocking calls the kernel cannot see: annotations and a lock that uses
//! them.
//!
//! An uncontended `std::sync::Mutex::lock` on Linux is one compare-and-swap
//! on the mutex word, and unlocking is one swap: no system call, no
//! allocation, no context switch, nothing a page-fault or rusage counter
//! moves for. To the machine it is the same instructions as the atomics real-
//! time code is allowed to use, so no mechanism that watches the thread from
//! outside can report it without also reporting every atomic. Yet it is a
//! bug: the day another thread holds the lock, the audio thread waits.
//!
//! So the lock has to say so itself, the way RealtimeSanitizer's
//! `__rtsan_notify_blocking_call` does: [`notify_blocking`] records a
//! violation when called inside an armed scope, and [`Mutex`] calls it on
//! every `lock`. Code shared with the audio thread that must take a lock
//! (a non-real-time path, a control thread) uses [`Mutex`]; the guard then
//! catches the audio thread taking it even when nobody else holds it.

use std::fmt;
use std::sync::{LockResult, MutexGuard, TryLockResult};

use super::state;

/// Records a call to `name`, a function that may block, as a violation of the
/// armed scope the current thread is in; does nothing outside one.
///
/// Costs one thread-local read when not armed, and never allocates, locks or
/// makes a system call, so it may sit on any path.
///
/// # Examples
///
/// ```
/// use downbeat_rt::guard::{self, notify_blocking};
///
/// fn wait_for_disk() {
///     notify_blocking("wait_for_disk");
///     // ...
/// }
///
/// let report = guard::check(wait_for_disk);
/// assert_eq!(report.blocking_calls[0].name, "wait_for_disk");
/// assert!(!report.is_clean());
/// ```
pub fn notify_blocking(name: &'static str) {
    state::record_blocking(name);
}

/// A [`std::sync::Mutex`] whose `lock` the guard reports, contended or not.
///
/// [`try_lock`](Mutex::try_lock) is not reported: it never waits, which is
/// why real-time code may use it.
///
/// # Examples
///
/// ```
/// use downbeat_rt::guard::{self, Mutex};
///
/// let shared = Mutex::new(0);
/// let report = guard::check(|| *shared.lock().unwrap() += 1);
/// assert_eq!(report.blocking_calls[0].name, "Mutex::lock");
///
/// let report = guard::check(|| {
///     if let Ok(mut n) = shared.try_lock() {
///         *n += 1;
///     }
/// });
/// assert!(report.blocking_calls.is_empty());
/// ```
#[derive(Default)]
pub struct Mutex<T: ?Sized> {
    inner: std::sync::Mutex<T>,
}

impl<T> Mutex<T> {
    /// An unlocked mutex holding `value`.
    ///
    /// ```
    /// static SETTINGS: downbeat_rt::guard::Mutex<u32> = downbeat_rt::guard::Mutex::new(44_100);
    /// assert_eq!(*SETTINGS.lock().unwrap(), 44_100);
    /// ```
    pub const fn new(value: T) -> Self {
        Self {
            inner: std::sync::Mutex::new(value),
        }
    }

    /// Consumes the mutex, returning the value.
    ///
    /// ```
    /// let m = downbeat_rt::guard::Mutex::new(3);
    /// assert_eq!(m.into_inner().unwrap(), 3);
    /// ```
    pub fn into_inner(self) -> LockResult<T> {
        self.inner.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks, waiting for another holder if there is one; reported as the
    /// blocking call `Mutex::lock` inside an armed scope.
    ///
    /// ```
    /// let m = downbeat_rt::guard::Mutex::new(vec![1]);
    /// m.lock().unwrap().push(2);
    /// assert_eq!(*m.lock().unwrap(), [1, 2]);
    /// ```
    pub fn lock(&self) -> LockResult<MutexGuard<'_, T>> {
        notify_blocking("Mutex::lock");
        self.inner.lock()
    }

    /// Locks if no one holds the lock, without waiting; not reported.
    ///
    /// ```
    /// let m = downbeat_rt::guard::Mutex::new(1);
    /// let held = m.lock().unwrap();
    /// assert!(m.try_lock().is_err());
    /// drop(held);
    /// assert!(m.try_lock().is_ok());
    /// ```
    pub fn try_lock(&self) -> TryLockResult<MutexGuard<'_, T>> {
        self.inner.try_lock()
    }

    /// The value, through exclusive access that needs no locking.
    ///
    /// ```
    /// let mut m = downbeat_rt::guard::Mutex::new(1);
    /// *m.get_mut().unwrap() = 2;
    /// assert_eq!(*m.lock().unwrap(), 2);
    /// ```
    pub fn get_mut(&mut self) -> LockResult<&mut T> {
        self.inner.get_mut()
    }
}

impl<T> From<T> for Mutex<T> {
    fn from(value: T) -> Self {
        Self::new(value)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}
