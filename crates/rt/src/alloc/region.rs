//! Memory for a heap: allocated once, every page touched, locked in RAM when permitted.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;

use super::AllocError;

const PAGE: usize = 4096;

/// A page-aligned block of memory that has been faulted in and, if the system allows it, locked.
pub(crate) struct Region {
    ptr: NonNull<u8>,
    layout: Layout,
    locked: bool,
    pub(crate) note: Option<String>,
}

// SAFETY: the region is plain memory; who may touch which part is decided by its users.
unsafe impl Send for Region {}
// SAFETY: as above; the region itself has no interior state.
unsafe impl Sync for Region {}

impl Region {
    pub(crate) fn new(bytes: usize) -> Result<Self, AllocError> {
        let bytes = bytes.div_ceil(PAGE).max(1) * PAGE;
        let layout = Layout::from_size_align(bytes, PAGE).map_err(|_| AllocError::TooLarge)?;
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { alloc_zeroed(layout) }).ok_or(AllocError::OutOfMemory)?;
        // A zeroed allocation may be fresh pages from the kernel that are not backed yet: write
        // every page so the first real use on the audio thread is not a page fault.
        for offset in (0..bytes).step_by(PAGE) {
            // SAFETY: offset < bytes, inside the allocation.
            unsafe { ptr.as_ptr().add(offset).write_volatile(0) };
        }
        let (locked, note) = lock(ptr, bytes);
        Ok(Self {
            ptr,
            layout,
            locked,
            note,
        })
    }

    pub(crate) fn start(&self) -> NonNull<u8> {
        self.ptr
    }

    pub(crate) fn len(&self) -> usize {
        self.layout.size()
    }

    pub(crate) fn locked(&self) -> bool {
        self.locked
    }
}

#[cfg(unix)]
fn lock(ptr: NonNull<u8>, bytes: usize) -> (bool, Option<String>) {
    // SAFETY: the range is one live allocation of ours.
    if unsafe { libc::mlock(ptr.as_ptr().cast(), bytes) } == 0 {
        (true, None)
    } else {
        let err = std::io::Error::last_os_error();
        (
            false,
            Some(format!(
                "mlock of {bytes} bytes refused ({err}); the heap is pre-faulted but may be paged \
                 out under memory pressure (raise RLIMIT_MEMLOCK, e.g. `ulimit -l`, to lock it)"
            )),
        )
    }
}

#[cfg(not(unix))]
fn lock(_: NonNull<u8>, _: usize) -> (bool, Option<String>) {
    (
        false,
        Some("memory locking is not implemented on this OS; the heap is pre-faulted only".into()),
    )
}

impl Drop for Region {
    fn drop(&mut self) {
        #[cfg(unix)]
        if self.locked {
            // SAFETY: the range was locked by `new` and is still ours.
            unsafe { libc::munlock(self.ptr.as_ptr().cast(), self.layout.size()) };
        }
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) };
    }
}
