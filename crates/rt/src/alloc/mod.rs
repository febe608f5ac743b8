//! Real-time allocation: a TLSF allocator the audio thread owns, with [`RtBox`] and [`RtVec`] on
//! top.
//!
//! A [`Heap`] is made once, off the audio thread: its memory is allocated, every page is written
//! so it is backed, and it is `mlock`ed when the system permits (otherwise [`Heap::note`] says
//! why not and the heap carries on pre-faulted only). The audio thread then calls
//! [`Heap::bind`] to become the heap's owner, and allocates and frees through the [`RtAlloc`] it
//! gets: both are O(1) (two-level segregated fit: two bitmap scans and a few list operations), no
//! system call, no lock. Running out of memory is an [`AllocError`], never an abort.
//!
//! [`RtBox`] and [`RtVec`] may be sent to other threads. Dropped on the owner thread they free
//! at once; dropped anywhere else they push their block onto a lock-free list inside the freed
//! block itself, and the owner applies those frees later: a few on every allocation, all of them
//! on [`RtAlloc::collect_remote`] or when an allocation would otherwise fail. The list needs no
//! capacity because its links live in the memory being returned, so a remote drop can never
//! fail the way a full ring would.
//!
//! ```
//! use downbeat_rt::alloc::{Heap, RtBox};
//!
//! let heap = Heap::new(1 << 20).expect("1 MiB heap");
//! if let Some(note) = heap.note() {
//!     eprintln!("{note}"); // e.g. mlock not permitted
//! }
//! // On the audio thread:
//! let mut rt = heap.bind().expect("first owner");
//! let voice: RtBox<[f32; 64]> = rt.boxed([0.0; 64]).expect("room for a voice");
//! let mut line = rt.vec::<f32>(4800).expect("room for a delay line");
//! line.push(0.25).unwrap();
//! assert_eq!(line[0], 0.25);
//! // A box handed to another thread and dropped there comes back to the owner later.
//! std::thread::spawn(move || drop(voice)).join().unwrap();
//! assert_eq!(rt.collect_remote(), 1);
//! ```

mod region;
mod tlsf;

use std::alloc::Layout;
use std::cell::{Cell, UnsafeCell};
use std::fmt;
use std::marker::PhantomData;
use std::mem::{self, ManuallyDrop};
use std::ops::{Deref, DerefMut};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;

pub use tlsf::Tlsf;

use region::Region;

/// Why an allocation or a heap operation failed.
///
/// ```
/// use downbeat_rt::alloc::{AllocError, Heap};
/// let heap = Heap::new(64 * 1024).unwrap();
/// let mut rt = heap.bind().unwrap();
/// assert_eq!(rt.vec::<u8>(1 << 20).err(), Some(AllocError::OutOfMemory));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AllocError {
    /// No free block is large enough.
    OutOfMemory,
    /// The layout asks for more than 16-byte alignment, which this allocator does not offer.
    Alignment,
    /// The size is beyond what one block can describe.
    TooLarge,
    /// The region is too small to manage.
    TooSmall,
    /// [`Heap::bind`] was called while another [`RtAlloc`] owns the heap.
    AlreadyBound,
    /// The container belongs to another heap.
    WrongHeap,
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AllocError::OutOfMemory => "the real-time heap has no free block large enough",
            AllocError::Alignment => "alignment above 16 bytes is not supported by the heap",
            AllocError::TooLarge => "the requested size is beyond the heap's largest block",
            AllocError::TooSmall => "the region is too small for a heap",
            AllocError::AlreadyBound => "the heap already has an owner thread",
            AllocError::WrongHeap => "the container belongs to another heap",
        })
    }
}

impl std::error::Error for AllocError {}

/// A value that could not be placed in the heap, handed back with the reason.
///
/// ```
/// use downbeat_rt::alloc::Heap;
/// let heap = Heap::new(4096).unwrap();
/// let mut rt = heap.bind().unwrap();
/// let big = [1u8; 8192];
/// let rejected = rt.boxed(big).unwrap_err();
/// assert_eq!(rejected.value[0], 1);
/// ```
#[derive(Debug)]
pub struct Rejected<T> {
    /// Why.
    pub error: AllocError,
    /// The value, untouched.
    pub value: T,
}

thread_local! {
    // Const-initialised and without a destructor: reading it never allocates or registers
    // anything, so it is safe on the audio thread.
    static TAG: Cell<u64> = const { Cell::new(0) };
}
static NEXT_TAG: AtomicU64 = AtomicU64::new(1);

/// A number naming the calling thread, never reused (unlike thread-local addresses or OS ids).
fn thread_tag() -> u64 {
    TAG.with(|t| {
        let v = t.get();
        if v != 0 {
            return v;
        }
        let v = NEXT_TAG.fetch_add(1, Ordering::Relaxed);
        t.set(v);
        v
    })
}

/// What only the owner thread touches.
struct OwnerSide {
    tlsf: Tlsf,
    /// Remote frees taken from `Shared::remote` but not yet applied, ending at null or
    /// [`ARMED`]; while there are any, `Shared::remote` is not null.
    pending: *mut RemoteNode,
}

/// Written into the first bytes of a block freed from another thread.
struct RemoteNode {
    next: *mut RemoteNode,
}

/// Stands in `Shared::remote` (and so ends the lists pushed on top of it) while the owner
/// still holds remote frees in `OwnerSide::pending`: the owner's allocation then needs to look
/// at that one shared word only. Never a block (blocks are inside the heap, this is address 8).
const ARMED: *mut RemoteNode = NonNull::dangling().as_ptr();

/// Whether a remote list ends at `node`.
#[inline]
fn is_end(node: *mut RemoteNode) -> bool {
    node.is_null() || node == ARMED
}

struct Shared {
    owner_side: UnsafeCell<OwnerSide>,
    /// Tag of the thread bound as owner, 0 when none.
    owner: AtomicU64,
    /// Lock-free stack of remotely freed blocks (pushed by anyone, taken whole by the owner),
    /// or [`ARMED`] when it is empty but `OwnerSide::pending` is not.
    remote: AtomicPtr<RemoteNode>,
    remote_total: AtomicU64,
    // Declared last: dropped after everything that points into it.
    region: Region,
}

// SAFETY: `owner_side` is only touched by the thread whose tag is in `owner` (bind makes that
// exclusive, and RtAlloc is neither Send nor Sync, so the binding thread is the only one that
// can use it); everything else is atomics or immutable.
unsafe impl Sync for Shared {}
// SAFETY: as above; the raw pointers all point into `region`, which moves with it.
unsafe impl Send for Shared {}

impl Shared {
    /// Frees `ptr` directly when called on the owner thread, else hands it to the owner.
    ///
    /// # Safety
    /// `ptr` must be a live block of this heap, freed once.
    unsafe fn release(&self, ptr: NonNull<u8>) {
        if self.owner.load(Ordering::Acquire) == thread_tag() {
            // SAFETY: we are the owner thread (only it can have stored its own tag), and the
            // owner never holds a reference into `owner_side` across user code, so this is the
            // only access right now.
            unsafe { (*self.owner_side.get()).tlsf.free(ptr) };
        } else {
            let node = ptr.as_ptr().cast::<RemoteNode>();
            let mut head = self.remote.load(Ordering::Relaxed);
            loop {
                // SAFETY: the block is ours to give back and at least 16 bytes, aligned.
                unsafe { node.write(RemoteNode { next: head }) };
                // Release publishes the link (and everything the dropper did to the block)
                // to the owner's Acquire swap.
                match self.remote.compare_exchange_weak(
                    head,
                    node,
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break,
                    Err(now) => head = now,
                }
            }
            self.remote_total.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A pre-faulted, locked-if-permitted memory heap for the audio thread; cheap to clone.
///
/// ```
/// let heap = downbeat_rt::alloc::Heap::new(256 * 1024).unwrap();
/// assert!(heap.capacity() >= 256 * 1024);
/// println!("locked: {}", heap.is_locked());
/// ```
#[derive(Clone)]
pub struct Heap {
    shared: Arc<Shared>,
}

impl fmt::Debug for Heap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Heap")
            .field("capacity", &self.capacity())
            .field("locked", &self.is_locked())
            .finish()
    }
}

impl Heap {
    /// Allocates `bytes` (rounded up to whole pages), touches every page, and tries to `mlock`
    /// them. Not real-time safe: call it before the audio starts.
    ///
    /// ```
    /// let heap = downbeat_rt::alloc::Heap::new(1 << 16).unwrap();
    /// # let _ = heap;
    /// ```
    pub fn new(bytes: usize) -> Result<Self, AllocError> {
        let region = Region::new(bytes)?;
        // SAFETY: the region is ours, lives in the same `Shared` as the heap and is dropped
        // after it (field order), and nothing else uses it.
        let tlsf = unsafe { Tlsf::new(region.start(), region.len()) }?;
        Ok(Self {
            shared: Arc::new(Shared {
                owner_side: UnsafeCell::new(OwnerSide {
                    tlsf,
                    pending: ptr::null_mut(),
                }),
                owner: AtomicU64::new(0),
                remote: AtomicPtr::new(ptr::null_mut()),
                remote_total: AtomicU64::new(0),
                region,
            }),
        })
    }

    /// Bytes of memory in the heap (block headers included).
    ///
    /// ```
    /// assert_eq!(downbeat_rt::alloc::Heap::new(8192).unwrap().capacity(), 8192);
    /// ```
    pub fn capacity(&self) -> usize {
        self.shared.region.len()
    }

    /// Whether the heap's pages are locked in RAM.
    ///
    /// ```
    /// let heap = downbeat_rt::alloc::Heap::new(8192).unwrap();
    /// assert_eq!(heap.is_locked(), heap.note().is_none());
    /// ```
    pub fn is_locked(&self) -> bool {
        self.shared.region.locked()
    }

    /// Why the heap is not locked, if it is not.
    ///
    /// ```
    /// let heap = downbeat_rt::alloc::Heap::new(8192).unwrap();
    /// if let Some(why) = heap.note() { eprintln!("{why}"); }
    /// ```
    pub fn note(&self) -> Option<&str> {
        self.shared.region.note.as_deref()
    }

    /// Makes the calling thread the heap's owner. Real-time safe (one compare-and-swap), so the
    /// audio thread can call it on its first callback. Fails with [`AllocError::AlreadyBound`]
    /// while another [`RtAlloc`] for this heap is alive.
    ///
    /// ```
    /// use downbeat_rt::alloc::{AllocError, Heap};
    /// let heap = Heap::new(8192).unwrap();
    /// let rt = heap.bind().unwrap();
    /// assert_eq!(heap.bind().err(), Some(AllocError::AlreadyBound));
    /// drop(rt);
    /// assert!(heap.bind().is_ok());
    /// ```
    pub fn bind(&self) -> Result<RtAlloc, AllocError> {
        // Acquire: see everything the previous owner did to the heap before it let go.
        self.shared
            .owner
            .compare_exchange(0, thread_tag(), Ordering::AcqRel, Ordering::Relaxed)
            .map_err(|_| AllocError::AlreadyBound)?;
        Ok(RtAlloc {
            shared: self.shared.clone(),
            _not_send: PhantomData,
        })
    }

    /// Blocks freed on other threads so far (applied or not).
    ///
    /// ```
    /// assert_eq!(downbeat_rt::alloc::Heap::new(8192).unwrap().remote_frees(), 0);
    /// ```
    pub fn remote_frees(&self) -> u64 {
        self.shared.remote_total.load(Ordering::Relaxed)
    }
}

/// The owner's handle to a [`Heap`]: allocates and frees in O(1). Neither `Send` nor `Sync`: it
/// stays on the thread that bound it.
///
/// ```
/// use std::alloc::Layout;
/// let heap = downbeat_rt::alloc::Heap::new(1 << 16).unwrap();
/// let mut rt = heap.bind().unwrap();
/// let p = rt.alloc(Layout::new::<[f32; 32]>()).unwrap();
/// // SAFETY: allocated above, freed once.
/// unsafe { rt.free(p) };
/// assert_eq!(rt.used(), 0);
/// ```
pub struct RtAlloc {
    shared: Arc<Shared>,
    _not_send: PhantomData<*mut ()>,
}

impl fmt::Debug for RtAlloc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RtAlloc")
            .field("used", &self.used())
            .field("capacity", &self.capacity())
            .finish()
    }
}

/// Remote frees applied per allocation: enough to keep up with any steady stream of them
/// (each allocation can be matched by one remote free) while keeping allocation O(1).
const REMOTE_PER_ALLOC: usize = 2;

impl RtAlloc {
    #[allow(clippy::mut_from_ref)]
    fn side(&self) -> &mut OwnerSide {
        // SAFETY: only the owner thread holds an RtAlloc (it is !Send), `&self` methods below
        // never let the reference escape or overlap user code, and `Shared::release` on this
        // thread cannot run while one of them is on the stack.
        unsafe { &mut *self.shared.owner_side.get() }
    }

    /// Allocates a block for `layout` (alignment at most 16 bytes). O(1), no system call.
    ///
    /// ```
    /// let heap = downbeat_rt::alloc::Heap::new(1 << 16).unwrap();
    /// let mut rt = heap.bind().unwrap();
    /// let p = rt.alloc(std::alloc::Layout::new::<u64>()).unwrap();
    /// assert_eq!(p.as_ptr() as usize % 16, 0);
    /// # unsafe { rt.free(p) };
    /// ```
    // Always inlined: a few instructions around the TLSF call, whose result then travels in
    // registers rather than as a `Result` in memory.
    #[inline(always)]
    pub fn alloc(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        // The common case has no remote frees at all: one relaxed load of one word decides it
        // (pending frees keep that word non-null, see ARMED), and the work lives out of line so
        // it does not weigh on every allocation (callgrind showed the inlined loop costing ~30
        // instructions per allocation on a workload with no remote frees).
        if !self.shared.remote.load(Ordering::Relaxed).is_null() {
            self.apply_remote(REMOTE_PER_ALLOC);
        }
        if layout.align() <= tlsf::ALIGN && layout.size() < tlsf::MAX_REQUEST {
            if let Some(p) = NonNull::new(self.side().tlsf.alloc_bytes(layout.size())) {
                return Ok(p);
            }
        }
        self.alloc_failed(layout)
    }

    /// Why `layout` cannot be served; when the heap is only out of memory, memory may be
    /// waiting in the remote list: the bound is the number of blocks freed elsewhere, which
    /// the caller controls, and beats failing.
    #[cold]
    #[inline(never)]
    fn alloc_failed(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        match self.side().tlsf.alloc(layout) {
            Err(AllocError::OutOfMemory) => {
                self.collect_remote();
                self.side().tlsf.alloc(layout)
            }
            other => other,
        }
    }

    /// Frees a block. O(1).
    ///
    /// # Safety
    ///
    /// `ptr` must come from [`alloc`](Self::alloc) on this heap and not have been freed.
    ///
    /// ```
    /// let heap = downbeat_rt::alloc::Heap::new(1 << 16).unwrap();
    /// let mut rt = heap.bind().unwrap();
    /// let p = rt.alloc(std::alloc::Layout::new::<u64>()).unwrap();
    /// // SAFETY: allocated above, freed once.
    /// unsafe { rt.free(p) };
    /// ```
    #[inline]
    pub unsafe fn free(&mut self, ptr: NonNull<u8>) {
        // SAFETY: forwarded contract.
        unsafe { self.side().tlsf.free(ptr) }
    }

    /// Moves `value` into the heap.
    ///
    /// ```
    /// let heap = downbeat_rt::alloc::Heap::new(1 << 16).unwrap();
    /// let mut rt = heap.bind().unwrap();
    /// let b = rt.boxed(440.0_f32).unwrap();
    /// assert_eq!(*b, 440.0);
    /// ```
    pub fn boxed<T>(&mut self, value: T) -> Result<RtBox<T>, Rejected<T>> {
        match self.alloc(Layout::new::<T>()) {
            Ok(p) => {
                let p = p.cast::<T>();
                // SAFETY: fresh block, large and aligned enough for T.
                unsafe { p.as_ptr().write(value) };
                Ok(RtBox {
                    ptr: p,
                    shared: self.shared.clone(),
                    _owns: PhantomData,
                })
            }
            Err(error) => Err(Rejected { error, value }),
        }
    }

    /// An empty vector with room for `capacity` elements.
    ///
    /// ```
    /// let heap = downbeat_rt::alloc::Heap::new(1 << 16).unwrap();
    /// let mut rt = heap.bind().unwrap();
    /// let v = rt.vec::<f32>(1000).unwrap();
    /// assert_eq!((v.len(), v.capacity()), (0, 1000));
    /// ```
    pub fn vec<T>(&mut self, capacity: usize) -> Result<RtVec<T>, AllocError> {
        let layout = Layout::array::<T>(capacity).map_err(|_| AllocError::TooLarge)?;
        let ptr = self.alloc(layout)?.cast::<T>();
        Ok(RtVec {
            ptr,
            len: 0,
            cap: capacity,
            shared: self.shared.clone(),
            _owns: PhantomData,
        })
    }

    /// Applies every free made on other threads so far; returns how many. Bounded by the number
    /// of such frees; call it where that is acceptable (e.g. once per block).
    ///
    /// ```
    /// let heap = downbeat_rt::alloc::Heap::new(1 << 16).unwrap();
    /// let mut rt = heap.bind().unwrap();
    /// assert_eq!(rt.collect_remote(), 0);
    /// ```
    pub fn collect_remote(&mut self) -> usize {
        self.apply_remote(usize::MAX)
    }

    /// Applies up to `budget` remote frees: O(budget), each one a TLSF free, with at most one
    /// swap of the shared list per free.
    #[inline(never)]
    fn apply_remote(&mut self, budget: usize) -> usize {
        let side = self.side();
        let mut n = 0;
        while n < budget {
            if is_end(side.pending) {
                // Acquire pairs with the pushers' Release: their links are visible.
                side.pending = self.shared.remote.swap(ptr::null_mut(), Ordering::Acquire);
                if is_end(side.pending) {
                    side.pending = ptr::null_mut();
                    break;
                }
            }
            let node = side.pending;
            // SAFETY: every node is a block of this heap, linked by `release` and published by
            // the swap above; it is freed exactly once here.
            unsafe {
                side.pending = (*node).next;
                side.tlsf.free(NonNull::new_unchecked(node.cast()));
            }
            n += 1;
        }
        if !is_end(side.pending) && self.shared.remote.load(Ordering::Relaxed).is_null() {
            // Frees are left over: make the shared word say so, or the next allocation's
            // one-word check would miss them. A failure means a push made it non-null, which
            // says so as well. Relaxed: only this thread reads ARMED, and the nodes' contents
            // travel by the pushers' Release and the swap's Acquire.
            let _ = self.shared.remote.compare_exchange(
                ptr::null_mut(),
                ARMED,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        n
    }

    /// Payload bytes in use.
    ///
    /// ```
    /// let heap = downbeat_rt::alloc::Heap::new(1 << 16).unwrap();
    /// let mut rt = heap.bind().unwrap();
    /// let _b = rt.boxed([0u8; 100]).unwrap();
    /// assert_eq!(rt.used(), 112);
    /// ```
    pub fn used(&self) -> usize {
        self.side().tlsf.used()
    }

    /// The highest [`used`](Self::used) so far.
    ///
    /// ```
    /// let heap = downbeat_rt::alloc::Heap::new(1 << 16).unwrap();
    /// let rt = heap.bind().unwrap();
    /// assert_eq!(rt.peak(), 0);
    /// ```
    pub fn peak(&self) -> usize {
        self.side().tlsf.peak()
    }

    /// Bytes of memory in the heap.
    ///
    /// ```
    /// let heap = downbeat_rt::alloc::Heap::new(1 << 16).unwrap();
    /// assert_eq!(heap.bind().unwrap().capacity(), 1 << 16);
    /// ```
    pub fn capacity(&self) -> usize {
        self.shared.region.len()
    }

    fn same_heap(&self, other: &Arc<Shared>) -> bool {
        Arc::ptr_eq(&self.shared, other)
    }
}

impl Drop for RtAlloc {
    fn drop(&mut self) {
        // Release: the next owner's Acquire in `bind` sees the heap as we leave it.
        self.shared.owner.store(0, Ordering::Release);
    }
}

/// A value in a [`Heap`]. Dropping it on the owner thread frees at once; elsewhere the owner
/// applies the free later. The last handle to a heap (if this is it) frees the heap's memory:
/// keep the [`Heap`] alive off the audio thread.
///
/// ```
/// let heap = downbeat_rt::alloc::Heap::new(1 << 16).unwrap();
/// let mut rt = heap.bind().unwrap();
/// let mut phase = rt.boxed(0.0_f64).unwrap();
/// *phase += 0.5;
/// assert_eq!(*phase, 0.5);
/// ```
pub struct RtBox<T> {
    ptr: NonNull<T>,
    shared: Arc<Shared>,
    _owns: PhantomData<T>,
}

// SAFETY: the box owns its T like `Box<T>`; freeing from another thread is supported.
unsafe impl<T: Send> Send for RtBox<T> {}
// SAFETY: `&RtBox<T>` only gives `&T`.
unsafe impl<T: Sync> Sync for RtBox<T> {}

impl<T> Deref for RtBox<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the box owns an initialised T.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> DerefMut for RtBox<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the box owns an initialised T, and `&mut self` is exclusive.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T: fmt::Debug> fmt::Debug for RtBox<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T> RtBox<T> {
    /// Moves the value out and frees the block.
    ///
    /// ```
    /// let heap = downbeat_rt::alloc::Heap::new(1 << 16).unwrap();
    /// let mut rt = heap.bind().unwrap();
    /// assert_eq!(rt.boxed(7_u32).unwrap().into_inner(), 7);
    /// assert_eq!(rt.used(), 0);
    /// ```
    pub fn into_inner(self) -> T {
        let this = ManuallyDrop::new(self);
        // SAFETY: the value is initialised and read once; the box is not dropped again.
        let value = unsafe { this.ptr.as_ptr().read() };
        // SAFETY: the block is ours and released once; the Arc is moved out once.
        unsafe {
            this.shared.release(this.ptr.cast());
            drop(ptr::read(&this.shared));
        }
        value
    }
}

impl<T> Drop for RtBox<T> {
    fn drop(&mut self) {
        // SAFETY: the box owns an initialised T, dropped once, then its block, released once.
        unsafe {
            ptr::drop_in_place(self.ptr.as_ptr());
            self.shared.release(self.ptr.cast());
        }
    }
}

/// A vector in a [`Heap`] with a fixed capacity that only grows through
/// [`reserve`](Self::reserve), which needs the owner's [`RtAlloc`]: pushing never allocates.
///
/// ```
/// let heap = downbeat_rt::alloc::Heap::new(1 << 16).unwrap();
/// let mut rt = heap.bind().unwrap();
/// let mut v = rt.vec::<i32>(2).unwrap();
/// v.push(1).unwrap();
/// v.push(2).unwrap();
/// assert_eq!(v.push(3), Err(3)); // full
/// v.reserve(&mut rt, 1).unwrap();
/// v.push(3).unwrap();
/// assert_eq!(&v[..], &[1, 2, 3]);
/// ```
pub struct RtVec<T> {
    ptr: NonNull<T>,
    len: usize,
    cap: usize,
    shared: Arc<Shared>,
    _owns: PhantomData<T>,
}

// SAFETY: owns its elements like `Vec<T>`.
unsafe impl<T: Send> Send for RtVec<T> {}
// SAFETY: `&RtVec<T>` only gives `&[T]`.
unsafe impl<T: Sync> Sync for RtVec<T> {}

impl<T> RtVec<T> {
    /// Appends `value`, or hands it back when the vector is full.
    ///
    /// ```
    /// # let heap = downbeat_rt::alloc::Heap::new(1 << 16).unwrap();
    /// # let mut rt = heap.bind().unwrap();
    /// let mut v = rt.vec::<u8>(1).unwrap();
    /// assert_eq!(v.push(1), Ok(()));
    /// assert_eq!(v.push(2), Err(2));
    /// ```
    pub fn push(&mut self, value: T) -> Result<(), T> {
        if self.len == self.cap {
            return Err(value);
        }
        // SAFETY: len < cap, inside the block.
        unsafe { self.ptr.as_ptr().add(self.len).write(value) };
        self.len += 1;
        Ok(())
    }

    /// Removes and returns the last element.
    ///
    /// ```
    /// # let heap = downbeat_rt::alloc::Heap::new(1 << 16).unwrap();
    /// # let mut rt = heap.bind().unwrap();
    /// let mut v = rt.vec::<u8>(1).unwrap();
    /// v.push(9).unwrap();
    /// assert_eq!(v.pop(), Some(9));
    /// assert_eq!(v.pop(), None);
    /// ```
    pub fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        // SAFETY: the element at len was initialised and is now outside the live range.
        Some(unsafe { self.ptr.as_ptr().add(self.len).read() })
    }

    /// Elements held.
    ///
    /// ```
    /// # let heap = downbeat_rt::alloc::Heap::new(1 << 16).unwrap();
    /// # let mut rt = heap.bind().unwrap();
    /// assert!(rt.vec::<u8>(4).unwrap().is_empty());
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    ///
    /// ```
    /// # let heap = downbeat_rt::alloc::Heap::new(1 << 16).unwrap();
    /// # let mut rt = heap.bind().unwrap();
    /// assert!(rt.vec::<u8>(4).unwrap().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Elements it can hold without [`reserve`](Self::reserve).
    ///
    /// ```
    /// # let heap = downbeat_rt::alloc::Heap::new(1 << 16).unwrap();
    /// # let mut rt = heap.bind().unwrap();
    /// assert_eq!(rt.vec::<u8>(4).unwrap().capacity(), 4);
    /// ```
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Drops every element, keeping the capacity.
    ///
    /// ```
    /// # let heap = downbeat_rt::alloc::Heap::new(1 << 16).unwrap();
    /// # let mut rt = heap.bind().unwrap();
    /// let mut v = rt.vec::<u8>(4).unwrap();
    /// v.push(1).unwrap();
    /// v.clear();
    /// assert!(v.is_empty());
    /// ```
    pub fn clear(&mut self) {
        let len = mem::replace(&mut self.len, 0);
        // SAFETY: the first `len` elements were initialised; `len` is already 0 so a panicking
        // drop cannot cause a double drop.
        unsafe { ptr::drop_in_place(ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), len)) };
    }

    /// Makes room for `additional` more elements by moving to a larger block of `rt`'s heap.
    /// O(len) for the copy; no system call.
    ///
    /// ```
    /// # let heap = downbeat_rt::alloc::Heap::new(1 << 16).unwrap();
    /// # let mut rt = heap.bind().unwrap();
    /// let mut v = rt.vec::<u8>(0).unwrap();
    /// v.reserve(&mut rt, 10).unwrap();
    /// assert!(v.capacity() >= 10);
    /// ```
    pub fn reserve(&mut self, rt: &mut RtAlloc, additional: usize) -> Result<(), AllocError> {
        if !rt.same_heap(&self.shared) {
            return Err(AllocError::WrongHeap);
        }
        let need = self
            .len
            .checked_add(additional)
            .ok_or(AllocError::TooLarge)?;
        if need <= self.cap {
            return Ok(());
        }
        let cap = need.max(self.cap.saturating_mul(2));
        let layout = Layout::array::<T>(cap).map_err(|_| AllocError::TooLarge)?;
        let new = rt.alloc(layout)?.cast::<T>();
        // SAFETY: both blocks hold at least `len` elements and do not overlap; the old block
        // came from this heap (same_heap) and `rt` proves we are its owner.
        unsafe {
            ptr::copy_nonoverlapping(self.ptr.as_ptr(), new.as_ptr(), self.len);
            rt.free(self.ptr.cast());
        }
        self.ptr = new;
        self.cap = cap;
        Ok(())
    }
}

impl<T> Deref for RtVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the first `len` elements are initialised.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> DerefMut for RtVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: the first `len` elements are initialised; `&mut self` is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: fmt::Debug> fmt::Debug for RtVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T> Drop for RtVec<T> {
    fn drop(&mut self) {
        self.clear();
        // SAFETY: the block is ours, released once.
        unsafe { self.shared.release(self.ptr.cast()) };
    }
}
