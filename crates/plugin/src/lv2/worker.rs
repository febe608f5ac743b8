//! The LV2 worker (`worker:schedule`, `worker:interface`): a plugin's slow work (loading a
//! sample kit, building a wavetable) done on a thread of its own, never in `run()`.
//!
//! * **Requests.** A plugin calls `schedule_work` from `run()` on the audio thread: the host
//!   copies the message into a [`downbeat_ring`] ring (one `write_chunk`, no lock, no
//!   allocation, no system call). A full ring answers `LV2_WORKER_ERR_NO_SPACE` and is counted
//!   ([`WorkerCounts::no_space`], a loss the run's summary warns about), never dropped
//!   silently.
//! * **Work.** A non-real-time thread, started with the node, takes the messages in order and
//!   calls the plugin's `work()`; it polls the ring (every millisecond when idle), since a
//!   wake-up from the audio thread would be a system call.
//! * **Responses.** `work()` answers through `respond`, which puts the answer into a second
//!   ring; at the start of a later `run()` the node hands every waiting answer to the plugin's
//!   `work_response()`, then runs the plugin, then calls `end_run()`.
//! * **Offline** ([`Node::set_offline`](downbeat_graph::Node::set_offline)), the node waits
//!   before each run until the worker has done every request made so far, so that the
//!   answers arrive at the same block however slow the worker thread is: an offline render is
//!   the same on every machine. In real time it never waits.
//! * **Outside `run()`** (from `instantiate`, or while a state is restored on the main
//!   thread), a request is worked at once on the calling thread (the LV2 worker allows it, the
//!   caller not being real-time), its answers delivered at the start of the next run; one made
//!   before the plugin's interface is known (from inside `instantiate`) waits in the ring for
//!   the worker thread.

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use downbeat_graph::{NodeCount, NodeMonitor};
use downbeat_ring::{Consumer, Producer, RingBuffer};
use lv2_raw::core::LV2Feature;
use lv2_sys::{
    LV2_Worker_Interface, LV2_Worker_Schedule, LV2_Worker_Status,
    LV2_Worker_Status_LV2_WORKER_ERR_NO_SPACE as NO_SPACE,
    LV2_Worker_Status_LV2_WORKER_SUCCESS as SUCCESS,
};

/// `worker:schedule`.
pub const SCHEDULE: &std::ffi::CStr = c"http://lv2plug.in/ns/ext/worker#schedule";
/// `worker:interface`, the extension data a worker plugin offers.
pub const INTERFACE: &str = "http://lv2plug.in/ns/ext/worker#interface";

/// Bytes of each ring (requests, responses). A message takes its size plus a 4-byte header;
/// plugins send a few bytes to a few hundred (a pointer, a path).
pub const RING_BYTES: usize = 64 * 1024;
/// Bytes of the length that precedes every message in the rings.
const HEADER: usize = 4;
/// How long the worker thread sleeps when it finds nothing to do.
const IDLE: Duration = Duration::from_millis(1);
/// How long an offline run waits for the worker before it runs the plugin anyway (and counts
/// the run as [`WorkerCounts::late`]): loading a large sample kit takes seconds.
const OFFLINE_PATIENCE: Duration = Duration::from_secs(120);

thread_local! {
    /// Set by [`fail_next_spawn`]: the next worker thread this thread starts fails to start.
    static FAIL_NEXT_SPAWN: Cell<bool> = const { Cell::new(false) };
}

/// A test hook: the next worker thread that the calling thread starts (in the next
/// [`Lv2Node::load`](super::Lv2Node::load) of a plugin with a worker) fails to start, as
/// when the system refuses a thread, so that a test can watch the load refuse the plugin.
/// Only the calling thread is affected (tests running beside it are not); used up by the
/// first start.
#[doc(hidden)]
pub fn fail_next_spawn() {
    FAIL_NEXT_SPAWN.with(|f| f.set(true));
}

/// What the worker did, readable from any thread (the node's monitor reports them).
#[derive(Debug, Default)]
pub struct WorkerCounts {
    /// Requests the plugin made.
    pub requests: AtomicU64,
    /// Requests whose `work()` has returned.
    pub done: AtomicU64,
    /// Requests refused because the request ring was full (`LV2_WORKER_ERR_NO_SPACE`).
    pub no_space: AtomicU64,
    /// Responses refused because the response ring was full.
    pub responses_lost: AtomicU64,
    /// Offline runs that gave up waiting for the worker.
    pub late: AtomicU64,
}

/// The node's monitor for a plugin with a worker: `worker_requests`, and the losses
/// `worker_no_space`, `worker_responses_lost` and `worker_late` (which `downbeat run` warns
/// about).
impl NodeMonitor for WorkerCounts {
    fn counts(&self) -> Vec<NodeCount> {
        let count = |name, value: &AtomicU64, loss| NodeCount {
            name,
            value: value.load(Ordering::Relaxed),
            loss,
        };
        vec![
            count("worker_requests", &self.requests, false),
            count("worker_no_space", &self.no_space, true),
            count("worker_responses_lost", &self.responses_lost, true),
            count("worker_late", &self.late, true),
        ]
    }
}

/// Shared by the audio side, the worker thread and `respond`.
struct Shared {
    counts: Arc<WorkerCounts>,
    stop: AtomicBool,
    /// Held while the plugin's `work()` runs: only one call at a time, as the LV2 worker
    /// requires, whether from the worker thread or from the main thread. Never taken on the
    /// audio thread.
    working: Mutex<()>,
    /// The response ring's writing end: `respond` is called from `work()`, on the worker
    /// thread or the main thread, never the audio thread.
    responses: Mutex<Producer<u8>>,
}

/// The plugin's side: its instance handle and worker interface.
#[derive(Clone, Copy)]
struct PluginSide {
    handle: *mut c_void,
    iface: *const LV2_Worker_Interface,
}

// SAFETY: the handle and interface point into the plugin, which outlives the worker thread
// (the node joins the thread before it frees the instance). The LV2 worker extension allows
// `work()` on another thread than `run()`; the `working` lock keeps it to one call at a time.
unsafe impl Send for PluginSide {}

/// The audio side, where `LV2_Worker_Schedule::handle` points.
struct Scheduler {
    requests: Producer<u8>,
    shared: Arc<Shared>,
    plugin: Option<PluginSide>,
    /// True while the plugin's `run()` (or `work_response`, `end_run`) executes: a request
    /// then goes through the ring.
    in_run: bool,
    /// Requests made so far (this side's count, for the offline wait).
    made: u64,
}

/// One plugin instance's worker: the `worker:schedule` feature, the rings and the thread.
pub struct Worker {
    // Boxed: the feature's pointers point into them.
    scheduler: Box<Scheduler>,
    schedule: Box<LV2_Worker_Schedule>,
    responses: Consumer<u8>,
    /// The request ring's reading end, until the thread takes it.
    requests: Option<Consumer<u8>>,
    /// Where a response is copied for `work_response` (a message never exceeds a ring).
    scratch: Box<[u8]>,
    thread: Option<JoinHandle<()>>,
    offline: bool,
}

// SAFETY: the raw pointers (`schedule.handle` into `scheduler`, the plugin's handle and
// interface) point into boxes the worker owns or into the plugin, which the node keeps with
// it; moving the worker to another thread moves only the pointers, and only the thread that
// owns the node (and so the worker) calls into the audio side.
unsafe impl Send for Worker {}

impl Worker {
    /// A worker with empty rings and no thread yet, for [`feature`](Worker::feature) to be
    /// handed to `instantiate`. Off the audio thread.
    pub fn new() -> Worker {
        let (req_tx, req_rx) = RingBuffer::<u8>::new(RING_BYTES);
        let (resp_tx, resp_rx) = RingBuffer::<u8>::new(RING_BYTES);
        let shared = Arc::new(Shared {
            counts: Arc::default(),
            stop: AtomicBool::new(false),
            working: Mutex::new(()),
            responses: Mutex::new(resp_tx),
        });
        let mut scheduler = Box::new(Scheduler {
            requests: req_tx,
            shared,
            plugin: None,
            in_run: false,
            made: 0,
        });
        let schedule = Box::new(LV2_Worker_Schedule {
            handle: std::ptr::from_mut(&mut *scheduler).cast(),
            schedule_work: Some(schedule_work),
        });
        Worker {
            scheduler,
            schedule,
            responses: resp_rx,
            requests: Some(req_rx),
            scratch: vec![0u8; RING_BYTES].into_boxed_slice(),
            thread: None,
            offline: false,
        }
    }

    /// The `worker:schedule` feature, pointing into this worker (which must outlive the
    /// plugin instance it is given to).
    pub fn feature(&mut self) -> LV2Feature {
        LV2Feature {
            uri: SCHEDULE.as_ptr(),
            data: std::ptr::from_mut(&mut *self.schedule).cast(),
        }
    }

    /// Connects the worker to the instantiated plugin (`handle`, and `iface`, its
    /// `worker:interface`, or null when it has none) and starts the worker thread. Off the
    /// audio thread.
    ///
    /// # Errors
    /// The system's reason when the thread cannot be started (the worker is then left
    /// without one, and the plugin must not be run: its requests would never be worked).
    ///
    /// # Safety
    /// `handle` and `iface` must stay valid until [`stop`](Worker::stop) has returned.
    pub unsafe fn start(
        &mut self,
        handle: *mut c_void,
        iface: *const LV2_Worker_Interface,
    ) -> std::io::Result<()> {
        if iface.is_null() || self.thread.is_some() {
            return Ok(());
        }
        let Some(mut requests) = self.requests.take() else {
            return Ok(());
        };
        if FAIL_NEXT_SPAWN.with(|f| f.replace(false)) {
            return Err(std::io::Error::other(
                "refused by the test hook worker::fail_next_spawn",
            ));
        }
        let plugin = PluginSide { handle, iface };
        let shared = Arc::clone(&self.scheduler.shared);
        let thread = std::thread::Builder::new()
            .name("lv2-worker".into())
            .spawn(move || {
                let mut message = vec![0u8; RING_BYTES];
                loop {
                    match pop_message(&mut requests, &mut message) {
                        Some(len) => {
                            // SAFETY: `plugin` is valid until `stop` joins this thread.
                            unsafe { work(&shared, plugin, &message[..len]) };
                        }
                        None if shared.stop.load(Ordering::Acquire) => break,
                        None => std::thread::sleep(IDLE),
                    }
                }
            })?;
        // Connected only once the thread runs: a worker without one must not take requests
        // it can never work.
        self.scheduler.plugin = Some(plugin);
        self.thread = Some(thread);
        Ok(())
    }

    /// The worker's counters, shared.
    pub fn counts(&self) -> Arc<WorkerCounts> {
        Arc::clone(&self.scheduler.shared.counts)
    }

    /// Offline, the node waits for the worker before each run (see the module docs).
    /// Real-time safe.
    pub fn set_offline(&mut self, offline: bool) {
        self.offline = offline;
    }

    /// Before the plugin's `run()`, on the audio thread: offline, waits for the requests
    /// made so far; then hands every waiting response to `work_response()`. From here to
    /// [`end_run`](Worker::end_run) a request goes through the ring. No allocation, lock or
    /// system call in real time.
    pub fn begin_run(&mut self) {
        let Some(plugin) = self.scheduler.plugin else {
            self.scheduler.in_run = true;
            return;
        };
        if self.offline {
            self.wait_for_work();
        }
        self.scheduler.in_run = true;
        // SAFETY: the interface is the plugin's, valid while the instance lives.
        let Some(respond) = (unsafe { (*plugin.iface).work_response }) else {
            return;
        };
        while let Some(len) = pop_message(&mut self.responses, &mut self.scratch) {
            // SAFETY: the LV2 worker contract: `work_response` in the audio thread's context,
            // not concurrently with `run()`, with a body valid for the call.
            unsafe { respond(plugin.handle, len as u32, self.scratch.as_ptr().cast()) };
        }
    }

    /// After the plugin's `run()`, on the audio thread: `end_run()`, if the plugin has one.
    pub fn end_run(&mut self) {
        if let Some(plugin) = self.scheduler.plugin {
            // SAFETY: as in `begin_run`.
            if let Some(end) = unsafe { (*plugin.iface).end_run } {
                // SAFETY: called after `run()`, in the same context, as the extension says.
                unsafe { end(plugin.handle) };
            }
        }
        self.scheduler.in_run = false;
    }

    /// Offline: yields until the worker has done every request made so far (bounded by a
    /// generous patience, after which the run is counted late).
    fn wait_for_work(&mut self) {
        let counts = &self.scheduler.shared.counts;
        let mut since: Option<Instant> = None;
        while counts.done.load(Ordering::Acquire) < self.scheduler.made {
            if self.thread.is_none() {
                return;
            }
            let start = *since.get_or_insert_with(Instant::now);
            if start.elapsed() > OFFLINE_PATIENCE {
                counts.late.fetch_add(1, Ordering::Relaxed);
                return;
            }
            std::thread::yield_now();
        }
    }

    /// Stops and joins the worker thread (after it has done the requests already made).
    /// Off the audio thread; the node calls it before it frees the plugin.
    pub fn stop(&mut self) {
        self.scheduler.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.scheduler.plugin = None;
    }
}

impl Default for Worker {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Copies `data` into `ring` as one message (length, then bytes), all or nothing.
/// Real-time safe: one chunk of the ring, written and committed.
fn push_message(ring: &mut Producer<u8>, data: &[u8]) -> bool {
    let total = HEADER + data.len();
    let Ok(mut chunk) = ring.write_chunk(total) else {
        return false;
    };
    let (a, b) = chunk.as_mut_slices();
    let len = (data.len() as u32).to_ne_bytes();
    for (i, byte) in len.iter().chain(data).enumerate() {
        if i < a.len() {
            a[i] = *byte;
        } else {
            b[i - a.len()] = *byte;
        }
    }
    chunk.commit_all();
    true
}

/// Takes the next whole message from `ring` into `out`; its length, or `None` when there is
/// none. Real-time safe.
fn pop_message(ring: &mut Consumer<u8>, out: &mut [u8]) -> Option<usize> {
    let len = {
        let head = ring.read_chunk(HEADER).ok()?;
        let mut bytes = [0u8; HEADER];
        let (a, b) = head.as_slices();
        for (d, s) in bytes.iter_mut().zip(a.iter().chain(b)) {
            *d = *s;
        }
        // Not committed: the header is read again with the body below.
        u32::from_ne_bytes(bytes) as usize
    };
    // The writer commits header and body together, so the body is there.
    let chunk = ring.read_chunk(HEADER + len).ok()?;
    let (a, b) = chunk.as_slices();
    for (d, s) in out[..len].iter_mut().zip(a.iter().chain(b).skip(HEADER)) {
        *d = *s;
    }
    chunk.commit_all();
    Some(len)
}

/// Calls the plugin's `work()` with `message`, one call at a time.
///
/// # Safety
/// `plugin` must be valid.
unsafe fn work(shared: &Arc<Shared>, plugin: PluginSide, message: &[u8]) {
    let _one_at_a_time = shared.working.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: the caller's promise.
    if let Some(work) = unsafe { (*plugin.iface).work } {
        // SAFETY: the worker contract: `respond` with its handle (the shared state, alive
        // for the call), the message valid for the call, no concurrent `work()`.
        unsafe {
            work(
                plugin.handle,
                Some(respond),
                Arc::as_ptr(shared).cast_mut().cast(),
                message.len() as u32,
                message.as_ptr().cast(),
            )
        };
    }
    shared.counts.done.fetch_add(1, Ordering::Release);
}

/// `LV2_Worker_Schedule::schedule_work`.
unsafe extern "C" fn schedule_work(
    handle: *mut c_void,
    size: u32,
    data: *const c_void,
) -> LV2_Worker_Status {
    if handle.is_null() || (data.is_null() && size > 0) {
        return lv2_sys::LV2_Worker_Status_LV2_WORKER_ERR_UNKNOWN;
    }
    // SAFETY: the handle is the `Scheduler` the feature was made with, alive as long as the
    // plugin; only the thread that owns the node calls the plugin, so this is the only
    // reference now.
    let s = unsafe { &mut *handle.cast::<Scheduler>() };
    let message: &[u8] = if size == 0 {
        &[]
    } else {
        // SAFETY: the plugin gives `size` bytes at `data`, valid for the call.
        unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size as usize) }
    };
    let counts = &s.shared.counts;
    match s.plugin {
        // Outside run(): the caller is not real-time, so the work is done now.
        Some(plugin) if !s.in_run => {
            s.made += 1;
            counts.requests.fetch_add(1, Ordering::Relaxed);
            // SAFETY: the plugin is valid while it calls us.
            unsafe { work(&s.shared, plugin, message) };
            SUCCESS
        }
        _ => {
            if push_message(&mut s.requests, message) {
                s.made += 1;
                counts.requests.fetch_add(1, Ordering::Relaxed);
                SUCCESS
            } else {
                counts.no_space.fetch_add(1, Ordering::Relaxed);
                NO_SPACE
            }
        }
    }
}

/// `LV2_Worker_Respond_Function`, handed to `work()`.
unsafe extern "C" fn respond(
    handle: *mut c_void,
    size: u32,
    data: *const c_void,
) -> LV2_Worker_Status {
    if handle.is_null() || (data.is_null() && size > 0) {
        return lv2_sys::LV2_Worker_Status_LV2_WORKER_ERR_UNKNOWN;
    }
    // SAFETY: the handle is the `Shared` that `work` passed, alive during `work()`.
    let shared = unsafe { &*handle.cast::<Shared>() };
    let message: &[u8] = if size == 0 {
        &[]
    } else {
        // SAFETY: the plugin gives `size` bytes at `data`, valid for the call.
        unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size as usize) }
    };
    let mut ring = shared.responses.lock().unwrap_or_else(|p| p.into_inner());
    if push_message(&mut ring, message) {
        SUCCESS
    } else {
        shared.counts.responses_lost.fetch_add(1, Ordering::Relaxed);
        NO_SPACE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_cross_the_ring_whole_and_a_full_ring_refuses() {
        let (mut tx, mut rx) = RingBuffer::<u8>::new(16);
        assert!(push_message(&mut tx, b"abc"));
        assert!(push_message(&mut tx, b"defgh"));
        assert!(!push_message(&mut tx, b"too long for it"), "all or nothing");
        let mut out = [0u8; 16];
        assert_eq!(pop_message(&mut rx, &mut out), Some(3));
        assert_eq!(&out[..3], b"abc");
        // Wraps around the end of the ring.
        assert!(push_message(&mut tx, b"ij"));
        assert_eq!(pop_message(&mut rx, &mut out), Some(5));
        assert_eq!(&out[..5], b"defgh");
        assert_eq!(pop_message(&mut rx, &mut out), Some(2));
        assert_eq!(&out[..2], b"ij");
        assert_eq!(pop_message(&mut rx, &mut out), None);
    }
}
