//! The counting global allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use super::state;

/// Set by the first allocation that goes through [`GuardAlloc`]; the guard's
/// setup allocates and then reads it to learn whether tracking works.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// A global allocator that forwards to [`System`] and counts, per thread,
/// the allocations and frees made inside an armed [`check`](super::check)
/// scope.
///
/// Outside a scope it costs one thread-local read per call. Reallocations
/// count as allocations of the new size. Install it in the test binary that
/// runs the guard, either by hand or with
/// [`install_guard_allocator!`](crate::install_guard_allocator):
///
/// ```
/// #[global_allocator]
/// static ALLOC: downbeat_rt::guard::GuardAlloc = downbeat_rt::guard::GuardAlloc;
///
/// # fn main() {
/// let mut samples = Vec::with_capacity(1);
/// samples.push(0.0_f32);
/// let report = downbeat_rt::guard::check(|| samples.push(1.0)); // grows: allocates
/// assert_eq!(report.allocations.count, 1);
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct GuardAlloc;

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees carry over; the counting on the side
// touches only atomics and never allocates.
unsafe impl GlobalAlloc for GuardAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        mark_installed();
        state::record_alloc(layout.size());
        // SAFETY: forwarded under the caller's contract for `alloc`.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        mark_installed();
        state::record_alloc(layout.size());
        // SAFETY: forwarded under the caller's contract for `alloc_zeroed`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        state::record_free(layout.size());
        // SAFETY: forwarded under the caller's contract for `dealloc`;
        // `ptr` came from `System` through one of the methods above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        mark_installed();
        state::record_alloc(new_size);
        // SAFETY: forwarded under the caller's contract for `realloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

fn mark_installed() {
    // Load first: a store on every allocation would bounce the cache line
    // between cores.
    if !INSTALLED.load(Relaxed) {
        INSTALLED.store(true, Relaxed);
    }
}

/// Whether any allocation so far went through [`GuardAlloc`].
pub(crate) fn installed() -> bool {
    INSTALLED.load(Relaxed)
}

/// Installs [`GuardAlloc`] as the global allocator: the one line a test
/// binary needs for the guard to see heap traffic.
///
/// ```
/// downbeat_rt::install_guard_allocator!();
///
/// # fn main() {
/// let leak = downbeat_rt::guard::check(|| Box::new(7));
/// assert!(!leak.is_clean());
/// # }
/// ```
#[macro_export]
macro_rules! install_guard_allocator {
    () => {
        #[global_allocator]
        static DOWNBEAT_GUARD_ALLOC: $crate::guard::GuardAlloc = $crate::guard::GuardAlloc;
    };
}
