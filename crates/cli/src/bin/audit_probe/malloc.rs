//! The heap probe: `malloc` and friends defined by this executable, counting a plugin's
//! allocations below Rust's allocator.
//!
//! A plugin allocates with libc's `malloc`, not through Downbeat's Rust allocator, so this
//! executable (and only this one) defines `malloc`, `free`, `calloc`, `realloc`,
//! `reallocarray`, `posix_memalign`, `aligned_alloc` and `memalign` itself. The dynamic linker resolves a
//! `dlopen`ed library's references to those symbols to the executable's definitions (the
//! executable comes first in the lookup order, and the linker exports them because libc
//! defines them too), so every call a plugin makes lands here. Each one counts itself when
//! the calling thread is armed (a thread-local flag, set only on the audited thread around
//! one process call) and goes on to glibc's own implementation through its `__libc_*` entry
//! points, which need no `dlsym` (that could allocate, and recurse). The counters are
//! atomics and a fixed array: counting never allocates.

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use downbeat_plugin::audit::{MallocCounts, MallocProbe, MALLOC_SIZES};

extern "C" {
    fn __libc_malloc(size: usize) -> *mut c_void;
    fn __libc_free(ptr: *mut c_void);
    fn __libc_calloc(n: usize, size: usize) -> *mut c_void;
    fn __libc_realloc(ptr: *mut c_void, size: usize) -> *mut c_void;
    fn __libc_memalign(align: usize, size: usize) -> *mut c_void;
    fn __errno_location() -> *mut c_int;
}

const EINVAL: c_int = 22;
const ENOMEM: c_int = 12;

thread_local! {
    // `const` and without a destructor: reading it never allocates nor registers anything,
    // so it is safe inside `malloc`.
    static ARMED: Cell<bool> = const { Cell::new(false) };
}

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
static FREES: AtomicU64 = AtomicU64::new(0);
static SIZES: [AtomicUsize; MALLOC_SIZES] = [const { AtomicUsize::new(0) }; MALLOC_SIZES];

fn armed() -> bool {
    ARMED.try_with(Cell::get).unwrap_or(false)
}

fn note_alloc(size: usize) {
    if armed() {
        let n = ALLOCATIONS.fetch_add(1, Relaxed) as usize;
        BYTES.fetch_add(size as u64, Relaxed);
        if let Some(slot) = SIZES.get(n) {
            slot.store(size, Relaxed);
        }
    }
}

fn note_free() {
    if armed() {
        FREES.fetch_add(1, Relaxed);
    }
}

/// `malloc(3)`, counted.
///
/// # Safety
/// As `malloc(3)`.
#[no_mangle]
pub unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    note_alloc(size);
    // SAFETY: glibc's malloc, called as malloc is.
    unsafe { __libc_malloc(size) }
}

/// `free(3)`, counted.
///
/// # Safety
/// As `free(3)`: `ptr` is null or came from this allocator and was not freed.
#[no_mangle]
pub unsafe extern "C" fn free(ptr: *mut c_void) {
    if !ptr.is_null() {
        note_free();
    }
    // SAFETY: forwarded unchanged; every allocation function here hands out glibc blocks.
    unsafe { __libc_free(ptr) }
}

/// `calloc(3)`, counted.
///
/// # Safety
/// As `calloc(3)`.
#[no_mangle]
pub unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    note_alloc(n.saturating_mul(size));
    // SAFETY: glibc's calloc, which checks the product for overflow itself.
    unsafe { __libc_calloc(n, size) }
}

/// `realloc(3)`, counted: an allocation of the new size, and a free of the old block.
///
/// # Safety
/// As `realloc(3)`.
#[no_mangle]
pub unsafe extern "C" fn realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    if size != 0 || ptr.is_null() {
        note_alloc(size);
    }
    if !ptr.is_null() {
        note_free();
    }
    // SAFETY: forwarded unchanged to glibc's realloc; `ptr` is a glibc block or null.
    unsafe { __libc_realloc(ptr, size) }
}

/// `reallocarray(3)`, counted as `realloc`.
///
/// # Safety
/// As `reallocarray(3)`.
#[no_mangle]
pub unsafe extern "C" fn reallocarray(ptr: *mut c_void, n: usize, size: usize) -> *mut c_void {
    match n.checked_mul(size) {
        // SAFETY: the same contract as ours.
        Some(total) => unsafe { realloc(ptr, total) },
        None => {
            // SAFETY: errno is this thread's, always writable.
            unsafe { *__errno_location() = ENOMEM };
            std::ptr::null_mut()
        }
    }
}

/// `memalign(3)`, counted.
///
/// # Safety
/// As `memalign(3)`.
#[no_mangle]
pub unsafe extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
    note_alloc(size);
    // SAFETY: glibc's memalign, which validates `align` itself.
    unsafe { __libc_memalign(align, size) }
}

/// `aligned_alloc(3)`, counted.
///
/// # Safety
/// As `aligned_alloc(3)`.
#[no_mangle]
pub unsafe extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    // SAFETY: glibc implements aligned_alloc as memalign.
    unsafe { memalign(align, size) }
}

/// `posix_memalign(3)`, counted.
///
/// # Safety
/// As `posix_memalign(3)`: `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
    if !align.is_power_of_two() || align % std::mem::size_of::<usize>() != 0 {
        return EINVAL;
    }
    note_alloc(size);
    // SAFETY: a valid alignment, checked above.
    let p = unsafe { __libc_memalign(align, size) };
    if p.is_null() {
        return ENOMEM;
    }
    // SAFETY: the caller hands a writable pointer, as posix_memalign requires.
    unsafe { *out = p };
    0
}

/// The probe over the functions above.
pub struct LibcProbe;

impl MallocProbe for LibcProbe {
    fn arm(&self) {
        ALLOCATIONS.store(0, Relaxed);
        BYTES.store(0, Relaxed);
        FREES.store(0, Relaxed);
        ARMED.with(|a| a.set(true));
    }

    fn disarm(&self) -> MallocCounts {
        ARMED.with(|a| a.set(false));
        let allocations = ALLOCATIONS.load(Relaxed);
        let mut counts = MallocCounts {
            allocations,
            bytes: BYTES.load(Relaxed),
            frees: FREES.load(Relaxed),
            sizes_len: (allocations as usize).min(MALLOC_SIZES),
            ..MallocCounts::default()
        };
        for (dst, src) in counts.sizes.iter_mut().zip(&SIZES) {
            *dst = src.load(Relaxed);
        }
        counts
    }
}
