//! The snapshot garbage collector for real-time audio: the first collector of K. S.
//! Matheussen's thesis "Realtime Audio with Garbage Collection" (2010), *Rollendurchmesserzeitsammler*.
//!
//! Audio code that must create objects while it plays (a voice per note, a delay line per
//! plucked string, a scripting language's objects) allocates here on the audio thread in O(1)
//! and never frees: a collector on other threads finds what is unreachable and hands it back.
//! The audio thread only ever waits for one thing, a `memcpy` of the used part of a small heap,
//! and only if that copy is still running when its next block starts.
//!
//! # How it works
//!
//! * Two heaps. The **pointer heap** (default 4 MiB) holds objects that may reference other
//!   objects; it is allocated from the thesis' *poolmem*: one free list per size in words, and a
//!   bump pointer when the list is empty. The **atomic heap** holds pointer-free blocks (sample
//!   buffers, delay lines) on the TLSF allocator of [`downbeat_rt::alloc`]; it is never copied
//!   or scanned.
//! * A fixed array of **root slots**. What the roots reach at the end of a block survives.
//! * The per-block protocol. [`Mutator::begin_block`] waits only if the snapshot requested after
//!   the previous block is being copied by the snapshot thread (it spins, and after 2 ms calls
//!   `sched_yield` until the copy is done); a copy nobody has started yet it takes over and
//!   copies itself, so it never waits for a thread that is not running. Then it applies a
//!   bounded number of frees the collector sent back. Ending the [`Block`] decides whether to collect: if the collector is idle, the
//!   previous block did not start a snapshot (at most one every two blocks), and something was
//!   allocated or a full snapshot is due, it asks the **snapshot thread** to copy the used part
//!   of the pointer heap and the roots with `memcpy`. The **mark-and-sweep thread** then marks
//!   the copy and sweeps: unreachable objects are zeroed in the live heap and their addresses
//!   go back to the audio thread through a wait-free ring; it never waits for the collector.
//! * Real-time defaults. The snapshot thread runs at SCHED_FIFO 70 ([`Config::snapshot_priority`])
//!   and both collector threads are pinned to the last CPU ([`Config::collector_cpu`]), as the
//!   thesis runs them. If the system refuses the priority, there is no snapshot thread: the
//!   audio thread copies each snapshot at the end of the block that requests it, so it never
//!   waits for a thread below its own priority ([`Stats::priority_note`] says so). Idle
//!   collector threads sleep 100 ms at a time instead of polling.
//! * The worst case is rehearsed. At start-up the copy rate p(M) is measured on a buffer much
//!   larger than the caches; at least once a second the snapshot is a **full** one, padded to
//!   `heap_size / p(M)`, so that a heap too large for the block size glitches in rehearsal, not
//!   in the concert. When the pointer heap's used part enters the safety buffer (the top 30%),
//!   [`Stats::safety_warnings`] counts it.
//!
//! # The second collector: heap replication
//!
//! The snapshot collector's limit is the copy: a full snapshot must fit in the time a block
//! leaves over, so the block's slack caps the heap. The thesis' second collector (chapter 12,
//! described with pseudocode and listed as future work) removes the cap, and
//! [`Mode::Replicating`] implements it. The collector keeps its snapshot from cycle to cycle
//! and never copies the heap; instead a **write barrier** in [`Block::set_ref`],
//! [`Block::set_atomic`], the typed layer's setters and allocation stores every header and
//! reference the audio thread writes a second time, into a heap-sized *complementary block*.
//! Data words and samples never pass the barrier, so DSP loops pay nothing. At the end of a
//! block, if the collector is idle, the audio thread swaps the two complementary blocks,
//! copies the roots and hands over: that is its whole pause, the same for a 1 MiB heap as for
//! a 1 GiB one, and no block ever waits for a collector thread. The mark-and-sweep thread
//! moves the recorded words into its snapshot, resets the block, marks and sweeps.
//!
//! * [`Barrier::Block`]: the collector scans the used part of the complementary block each
//!   cycle (the thesis' Program 10).
//! * [`Barrier::Stacks`]: the barrier also pushes the index of each word first written in a
//!   cycle onto a fixed stack of [`Config::comp_stack`] entries, so the collector visits only
//!   those; a full stack falls back to the scan and is counted in
//!   [`Stats::stack_overflows`] (the thesis' Program 12).
//!
//! The price is memory: the snapshot and two complementary blocks make four heap-sized arrays
//! ([`Stats::memory_bytes`] reports it). Everything else, the API included, is the same.
//!
//! ```
//! use downbeat_gc::{start, Barrier, Config, Mode};
//!
//! let config = Config { mode: Mode::Replicating(Barrier::Stacks), ..Config::small() };
//! let (mut m, c) = start(config).unwrap();
//! for n in 0..200 {
//!     let mut b = m.begin_block();
//!     let voice = b.alloc(1, 1).unwrap();
//!     b.set_ref(voice, 0, b.root(0).unwrap()).unwrap(); // the barrier records this
//!     b.set_root(0, if n % 50 == 49 { None } else { Some(voice) }).unwrap();
//! #   drop(b);
//! #   if n % 20 == 0 { std::thread::sleep(std::time::Duration::from_millis(2)); }
//! }
//! # std::thread::sleep(std::time::Duration::from_millis(20));
//! # for _ in 0..4 { let mut b = m.begin_block(); b.set_root(1, None).unwrap(); drop(b); std::thread::sleep(std::time::Duration::from_millis(5)); }
//! let s = c.stats();
//! assert_eq!(s.full_snapshot.count + s.partial_snapshot.count, 0); // the heap is never copied
//! assert!(s.memory_bytes >= 4 * Config::small().heap_bytes);
//! println!("{} cycles, pause {:?} at most", s.cycles, m.stats().max_blocking);
//! ```
//!
//! # Precise scanning, and why
//!
//! The thesis scans conservatively: every word that looks like a pointer into the heap is one.
//! In Rust, reading uninitialised padding bytes as integers is undefined behaviour, and a
//! conservative collector would also keep garbage alive through stale sample values. So this
//! collector is **precise**: each object's header carries its pointer map, the number of leading
//! fields that are references (the rest are data words), and a field is followed only if it
//! names the start of an allocated object. References are opaque handles ([`Gc`], [`Atomic`])
//! that can only come from allocation, so a data word can never be mistaken for one.
//!
//! # Generations: stale handles are refused
//!
//! A handle is only guaranteed to stay valid while a root reaches it at the end of every
//! block. One kept across blocks in a local variable may outlive its object, and the freed
//! block may then be reused for a new one. Each handle therefore carries the **generation** of
//! the block it was returned for (31 bits, kept in the object's header word, bumped on every
//! reuse; an atomic slot keeps its own). Every access compares the two in O(1), so a stale
//! handle is refused with [`AccessError::Stale`] (or `None` from [`Block::samples`] and
//! [`Block::bytes`]) instead of reading or writing the new object, and it can never be stored
//! into a field or a root. Nothing on the audio thread panics on a bad handle.
//!
//! ```
//! use downbeat_gc::{start, AccessError, Config, Mode};
//!
//! let (mut m, _c) = start(Config { mode: Mode::StopTheWorld, ..Config::small() }).unwrap();
//! let kept = m.begin_block().alloc(0, 1).unwrap(); // not rooted: collected as the block ends
//! let mut b = m.begin_block();
//! let reused = b.alloc(0, 1).unwrap(); // takes the freed block
//! assert_eq!(b.data(kept, 0), Err(AccessError::Stale));
//! assert_eq!(b.data(reused, 0), Ok(0));
//! ```
//!
//! # The typed layer
//!
//! The words above are untyped: field 0, data word 2. [`gc_struct!`] declares a struct's
//! reference fields and data words once and generates a `Copy` handle with a getter and a
//! setter per field; each is one call of the untyped accessor, so it stays O(1) and refuses
//! stale handles the same way. Reference writes still go through [`Block::set_ref`] /
//! [`Block::set_atomic`], the one place the replicating collector's write barrier sits. Samples live in atomic
//! blocks, lent as plain slices by [`Block::samples`] / [`Block::read_samples`]: the inner loop
//! of a delay line does ordinary loads and stores. More in [`typed`].
//!
//! ```
//! use downbeat_gc::{gc_struct, start, Atomic, Config};
//!
//! gc_struct! {
//!     /// A voice with a delay line.
//!     pub struct Voice {
//!         refs {
//!             /// Its delay line.
//!             line / set_line: Atomic,
//!         }
//!         data {
//!             /// Write position in the line.
//!             pos / set_pos: usize,
//!             /// Feedback gain.
//!             feedback / set_feedback: f32,
//!         }
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let (mut m, _c) = start(Config::small())?;
//! let mut b = m.begin_block();
//! let v = Voice::alloc(&mut b)?;
//! let line = b.alloc_atomic(480 * 4)?;
//! b.samples(line).ok_or("fresh")?.fill(0.0);
//! v.set_line(&mut b, Some(line))?;
//! v.set_feedback(&mut b, 0.7)?;
//! b.set_root(0, Some(v.gc()))?;
//! // One block of a comb filter: fields read once, then slice access per sample.
//! let (line, mut pos, fb) = (v.line(&b)?.ok_or("no line")?, v.pos(&b)?, v.feedback(&b)?);
//! let buf = b.samples(line).ok_or("stale")?;
//! for x in [1.0f32; 64] {
//!     let y = buf[pos];
//!     buf[pos] = x + fb * y;
//!     pos = (pos + 1) % buf.len();
//! }
//! v.set_pos(&mut b, pos)?;
//! assert_eq!(v.pos(&b)?, 64);
//! # Ok(())
//! # }
//! ```
//!
//! # Example
//!
//! ```
//! use downbeat_gc::{start, Config};
//!
//! let (mut audio, collector) = start(Config::small()).unwrap();
//! // The audio callback, one block at a time:
//! for block_no in 0..100 {
//!     let mut block = audio.begin_block();
//!     if block_no % 10 == 0 {
//!         // note-on: a voice object (2 references, 2 data words) and its delay line
//!         let voice = block.alloc(2, 2).unwrap();
//!         let line = block.alloc_atomic(480 * 4).unwrap();
//!         block.samples(line).unwrap().fill(0.0);
//!         block.set_atomic(voice, 0, Some(line)).unwrap();
//!         block.set_data(voice, 0, 440f64.to_bits()).unwrap();
//!         // Chain it to the previous voice, kept alive by root slot 0.
//!         block.set_ref(voice, 1, block.root(0).unwrap()).unwrap();
//!         block.set_root(0, Some(voice)).unwrap();
//!     }
//!     if block_no % 40 == 0 {
//!         block.set_root(0, None).unwrap(); // all notes off: everything becomes garbage
//!     }
//!     // ... render audio ...
//! } // dropping `block` ends it
//! # std::thread::sleep(std::time::Duration::from_millis(20));
//! # for _ in 0..4 { drop(audio.begin_block()); std::thread::sleep(std::time::Duration::from_millis(5)); }
//! let stats = collector.stats();
//! println!(
//!     "{} collections, {} objects freed, partial snapshots {:?} on average",
//!     stats.cycles, stats.objects_freed, stats.partial_snapshot.average()
//! );
//! ```

#![warn(missing_docs)]

mod collector;
mod handshake;
mod mutator;
mod rate;
mod replica;
mod shared;
mod stats;
pub mod typed;
mod words;

/// The atomics the handshake is built on (loom's in the model, see `handshake`).
mod sync {
    pub(crate) use std::sync::atomic::{AtomicU8, Ordering};
}

use std::cell::UnsafeCell;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use downbeat_ring::RingBuffer;

pub use collector::Collector;
pub use mutator::{AuditError, Block, Mutator, MutatorStats};
pub use rate::measure_copy_rate;
pub use replica::Barrier;
pub use stats::{Stats, Timing};

use collector::Sweeper;
use mutator::MutatorParts;
use replica::Replica;
use shared::{Shared, SharedStats, Snapshot};
use words::MarkState;

/// A reference to an object in the pointer heap. Copy it freely within a block; across blocks
/// it stays valid only while something reachable from a root holds it.
///
/// ```
/// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
/// let mut b = m.begin_block();
/// let a: downbeat_gc::Gc = b.alloc(0, 1).unwrap();
/// let copy = a;
/// assert_eq!(a, copy);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Gc(u64);

/// A reference to a pointer-free block in the atomic heap (samples, bytes).
///
/// ```
/// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
/// let mut b = m.begin_block();
/// let a: downbeat_gc::Atomic = b.alloc_atomic(64).unwrap();
/// assert_eq!(b.samples(a).unwrap().len(), 16);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Atomic(u64);

/// Which collector runs.
///
/// ```
/// let config = downbeat_gc::Config { mode: downbeat_gc::Mode::StopTheWorld, ..downbeat_gc::Config::small() };
/// # let _ = config;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The thesis' collector: snapshot on a thread at audio priority, mark and sweep on another.
    Snapshot,
    /// The baseline it is compared with: mark and sweep of the live heap on the audio thread,
    /// at the same points the snapshot collector would start a collection.
    StopTheWorld,
    /// The thesis' second collector: the snapshot is kept up to date by a write barrier on
    /// every reference write, so starting a collection only swaps two complementary blocks and
    /// copies the roots, whatever the heap's size. Mark and sweep run on another thread as
    /// for [`Mode::Snapshot`]. Costs three more heap-sized arrays (a snapshot and two
    /// complementary blocks). See [`Barrier`] for the two variants.
    Replicating(Barrier),
}

/// How the snapshot thread learns that a snapshot was requested.
///
/// ```
/// let config = downbeat_gc::Config { wake: downbeat_gc::Wake::Unpark, ..downbeat_gc::Config::small() };
/// # let _ = config;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// It checks every [`Config::poll`] while blocks run, and every 100 ms after two idle
    /// seconds: the audio thread makes no system call to wake it. A copy it has not started
    /// by the next block is taken over by [`Mutator::begin_block`].
    Poll,
    /// The audio thread unparks it: one futex wake when it was asleep, at most once every two
    /// blocks; the copy starts sooner.
    Unpark,
}

/// Sizes and policies, fixed at [`start`].
///
/// ```
/// let config = downbeat_gc::Config { heap_bytes: 1 << 20, ..downbeat_gc::Config::default() };
/// assert_eq!(config.roots, 4096);
/// ```
#[derive(Clone, Debug)]
pub struct Config {
    /// Size of the pointer heap (copied by snapshots). Default 4 MiB.
    pub heap_bytes: usize,
    /// Size of the atomic heap. Default 32 MiB.
    pub atomic_bytes: usize,
    /// Root slots. Default 4096.
    pub roots: usize,
    /// Largest object, in words, header included: 2 to 65535. Default 512.
    pub max_object_words: usize,
    /// Most atomic blocks alive at once. Default 65536.
    pub atomic_slots: usize,
    /// How often a full snapshot is forced. Default one second.
    pub full_snapshot_every: Duration,
    /// Fraction of the pointer heap usable before the safety-buffer warning. Default 0.7.
    pub safety_fraction: f64,
    /// Which collector. Default [`Mode::Snapshot`].
    pub mode: Mode,
    /// How the snapshot thread is woken. Default [`Wake::Poll`].
    pub wake: Wake,
    /// Polling interval of the collector threads. Default 100 µs.
    pub poll: Duration,
    /// Frees applied per `begin_block` at most. Default 4096.
    pub free_budget: usize,
    /// p(M) in bytes per nanosecond; `None` measures it at start-up (about 0.1 s).
    pub copy_rate: Option<f64>,
    /// SCHED_FIFO priority for the snapshot thread: at least the audio thread's, since the
    /// audio thread may wait for its copy. Default 70, the priority of Downbeat's audio and
    /// pool threads. If the system refuses it (no `CAP_SYS_NICE` or `rtprio` limit), or with
    /// `None`, there is no snapshot thread: the audio thread copies each snapshot itself at
    /// the end of the block that requests it, so it never waits for a thread of lower
    /// priority; [`Stats::priority_note`] says so.
    pub snapshot_priority: Option<i32>,
    /// CPU the snapshot and mark-and-sweep threads are pinned to, as in the thesis (Table
    /// 11.1: audio on CPU 0, both collector threads on CPU 1). Default: the last CPU when
    /// there are at least two, so they stay off CPU 0 where audio threads usually start; `None`
    /// leaves them unpinned. A refusal is reported in [`Stats::pin_note`].
    pub collector_cpu: Option<usize>,
    /// Entries per complementary stack ([`Barrier::Stacks`]): the reference words that may
    /// change between two collections before the collector falls back to scanning the
    /// complementary block. Default 16384 (64 KiB per stack).
    pub comp_stack: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            heap_bytes: 4 << 20,
            atomic_bytes: 32 << 20,
            roots: 4096,
            max_object_words: 512,
            atomic_slots: 65536,
            full_snapshot_every: Duration::from_secs(1),
            safety_fraction: 0.7,
            mode: Mode::Snapshot,
            wake: Wake::Poll,
            poll: Duration::from_micros(100),
            free_budget: 4096,
            copy_rate: None,
            snapshot_priority: Some(70),
            collector_cpu: default_collector_cpu(),
            comp_stack: 16384,
        }
    }
}

/// The last CPU, when there are at least two.
fn default_collector_cpu() -> Option<usize> {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (n >= 2).then(|| n - 1)
}

impl Config {
    /// A small configuration for tests and examples: 256 KiB pointer heap, 1 MiB atomic heap,
    /// 64 roots, and an assumed copy rate of 5 bytes/ns instead of a measurement.
    ///
    /// ```
    /// assert_eq!(downbeat_gc::Config::small().roots, 64);
    /// ```
    pub fn small() -> Self {
        Self {
            heap_bytes: 256 << 10,
            atomic_bytes: 1 << 20,
            roots: 64,
            atomic_slots: 4096,
            copy_rate: Some(5.0),
            ..Self::default()
        }
    }
}

/// Why an operation of the collector failed.
///
/// ```
/// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
/// assert_eq!(m.begin_block().alloc(10_000, 0), Err(downbeat_gc::GcError::TooLarge));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GcError {
    /// The heap has no room for this allocation (the collector may catch up later).
    OutOfMemory,
    /// The object is larger than [`Config::max_object_words`].
    TooLarge,
    /// Every atomic slot is in use.
    OutOfSlots,
    /// The atomic heap refused the request.
    Alloc(downbeat_rt::alloc::AllocError),
    /// The configuration cannot work.
    Config(String),
}

impl fmt::Display for GcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GcError::OutOfMemory => f.write_str("the collected heap is full"),
            GcError::TooLarge => f.write_str("object larger than Config::max_object_words"),
            GcError::OutOfSlots => f.write_str("every atomic slot is in use"),
            GcError::Alloc(e) => write!(f, "atomic heap: {e}"),
            GcError::Config(why) => write!(f, "invalid collector configuration: {why}"),
        }
    }
}

impl std::error::Error for GcError {}

/// Why a field, data word or root could not be read or written. None of these touches memory:
/// the access is refused in O(1) and the audio thread carries on.
///
/// ```
/// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
/// let mut b = m.begin_block();
/// let o = b.alloc(1, 1).unwrap();
/// assert_eq!(
///     b.get_ref(o, 1),
///     Err(downbeat_gc::AccessError::NoSuchField { field: 1, fields: 1 })
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AccessError {
    /// The handle's object or block was collected (it was not reachable from a root at the
    /// end of some block), and its memory may already hold another object: the handle's
    /// generation no longer matches.
    Stale,
    /// The object has only `fields` reference fields.
    NoSuchField {
        /// The field asked for.
        field: usize,
        /// How many reference fields the object has.
        fields: usize,
    },
    /// The object has only `words` data words.
    NoSuchWord {
        /// The data word asked for.
        index: usize,
        /// How many data words the object has.
        words: usize,
    },
    /// There are only `roots` root slots ([`Config::roots`]).
    NoSuchRoot {
        /// The slot asked for.
        slot: usize,
        /// How many root slots there are.
        roots: usize,
    },
}

impl fmt::Display for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AccessError::Stale => f.write_str("stale handle: its object was collected"),
            AccessError::NoSuchField { field, fields } => {
                write!(f, "reference field {field} of an object with {fields}")
            }
            AccessError::NoSuchWord { index, words } => {
                write!(f, "data word {index} of an object with {words}")
            }
            AccessError::NoSuchRoot { slot, roots } => {
                write!(f, "root slot {slot} of {roots}")
            }
        }
    }
}

impl std::error::Error for AccessError {}

/// Builds the heaps, measures p(M) if needed and starts the collector threads. Not real-time
/// safe: call it before the audio starts, then move the [`Mutator`] to the audio thread.
///
/// ```
/// let (mutator, collector) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
/// assert_eq!(mutator.heap_used(), 0);
/// assert!(collector.is_idle());
/// ```
pub fn start(config: Config) -> Result<(Mutator, Collector), GcError> {
    let heap_words = config.heap_bytes / 8;
    if heap_words < 16 || heap_words >= u32::MAX as usize / 2 {
        return Err(GcError::Config(
            "heap_bytes must be between 128 B and 16 GiB".into(),
        ));
    }
    if config.atomic_slots == 0 || config.atomic_slots > u32::MAX as usize || config.roots == 0 {
        return Err(GcError::Config(
            "atomic_slots and roots must be positive".into(),
        ));
    }
    if config.max_object_words < 2 || config.max_object_words > words::MAX_WORDS {
        return Err(GcError::Config(
            "max_object_words must be between 2 and 65535".into(),
        ));
    }
    let copy_rate = match config.copy_rate {
        Some(r) if r > 0.0 => r,
        Some(_) => return Err(GcError::Config("copy_rate must be positive".into())),
        None => measure_copy_rate(64 << 20, 8),
    };
    let zeros = |n: usize| (0..n).map(|_| AtomicU64::new(0)).collect::<Box<[_]>>();
    let heap = zeros(heap_words);
    prefault(&heap);
    if config.comp_stack > u32::MAX as usize {
        return Err(GcError::Config("comp_stack must fit in 32 bits".into()));
    }
    let copies = config.mode != Mode::StopTheWorld;
    let mut snapshot_heap = vec![0u64; if copies { heap_words } else { 0 }].into_boxed_slice();
    // calloc'd pages may be unbacked: the first full snapshot would fault every one of them
    // in and miss its prediction.
    for w in snapshot_heap.iter_mut().step_by(512) {
        *w = std::hint::black_box(0);
    }
    let replica = match config.mode {
        Mode::Replicating(barrier) => Some(Replica::new(
            barrier,
            heap_words,
            config.roots,
            config.comp_stack,
        )),
        _ => None,
    };
    let mark_bytes =
        heap_words.div_ceil(64) * 16 + (heap_words / 2 + 1) * 4 + config.atomic_slots * 8;
    let memory_bytes = heap_words * 8
        + snapshot_heap.len() * 8
        + replica.as_ref().map_or(0, Replica::bytes)
        + mark_bytes;
    let shared = Arc::new(Shared {
        heap,
        roots: zeros(config.roots),
        handshake: handshake::Handshake::new(),
        req_top: AtomicUsize::new(0),
        req_full: AtomicBool::new(false),
        req_atomic_allocs: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        snapshot: UnsafeCell::new(Snapshot {
            heap: snapshot_heap,
            roots: vec![0; config.roots].into_boxed_slice(),
            top: 0,
            atomic_allocs: 0,
        }),
        snapshot_thread: OnceLock::new(),
        collector_thread: OnceLock::new(),
        replica,
        inline_copy: AtomicBool::new(false),
        memory_bytes,
        copy_rate,
        stats: SharedStats::default(),
    });
    let (mut frees_tx, mut frees_rx) = RingBuffer::new(heap_words / 2 + config.atomic_slots);
    let (mut atomic_tx, mut atomic_rx) = RingBuffer::new(config.atomic_slots);
    // Run each ring once round so its pages are backed before the audio thread touches them.
    while frees_tx.push(0u64).is_ok() {}
    while frees_rx.pop().is_some() {}
    while atomic_tx.push(0u64).is_ok() {}
    while atomic_rx.pop().is_some() {}
    let mutator = Mutator::new(MutatorParts {
        shared: shared.clone(),
        mode: config.mode,
        wake: config.wake,
        max_words: config.max_object_words,
        atomic_bytes: config.atomic_bytes,
        slots: config.atomic_slots,
        frees: frees_rx,
        new_atomic: atomic_tx,
        full_every: config.full_snapshot_every,
        safety_fraction: config.safety_fraction,
        free_budget: config.free_budget,
    })?;
    let mut threads = Vec::new();
    if config.mode != Mode::StopTheWorld {
        let sweeper = Sweeper {
            state: MarkState::new(heap_words, config.atomic_slots),
            known: Vec::with_capacity(config.atomic_slots),
            popped: 0,
            new_atomic: atomic_rx,
            frees: frees_tx,
        };
        let s = shared.clone();
        let (poll, cpu) = (config.poll, config.collector_cpu);
        threads.push(
            std::thread::Builder::new()
                .name("downbeat-gc-sweep".into())
                .spawn(move || collector::mark_sweep_thread(s, sweeper, poll, cpu))
                .map_err(|e| GcError::Config(format!("cannot spawn a thread: {e}")))?,
        );
    }
    if config.mode == Mode::Snapshot {
        let s = shared.clone();
        let (wake, priority, poll) = (config.wake, config.snapshot_priority, config.poll);
        let cpu = config.collector_cpu;
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let t = std::thread::Builder::new()
            .name("downbeat-gc-snapshot".into())
            .spawn(move || collector::snapshot_thread(s, wake, poll, priority, cpu, ready_tx))
            .map_err(|e| GcError::Config(format!("cannot spawn a thread: {e}")))?;
        let _ = shared.snapshot_thread.set(t.thread().clone());
        threads.push(t);
        // Decided before the mutator can request anything: who copies.
        let realtime = ready.recv().unwrap_or(false);
        shared
            .inline_copy
            .store(!realtime, std::sync::atomic::Ordering::Relaxed);
    }
    Ok((mutator, Collector { shared, threads }))
}

/// Writes every page so the audio thread's first touch is not a page fault.
fn prefault(words: &[AtomicU64]) {
    for w in words.iter().step_by(512) {
        w.store(0, std::sync::atomic::Ordering::Relaxed);
    }
}
