//! The module's only allocator (wasm32 only): [`EndpointBlocks`], a fixed set of small blocks in
//! static memory that hold the attached endpoints.
//!
//! The ring never allocates to push or pop, but attaching to foreign memory
//! (`Producer::from_raw` and friends) puts a small `Arc` around the borrowed region. That is the
//! one allocation this module ever makes: one block per attached endpoint, returned on
//! [`detach`](crate::detach). Blocks are claimed with atomic flags, because every instance of the
//! module on a shared memory shares these blocks. A request that does not fit a block, or finds
//! every block taken, gets null (and `alloc` then aborts, which traps); with [`BLOCKS`] at least
//! [`SLOTS`](crate::SLOTS) that cannot happen.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::ptr;
use core::sync::atomic::{AtomicU32, Ordering};

/// Size and alignment of a block.
pub const BLOCK: usize = 64;
/// Number of blocks.
pub const BLOCKS: usize = 2 * crate::SLOTS;

#[repr(C, align(64))]
struct Block(UnsafeCell<[u8; BLOCK]>);

/// The blocks behind the attached endpoints' `Arc`s: one flag per block (0 free, 1 in use) and
/// the blocks. The module's global allocator; nothing else allocates.
pub struct EndpointBlocks {
    used: [AtomicU32; BLOCKS],
    blocks: [Block; BLOCKS],
}

// SAFETY: a block's bytes are only reachable through the pointer `alloc` hands to the one caller
// that won its flag; the flags themselves are atomics.
unsafe impl Sync for EndpointBlocks {}

// SAFETY: `alloc` returns null or a block that no one else owns until `dealloc` gives it back;
// every block is `BLOCK` bytes and `BLOCK`-aligned, and larger requests get null.
unsafe impl GlobalAlloc for EndpointBlocks {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > BLOCK || layout.align() > BLOCK {
            return ptr::null_mut();
        }
        for (flag, block) in self.used.iter().zip(&self.blocks) {
            // Acquire: whatever the previous owner wrote before `dealloc` is behind us.
            if flag
                .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return block.0.get().cast();
            }
        }
        ptr::null_mut()
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        let index = (ptr as usize - self.blocks.as_ptr() as usize) / BLOCK;
        // Release: our last writes to the block happen before the next owner's.
        self.used[index].store(0, Ordering::Release);
    }
}

/// The global allocator.
#[global_allocator]
static ENDPOINT_BLOCKS: EndpointBlocks = EndpointBlocks {
    used: [const { AtomicU32::new(0) }; BLOCKS],
    blocks: [const { Block(UnsafeCell::new([0; BLOCK])) }; BLOCKS],
};
