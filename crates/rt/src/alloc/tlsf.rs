//! The two-level segregated-fit core, over memory it does not own.
//!
//! Every block starts with a 16-byte header: the address of the physically previous block
//! (meaningful only while that block is free) and this block's payload size with two flag bits.
//! Free blocks keep their free-list links in the first 16 bytes of their payload, which is why
//! the smallest payload is 16 bytes. A zero-sized, permanently used sentinel closes the region so
//! that "the next block" always exists.
//!
//! The flags are FREE and PREV_FREE (the physically previous block is free). PREV_FREE spares a
//! free the load of a used predecessor's header; free neighbours are always merged, so a free
//! block never has it. The hot paths keep it up to date without reading headers they would not
//! read anyway: a split leaves the next block's predecessor free (only smaller), a merge with
//! the next block leaves the block after it with a free predecessor, so both only store that
//! block's `prev_phys`. For large blocks those headers are pages away from the one in hand, and
//! a load of one is a cache and TLB miss the operation waits for, where a store is not.

use core::ptr::{self, NonNull};

use super::AllocError;

/// Payload alignment and size granule.
pub(crate) const ALIGN: usize = 16;
const HEADER: usize = 16;
const MIN_PAYLOAD: usize = 16;
/// Blocks start on this boundary (the region's last one aside): a free block's header and its
/// list links, 32 bytes, then never straddle two cache lines. With 16-byte block boundaries one
/// split remainder in four had its links on the next line, one more cache miss per allocation
/// of a large block (callgrind's cache simulation: 1.26 against 1.00 write misses per pair of
/// the `large_*` workload, rlsf's 1.00).
const BLOCK_ALIGN: usize = 32;
const SL_LOG2: u32 = 5;
const SL_COUNT: usize = 1 << SL_LOG2;
/// Sizes below this go to first level 0, split linearly by the granule.
const SMALL: usize = SL_COUNT * ALIGN;
const FL_SHIFT: u32 = SL_LOG2 + ALIGN.trailing_zeros();
const FL_COUNT: usize = 32;
/// One past the largest payload a block can have (first level 31 holds sizes below this).
const MAX_PAYLOAD: usize = 1 << (FL_SHIFT as usize + FL_COUNT - 1);
/// One past the largest size an allocation may ask for: rounded up to its list's boundary it
/// still maps to a list, the last one at most.
pub(crate) const MAX_REQUEST: usize = MAX_PAYLOAD / 2;

const FREE: usize = 1;
const PREV_FREE: usize = 2;
const FLAGS: usize = FREE | PREV_FREE;

#[repr(C)]
struct Block {
    prev_phys: *mut Block,
    size: usize,
    // Only valid while the block is free.
    next_free: *mut Block,
    prev_free: *mut Block,
}

impl Block {
    #[inline]
    fn payload_size(&self) -> usize {
        self.size & !FLAGS
    }
    #[inline]
    fn is_free(&self) -> bool {
        self.size & FREE != 0
    }
}

/// The payload a block must have to serve a request of `size` bytes: the size rounded up to
/// the granule. The search uses this, so a request always finds a freed block of its own
/// rounded size (callers that round their sizes to a list boundary rely on that).
#[inline(always)]
fn fit_for(size: usize) -> usize {
    ((size + ALIGN - 1) & !(ALIGN - 1)).max(MIN_PAYLOAD)
}

/// Where a block serving `size` bytes is cut when it is larger: with its header, a whole
/// number of [`BLOCK_ALIGN`] units, so the block split off after it starts on that boundary
/// too. At least [`fit_for`]`(size)`, at most 16 bytes more (so at least `MIN_PAYLOAD`
/// without a `max`).
#[inline(always)]
fn cut_for(size: usize) -> usize {
    ((size + HEADER + BLOCK_ALIGN - 1) & !(BLOCK_ALIGN - 1)) - HEADER
}

/// Number of free lists: one per (first level, second level) pair.
const LISTS: usize = FL_COUNT * SL_COUNT;

/// Index of the list holding free blocks of `size` bytes of payload (`size` at least
/// [`ALIGN`]), `first level * SL_COUNT + second level`, rounded up to the next list boundary when
/// `round_up` is set.
///
/// One formula covers both the linear lists below [`SMALL`] and the logarithmic ones above:
/// `size | SMALL` gives every small size the top bit of `SMALL`, so small sizes are cut by the
/// granule into `t` < 32 (first level 0), and larger ones into `t` in 32..64, that is first level
/// 1 plus the second level, on top of `log - 9` whole first levels. Rounding up past the last
/// list of a first level carries into the next one by itself (`t` = 64). Branch-free, and one
/// flat index instead of a pair saves the index arithmetic of every list operation.
#[inline(always)]
fn mapping(size: usize, round_up: bool) -> usize {
    let log = (size | SMALL).ilog2();
    let shift = log - SL_LOG2;
    let mask = if round_up { (1usize << shift) - 1 } else { 0 };
    let t = (size + mask) >> shift;
    (((log - SMALL.ilog2()) as usize) << SL_LOG2) + t
}

/// [`mapping`] for a block that exists: its payload is below [`MAX_PAYLOAD`], so the index is
/// below [`LISTS`] and the mask changes nothing; it only tells the compiler so, which drops a
/// bounds check from every list operation.
#[inline(always)]
fn list_of(size: usize) -> usize {
    debug_assert!(size < MAX_PAYLOAD);
    mapping(size, false) & (LISTS - 1)
}

/// The first list whose every block fits `size`: rounding up first is what makes the search
/// O(1) instead of a walk of one list. Can be [`LISTS`] or more for sizes no list can serve.
#[inline(always)]
fn mapping_search(size: usize) -> usize {
    mapping(size, true)
}

/// A TLSF heap over one region of memory. Not thread safe: one owner at a time.
///
/// This is the engine under [`RtAlloc`](super::RtAlloc) and under `downbeat-gc`'s atomic heap; it
/// is public for such building blocks. Allocation and free are O(1): two bitmap scans and a
/// constant number of list operations, no loop that depends on the heap's contents.
///
/// ```
/// use std::alloc::Layout;
/// use std::ptr::NonNull;
/// use downbeat_rt::alloc::Tlsf;
///
/// let mut memory = vec![0u128; 4096]; // 64 KiB, 16-byte aligned
/// let region = NonNull::new(memory.as_mut_ptr().cast::<u8>()).unwrap();
/// // SAFETY: `memory` outlives `tlsf` and nothing else touches it meanwhile.
/// let mut tlsf = unsafe { Tlsf::new(region, 64 * 1024) }.unwrap();
/// let p = tlsf.alloc(Layout::from_size_align(100, 8).unwrap()).unwrap();
/// assert!(tlsf.used() >= 100);
/// // SAFETY: `p` came from this heap and is freed once.
/// unsafe { tlsf.free(p) };
/// assert_eq!(tlsf.used(), 0);
/// drop(tlsf);
/// drop(memory);
/// ```
pub struct Tlsf {
    /// Bit `fl` set when `sl_bitmap[fl]` is not zero.
    fl_bitmap: u32,
    /// Bit `sl` of word `fl` set when list `fl * SL_COUNT + sl` is not empty.
    sl_bitmap: [u32; FL_COUNT],
    heads: [*mut Block; LISTS],
    len: usize,
    used: usize,
    peak: usize,
}

// SAFETY: the heap is a set of raw pointers into a region whose owner decides who may use it;
// moving the bookkeeping to another thread moves the only handle to it.
unsafe impl Send for Tlsf {}

impl core::fmt::Debug for Tlsf {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Tlsf")
            .field("capacity", &self.len)
            .field("used", &self.used)
            .field("peak", &self.peak)
            .finish()
    }
}

impl Tlsf {
    /// Manages the `len` bytes at `start` (its start rounded up to a 32-byte boundary, its end
    /// down to a 16-byte one).
    ///
    /// Fails with [`AllocError::TooSmall`] when the region cannot hold one minimal block and the
    /// sentinel, and with [`AllocError::TooLarge`] when one block could not describe it (beyond
    /// 1 TiB).
    ///
    /// # Safety
    ///
    /// The region must be valid for reads and writes, stay valid for as long as the heap or any
    /// pointer it handed out is used, and be used by nothing else meanwhile.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::ptr::NonNull;
    /// let mut memory = vec![0u128; 8];
    /// let region = NonNull::new(memory.as_mut_ptr().cast::<u8>()).unwrap();
    /// // SAFETY: `memory` outlives the heap.
    /// let tlsf = unsafe { downbeat_rt::alloc::Tlsf::new(region, 128) }.unwrap();
    /// assert_eq!(tlsf.used(), 0);
    /// ```
    pub unsafe fn new(start: NonNull<u8>, len: usize) -> Result<Self, AllocError> {
        let addr = start.as_ptr() as usize;
        let aligned = addr
            .checked_add(BLOCK_ALIGN - 1)
            .ok_or(AllocError::TooSmall)?
            & !(BLOCK_ALIGN - 1);
        let end = (addr + len) & !(ALIGN - 1);
        if end < aligned + 2 * HEADER + MIN_PAYLOAD {
            return Err(AllocError::TooSmall);
        }
        let payload = end - aligned - 2 * HEADER;
        if payload >= MAX_PAYLOAD {
            return Err(AllocError::TooLarge);
        }
        let begin = start.as_ptr().wrapping_add(aligned - addr);
        let mut heap = Self {
            fl_bitmap: 0,
            sl_bitmap: [0; FL_COUNT],
            heads: [ptr::null_mut(); LISTS],
            len: end - aligned,
            used: 0,
            peak: 0,
        };
        let first = begin.cast::<Block>();
        // SAFETY: both headers lie inside the region, 16-byte aligned, as checked above
        // (`begin + HEADER + payload` is `end - HEADER`, still inside it).
        unsafe {
            let sentinel = begin.add(HEADER + payload).cast::<Block>();
            first.write(Block {
                prev_phys: ptr::null_mut(),
                size: payload | FREE,
                next_free: ptr::null_mut(),
                prev_free: ptr::null_mut(),
            });
            ptr::addr_of_mut!((*sentinel).prev_phys).write(first);
            ptr::addr_of_mut!((*sentinel).size).write(PREV_FREE);
            heap.insert(first, payload);
        }
        Ok(heap)
    }

    /// Bytes handed out, counting each block's rounded payload (not headers).
    ///
    /// ```
    /// # let mut m = vec![0u128; 64];
    /// # let r = std::ptr::NonNull::new(m.as_mut_ptr().cast::<u8>()).unwrap();
    /// // SAFETY: `m` outlives the heap.
    /// let mut tlsf = unsafe { downbeat_rt::alloc::Tlsf::new(r, 1024) }.unwrap();
    /// tlsf.alloc(std::alloc::Layout::new::<[u8; 20]>()).unwrap();
    /// assert_eq!(tlsf.used(), 48);
    /// ```
    pub fn used(&self) -> usize {
        self.used
    }

    /// The highest [`used`](Self::used) so far.
    ///
    /// ```
    /// # let mut m = vec![0u128; 64];
    /// # let r = std::ptr::NonNull::new(m.as_mut_ptr().cast::<u8>()).unwrap();
    /// // SAFETY: `m` outlives the heap.
    /// let tlsf = unsafe { downbeat_rt::alloc::Tlsf::new(r, 1024) }.unwrap();
    /// assert_eq!(tlsf.peak(), 0);
    /// ```
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// Bytes of the region under management, headers included.
    ///
    /// ```
    /// # let mut m = vec![0u128; 64];
    /// # let r = std::ptr::NonNull::new(m.as_mut_ptr().cast::<u8>()).unwrap();
    /// // SAFETY: `m` outlives the heap.
    /// let tlsf = unsafe { downbeat_rt::alloc::Tlsf::new(r, 1024) }.unwrap();
    /// assert_eq!(tlsf.capacity(), 1024);
    /// ```
    pub fn capacity(&self) -> usize {
        self.len
    }

    /// The usable size of the block at `ptr` (at least what was asked for).
    ///
    /// # Safety
    ///
    /// `ptr` must be a live allocation of this heap.
    ///
    /// ```
    /// # let mut m = vec![0u128; 64];
    /// # let r = std::ptr::NonNull::new(m.as_mut_ptr().cast::<u8>()).unwrap();
    /// // SAFETY: `m` outlives the heap.
    /// let mut tlsf = unsafe { downbeat_rt::alloc::Tlsf::new(r, 1024) }.unwrap();
    /// let p = tlsf.alloc(std::alloc::Layout::new::<[u8; 20]>()).unwrap();
    /// // SAFETY: `p` is live.
    /// assert_eq!(unsafe { tlsf.usable_size(p) }, 48);
    /// ```
    pub unsafe fn usable_size(&self, ptr: NonNull<u8>) -> usize {
        // SAFETY: the caller promises a live block, whose header precedes it.
        unsafe { (*ptr.as_ptr().sub(HEADER).cast::<Block>()).payload_size() }
    }

    /// Allocates a block for `layout`, 16-byte aligned. O(1). The block's payload is the size
    /// rounded up so that, with the 16-byte header, it fills whole 32-byte units (20 bytes get
    /// 48, 100 get 112), or the whole free block found when that is not larger.
    ///
    /// Errors: [`AllocError::OutOfMemory`] when no free block is large enough,
    /// [`AllocError::Alignment`] for alignments above 16 bytes, [`AllocError::TooLarge`] for sizes
    /// no block can describe.
    ///
    /// ```
    /// # let mut m = vec![0u128; 64];
    /// # let r = std::ptr::NonNull::new(m.as_mut_ptr().cast::<u8>()).unwrap();
    /// use downbeat_rt::alloc::AllocError;
    /// // SAFETY: `m` outlives the heap.
    /// let mut tlsf = unsafe { downbeat_rt::alloc::Tlsf::new(r, 1024) }.unwrap();
    /// let too_big = std::alloc::Layout::from_size_align(4096, 8).unwrap();
    /// assert_eq!(tlsf.alloc(too_big), Err(AllocError::OutOfMemory));
    /// ```
    #[inline]
    pub fn alloc(&mut self, layout: core::alloc::Layout) -> Result<NonNull<u8>, AllocError> {
        if layout.align() > ALIGN {
            return Err(AllocError::Alignment);
        }
        if layout.size() >= MAX_REQUEST {
            return Err(AllocError::TooLarge);
        }
        NonNull::new(self.alloc_bytes(layout.size())).ok_or(AllocError::OutOfMemory)
    }

    /// [`alloc`](Self::alloc) for a size below [`MAX_REQUEST`] and 16-byte alignment; null
    /// when no free block is large enough. A bare pointer comes back in a register, where a
    /// `Result` of a pointer and an error comes back through memory: [`RtAlloc`]'s allocation
    /// calls this and builds its `Result` inline (with that wrapper always inlined, callgrind
    /// counted 14 instructions fewer per alloc/free pair).
    ///
    /// [`RtAlloc`]: super::RtAlloc
    #[inline]
    pub(crate) fn alloc_bytes(&mut self, size: usize) -> *mut u8 {
        debug_assert!(size < MAX_REQUEST);
        let Some(i) = self.find(fit_for(size)) else {
            return ptr::null_mut();
        };
        let size = cut_for(size);
        // SAFETY: `find` returned a non-empty list whose every block has a payload of at least
        // `fit_for(size)` (the search rounded up); its head is a free block of ours. When that
        // payload is below the cut (`size`), the block is not split.
        unsafe {
            let block = self.pop(i);
            // A free block never has PREV_FREE (free neighbours are always merged), so the
            // used block's flags are all clear.
            debug_assert!((*block).size & FLAGS == FREE);
            let have = (*block).size & !FLAGS;
            let next = block.cast::<u8>().add(HEADER + have).cast::<Block>();
            if have >= size + HEADER + MIN_PAYLOAD {
                // Cut the tail off into a free block of its own. `next` keeps its PREV_FREE
                // bit (its predecessor is still free, only smaller), so it gets one store and
                // no load: a load here is one more cache and TLB miss on a block far away.
                let rest = block.cast::<u8>().add(HEADER + size).cast::<Block>();
                ptr::addr_of_mut!((*rest).prev_phys).write(block);
                ptr::addr_of_mut!((*rest).size).write((have - size - HEADER) | FREE);
                (*next).prev_phys = rest;
                self.insert(rest, have - size - HEADER);
                (*block).size = size;
                self.used += size;
            } else {
                (*next).size &= !PREV_FREE;
                (*block).size = have;
                self.used += have;
            }
            // A branch, not a max: once the heap has warmed up it is never taken, and the
            // peak is not stored on every allocation.
            if self.used > self.peak {
                self.peak = self.used;
            }
            block.cast::<u8>().add(HEADER)
        }
    }

    /// Returns a block to the heap, merging it with free neighbours. O(1).
    ///
    /// # Safety
    ///
    /// `ptr` must come from [`alloc`](Self::alloc) on this heap and not have been freed.
    ///
    /// ```
    /// # let mut m = vec![0u128; 64];
    /// # let r = std::ptr::NonNull::new(m.as_mut_ptr().cast::<u8>()).unwrap();
    /// // SAFETY: `m` outlives the heap.
    /// let mut tlsf = unsafe { downbeat_rt::alloc::Tlsf::new(r, 1024) }.unwrap();
    /// let p = tlsf.alloc(std::alloc::Layout::new::<u64>()).unwrap();
    /// // SAFETY: allocated above, freed once.
    /// unsafe { tlsf.free(p) };
    /// ```
    #[inline]
    pub unsafe fn free(&mut self, ptr: NonNull<u8>) {
        // SAFETY: the caller's promise makes the header ours and used; neighbours found through
        // the physical chain are headers of this region (the sentinel bounds the walk).
        unsafe {
            let mut block = ptr.as_ptr().sub(HEADER).cast::<Block>();
            debug_assert!(!(*block).is_free(), "double free");
            let bits = (*block).size;
            // The predecessor's header is needed only when it is free, which the bit below
            // says; a misprediction of that branch would start its load only after the bit is
            // known. The prefetch starts it now, beside the next block's (`prev_phys` is kept
            // for every block, null for the first, and a prefetch never faults).
            #[cfg(target_arch = "x86_64")]
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                (*block).prev_phys.cast::<i8>(),
            );
            let mut size = bits & !FLAGS;
            self.used -= size;
            let mut next = block.cast::<u8>().add(HEADER + size).cast::<Block>();
            let next_bits = (*next).size;
            if next_bits & FREE != 0 {
                // The block after `next` already has PREV_FREE set (`next` was free): it only
                // needs its `prev_phys` moved, a store without a load.
                let next_size = next_bits & !FLAGS;
                self.remove(next, next_size);
                size += HEADER + next_size;
                next = next.cast::<u8>().add(HEADER + next_size).cast();
            } else {
                (*next).size = next_bits | PREV_FREE;
            }
            // PREV_FREE spares the load of a used predecessor's header.
            if bits & PREV_FREE != 0 {
                let prev = (*block).prev_phys;
                let prev_size = (*prev).payload_size();
                self.remove(prev, prev_size);
                size += HEADER + prev_size;
                block = prev;
            }
            // A free block's predecessor is used (neighbours are always merged): no PREV_FREE.
            (*block).size = size | FREE;
            (*next).prev_phys = block;
            self.insert(block, size);
        }
    }

    /// Whether one allocation of `size` bytes would succeed now.
    ///
    /// ```
    /// # let mut m = vec![0u128; 64];
    /// # let r = std::ptr::NonNull::new(m.as_mut_ptr().cast::<u8>()).unwrap();
    /// // SAFETY: `m` outlives the heap.
    /// let tlsf = unsafe { downbeat_rt::alloc::Tlsf::new(r, 1024) }.unwrap();
    /// assert!(tlsf.can_alloc(512));
    /// assert!(!tlsf.can_alloc(2048));
    /// ```
    pub fn can_alloc(&self, size: usize) -> bool {
        if size >= MAX_REQUEST {
            return false;
        }
        self.find(fit_for(size)).is_some()
    }

    /// The index of a non-empty list whose blocks all fit `size`, the smallest such: one
    /// masked look at the second-level bitmap of `size`'s own first level, then at most one
    /// scan of the first-level bitmap.
    #[inline(always)]
    fn find(&self, size: usize) -> Option<usize> {
        let i = mapping_search(size);
        // The callers bound `size` below MAX_PAYLOAD / 2, which keeps `i` below LISTS: no test
        // needed, and the masks below only restate it for the compiler.
        debug_assert!(i < LISTS);
        let fl = (i >> SL_LOG2) & (FL_COUNT - 1);
        // A u32 shift by `i % 32` (x86 masks the count itself, so this is one instruction).
        let sl_map = self.sl_bitmap[fl] & (!0u32 << (i & (SL_COUNT - 1)));
        if sl_map != 0 {
            return Some((fl << SL_LOG2) | sl_map.trailing_zeros() as usize);
        }
        // `fl + 1` may be 32, which the u64 shift covers without a branch.
        let fl_map = (u64::from(self.fl_bitmap) >> (fl + 1) << (fl + 1)) as u32;
        if fl_map == 0 {
            return None;
        }
        // A set bit of a u32 is below 32: the masks tell the compiler, dropping bounds checks.
        let fl = fl_map.trailing_zeros() as usize & (FL_COUNT - 1);
        let sl = self.sl_bitmap[fl].trailing_zeros() as usize & (SL_COUNT - 1);
        Some((fl << SL_LOG2) | sl)
    }

    /// Takes the first block off list `i`. Knowing the list and that the block is its head
    /// spares [`remove`](Self::remove)'s size mapping and its `prev_free` test.
    ///
    /// # Safety
    /// List `i` must be non-empty (its bitmap bit set).
    #[inline(always)]
    unsafe fn pop(&mut self, i: usize) -> *mut Block {
        let i = i & (LISTS - 1);
        let block = self.heads[i];
        // SAFETY: per the contract the head is a free block of this heap; its successor is
        // one too, or null.
        unsafe {
            let next = (*block).next_free;
            self.heads[i] = next;
            if next.is_null() {
                self.list_emptied(i);
            } else {
                (*next).prev_free = ptr::null_mut();
            }
        }
        block
    }

    /// Clears list `i`'s bit, and its first level's when that was the last one.
    #[inline(always)]
    fn list_emptied(&mut self, i: usize) {
        let fl = (i >> SL_LOG2) & (FL_COUNT - 1);
        self.sl_bitmap[fl] &= !(1 << (i & (SL_COUNT - 1)));
        if self.sl_bitmap[fl] == 0 {
            self.fl_bitmap &= !(1 << fl);
        }
    }

    /// Puts `block`, of `size` bytes of payload, at the head of its list.
    ///
    /// # Safety
    /// `block` must be a free header of this heap, in no list, whose payload is `size`.
    #[inline(always)]
    unsafe fn insert(&mut self, block: *mut Block, size: usize) {
        // SAFETY: per the contract; list heads are blocks of this heap or null.
        unsafe {
            let i = list_of(size);
            let head = self.heads[i];
            (*block).next_free = head;
            (*block).prev_free = ptr::null_mut();
            if head.is_null() {
                // Only an empty list's bits can be clear.
                let fl = i >> SL_LOG2;
                self.fl_bitmap |= 1 << fl;
                self.sl_bitmap[fl] |= 1 << (i & (SL_COUNT - 1));
            } else {
                (*head).prev_free = block;
            }
            self.heads[i] = block;
        }
    }

    /// Takes `block`, of `size` bytes of payload, out of its list.
    ///
    /// # Safety
    /// `block` must be a free header of this heap, in its list, whose payload is `size`.
    #[inline(always)]
    unsafe fn remove(&mut self, block: *mut Block, size: usize) {
        // SAFETY: per the contract, the links are valid blocks or null.
        unsafe {
            let (prev, next) = ((*block).prev_free, (*block).next_free);
            if !next.is_null() {
                (*next).prev_free = prev;
            }
            if prev.is_null() {
                // Only a list's head needs its (fl, sl).
                let i = list_of(size);
                self.heads[i] = next;
                if next.is_null() {
                    self.list_emptied(i);
                }
            } else {
                (*prev).next_free = next;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest payload list `i` holds, from the textbook definition: sizes below
    /// `SMALL` one list per granule, then each power of two cut into `SL_COUNT` equal lists.
    fn list_min(i: usize) -> usize {
        let (fl, sl) = (i / SL_COUNT, i % SL_COUNT);
        if fl == 0 {
            sl * ALIGN
        } else {
            let base = SMALL << (fl - 1);
            base + sl * (base / SL_COUNT)
        }
    }

    /// Sizes 16 B - 1 MiB by the granule, and the granules around every power of two up to
    /// the largest allocation.
    fn sizes() -> impl Iterator<Item = usize> {
        let dense = (ALIGN..1 << 20).step_by(ALIGN);
        let edges = (6..MAX_PAYLOAD.ilog2()).flat_map(|k| {
            let p = 1usize << k;
            [p - 2 * ALIGN, p - ALIGN, p, p + ALIGN, p + p / 2]
        });
        dense.chain(edges).filter(|&s| s < MAX_PAYLOAD / 2)
    }

    #[test]
    fn every_block_header_starts_on_a_32_byte_boundary() {
        let mut memory = vec![0u128; 1 << 14]; // 256 KiB
        let region = NonNull::new(memory.as_mut_ptr().cast::<u8>()).unwrap();
        // SAFETY: `memory` outlives `tlsf` and nothing else touches it meanwhile.
        let mut tlsf = unsafe { Tlsf::new(region, 1 << 18) }.unwrap();
        let mut live: Vec<NonNull<u8>> = Vec::new();
        let mut seed = 7u64;
        for step in 0..20_000 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            if step % 3 == 2 && !live.is_empty() {
                let p = live.swap_remove((seed >> 33) as usize % live.len());
                // SAFETY: allocated below, freed once.
                unsafe { tlsf.free(p) };
            } else {
                let size = 1 + (seed >> 40) as usize % 3000;
                let layout = core::alloc::Layout::from_size_align(size, 8).unwrap();
                if let Ok(p) = tlsf.alloc(layout) {
                    let header = p.as_ptr() as usize - HEADER;
                    assert_eq!(header % BLOCK_ALIGN, 0, "{size} B at step {step}");
                    live.push(p);
                }
            }
        }
        drop(memory);
    }

    #[test]
    fn a_freed_block_serves_a_request_of_its_own_size_in_a_full_heap() {
        use core::alloc::Layout;
        // On a list boundary (64 KiB + 15/32 of it) and a whole number of 32-byte units, so
        // the block's payload is 16 bytes more than asked for.
        let line = 96_256;
        for size in [line, line - 8, 100, 4096] {
            let mut memory = vec![0u128; 1 << 16]; // 1 MiB
            let region = NonNull::new(memory.as_mut_ptr().cast::<u8>()).unwrap();
            // SAFETY: `memory` outlives `tlsf` and nothing else touches it meanwhile.
            let mut tlsf = unsafe { Tlsf::new(region, 1 << 20) }.unwrap();
            let layout = Layout::from_size_align(size, 16).unwrap();
            let a = tlsf.alloc(layout).unwrap();
            // Fill the rest, largest blocks first, so that nothing but `a` can serve `size`.
            let mut chunk = 1 << 19;
            while chunk >= 16 {
                while tlsf
                    .alloc(Layout::from_size_align(chunk, 16).unwrap())
                    .is_ok()
                {}
                chunk /= 2;
            }
            assert!(!tlsf.can_alloc(size), "{size}: the heap is not full");
            // SAFETY: allocated above, freed once.
            unsafe { tlsf.free(a) };
            assert!(tlsf.can_alloc(size), "{size}");
            assert_eq!(tlsf.alloc(layout), Ok(a), "{size}");
            drop(memory);
        }
    }

    #[test]
    fn a_free_block_goes_to_the_list_whose_range_holds_it() {
        for size in sizes() {
            let i = list_of(size);
            assert!(i < LISTS, "{size}");
            assert!(
                list_min(i) <= size && size < list_min(i + 1),
                "{size} -> {i}"
            );
        }
    }

    #[test]
    fn the_search_starts_at_the_first_list_whose_every_block_fits() {
        for size in sizes() {
            let i = mapping_search(size);
            assert!(i < LISTS, "{size}");
            assert!(
                list_min(i) >= size,
                "{size} -> {i}: a block there may be too small"
            );
            assert!(
                list_min(i - 1) < size,
                "{size} -> {i}: list {} also fits",
                i - 1
            );
        }
    }
}
