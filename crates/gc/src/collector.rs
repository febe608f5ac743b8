//! The snapshot thread and the mark-and-sweep thread.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use downbeat_ring::{Consumer, Producer};

use crate::replica::OVERFLOWED;
use crate::shared::{Cycle, Shared};
use crate::stats::Stats;
use crate::words::{Header, MarkState};
use crate::Wake;

/// The collector's threads; dropping it stops and joins them (the [`Mutator`](crate::Mutator)
/// then simply stops collecting).
///
/// ```
/// let (mut mutator, collector) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
/// mutator.begin_block();
/// println!("{:?}", collector.stats());
/// drop(collector);
/// mutator.begin_block(); // still works, nothing is collected any more
/// ```
pub struct Collector {
    pub(crate) shared: Arc<Shared>,
    pub(crate) threads: Vec<JoinHandle<()>>,
}

impl Collector {
    /// What the collector has measured so far.
    ///
    /// ```
    /// let (_m, c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// assert!(c.stats().copy_rate > 0.0);
    /// ```
    pub fn stats(&self) -> Stats {
        let s = &self.shared.stats;
        let heap_bytes = self.shared.heap.len() * 8;
        Stats {
            partial_snapshot: s.partial.read(),
            full_snapshot: s.full.read(),
            roots_snapshot: s.roots.read(),
            mark: s.mark.read(),
            sweep: s.sweep.read(),
            cycles: s.cycles.load(Ordering::Relaxed),
            snapshot_bytes: s.snapshot_bytes.load(Ordering::Relaxed),
            objects_freed: s.objects_freed.load(Ordering::Relaxed),
            bytes_freed: s.bytes_freed.load(Ordering::Relaxed),
            atomic_freed: s.atomic_freed.load(Ordering::Relaxed),
            safety_warnings: s.safety_warnings.load(Ordering::Relaxed),
            late_full_snapshots: s.late_full_snapshots.load(Ordering::Relaxed),
            predicted_full_snapshot: predicted(heap_bytes, self.shared.copy_rate),
            copy_rate: self.shared.copy_rate,
            priority_note: s.priority_note.get().cloned(),
            pin_note: s.pin_note.get().cloned(),
            memory_bytes: self.shared.memory_bytes,
            stack_overflows: s.stack_overflows.load(Ordering::Relaxed),
            replicated_words: s.replicated_words.load(Ordering::Relaxed),
        }
    }

    /// Total time the heap has been held for copies so far: roots and snapshots (and, for
    /// the replicating collector, its swaps and roots' copies), whichever thread made them.
    /// The thesis' measure of what the collector blocks. Four atomic loads and no
    /// allocation, so an audio loop may read it each block (unlike [`stats`](Self::stats)).
    ///
    /// ```
    /// let (mut m, c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// let before = c.copy_time();
    /// drop(m.begin_block());
    /// assert!(c.copy_time() >= before);
    /// ```
    pub fn copy_time(&self) -> Duration {
        let s = &self.shared.stats;
        Duration::from_nanos(s.roots.total_ns() + s.partial.total_ns() + s.full.total_ns())
    }

    /// Whether no collection is in progress (nothing requested, copied or being swept).
    ///
    /// ```
    /// let (_m, c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
    /// assert!(c.is_idle());
    /// ```
    pub fn is_idle(&self) -> bool {
        self.shared.handshake.is_idle()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        for t in &self.threads {
            t.thread().unpark();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

pub(crate) fn predicted(heap_bytes: usize, rate: f64) -> Duration {
    Duration::from_nanos((heap_bytes as f64 / rate) as u64)
}

/// How long a collector thread keeps polling at [`Config::poll`](crate::Config::poll) after
/// its last piece of work. While blocks run there is work at least once a
/// [`Config::full_snapshot_every`](crate::Config::full_snapshot_every) (one second by
/// default), so this only passes when the audio has stopped.
const IDLE_AFTER: Duration = Duration::from_secs(2);

/// How long an idle collector thread sleeps between looks: no busy polling when nothing plays.
/// Nothing waits for it meanwhile: an unclaimed copy is taken over by the audio thread (see
/// `Mutator::begin_block`), and a hand-over to the mark-and-sweep thread only delays the
/// collection.
const IDLE_SLEEP: Duration = Duration::from_millis(100);

fn wait(wake: Wake, poll: Duration, last_work: Instant) {
    if last_work.elapsed() >= IDLE_AFTER {
        std::thread::park_timeout(IDLE_SLEEP);
        return;
    }
    match wake {
        Wake::Poll => std::thread::sleep(poll),
        Wake::Unpark => std::thread::park_timeout(poll.max(Duration::from_millis(5))),
    }
}

/// Pins a collector thread as [`Config::collector_cpu`](crate::Config::collector_cpu) says,
/// keeping the first reason it could not.
pub(crate) fn pin_collector(shared: &Shared, cpu: Option<usize>) {
    if let Some(cpu) = cpu {
        if let Err(e) = downbeat_rt::pool::pin_current_thread(cpu) {
            let _ = shared
                .stats
                .pin_note
                .set(format!("collector threads not pinned: {e}"));
        }
    }
}

/// The snapshot thread: at real-time priority, or not at all. Reports through `ready` whether
/// it got the priority; without it, copies are taken on the audio thread instead (see
/// `start`), because the audio thread waits for a copy to finish and must never wait for a
/// thread of lower priority than its own (the thesis' rule 2, section 9: the snapshot thread
/// has at least the audio thread's priority).
pub(crate) fn snapshot_thread(
    shared: Arc<Shared>,
    wake: Wake,
    poll: Duration,
    priority: Option<i32>,
    cpu: Option<usize>,
    ready: std::sync::mpsc::Sender<bool>,
) {
    pin_collector(&shared, cpu);
    let realtime = match priority {
        Some(p) => match downbeat_rt::pool::set_current_thread_realtime(p) {
            Ok(()) => true,
            Err(e) => {
                let _ = shared.stats.priority_note.set(format!(
                    "snapshot thread runs at normal priority: {e}; snapshots are copied on the \
                     audio thread instead"
                ));
                false
            }
        },
        None => {
            let _ = shared.stats.priority_note.set(
                "no snapshot priority configured: snapshots are copied on the audio thread".into(),
            );
            false
        }
    };
    let _ = ready.send(realtime);
    if !realtime {
        return;
    }
    let mut last_work = Instant::now();
    while !shared.stop.load(Ordering::Acquire) {
        if !shared.handshake.claim() {
            wait(wake, poll, last_work);
            continue;
        }
        copy_snapshot(&shared);
        shared.handshake.copied();
        last_work = Instant::now();
        if let Some(t) = shared.collector_thread.get() {
            t.unpark();
        }
    }
}

/// Copies the roots and the requested part of the heap into the snapshot. The caller has
/// claimed the request (`Handshake::claim`) and publishes it with `Handshake::copied`. Runs on
/// the snapshot thread, or on the audio thread when it takes a copy over: no allocation, lock
/// or system call (the clock is the vDSO's).
pub(crate) fn copy_snapshot(shared: &Shared) {
    let pad = predicted(shared.heap.len() * 8, shared.copy_rate);
    // SAFETY: the claim (COPYING) makes the snapshot buffers the caller's (see `shared`), and
    // its Acquire orders the audio thread's writes before these reads; the audio thread does
    // not write again until the copy is published.
    let snap = unsafe { &mut *shared.snapshot.get() };
    let t0 = Instant::now();
    let n_roots = shared.roots.len();
    // SAFETY: AtomicU64 has u64's layout; nobody writes the roots during the copy.
    unsafe {
        std::ptr::copy_nonoverlapping(
            shared.roots.as_ptr().cast::<u64>(),
            snap.roots.as_mut_ptr(),
            n_roots,
        )
    };
    let t1 = Instant::now();
    let top = shared.req_top.load(Ordering::Relaxed);
    let full = shared.req_full.load(Ordering::Relaxed);
    let words = if full { shared.heap.len() } else { top };
    // SAFETY: as for the roots; `words` is within both buffers.
    unsafe {
        std::ptr::copy_nonoverlapping(
            shared.heap.as_ptr().cast::<u64>(),
            snap.heap.as_mut_ptr(),
            words,
        )
    };
    if full {
        // The thesis' worst-case rehearsal: never let a full snapshot be faster than the
        // slowest the machine is assumed to copy, so a heap that will not fit shows up now.
        while t1.elapsed() < pad {
            std::hint::spin_loop();
        }
    }
    let t2 = Instant::now();
    snap.top = top;
    snap.atomic_allocs = shared.req_atomic_allocs.load(Ordering::Relaxed);
    let s = &shared.stats;
    s.roots.record((t1 - t0).as_nanos() as u64);
    if full {
        s.full.record((t2 - t1).as_nanos() as u64);
    } else {
        s.partial.record((t2 - t1).as_nanos() as u64);
    }
    s.snapshot_bytes
        .fetch_add(((words + n_roots) * 8) as u64, Ordering::Relaxed);
}

pub(crate) struct Sweeper {
    pub(crate) state: MarkState,
    pub(crate) known: Vec<u64>,
    pub(crate) popped: u64,
    pub(crate) new_atomic: Consumer<u64>,
    pub(crate) frees: Producer<u64>,
}

/// The mark-and-sweep thread: normal priority (the thesis runs it below the audio thread; a
/// long mark at a real-time priority would starve everything else on its CPU, and nothing
/// real-time waits for it).
pub(crate) fn mark_sweep_thread(
    shared: Arc<Shared>,
    mut sw: Sweeper,
    poll: Duration,
    cpu: Option<usize>,
) {
    let _ = shared.collector_thread.set(std::thread::current());
    pin_collector(&shared, cpu);
    let mut last_work = Instant::now();
    while !shared.stop.load(Ordering::Acquire) {
        if !shared.handshake.marking() {
            if last_work.elapsed() >= IDLE_AFTER {
                std::thread::park_timeout(IDLE_SLEEP);
            } else {
                std::thread::park_timeout(poll.max(Duration::from_millis(2)));
            }
            continue;
        }
        last_work = Instant::now();
        if shared.replica.is_some() {
            replicate(&shared);
        }
        collect_snapshot(&shared, &mut sw);
        shared.handshake.swept();
    }
}

/// The replicating collector's update of its snapshot: what the write barrier recorded since
/// the last collection, and the roots the audio thread copied when it handed over.
fn replicate(shared: &Shared) {
    let Some(r) = &shared.replica else { return };
    // SAFETY: in MARKING the snapshot buffers are ours; the audio thread's Release store of
    // MARKING, read with Acquire by our caller, makes its barrier and root writes visible.
    let snap = unsafe { &mut *shared.snapshot.get() };
    let top = shared.req_top.load(Ordering::Relaxed);
    let len = r.req_stack_len.load(Ordering::Relaxed);
    if len == OVERFLOWED {
        shared.stats.stack_overflows.fetch_add(1, Ordering::Relaxed);
    }
    let moved = r.unload(
        r.req_index.load(Ordering::Relaxed),
        len,
        top,
        &mut snap.heap,
    );
    for (s, root) in snap.roots.iter_mut().zip(&r.roots[..]) {
        *s = root.load(Ordering::Relaxed);
    }
    snap.top = top;
    snap.atomic_allocs = shared.req_atomic_allocs.load(Ordering::Relaxed);
    shared
        .stats
        .replicated_words
        .fetch_add(moved, Ordering::Relaxed);
}

/// One mark-and-sweep of the snapshot.
pub(crate) fn collect_snapshot(shared: &Shared, sw: &mut Sweeper) {
    // SAFETY: in MARKING the snapshot buffers are ours; the snapshot thread's (or, replicating,
    // the audio thread's) Release store, read with Acquire by the caller, makes its copy
    // visible.
    let snap = unsafe { &mut *shared.snapshot.get() };
    let replicating = shared.replica.is_some();
    while sw.popped < snap.atomic_allocs {
        let r = sw
            .new_atomic
            .pop()
            .expect("every counted atomic allocation was queued before the count");
        sw.known.push(r);
        sw.popped += 1;
    }
    let t0 = Instant::now();
    sw.state
        .mark(&snap.heap[..], snap.top, &snap.roots[..], snap.roots.len());
    let t1 = Instant::now();
    let (mut freed, mut bytes) = (0u64, 0u64);
    let mut i = 0;
    while i < snap.top {
        let h = Header(snap.heap[i]);
        let words = h.words().max(2);
        if h.is_allocated() && !sw.state.is_marked(i) {
            // Unreachable in the snapshot means unreachable for good: the audio thread cannot
            // name it any more, so writing it while the audio thread runs races with nothing.
            for w in i + 1..i + words {
                shared.heap[w].store(0, Ordering::Relaxed);
            }
            shared.heap[i].store(h.freed().0, Ordering::Relaxed);
            if replicating {
                // The replica is kept, not retaken: it must learn of the free itself. The
                // payload may keep old references; the next allocation of the block clears
                // its reference fields through the barrier.
                snap.heap[i] = h.freed().0;
            }
            if sw.frees.push(i as u64).is_err() {
                unreachable!("the frees queue holds every object and slot at once");
            }
            freed += 1;
            bytes += words as u64 * 8;
        }
        i += words;
    }
    let mut afreed = 0u64;
    let mut k = 0;
    while k < sw.known.len() {
        let r = sw.known[k];
        let slot = (r & 0xffff_ffff) as usize;
        if sw.state.atomic_marks[slot] == r {
            sw.state.atomic_marks[slot] = 0;
            k += 1;
        } else {
            sw.known.swap_remove(k);
            if sw.frees.push(r).is_err() {
                unreachable!("the frees queue holds every object and slot at once");
            }
            afreed += 1;
        }
    }
    shared.stats.record_cycle(Cycle {
        mark: t1 - t0,
        sweep: t1.elapsed(),
        objects_freed: freed,
        bytes_freed: bytes,
        atomic_freed: afreed,
    });
}
