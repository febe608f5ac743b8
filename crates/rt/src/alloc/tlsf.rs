//! The two-level segregated-fit core, over memory it does not own.
//!
//! Every block starts with a 16-byte header: the address of the physically previous block
//! (meaningful only while that block is free) and this block's payload size with two flag bits.
//! Free blocks keep their free-list links in the first 16 bytes of their payload, which is why
//! the smallest payload is 16 bytes. A zero-sized, permanently used sentinel closes the region so
//! that "the next block" always exists.

use core::ptr::{self, NonNull};

use super::AllocError;

/// Payload alignment and size granule.
pub(crate) const ALIGN: usize = 16;
const HEADER: usize = 16;
const MIN_PAYLOAD: usize = 16;
const SL_LOG2: u32 = 5;
const SL_COUNT: usize = 1 << SL_LOG2;
/// Sizes below this go to first level 0, split linearly by the granule.
const SMALL: usize = SL_COUNT * ALIGN;
const FL_SHIFT: u32 = SL_LOG2 + ALIGN.trailing_zeros();
const FL_COUNT: usize = 32;
/// One past the largest payload a block can have (first level 31 holds sizes below this).
const MAX_PAYLOAD: usize = 1 << (FL_SHIFT as usize + FL_COUNT - 1);

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
    #[inline]
    fn is_prev_free(&self) -> bool {
        self.size & PREV_FREE != 0
    }
}

/// (first level, second level) of a free block of `size` bytes of payload.
#[inline]
fn mapping_insert(size: usize) -> (usize, usize) {
    if size < SMALL {
        (0, size / ALIGN)
    } else {
        let log = usize::BITS - 1 - size.leading_zeros();
        let fl = (log - FL_SHIFT + 1) as usize;
        let sl = (size >> (log - SL_LOG2)) ^ SL_COUNT;
        (fl, sl)
    }
}

/// [`mapping_insert`] for a block that exists: its payload is below [`MAX_PAYLOAD`], so both
/// levels are below 32 and the masks change nothing; they only tell the compiler so, which drops
/// two bounds checks from every list operation (callgrind: ~8 instructions per pair).
#[inline(always)]
fn list_of(size: usize) -> (usize, usize) {
    debug_assert!(size < MAX_PAYLOAD);
    let (fl, sl) = mapping_insert(size);
    (fl & (FL_COUNT - 1), sl & (SL_COUNT - 1))
}

/// The smallest (first, second) level whose every block fits `size`: rounding up first is what
/// makes the search O(1) instead of a walk of one list.
#[inline]
fn mapping_search(size: usize) -> (usize, usize) {
    if size < SMALL {
        return mapping_insert(size);
    }
    let log = usize::BITS - 1 - size.leading_zeros();
    let round = (1usize << (log - SL_LOG2)) - 1;
    mapping_insert(size + round)
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
    fl_bitmap: u32,
    sl_bitmap: [u32; FL_COUNT],
    heads: [[*mut Block; SL_COUNT]; FL_COUNT],
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
    /// Manages the `len` bytes at `start` (rounded inwards to 16-byte boundaries).
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
        let aligned = addr.checked_add(ALIGN - 1).ok_or(AllocError::TooSmall)? & !(ALIGN - 1);
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
            heads: [[ptr::null_mut(); SL_COUNT]; FL_COUNT],
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
            heap.insert(first);
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
    /// assert_eq!(tlsf.used(), 32);
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
    /// assert_eq!(unsafe { tlsf.usable_size(p) }, 32);
    /// ```
    pub unsafe fn usable_size(&self, ptr: NonNull<u8>) -> usize {
        // SAFETY: the caller promises a live block, whose header precedes it.
        unsafe { (*ptr.as_ptr().sub(HEADER).cast::<Block>()).payload_size() }
    }

    /// Allocates a block for `layout`, 16-byte aligned. O(1).
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
        if layout.size() >= MAX_PAYLOAD / 2 {
            return Err(AllocError::TooLarge);
        }
        let size = ((layout.size() + ALIGN - 1) & !(ALIGN - 1)).max(MIN_PAYLOAD);
        let (fl, sl) = mapping_search(size);
        let block = self.find(fl, sl).ok_or(AllocError::OutOfMemory)?;
        // SAFETY: `find` returned a free block of ours, whose payload is at least `size` (the
        // search rounded up to a list whose every block fits).
        unsafe {
            self.remove(block);
            self.split(block, size);
            let next = self.next_phys(block);
            (*block).size &= !FREE;
            (*next).size &= !PREV_FREE;
            self.used += (*block).payload_size();
            self.peak = self.peak.max(self.used);
            Ok(NonNull::new_unchecked(block.cast::<u8>().add(HEADER)))
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
            self.used -= (*block).payload_size();
            (*block).size |= FREE;
            if (*block).is_prev_free() {
                let prev = (*block).prev_phys;
                self.remove(prev);
                block = self.absorb(prev, block);
            }
            let next = self.next_phys(block);
            if (*next).is_free() {
                self.remove(next);
                block = self.absorb(block, next);
            }
            let next = self.next_phys(block);
            (*next).size |= PREV_FREE;
            (*next).prev_phys = block;
            self.insert(block);
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
        if size >= MAX_PAYLOAD / 2 {
            return false;
        }
        let size = ((size + ALIGN - 1) & !(ALIGN - 1)).max(MIN_PAYLOAD);
        let (fl, sl) = mapping_search(size);
        self.find(fl, sl).is_some()
    }

    #[inline(always)]
    fn find(&self, fl: usize, sl: usize) -> Option<*mut Block> {
        if fl >= FL_COUNT {
            return None;
        }
        // `sl < SL_COUNT` (32) and `fl < FL_COUNT` (32), so the plain shifts cannot overflow
        // except `fl + 1 == 32`, which the u64 shift covers; no `checked_shl` branch per call.
        let mut fl = fl;
        let mut sl_map = self.sl_bitmap[fl] & (!0u32 << (sl & (SL_COUNT - 1)));
        if sl_map == 0 {
            let fl_map = (u64::from(self.fl_bitmap) >> (fl + 1) << (fl + 1)) as u32;
            if fl_map == 0 {
                return None;
            }
            fl = fl_map.trailing_zeros() as usize;
            sl_map = self.sl_bitmap[fl & (FL_COUNT - 1)];
        }
        let sl = sl_map.trailing_zeros() as usize;
        // The masks restate what the bitmaps guarantee (a set bit of a u32 is below 32), which
        // lets the compiler drop the bounds checks.
        Some(self.heads[fl & (FL_COUNT - 1)][sl & (SL_COUNT - 1)])
    }

    /// # Safety
    /// `block` must be a free header of this heap, in no list.
    #[inline(always)]
    unsafe fn insert(&mut self, block: *mut Block) {
        // SAFETY: per the contract; list heads are blocks of this heap or null.
        unsafe {
            let (fl, sl) = list_of((*block).payload_size());
            let head = self.heads[fl][sl];
            (*block).next_free = head;
            (*block).prev_free = ptr::null_mut();
            if !head.is_null() {
                (*head).prev_free = block;
            }
            self.heads[fl][sl] = block;
            self.fl_bitmap |= 1 << fl;
            self.sl_bitmap[fl] |= 1 << sl;
        }
    }

    /// # Safety
    /// `block` must be a free header of this heap, in its list.
    #[inline(always)]
    unsafe fn remove(&mut self, block: *mut Block) {
        // SAFETY: per the contract, the links are valid blocks or null.
        unsafe {
            let (fl, sl) = list_of((*block).payload_size());
            let (prev, next) = ((*block).prev_free, (*block).next_free);
            if !next.is_null() {
                (*next).prev_free = prev;
            }
            if prev.is_null() {
                self.heads[fl][sl] = next;
                if next.is_null() {
                    self.sl_bitmap[fl] &= !(1 << sl);
                    if self.sl_bitmap[fl] == 0 {
                        self.fl_bitmap &= !(1 << fl);
                    }
                }
            } else {
                (*prev).next_free = next;
            }
        }
    }

    /// # Safety
    /// `block` must be a header of this heap other than the sentinel.
    #[inline]
    unsafe fn next_phys(&self, block: *mut Block) -> *mut Block {
        // SAFETY: a non-sentinel block is followed by another header inside the region.
        unsafe {
            block
                .cast::<u8>()
                .add(HEADER + (*block).payload_size())
                .cast()
        }
    }

    /// Cuts the tail beyond `size` off `block` (free, in no list) into a free block of its own
    /// when the tail can hold one.
    ///
    /// # Safety
    /// `block` must be a free header of this heap in no list with payload >= `size`.
    #[inline(always)]
    unsafe fn split(&mut self, block: *mut Block, size: usize) {
        // SAFETY: the remainder lies inside `block`'s payload, so inside the region.
        unsafe {
            let have = (*block).payload_size();
            if have < size + HEADER + MIN_PAYLOAD {
                return;
            }
            let rest = block.cast::<u8>().add(HEADER + size).cast::<Block>();
            ptr::addr_of_mut!((*rest).size).write((have - size - HEADER) | FREE);
            ptr::addr_of_mut!((*rest).prev_phys).write(block);
            (*block).size = size | ((*block).size & FLAGS);
            let after = self.next_phys(rest);
            (*after).prev_phys = rest;
            (*after).size |= PREV_FREE;
            self.insert(rest);
        }
    }

    /// Merges `b` into `a`, its physical predecessor; both free and in no list.
    ///
    /// # Safety
    /// As described; `b` directly follows `a`.
    #[inline(always)]
    unsafe fn absorb(&mut self, a: *mut Block, b: *mut Block) -> *mut Block {
        // SAFETY: per the contract.
        unsafe {
            let size = (*a).payload_size() + HEADER + (*b).payload_size();
            (*a).size = size | ((*a).size & FLAGS);
            let next = self.next_phys(a);
            (*next).prev_phys = a;
            a
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_is_monotonic_and_search_rounds_up() {
        let mut last = (0, 0);
        for size in (16..1 << 20).step_by(16) {
            let m = mapping_insert(size);
            assert!(m >= last, "{size}");
            last = m;
            let (fl, sl) = mapping_search(size);
            // Every size in the searched list is >= size.
            let min_in_list = if fl == 0 {
                sl * ALIGN
            } else {
                let base = 1usize << (fl as u32 + FL_SHIFT - 1);
                base + sl * (base >> SL_LOG2)
            };
            assert!(
                min_in_list >= size || fl == 0 && sl * ALIGN == size,
                "{size}"
            );
        }
    }
}
