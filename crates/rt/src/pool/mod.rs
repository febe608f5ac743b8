//! A thread pool for per-callback work lists, in which the audio thread takes part.
//!
//! The idea is that of "Real-Time Safe Multi-Threaded DAW Audio" (generic-daw's `WorkList`): every callback, the audio thread
//! installs a [`WorkList`], opens the pool, wakes only as many parked workers as there is
//! ready work, and works itself. Each worker, and the audio thread, repeatedly takes the
//! next ready item and processes it; processing may hand back one *reserved* successor that
//! the same thread runs at once, so a chain of nodes stays on one core. The audio thread
//! never parks: when it runs out of items it spins until the list reports done, then closes
//! the pool and waits (a bounded spin) for workers still inside to leave.
//!
//! Between callbacks, workers stay warm at a bounded cost: once callbacks come at a steady
//! period, a worker sleeps until [`PoolConfig::lead`] before the next one is due and spins
//! from then on, so a callback on time finds it awake (no wake-up latency, no system call
//! on the audio thread). Without a steady period, or when a callback is late, a worker
//! spins briefly, yields a few times, then parks. Waking a parked (or sleeping) worker is
//! the one system call the audio thread makes (a futex wake); it happens at most once per
//! worker per callback, only for workers that are really parked, and is counted in
//! [`Pool::wakes`].
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use downbeat_rt::pool::{Pool, PoolConfig, WorkList};
//!
//! /// Sums 0..n in parallel, one item per number.
//! struct Sum { next: AtomicUsize, n: usize, left: AtomicUsize, total: AtomicUsize }
//!
//! impl WorkList for Sum {
//!     type Item = usize;
//!     fn next_item(&self, _thread: usize) -> Option<usize> {
//!         let i = self.next.fetch_add(1, Ordering::Relaxed);
//!         (i < self.n).then_some(i)
//!     }
//!     fn do_work(&self, i: usize, _thread: usize) -> Option<usize> {
//!         self.total.fetch_add(i, Ordering::Relaxed);
//!         self.left.fetch_sub(1, Ordering::Release);
//!         None
//!     }
//!     fn is_done(&self) -> bool { self.left.load(Ordering::Acquire) == 0 }
//!     fn ready(&self) -> usize { self.n.saturating_sub(self.next.load(Ordering::Relaxed)) }
//! }
//!
//! let pool = Pool::new(PoolConfig { workers: Some(2), ..PoolConfig::default() });
//! let work = Sum { next: 0.into(), n: 100, left: 100.into(), total: 0.into() };
//! pool.run(&work);
//! assert_eq!(work.total.load(Ordering::Relaxed), 4950);
//! ```

#[cfg(target_arch = "wasm32")]
mod serial;
mod thread;
// On wasm32 only `work_until_done` is used: the pool there has no workers.
#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
mod worker;

#[cfg(target_arch = "wasm32")]
pub use serial::Pool;

pub use thread::{
    available_cores, pin_current_thread, set_current_thread_realtime,
    set_current_thread_round_robin, ThreadError,
};

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize};
#[cfg(not(target_arch = "wasm32"))]
use std::sync::{atomic::Ordering, Arc};
#[cfg(not(target_arch = "wasm32"))]
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use worker::JobRef;
#[cfg(not(target_arch = "wasm32"))]
use worker::{work_until_done, CLOSED};

/// A list of work for one callback, processed by the audio thread and the pool's workers.
///
/// Implementations must be real-time safe: no allocation, lock or system call in any
/// method, because the audio thread calls all of them.
pub trait WorkList: Sync {
    /// One unit of work, e.g. a node index.
    type Item;

    /// Takes the next ready item for `thread`, or `None` if nothing is ready right now (more
    /// may become ready later, until [`is_done`](WorkList::is_done)).
    ///
    /// `thread` is 0 for the thread that called [`Pool::run`] and `k + 1` for worker `k`,
    /// so that a list can keep an item on the thread whose cache holds its data.
    fn next_item(&self, thread: usize) -> Option<Self::Item>;

    /// Processes `item` on `thread` (numbered as in [`next_item`](WorkList::next_item));
    /// may return one item that became ready and is reserved for the calling thread to
    /// process next.
    fn do_work(&self, item: Self::Item, thread: usize) -> Option<Self::Item>;

    /// True once every item of this callback has been processed.
    fn is_done(&self) -> bool;

    /// How many items are ready now; decides how many parked workers to wake.
    fn ready(&self) -> usize;
}

/// How a [`Pool`] is set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolConfig {
    /// Worker threads besides the audio thread; `None` means one per core minus one.
    pub workers: Option<usize>,
    /// `SCHED_FIFO` priority for workers (1..=99); `None` leaves them ordinary threads.
    pub realtime_priority: Option<i32>,
    /// Pin worker `k` to core `k + 1`. Only for a caller pinned to core 0 itself (a
    /// benchmark): the caller spins at a higher priority until the work is done, so a caller
    /// the scheduler moves onto a pinned worker's core preempts the worker it waits for,
    /// and that worker can never run again (a soak hung this way). An unpinned worker is
    /// pushed to another core and finishes (`tests/pool_inversion.rs`). Off by default.
    pub pin: bool,
    /// Spin iterations a worker waits for work before yielding, then parking, when it
    /// cannot predict the next callback.
    pub spin: u32,
    /// How long before a predicted callback a worker stops sleeping and spins, so that the
    /// callback finds it awake; it bounds the CPU a worker burns per callback to about two
    /// leads. `Duration::ZERO` turns prediction off.
    pub lead: Duration,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            workers: None,
            realtime_priority: Some(70),
            pin: false,
            spin: 20_000,
            lead: Duration::from_micros(200),
        }
    }
}

#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
pub(crate) struct Shared {
    pub(crate) epoch: AtomicU64,
    /// When the current epoch's callback began, in nanoseconds since `base`: workers
    /// predict the next callback from these, not from when they happened to see one (a
    /// worker woken late would otherwise predict late, and sleep through the next one too).
    pub(crate) began: AtomicU64,
    pub(crate) base: Instant,
    /// Workers inside the current callback's work, or [`CLOSED`] between callbacks.
    pub(crate) active: AtomicUsize,
    pub(crate) job: AtomicPtr<JobRef>,
    pub(crate) shutdown: AtomicBool,
    pub(crate) spin: u32,
    pub(crate) lead: Duration,
}

#[cfg(not(target_arch = "wasm32"))]
struct Worker {
    thread: std::thread::Thread,
    parked: Arc<AtomicBool>,
}

/// A pool of real-time worker threads for [`WorkList`]s. See the [module docs](self).
#[cfg(not(target_arch = "wasm32"))]
pub struct Pool {
    shared: Arc<Shared>,
    workers: Vec<Worker>,
    handles: Vec<JoinHandle<()>>,
    wakes: AtomicU64,
    notes: Vec<String>,
}

#[cfg(not(target_arch = "wasm32"))]
impl Pool {
    /// Starts the workers. Real-time priority and pinning are attempted and, where the
    /// system refuses them, skipped with a note in [`notes`](Pool::notes).
    pub fn new(config: PoolConfig) -> Self {
        let workers = config
            .workers
            .unwrap_or_else(|| available_cores().saturating_sub(1));
        let shared = Arc::new(Shared {
            epoch: AtomicU64::new(0),
            began: AtomicU64::new(0),
            base: Instant::now(),
            active: AtomicUsize::new(CLOSED),
            job: AtomicPtr::new(std::ptr::null_mut()),
            shutdown: AtomicBool::new(false),
            spin: config.spin,
            lead: config.lead,
        });
        let cores = available_cores();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut handles = Vec::with_capacity(workers);
        let mut list = Vec::with_capacity(workers);
        for k in 0..workers {
            let shared = Arc::clone(&shared);
            let parked = Arc::new(AtomicBool::new(false));
            let flag = Arc::clone(&parked);
            let tx = tx.clone();
            let prio = config.realtime_priority;
            let pin = config.pin && cores > 1;
            let handle = std::thread::Builder::new()
                .name(format!("downbeat-worker-{k}"))
                .spawn(move || {
                    let mut notes = Vec::new();
                    // The priority the worker returns to after waiting at normal priority.
                    let mut realtime = None;
                    if let Some(p) = prio {
                        match set_current_thread_realtime(p) {
                            Ok(()) => realtime = Some(p),
                            Err(e) => {
                                notes.push(format!("worker {k}: no real-time priority ({e})"))
                            }
                        }
                    }
                    if pin {
                        if let Err(e) = pin_current_thread((k + 1) % cores) {
                            notes.push(format!("worker {k}: not pinned ({e})"));
                        }
                    }
                    let _ = tx.send(notes);
                    drop(tx);
                    // A worker runs audio work and nothing else, for its whole life.
                    let _flush = crate::denormals::FlushDenormals::new();
                    worker::main(&shared, &flag, k + 1, realtime);
                })
                .expect("spawning a worker thread");
            list.push(Worker {
                thread: handle.thread().clone(),
                parked,
            });
            handles.push(handle);
        }
        drop(tx);
        let mut notes: Vec<String> = rx.iter().take(workers).flatten().collect();
        notes.sort();
        notes.dedup();
        Self {
            shared,
            workers: list,
            handles,
            wakes: AtomicU64::new(0),
            notes,
        }
    }

    /// Number of worker threads (the audio thread is not counted).
    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// What could not be set up as asked (real-time priority, pinning), one line each.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Futex wakes of parked workers made by [`run`](Pool::run) so far.
    pub fn wakes(&self) -> u64 {
        self.wakes.load(Ordering::Relaxed)
    }

    /// Processes `work` to completion on the calling thread and the workers.
    ///
    /// Real-time safe apart from the counted wakes: no allocation, lock or other system
    /// call. Returns only when [`WorkList::is_done`] and no worker is still inside `work`.
    pub fn run<W: WorkList>(&self, work: &W) {
        if self.workers.is_empty() {
            work_until_done(work, None, 0);
            return;
        }
        let job = JobRef::new(work);
        self.shared
            .job
            .store(&job as *const JobRef as *mut JobRef, Ordering::Release);
        self.shared.active.store(0, Ordering::Release);
        // The clock read is the vDSO's (no system call where the clock source has one,
        // as the time stamp counter does); the epoch increment below publishes it.
        let began = self.shared.base.elapsed().as_nanos() as u64;
        self.shared.began.store(began, Ordering::Relaxed);
        // SeqCst pairs with the worker's SeqCst `parked` store and epoch re-check: either
        // the worker sees the new epoch and does not park, or we see it parked and wake it.
        self.shared.epoch.fetch_add(1, Ordering::SeqCst);
        let mut to_wake = work.ready().saturating_sub(1).min(self.workers.len());
        for w in &self.workers {
            if to_wake == 0 {
                break;
            }
            if w.parked.load(Ordering::SeqCst) {
                w.thread.unpark();
                self.wakes.fetch_add(1, Ordering::Relaxed);
            }
            to_wake -= 1;
        }
        work_until_done(work, None, 0);
        // Close: wait for the workers still inside (they leave as soon as they see the
        // list done), then mark the pool closed so no late worker can enter this job.
        while self
            .shared
            .active
            .compare_exchange_weak(0, CLOSED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            std::hint::spin_loop();
        }
        self.shared
            .job
            .store(std::ptr::null_mut(), Ordering::Release);
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        self.shared.epoch.fetch_add(1, Ordering::SeqCst);
        for w in &self.workers {
            w.thread.unpark();
        }
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}
