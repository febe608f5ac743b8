//! How a heap word is laid out: object headers and references.
//!
//! A reference is one `u64`: 0 is null. An object reference has the object's generation in
//! bits 32..63 and its header's word index plus one in bits 0..32; an atomic-block reference
//! has the top bit set, its slot's generation in bits 32..63 and the slot in bits 0..32. A
//! header holds the object's size in words (header included) in bits 0..16, the number of
//! leading reference fields in bits 16..32, the generation in bits 32..63 and "allocated" in
//! bit 63.
//!
//! The generation lives in the header word, not in a side table, because the header is read
//! by every access anyway (to bounds-check the field), so checking it costs no extra cache
//! line; and because blocks are never split or merged (a freed block goes back to the free
//! list of its own size), a header word is the start of the same block for ever and can carry
//! that block's count of incarnations across frees. Freeing keeps the generation
//! (`Header::freed`); allocating bumps it (`Header::next_gen`). 31 bits: the same block
//! must be reused 2^31 times before an old handle could match again.

pub(crate) const ATOMIC_TAG: u64 = 1 << 63;
const ALLOCATED: u64 = 1 << 63;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header(pub(crate) u64);

/// Largest object size in words the header can hold.
pub(crate) const MAX_WORDS: usize = 0xffff;
/// Generations are 31 bits (bits 32..63 of a reference or header).
pub(crate) const GEN_MASK: u32 = 0x7fff_ffff;

/// The generation of a reference (object or atomic block).
#[inline]
pub(crate) fn ref_gen(r: u64) -> u32 {
    (r >> 32) as u32 & GEN_MASK
}

/// The heap index an object reference names (`usize::MAX` for a malformed zero index, which
/// every bounds check refuses).
#[inline]
pub(crate) fn ref_index(r: u64) -> usize {
    ((r & 0xffff_ffff) as usize).wrapping_sub(1)
}

/// The object reference for the header at `index` with generation `gen`.
#[inline]
pub(crate) fn object_ref(index: usize, gen: u32) -> u64 {
    ((gen as u64) << 32) | (index as u64 + 1)
}

impl Header {
    pub(crate) fn used(words: usize, ptrs: usize, gen: u32) -> Self {
        Header(ALLOCATED | ((gen as u64) << 32) | ((ptrs as u64) << 16) | words as u64)
    }
    /// The free header of this block: same size, same generation (the next allocation of the
    /// block bumps it), not allocated.
    pub(crate) fn freed(self) -> Self {
        Header(self.0 & !(ALLOCATED | 0xffff_0000))
    }
    /// The generation the block's next incarnation gets: never 0, so that a reference is
    /// never mistaken for null.
    pub(crate) fn next_gen(self) -> u32 {
        let g = (self.gen() + 1) & GEN_MASK;
        g.max(1)
    }
    pub(crate) fn gen(self) -> u32 {
        (self.0 >> 32) as u32 & GEN_MASK
    }
    pub(crate) fn words(self) -> usize {
        (self.0 & 0xffff) as usize
    }
    pub(crate) fn ptrs(self) -> usize {
        ((self.0 >> 16) & 0xffff) as usize
    }
    pub(crate) fn is_allocated(self) -> bool {
        self.0 & ALLOCATED != 0
    }
}

/// Read access to a heap's words: the snapshot (plain) or the live heap (atomics).
pub(crate) trait Words {
    fn word(&self, i: usize) -> u64;
}

impl Words for [u64] {
    #[inline]
    fn word(&self, i: usize) -> u64 {
        self[i]
    }
}

impl Words for [std::sync::atomic::AtomicU64] {
    #[inline]
    fn word(&self, i: usize) -> u64 {
        self[i].load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The collector's working memory, sized once at start-up so a cycle never allocates.
pub(crate) struct MarkState {
    /// One bit per heap word: an allocated object starts here.
    pub(crate) starts: Vec<u64>,
    /// One bit per heap word: the object starting here is reachable.
    pub(crate) marks: Vec<u64>,
    pub(crate) stack: Vec<u32>,
    /// Per atomic slot: the reference that reached it this cycle (0 = none).
    pub(crate) atomic_marks: Vec<u64>,
}

/// An empty vector with room for `cap` elements whose pages are already written: a fresh
/// allocation may be unbacked (calloc, mmap), and its first touch on the audio thread would be
/// a page fault.
pub(crate) fn backed<T: Copy + Default>(cap: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(cap);
    v.extend(std::iter::repeat_n(T::default(), cap));
    v.clear();
    v
}

#[inline]
fn get(bits: &[u64], i: usize) -> bool {
    bits[i / 64] & (1 << (i % 64)) != 0
}
#[inline]
fn set(bits: &mut [u64], i: usize) {
    bits[i / 64] |= 1 << (i % 64);
}

impl MarkState {
    pub(crate) fn new(heap_words: usize, slots: usize) -> Self {
        let mut st = Self {
            starts: vec![0; heap_words.div_ceil(64)],
            marks: vec![0; heap_words.div_ceil(64)],
            stack: backed(heap_words / 2 + 1),
            atomic_marks: vec![0; slots],
        };
        // Write every page now (calloc'd memory may be unbacked): in stop-the-world mode this
        // state is used on the audio thread, where a first touch would be a page fault.
        st.starts
            .iter_mut()
            .for_each(|w| *w = std::hint::black_box(0));
        st.marks
            .iter_mut()
            .for_each(|w| *w = std::hint::black_box(0));
        st.atomic_marks
            .iter_mut()
            .for_each(|w| *w = std::hint::black_box(0));
        st
    }

    /// Marks everything reachable from `roots` in `heap[..top]`. Precise: only the leading
    /// reference fields each header announces are read as references, and a reference only
    /// counts if it names the start of an allocated object, so even a corrupted field cannot
    /// send the walk outside the heap.
    pub(crate) fn mark<W: Words + ?Sized, R: Words + ?Sized>(
        &mut self,
        heap: &W,
        top: usize,
        roots: &R,
        n_roots: usize,
    ) -> usize {
        let words = top.div_ceil(64);
        self.starts[..words].fill(0);
        self.marks[..words].fill(0);
        let mut i = 0;
        while i < top {
            let h = Header(heap.word(i));
            if h.is_allocated() {
                set(&mut self.starts, i);
            }
            i += h.words().max(2);
        }
        self.stack.clear();
        let mut marked = 0;
        for r in 0..n_roots {
            marked += self.visit(roots.word(r), top);
        }
        while let Some(obj) = self.stack.pop() {
            let obj = obj as usize;
            let h = Header(heap.word(obj));
            let end = (obj + 1 + h.ptrs()).min(obj + h.words()).min(top);
            for f in obj + 1..end {
                marked += self.visit(heap.word(f), top);
            }
        }
        marked
    }

    #[inline]
    fn visit(&mut self, r: u64, top: usize) -> usize {
        if r == 0 {
            return 0;
        }
        if r & ATOMIC_TAG != 0 {
            let slot = (r & 0xffff_ffff) as usize;
            if let Some(m) = self.atomic_marks.get_mut(slot) {
                *m = r;
            }
            return 0;
        }
        // The generation is not checked here: the mutator refuses to store a stale reference
        // (its generation is checked on every write), so every reference in the heap or the
        // roots names the incarnation that is there.
        let i = ref_index(r);
        if i < top && get(&self.starts, i) && !get(&self.marks, i) {
            set(&mut self.marks, i);
            self.stack.push(i as u32);
            1
        } else {
            0
        }
    }

    pub(crate) fn is_marked(&self, i: usize) -> bool {
        get(&self.marks, i)
    }
}
