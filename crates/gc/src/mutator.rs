//! The audio thread's side: allocation, field access, roots, and the per-block protocol.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use downbeat_ring::{Consumer, Producer};
use downbeat_rt::alloc::Tlsf;

use crate::shared::{Cycle, Shared};
use crate::words::{backed, object_ref, ref_gen, ref_index, Header, MarkState, ATOMIC_TAG};
use crate::{AccessError, Atomic, Gc, GcError, Mode, Wake};

/// An atomic-heap block the mutator handed out: where it is and which incarnation.
#[derive(Clone, Copy)]
pub(crate) struct Slot {
    ptr: *mut u8,
    bytes: usize,
    gen: u32,
    live: bool,
}

/// The memory behind the atomic heap, faulted in at start-up.
pub(crate) struct AtomicMemory {
    mem: Box<[u128]>,
}

impl AtomicMemory {
    pub(crate) fn new(bytes: usize) -> Self {
        let mut mem = vec![0u128; bytes.div_ceil(16).max(4)].into_boxed_slice();
        // Fresh zeroed pages may not be backed yet; write one word per page.
        for i in (0..mem.len()).step_by(4096 / 16) {
            // SAFETY: i is in bounds; volatile so the write is not optimised away.
            unsafe { std::ptr::write_volatile(&mut mem[i], 0) };
        }
        #[cfg(unix)]
        // SAFETY: the range is one live allocation. Failure only means it may be paged out,
        // which the pool's note already covers for the pointer heap's owner to see.
        unsafe {
            libc::mlock(mem.as_ptr().cast(), mem.len() * 16);
        }
        Self { mem }
    }
}

/// How long `begin_block` spins for an unfinished snapshot before it starts yielding with
/// `sched_yield`, a system call: the snapshot thread copies a bounded amount, so a wait this
/// long means it is not running.
const SPIN_LIMIT: Duration = Duration::from_millis(2);

/// Counters the audio thread keeps for itself (no sharing, no atomics on its hot path).
#[derive(Clone, Copy, Debug, Default)]
#[non_exhaustive]
pub struct MutatorStats {
    /// Blocks run.
    pub blocks: u64,
    /// Time the last `begin_block`/`end_block` pair spent waiting for or doing collection
    /// work (waiting for a snapshot; in stop-the-world mode also mark and sweep).
    pub last_blocking: Duration,
    /// Longest such time.
    pub max_blocking: Duration,
    /// Sum of such times.
    pub total_blocking: Duration,
    /// Blocks that had to wait at all.
    pub blocked_blocks: u64,
    /// Pointer-heap objects allocated.
    pub objects_allocated: u64,
    /// Pointer-heap objects returned to the free lists.
    pub objects_freed: u64,
    /// Atomic blocks allocated.
    pub atomic_allocated: u64,
    /// Atomic blocks returned to the atomic heap.
    pub atomic_freed: u64,
    /// Their bytes (as requested).
    pub atomic_bytes_freed: u64,
    /// Time spent applying frees (pointer and atomic) in `begin_block`.
    pub free_time: Duration,
    /// Snapshots requested.
    pub snapshots_requested: u64,
    /// Of which full.
    pub full_requested: u64,
    /// Snapshots the audio thread copied itself: the snapshot thread had not started the copy
    /// by the next block, or has no real-time priority (see [`Mutator::begin_block`]).
    pub copies_on_audio_thread: u64,
}

/// The audio thread's handle to the collected heaps. Use it through [`begin_block`].
///
/// [`begin_block`]: Mutator::begin_block
pub struct Mutator {
    shared: Arc<Shared>,
    mode: Mode,
    wake: Wake,
    heap_words: usize,
    max_words: usize,
    top: usize,
    /// Per size class (words): first free block's index + 1, or 0.
    free_heads: Box<[u32]>,
    tlsf: Tlsf,
    slots: Box<[Slot]>,
    slots_used: usize,
    free_slots: Vec<u32>,
    frees: Consumer<u64>,
    new_atomic: Producer<u64>,
    atomic_allocs: u64,
    requested_last: bool,
    allocs_since: u64,
    last_full: Instant,
    full_every: Duration,
    safety_words: usize,
    in_safety: bool,
    free_budget: usize,
    block_start: Instant,
    blocking: Duration,
    stw: Option<Box<MarkState>>,
    /// Replicating collector: which complementary block and stack the barrier writes.
    wb: usize,
    /// Replicating collector: entries on stack `wb` (capacity + 1 once it overflowed).
    stack_len: usize,
    /// Replicating collector: reference writes since the last collection started.
    writes_since: u64,
    stats: MutatorStats,
    // Declared last: the TLSF and the slots point into it.
    _atomic_memory: AtomicMemory,
}

// SAFETY: the raw pointers in `slots` point into `_atomic_memory`, which moves with the
// mutator; nothing else holds them.
unsafe impl Send for Mutator {}

pub(crate) struct MutatorParts {
    pub(crate) shared: Arc<Shared>,
    pub(crate) mode: Mode,
    pub(crate) wake: Wake,
    pub(crate) max_words: usize,
    pub(crate) atomic_bytes: usize,
    pub(crate) slots: usize,
    pub(crate) frees: Consumer<u64>,
    pub(crate) new_atomic: Producer<u64>,
    pub(crate) full_every: Duration,
    pub(crate) safety_fraction: f64,
    pub(crate) free_budget: usize,
}

impl Mutator {
    pub(crate) fn new(p: MutatorParts) -> Result<Self, GcError> {
        let heap_words = p.shared.heap.len();
        let memory = AtomicMemory::new(p.atomic_bytes);
        let start = NonNull::new(memory.mem.as_ptr() as *mut u8).expect("boxed slice");
        // SAFETY: the memory lives in the mutator next to the TLSF, is dropped after it
        // (field order), and only the TLSF hands out parts of it.
        let tlsf = unsafe { Tlsf::new(start, memory.mem.len() * 16) }.map_err(GcError::Alloc)?;
        let stw = matches!(p.mode, Mode::StopTheWorld)
            .then(|| Box::new(MarkState::new(heap_words, p.slots)));
        Ok(Self {
            mode: p.mode,
            wake: p.wake,
            heap_words,
            max_words: p.max_words,
            top: 0,
            free_heads: vec![0; p.max_words + 1].into_boxed_slice(),
            tlsf,
            slots: vec![
                Slot {
                    ptr: std::ptr::null_mut(),
                    bytes: 0,
                    gen: 1,
                    live: false
                };
                p.slots
            ]
            .into_boxed_slice(),
            slots_used: 0,
            free_slots: backed(p.slots),
            frees: p.frees,
            new_atomic: p.new_atomic,
            atomic_allocs: 0,
            requested_last: false,
            allocs_since: 0,
            last_full: Instant::now(),
            full_every: p.full_every,
            safety_words: (heap_words as f64 * p.safety_fraction) as usize,
            in_safety: false,
            free_budget: p.free_budget,
            block_start: Instant::now(),
            blocking: Duration::ZERO,
            stw,
            wb: 0,
            stack_len: 0,
            writes_since: 0,
            stats: MutatorStats::default(),
            shared: p.shared,
            _atomic_memory: memory,
        })
    }

    /// Starts one audio block, then applies up to the configured number of frees the
    /// collector has sent back. If the snapshot requested after the previous block is not
    /// copied yet:
    ///
    /// * nobody has started the copy (the snapshot thread is asleep or preempted): the audio
    ///   thread claims it and copies it itself, the same bounded `memcpy` the rehearsal
    ///   measures, and waits for no one;
    /// * the snapshot thread is copying: it runs at the audio thread's priority on its own CPU
    ///   (or the audio thread would be copying itself, see [`Config::snapshot_priority`]), so
    ///   the wait spins. If it is still copying after 2 ms (preempted mid-copy), the audio
    ///   thread calls `sched_yield` every 64 spins until the copy is done, so that a snapshot
    ///   thread sharing the core can run: a system call per yield, which the guard reports
    ///   (`tests/guard.rs` stalls a copy for 26 ms and checks that the wait spins, yields
    ///   and makes no other call).
    ///
    /// No allocation or lock; no system call unless that last case happens.
    ///
    /// [`Config::snapshot_priority`]: crate::Config::snapshot_priority
    ///
    /// ```
    /// let (mut mutator, _collector) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// let mut block = mutator.begin_block();
    /// let voice = block.alloc(2, 1).unwrap();
    /// block.set_root(0, Some(voice)).unwrap();
    /// drop(block); // ends the block
    /// ```
    pub fn begin_block(&mut self) -> Block<'_> {
        let start = Instant::now();
        let mut spins = 0u32;
        while self.shared.handshake.copying() && !self.shared.stop.load(Ordering::Relaxed) {
            if self.shared.handshake.claim() {
                self.copy_here();
                spins = spins.max(1);
                break;
            }
            spins += 1;
            if spins % 64 != 0 || start.elapsed() < SPIN_LIMIT {
                std::hint::spin_loop();
            } else {
                // The snapshot thread runs at audio priority and copies a bounded amount; a
                // wait this long means it was preempted, and spinning would keep it off the CPU.
                std::thread::yield_now();
            }
        }
        let waited = if spins > 0 {
            start.elapsed()
        } else {
            Duration::ZERO
        };
        self.blocking = waited;
        if spins > 0 {
            self.stats.blocked_blocks += 1;
        }
        let f0 = Instant::now();
        let n = self.apply_frees(self.free_budget);
        if n > 0 {
            self.stats.free_time += f0.elapsed();
        }
        self.block_start = Instant::now();
        Block { m: self }
    }

    /// Returns up to `budget` blocks the collector freed to the allocators.
    fn apply_frees(&mut self, budget: usize) -> usize {
        let mut n = 0;
        while n < budget {
            let Some(r) = self.frees.pop() else { break };
            n += 1;
            if r & ATOMIC_TAG != 0 {
                self.release_slot(r);
            } else {
                let i = r as usize;
                let words = Header(self.word(i)).words();
                self.push_free(i, words);
                self.stats.objects_freed += 1;
            }
        }
        n
    }

    fn release_slot(&mut self, r: u64) {
        let slot = (r & 0xffff_ffff) as usize;
        let gen = ((r >> 32) & 0x7fff_ffff) as u32;
        let s = &mut self.slots[slot];
        if !s.live || s.gen != gen {
            debug_assert!(false, "collector freed a stale atomic block");
            return;
        }
        s.live = false;
        s.gen = (s.gen + 1) & 0x7fff_ffff;
        let (ptr, bytes) = (s.ptr, s.bytes);
        // SAFETY: the slot was live with this generation, so `ptr` is a live TLSF block of
        // ours, and marking the slot dead first means it is freed once.
        unsafe { self.tlsf.free(NonNull::new_unchecked(ptr)) };
        self.free_slots.push(slot as u32);
        self.stats.atomic_freed += 1;
        self.stats.atomic_bytes_freed += bytes as u64;
    }

    /// Links a zeroed, free-headed block into its size class. The link lives in the first
    /// payload word, which allocation clears again.
    fn push_free(&mut self, i: usize, words: usize) {
        self.set_word(i + 1, self.free_heads[words] as u64);
        self.free_heads[words] = i as u32 + 1;
    }

    #[inline]
    fn word(&self, i: usize) -> u64 {
        self.shared.heap[i].load(Ordering::Relaxed)
    }
    #[inline]
    fn set_word(&self, i: usize, v: u64) {
        self.shared.heap[i].store(v, Ordering::Relaxed)
    }

    /// Writes a word the collector's mark reads (a header or a reference field): with the
    /// replicating collector this is the write barrier, which also records it for the
    /// snapshot. Data words never come here: the thesis' point is that the barrier stays out
    /// of the DSP loops.
    #[inline]
    fn set_traced_word(&mut self, i: usize, v: u64) {
        self.set_word(i, v);
        if let Some(r) = &self.shared.replica {
            r.record(self.wb, i, v, &mut self.stack_len);
            self.writes_since += 1;
        }
    }

    fn end_block(&mut self) {
        self.stats.blocks += 1;
        if self.top > self.safety_words {
            if !self.in_safety {
                self.in_safety = true;
                self.shared
                    .stats
                    .safety_warnings
                    .fetch_add(1, Ordering::Relaxed);
            }
        } else {
            self.in_safety = false;
        }
        let now = Instant::now();
        let since_full = now.saturating_duration_since(self.last_full);
        let full_due = since_full >= self.full_every;
        match self.mode {
            Mode::Snapshot => {
                let wanted = !self.requested_last && (self.allocs_since > 0 || full_due);
                // The request fields are only read by the snapshot thread after it sees the
                // request, and nobody reads them while the collector is busy.
                if wanted && self.shared.handshake.is_idle() {
                    self.shared.req_top.store(self.top, Ordering::Relaxed);
                    self.shared.req_full.store(full_due, Ordering::Relaxed);
                    self.shared
                        .req_atomic_allocs
                        .store(self.atomic_allocs, Ordering::Relaxed);
                }
                if wanted && self.shared.handshake.try_request() {
                    if self.shared.inline_copy.load(Ordering::Relaxed) {
                        // No real-time snapshot thread: copy now rather than wait for a
                        // lower-priority thread at the next block.
                        let t0 = Instant::now();
                        if self.shared.handshake.claim() {
                            self.copy_here();
                        }
                        self.blocking += t0.elapsed();
                    } else {
                        self.wake(&self.shared.snapshot_thread);
                    }
                    self.requested_last = true;
                    self.allocs_since = 0;
                    self.stats.snapshots_requested += 1;
                    if full_due {
                        self.last_full = now;
                        self.stats.full_requested += 1;
                    }
                } else {
                    self.requested_last = false;
                    if since_full >= 2 * self.full_every {
                        // The one-second window passed without a chance to take it.
                        self.shared
                            .stats
                            .late_full_snapshots
                            .fetch_add(1, Ordering::Relaxed);
                        self.last_full = now;
                    }
                }
            }
            Mode::Replicating(_) => self.hand_over(full_due, now),
            Mode::StopTheWorld => {
                if !self.requested_last && (self.allocs_since > 0 || full_due) {
                    if full_due {
                        self.last_full = now;
                    }
                    let t0 = Instant::now();
                    self.collect_here();
                    self.blocking += t0.elapsed();
                    self.requested_last = true;
                    self.allocs_since = 0;
                } else {
                    self.requested_last = false;
                }
            }
        }
        let b = self.blocking;
        self.stats.last_blocking = b;
        self.stats.total_blocking += b;
        self.stats.max_blocking = self.stats.max_blocking.max(b);
    }

    /// The replicating collector's start of a collection, at the end of a block: if the
    /// collector is idle and something may have become garbage, swap the complementary blocks
    /// and copy the roots, and hand over. This is the audio thread's whole pause; it does not
    /// depend on the heap's size. Unlike the snapshot collector, nothing makes the next block
    /// wait, so there is no need to skip a block after a collection started.
    ///
    /// `due`: a [`Config::full_snapshot_every`](crate::Config::full_snapshot_every) passed
    /// without a collection. Nothing can have become garbage then, but a collection that
    /// cheap keeps the collector threads awake while blocks run (they doze after two idle
    /// seconds).
    fn hand_over(&mut self, due: bool, now: Instant) {
        let Some(r) = &self.shared.replica else {
            return;
        };
        let wanted = self.allocs_since > 0 || self.writes_since > 0 || due;
        if !wanted || !self.shared.handshake.is_idle() {
            return;
        }
        let t0 = Instant::now();
        let roots = &self.shared.roots;
        // SAFETY: AtomicU64 has u64's layout and both arrays have `roots.len()` elements (the
        // copy was sized from the same config). Only this thread writes the roots, and in IDLE
        // the collector does not read the copy (it starts after the Release below), so
        // nothing runs concurrently with these plain reads and writes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                roots.as_ptr().cast::<u64>(),
                r.roots.as_ptr().cast::<u64>().cast_mut(),
                roots.len().min(r.roots.len()),
            )
        };
        let len = if self.stack_len > r.stack_capacity() {
            crate::replica::OVERFLOWED
        } else {
            self.stack_len
        };
        r.req_index.store(self.wb, Ordering::Relaxed);
        r.req_stack_len.store(len, Ordering::Relaxed);
        self.shared.req_top.store(self.top, Ordering::Relaxed);
        self.shared
            .req_atomic_allocs
            .store(self.atomic_allocs, Ordering::Relaxed);
        if !self.shared.handshake.try_hand_over() {
            // Only this thread leaves IDLE, and it was IDLE above.
            return;
        }
        self.wb ^= 1;
        self.stack_len = 0;
        self.wake(&self.shared.collector_thread);
        self.allocs_since = 0;
        self.writes_since = 0;
        self.last_full = now;
        self.stats.snapshots_requested += 1;
        let paused = t0.elapsed();
        self.blocking += paused;
        self.shared.stats.roots.record(paused.as_nanos() as u64);
    }

    /// Copies a claimed snapshot on the audio thread and hands it to the mark-and-sweep
    /// thread.
    fn copy_here(&mut self) {
        crate::collector::copy_snapshot(&self.shared);
        self.shared.handshake.copied();
        self.wake(&self.shared.collector_thread);
        self.stats.copies_on_audio_thread += 1;
    }

    /// With [`Wake::Unpark`], wakes the collector thread that has work now (a system call
    /// when it sleeps); with [`Wake::Poll`] it finds the work at its next poll.
    fn wake(&self, thread: &std::sync::OnceLock<std::thread::Thread>) {
        if let (Wake::Unpark, Some(t)) = (self.wake, thread.get()) {
            t.unpark();
        }
    }

    /// Stop-the-world mark and sweep of the live heap on the calling (audio) thread: the
    /// baseline the snapshot collector is measured against.
    fn collect_here(&mut self) {
        let mut st = self.stw.take().expect("stop-the-world state");
        let t0 = Instant::now();
        let heap: &[AtomicU64] = &self.shared.heap;
        let roots: &[AtomicU64] = &self.shared.roots;
        st.mark(heap, self.top, roots, roots.len());
        let t1 = Instant::now();
        let mut i = 0;
        let (mut freed, mut bytes) = (0u64, 0u64);
        while i < self.top {
            let h = Header(self.word(i));
            let words = h.words().max(2);
            if h.is_allocated() && !st.is_marked(i) {
                for w in i + 1..i + words {
                    self.set_word(w, 0);
                }
                self.set_word(i, h.freed().0);
                self.push_free(i, words);
                freed += 1;
                bytes += words as u64 * 8;
            }
            i += words;
        }
        self.stats.objects_freed += freed;
        let mut afreed = 0u64;
        for slot in 0..self.slots_used {
            let s = self.slots[slot];
            if s.live {
                let r = atomic_ref(slot, s.gen);
                if st.atomic_marks[slot] != r {
                    self.release_slot(r);
                    afreed += 1;
                }
            }
            st.atomic_marks[slot] = 0;
        }
        self.shared.stats.record_cycle(Cycle {
            mark: t1 - t0,
            sweep: t1.elapsed(),
            objects_freed: freed,
            bytes_freed: bytes,
            atomic_freed: afreed,
        });
        self.stw = Some(st);
    }

    /// Whether a snapshot has been requested and is not copied yet: `begin_block` would wait.
    ///
    /// ```
    /// let (m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// assert!(!m.snapshot_pending());
    /// ```
    pub fn snapshot_pending(&self) -> bool {
        self.shared.handshake.copying() && !self.shared.stop.load(Ordering::Relaxed)
    }

    /// What the audio thread counted.
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// m.begin_block();
    /// assert_eq!(m.stats().blocks, 1);
    /// ```
    pub fn stats(&self) -> MutatorStats {
        self.stats
    }

    /// Bytes of the pointer heap below its highest allocation (the part a partial snapshot
    /// copies).
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// m.begin_block().alloc(1, 0).unwrap();
    /// assert_eq!(m.heap_used(), 16);
    /// ```
    pub fn heap_used(&self) -> usize {
        self.top * 8
    }

    /// Payload bytes in use in the atomic heap.
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// m.begin_block().alloc_atomic(100).unwrap();
    /// assert_eq!(m.atomic_used(), 112);
    /// ```
    pub fn atomic_used(&self) -> usize {
        self.tlsf.used()
    }

    /// Live objects and atomic blocks as the audio thread sees them: allocated and not yet
    /// returned. Equals what is reachable once the collector has caught up.
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// m.begin_block().alloc(0, 1).unwrap();
    /// assert_eq!(m.live(), (1, 0));
    /// ```
    pub fn live(&self) -> (u64, u64) {
        (
            self.stats.objects_allocated - self.stats.objects_freed,
            self.stats.atomic_allocated - self.stats.atomic_freed,
        )
    }

    /// Checks the heap's invariants: every block on a free list has a free header of its
    /// class and a zeroed payload (freed blocks are zeroed by the collector, so a stale
    /// reference can never resurrect anything), and the linear walk of headers ends exactly
    /// at the top. O(heap): for tests, not for the audio thread. Returns the number of free
    /// blocks checked.
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// assert_eq!(m.audit(), Ok(0));
    /// ```
    pub fn audit(&self) -> Result<usize, AuditError> {
        let mut checked = 0;
        for class in 0..self.free_heads.len() {
            let mut link = self.free_heads[class];
            while link != 0 {
                let i = link as usize - 1;
                let h = Header(self.word(i));
                if h.is_allocated() || h.words() != class {
                    return Err(AuditError::FreeHeader {
                        at: i,
                        header: h.0,
                        class,
                    });
                }
                for w in i + 2..i + class {
                    if self.word(w) != 0 {
                        return Err(AuditError::NotZeroed { block: i, word: w });
                    }
                }
                link = self.word(i + 1) as u32;
                checked += 1;
                if checked > self.heap_words {
                    return Err(AuditError::FreeListCycle { class });
                }
            }
        }
        let mut i = 0;
        while i < self.top {
            let w = Header(self.word(i)).words();
            if w < 2 {
                return Err(AuditError::BadSize { at: i, words: w });
            }
            i += w;
        }
        if i != self.top {
            return Err(AuditError::WalkOverrun {
                end: i,
                top: self.top,
            });
        }
        Ok(checked)
    }
}

/// What [`Mutator::audit`] found wrong with the pointer heap, and where (word indices into
/// the heap). Any of these is a bug in the collector, never in the caller.
///
/// ```
/// let e = downbeat_gc::AuditError::NotZeroed { block: 10, word: 12 };
/// assert_eq!(e.to_string(), "freed block at word 10 is not zeroed at word 12");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuditError {
    /// A block on the free list of size class `class` has a header that is allocated or of
    /// another size.
    FreeHeader {
        /// The block's header word index.
        at: usize,
        /// The header word found there.
        header: u64,
        /// The free list it was found on (its size in words).
        class: usize,
    },
    /// A freed block still holds a non-zero word, which a stale reference could resurrect.
    NotZeroed {
        /// The block's header word index.
        block: usize,
        /// The non-zero word.
        word: usize,
    },
    /// The free list of this size class does not end: it links back into itself.
    FreeListCycle {
        /// The size class (words) whose list loops.
        class: usize,
    },
    /// The linear walk over headers met a header whose size is below the two-word minimum.
    BadSize {
        /// The header word index.
        at: usize,
        /// The size it claims.
        words: usize,
    },
    /// The linear walk over headers stepped past the heap's top instead of ending on it.
    WalkOverrun {
        /// Where the walk ended.
        end: usize,
        /// The heap's top.
        top: usize,
    },
}

impl std::fmt::Display for AuditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            AuditError::FreeHeader { at, header, class } => write!(
                f,
                "free block at word {at} has header {header:#x}, on the free list of class {class}"
            ),
            AuditError::NotZeroed { block, word } => {
                write!(
                    f,
                    "freed block at word {block} is not zeroed at word {word}"
                )
            }
            AuditError::FreeListCycle { class } => {
                write!(f, "the free list of class {class} loops")
            }
            AuditError::BadSize { at, words } => {
                write!(f, "header at word {at} claims {words} words (at least 2)")
            }
            AuditError::WalkOverrun { end, top } => {
                write!(f, "header walk ends at word {end}, past the top {top}")
            }
        }
    }
}

impl std::error::Error for AuditError {}

fn atomic_ref(slot: usize, gen: u32) -> u64 {
    ATOMIC_TAG | ((gen as u64) << 32) | slot as u64
}

/// One audio block's access to the heaps; ending it (dropping it or calling [`end`]) runs
/// the collector's `end_block` decision.
///
/// Objects have a fixed number of leading reference fields and then data words, all zero
/// when allocated. A [`Gc`] is only guaranteed to stay valid while it is reachable from a root
/// slot at the end of every block (references held in local variables across blocks are not
/// roots). Misuse cannot corrupt memory or panic: every access is bounds checked, and a
/// handle whose object was collected is refused with [`AccessError::Stale`] (its generation no
/// longer matches the block's), even after the block was reused for another object.
///
/// [`end`]: Block::end
pub struct Block<'m> {
    m: &'m mut Mutator,
}

impl Drop for Block<'_> {
    fn drop(&mut self) {
        self.m.end_block();
    }
}

impl Block<'_> {
    /// Ends the block (same as dropping it).
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// m.begin_block().end();
    /// ```
    pub fn end(self) {}

    /// Allocates an object with `refs` reference fields followed by `data` 64-bit data words,
    /// all zero. O(1): a pop from its size class's free list or a bump of the heap top.
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// let mut b = m.begin_block();
    /// let o = b.alloc(1, 2).unwrap();
    /// assert_eq!(b.get_ref(o, 0), Ok(None));
    /// assert_eq!(b.data(o, 1), Ok(0));
    /// ```
    pub fn alloc(&mut self, refs: usize, data: usize) -> Result<Gc, GcError> {
        let m = &mut *self.m;
        let words = 1 + (refs + data).max(1);
        if words > m.max_words || refs > 0xffff {
            return Err(GcError::TooLarge);
        }
        let mut i = m.take_free(words);
        if i.is_none() && m.top + words > m.heap_words {
            // Memory may be waiting in the frees queue.
            m.apply_frees(m.free_budget);
            i = m.take_free(words);
        }
        let i = match i {
            Some(i) => i,
            None if m.top + words <= m.heap_words => {
                let i = m.top;
                m.top += words;
                i
            }
            None => return Err(GcError::OutOfMemory),
        };
        // A free block's header kept its generation (a fresh one is 0): the new incarnation
        // gets the next, so handles to the old one are refused.
        let gen = Header(m.word(i)).next_gen();
        m.set_traced_word(i, Header::used(words, refs, gen).0);
        if m.shared.replica.is_some() {
            // The live heap's reference fields are zero (swept, or fresh), but a reused
            // block's snapshot copy may still hold its previous life's references.
            for f in i + 1..i + 1 + refs {
                m.set_traced_word(f, 0);
            }
        }
        m.stats.objects_allocated += 1;
        m.allocs_since += 1;
        Ok(Gc(object_ref(i, gen)))
    }

    /// Allocates a pointer-free block of at least `bytes` bytes, zeroed only if fresh (sample
    /// buffers are usually overwritten anyway), from the TLSF atomic heap. O(1).
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// let mut b = m.begin_block();
    /// let line = b.alloc_atomic(4 * 480).unwrap();
    /// b.samples(line).unwrap().fill(0.0);
    /// assert_eq!(b.samples(line).unwrap().len(), 480);
    /// ```
    pub fn alloc_atomic(&mut self, bytes: usize) -> Result<Atomic, GcError> {
        let m = &mut *self.m;
        if m.free_slots.is_empty() && m.slots_used == m.slots.len() {
            m.apply_frees(m.free_budget);
        }
        let slot = match m.free_slots.pop() {
            Some(s) => s as usize,
            None if m.slots_used < m.slots.len() => {
                m.slots_used += 1;
                m.slots_used - 1
            }
            None => return Err(GcError::OutOfSlots),
        };
        let layout = Layout::from_size_align(bytes.max(1), 16).map_err(|_| GcError::TooLarge)?;
        let ptr = match m.tlsf.alloc(layout) {
            Ok(p) => p,
            Err(_) => {
                m.apply_frees(m.free_budget);
                match m.tlsf.alloc(layout) {
                    Ok(p) => p,
                    Err(e) => {
                        m.free_slots.push(slot as u32);
                        return Err(match e {
                            downbeat_rt::alloc::AllocError::OutOfMemory => GcError::OutOfMemory,
                            e => GcError::Alloc(e),
                        });
                    }
                }
            }
        };
        let s = &mut m.slots[slot];
        s.ptr = ptr.as_ptr();
        s.bytes = bytes;
        s.live = true;
        let r = atomic_ref(slot, s.gen);
        // Only the concurrent collectors need to hear of it; stop-the-world scans the slots.
        if m.mode != Mode::StopTheWorld && m.new_atomic.push(r).is_err() {
            unreachable!("the queue holds one entry per slot");
        }
        m.atomic_allocs += 1;
        m.allocs_since += 1;
        m.stats.atomic_allocated += 1;
        Ok(Atomic(r))
    }

    fn slot(&self, a: Atomic) -> Option<Slot> {
        let slot = (a.0 & 0xffff_ffff) as usize;
        let gen = ref_gen(a.0);
        self.m
            .slots
            .get(slot)
            .copied()
            .filter(|s| s.live && s.gen == gen)
    }

    /// Whether `o` still names the object it was returned for: `false` once that object was
    /// collected (and its memory perhaps reused). O(1): one load of its header.
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// let mut b = m.begin_block();
    /// let o = b.alloc(0, 1).unwrap();
    /// assert!(b.is_live(o));
    /// ```
    pub fn is_live(&self, o: Gc) -> bool {
        self.header(o).is_ok()
    }

    /// Whether `a` still names the atomic block it was returned for. O(1).
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// let mut b = m.begin_block();
    /// let a = b.alloc_atomic(16).unwrap();
    /// assert!(b.is_live_atomic(a));
    /// ```
    pub fn is_live_atomic(&self, a: Atomic) -> bool {
        self.slot(a).is_some()
    }

    /// The atomic block's bytes, or `None` if the handle is stale (its block was collected).
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// let mut b = m.begin_block();
    /// let a = b.alloc_atomic(3).unwrap();
    /// b.bytes(a).unwrap().copy_from_slice(b"abc");
    /// assert_eq!(b.bytes(a).unwrap(), b"abc");
    /// ```
    pub fn bytes(&mut self, a: Atomic) -> Option<&mut [u8]> {
        let s = self.slot(a)?;
        // SAFETY: a live slot names a live TLSF block of at least `bytes` bytes that only this
        // mutator touches, and `&mut self` makes this the only view of it right now.
        Some(unsafe { std::slice::from_raw_parts_mut(s.ptr, s.bytes) })
    }

    /// The atomic block as `f32` samples (its length in bytes / 4), or `None` if the handle
    /// is stale.
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// let mut b = m.begin_block();
    /// let a = b.alloc_atomic(16).unwrap();
    /// b.samples(a).unwrap()[3] = 0.5;
    /// assert_eq!(b.samples(a).unwrap()[3], 0.5);
    /// ```
    pub fn samples(&mut self, a: Atomic) -> Option<&mut [f32]> {
        let s = self.slot(a)?;
        // SAFETY: as in `bytes`; the block is 16-byte aligned, so f32-aligned.
        Some(unsafe { std::slice::from_raw_parts_mut(s.ptr.cast::<f32>(), s.bytes / 4) })
    }

    /// The atomic block as read-only `f32` samples, or `None` if the handle is stale. Unlike
    /// [`samples`](Self::samples) it borrows the block only shared, so fields can still be
    /// read (and other blocks viewed) while the slice is held in an inner loop.
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// let mut b = m.begin_block();
    /// let (x, y) = (b.alloc_atomic(16).unwrap(), b.alloc_atomic(16).unwrap());
    /// b.samples(x).unwrap().fill(0.5);
    /// b.samples(y).unwrap().fill(2.0);
    /// let (xs, ys) = (b.read_samples(x).unwrap(), b.read_samples(y).unwrap());
    /// let dot: f32 = xs.iter().zip(ys).map(|(a, b)| a * b).sum();
    /// assert_eq!(dot, 4.0);
    /// ```
    pub fn read_samples(&self, a: Atomic) -> Option<&[f32]> {
        let s = self.slot(a)?;
        // SAFETY: a live slot names a live, 16-byte aligned TLSF block of at least `bytes`
        // bytes that only this mutator touches; `&self` excludes every `&mut` view of it
        // (those need `&mut self`) for as long as this slice lives.
        Some(unsafe { std::slice::from_raw_parts(s.ptr.cast::<f32>(), s.bytes / 4) })
    }

    /// Header index and header of the object `o` names, if it is still that incarnation.
    /// The generation check is what makes a handle kept across blocks without a root safe to
    /// try: once the block is freed (header not allocated) or reused (generation bumped), the
    /// handle is refused instead of reading or writing someone else's object.
    #[inline]
    fn header(&self, o: Gc) -> Result<(usize, Header), AccessError> {
        let i = ref_index(o.0);
        let h = Header(
            self.m
                .shared
                .heap
                .get(i)
                .ok_or(AccessError::Stale)?
                .load(Ordering::Relaxed),
        );
        if h.is_allocated() && h.gen() == ref_gen(o.0) {
            Ok((i, h))
        } else {
            Err(AccessError::Stale)
        }
    }

    fn ref_field(&self, o: Gc, field: usize) -> Result<usize, AccessError> {
        let (i, h) = self.header(o)?;
        if field < h.ptrs() {
            Ok(i + 1 + field)
        } else {
            Err(AccessError::NoSuchField {
                field,
                fields: h.ptrs(),
            })
        }
    }

    fn data_field(&self, o: Gc, index: usize) -> Result<usize, AccessError> {
        let (i, h) = self.header(o)?;
        let w = i + 1 + h.ptrs() + index;
        if w < i + h.words() {
            Ok(w)
        } else {
            Err(AccessError::NoSuchWord {
                index,
                words: h.words() - 1 - h.ptrs(),
            })
        }
    }

    /// The stored form of an object reference, refusing a stale one: storing it would make
    /// the reused block reachable through an old name.
    fn check_ref(&self, value: Option<Gc>) -> Result<u64, AccessError> {
        match value {
            None => Ok(0),
            Some(g) => self.header(g).map(|_| g.0),
        }
    }

    /// As [`check_ref`](Self::check_ref) for an atomic-block reference.
    fn check_atomic(&self, value: Option<Atomic>) -> Result<u64, AccessError> {
        match value {
            None => Ok(0),
            Some(a) => self.slot(a).map(|_| a.0).ok_or(AccessError::Stale),
        }
    }

    /// Writes a checked reference into root slot `slot`.
    fn store_root(&mut self, slot: usize, v: u64) -> Result<(), AccessError> {
        self.root_slot(slot)?.store(v, Ordering::Relaxed);
        // The roots are copied whole when a collection starts (the thesis found a barrier on
        // them not worth it); a changed root only has to make that start happen.
        self.m.writes_since += 1;
        Ok(())
    }

    fn root_slot(&self, slot: usize) -> Result<&AtomicU64, AccessError> {
        self.m
            .shared
            .roots
            .get(slot)
            .ok_or(AccessError::NoSuchRoot {
                slot,
                roots: self.m.shared.roots.len(),
            })
    }

    /// Reads reference field `field` as an object reference (`Ok(None)` if null or an atomic
    /// block).
    ///
    /// # Errors
    ///
    /// [`AccessError::Stale`] if `o` was collected, [`AccessError::NoSuchField`] if `field`
    /// is not one of its reference fields.
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// let mut b = m.begin_block();
    /// let (a, c) = (b.alloc(1, 0).unwrap(), b.alloc(0, 1).unwrap());
    /// b.set_ref(a, 0, Some(c)).unwrap();
    /// assert_eq!(b.get_ref(a, 0), Ok(Some(c)));
    /// assert!(b.get_ref(a, 1).is_err());
    /// ```
    pub fn get_ref(&self, o: Gc, field: usize) -> Result<Option<Gc>, AccessError> {
        let v = self.m.word(self.ref_field(o, field)?);
        Ok((v != 0 && v & ATOMIC_TAG == 0).then_some(Gc(v)))
    }

    /// Writes reference field `field`. This (with [`set_atomic`](Self::set_atomic) and the
    /// root setters) is the only way a reference enters the heap, so it is where the
    /// replicating collector's write barrier sits ([`Mode::Replicating`]): two more stores
    /// and, with [`Barrier::Stacks`](crate::Barrier::Stacks), a load and a push.
    ///
    /// # Errors
    ///
    /// As [`get_ref`](Self::get_ref), and [`AccessError::Stale`] if `value` was collected
    /// (nothing is written then).
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// let mut b = m.begin_block();
    /// let a = b.alloc(1, 0).unwrap();
    /// b.set_ref(a, 0, Some(a)).unwrap();
    /// b.set_ref(a, 0, None).unwrap();
    /// assert_eq!(b.get_ref(a, 0), Ok(None));
    /// ```
    pub fn set_ref(&mut self, o: Gc, field: usize, value: Option<Gc>) -> Result<(), AccessError> {
        let w = self.ref_field(o, field)?;
        let v = self.check_ref(value)?;
        self.m.set_traced_word(w, v);
        Ok(())
    }

    /// Reads reference field `field` as an atomic-block reference (`Ok(None)` if null or an
    /// object).
    ///
    /// # Errors
    ///
    /// As [`get_ref`](Self::get_ref).
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// let mut b = m.begin_block();
    /// let (o, line) = (b.alloc(1, 0).unwrap(), b.alloc_atomic(64).unwrap());
    /// b.set_atomic(o, 0, Some(line)).unwrap();
    /// assert_eq!(b.get_atomic(o, 0), Ok(Some(line)));
    /// ```
    pub fn get_atomic(&self, o: Gc, field: usize) -> Result<Option<Atomic>, AccessError> {
        let v = self.m.word(self.ref_field(o, field)?);
        Ok((v & ATOMIC_TAG != 0).then_some(Atomic(v)))
    }

    /// Writes reference field `field` with an atomic-block reference.
    ///
    /// # Errors
    ///
    /// As [`set_ref`](Self::set_ref).
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// let mut b = m.begin_block();
    /// let o = b.alloc(1, 0).unwrap();
    /// b.set_atomic(o, 0, None).unwrap();
    /// ```
    pub fn set_atomic(
        &mut self,
        o: Gc,
        field: usize,
        value: Option<Atomic>,
    ) -> Result<(), AccessError> {
        let w = self.ref_field(o, field)?;
        let v = self.check_atomic(value)?;
        self.m.set_traced_word(w, v);
        Ok(())
    }

    /// Reads data word `index` (counted after the reference fields).
    ///
    /// # Errors
    ///
    /// [`AccessError::Stale`] if `o` was collected, [`AccessError::NoSuchWord`] if `index` is
    /// out of range.
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// let mut b = m.begin_block();
    /// let o = b.alloc(0, 1).unwrap();
    /// b.set_data(o, 0, 42).unwrap();
    /// assert_eq!(b.data(o, 0), Ok(42));
    /// ```
    pub fn data(&self, o: Gc, index: usize) -> Result<u64, AccessError> {
        Ok(self.m.word(self.data_field(o, index)?))
    }

    /// Writes data word `index`.
    ///
    /// # Errors
    ///
    /// As [`data`](Self::data).
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// let mut b = m.begin_block();
    /// let o = b.alloc(0, 1).unwrap();
    /// b.set_data(o, 0, 0.5f64.to_bits()).unwrap();
    /// assert_eq!(b.data(o, 0).map(f64::from_bits), Ok(0.5));
    /// ```
    pub fn set_data(&mut self, o: Gc, index: usize, value: u64) -> Result<(), AccessError> {
        let w = self.data_field(o, index)?;
        self.m.set_word(w, value);
        Ok(())
    }

    /// Reads root slot `slot` as an object reference.
    ///
    /// # Errors
    ///
    /// [`AccessError::NoSuchRoot`] if `slot` is beyond the configured number of roots.
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// assert_eq!(m.begin_block().root(3), Ok(None));
    /// ```
    pub fn root(&self, slot: usize) -> Result<Option<Gc>, AccessError> {
        let v = self.root_slot(slot)?.load(Ordering::Relaxed);
        Ok((v != 0 && v & ATOMIC_TAG == 0).then_some(Gc(v)))
    }

    /// Writes root slot `slot`. Whatever the roots reach at the end of a block survives.
    ///
    /// # Errors
    ///
    /// As [`root`](Self::root), and [`AccessError::Stale`] if `value` was collected.
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// let mut b = m.begin_block();
    /// let o = b.alloc(0, 1).unwrap();
    /// b.set_root(3, Some(o)).unwrap();
    /// assert_eq!(b.root(3), Ok(Some(o)));
    /// ```
    pub fn set_root(&mut self, slot: usize, value: Option<Gc>) -> Result<(), AccessError> {
        let v = self.check_ref(value)?;
        self.store_root(slot, v)
    }

    /// Writes root slot `slot` with an atomic-block reference.
    ///
    /// # Errors
    ///
    /// As [`set_root`](Self::set_root).
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// let mut b = m.begin_block();
    /// let a = b.alloc_atomic(8).unwrap();
    /// b.set_root_atomic(0, Some(a)).unwrap();
    /// ```
    pub fn set_root_atomic(
        &mut self,
        slot: usize,
        value: Option<Atomic>,
    ) -> Result<(), AccessError> {
        let v = self.check_atomic(value)?;
        self.store_root(slot, v)
    }

    /// Time since `begin_block` returned, for load measurement.
    ///
    /// ```
    /// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// let b = m.begin_block();
    /// assert!(b.elapsed().as_secs() < 1);
    /// ```
    pub fn elapsed(&self) -> Duration {
        self.m.block_start.elapsed()
    }
}

impl Mutator {
    fn take_free(&mut self, words: usize) -> Option<usize> {
        let head = self.free_heads[words];
        if head == 0 {
            return None;
        }
        let i = head as usize - 1;
        self.free_heads[words] = self.word(i + 1) as u32;
        // The rest of the payload was zeroed by the sweep; only the link needs clearing.
        self.set_word(i + 1, 0);
        Some(i)
    }
}

#[cfg(test)]
mod tests {
    use crate::{start, AuditError, Config, Mode};

    /// A freed block that is not zeroed is reported with where it is.
    #[test]
    fn audit_reports_a_dirty_free_block() {
        let config = Config {
            mode: Mode::StopTheWorld,
            ..Config::small()
        };
        let (mut m, _c) = start(config).unwrap();
        // Unrooted: the stop-the-world collection at the end of the block frees it.
        m.begin_block().alloc(0, 3).unwrap();
        assert_eq!(m.audit(), Ok(1));
        m.set_word(3, 7);
        assert_eq!(m.audit(), Err(AuditError::NotZeroed { block: 0, word: 3 }));
    }
}
