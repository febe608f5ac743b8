//! The audio thread never waits for ever on a worker it preempted.
//!
//! The audio thread (here `SCHED_FIFO` 80) spins until the work list is done, never parks.
//! If the scheduler moves it onto the core where a worker of lower priority (70) is in the
//! middle of an item, it preempts that worker and then spins waiting for it. A worker free
//! to move is pushed to the other core by the kernel and finishes; a worker pinned to its
//! core never runs again, and neither callback nor engine ever ends. A soak hit exactly that
//! (another real-time program took the audio thread's core for a few milliseconds, the
//! scheduler moved the audio thread to the worker's). Here the audio thread moves itself
//! onto the worker's core as soon as the worker has taken its item.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use downbeat_rt::pool::{available_cores, set_current_thread_realtime, Pool, PoolConfig, WorkList};

/// One item, which only the worker takes; the caller follows it onto its core.
struct FollowTheWorker {
    taken: AtomicBool,
    done: AtomicBool,
    /// The core the worker's item runs on, or -1 before it started.
    worker_core: AtomicI32,
    moved: AtomicBool,
    /// Set by the test when it has given up, so the stuck callback can end.
    abandon: Arc<AtomicBool>,
}

fn current_core() -> i32 {
    // SAFETY: no arguments; returns the core or -1.
    unsafe { libc::sched_getcpu() }
}

fn move_thread_to(tid: libc::pid_t, cores: &[usize]) {
    // SAFETY: `cpu_set_t` is plain data, zeroed is the empty set; each core is below
    // CPU_SETSIZE on any machine this test runs on (checked below).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cores {
            assert!(c < libc::CPU_SETSIZE as usize);
            libc::CPU_SET(c, &mut set);
        }
        let r = libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set);
        assert_eq!(
            r,
            0,
            "sched_setaffinity: {}",
            std::io::Error::last_os_error()
        );
    }
}

impl WorkList for FollowTheWorker {
    type Item = ();
    fn next_item(&self, thread: usize) -> Option<()> {
        if thread == 0 {
            let core = self.worker_core.load(Ordering::Acquire);
            if core >= 0 && !self.moved.swap(true, Ordering::Relaxed) {
                move_thread_to(0, &[core as usize]);
            }
            return None;
        }
        (!self.taken.swap(true, Ordering::AcqRel)).then_some(())
    }
    fn do_work(&self, _: (), _thread: usize) -> Option<()> {
        self.worker_core.store(current_core(), Ordering::Release);
        // Long enough for the caller to arrive and preempt this thread mid-item.
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(30) {
            std::hint::spin_loop();
        }
        self.done.store(true, Ordering::Release);
        None
    }
    fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire) || self.abandon.load(Ordering::Acquire)
    }
    fn ready(&self) -> usize {
        // The pool wakes one worker fewer than the ready items, counting on the caller to
        // take one; here the caller takes none, so the one item counts twice.
        2 * usize::from(!self.taken.load(Ordering::Relaxed))
    }
}

#[test]
fn a_worker_preempted_by_the_audio_thread_on_its_core_still_finishes() {
    let cores = available_cores();
    assert!(
        cores >= 2,
        "this test needs two cores, the machine has {cores}"
    );
    let pool = Arc::new(Pool::new(PoolConfig {
        workers: Some(1),
        realtime_priority: Some(70),
        ..PoolConfig::default()
    }));
    assert!(
        pool.notes().is_empty(),
        "the worker must get the default set-up: {:?}",
        pool.notes()
    );
    let abandon = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    let caller_tid = Arc::new(AtomicUsize::new(0));
    let audio = {
        let (pool, abandon, finished, caller_tid) = (
            Arc::clone(&pool),
            Arc::clone(&abandon),
            Arc::clone(&finished),
            Arc::clone(&caller_tid),
        );
        std::thread::spawn(move || {
            // SAFETY: no arguments; returns the calling thread's id.
            caller_tid.store(unsafe { libc::gettid() } as usize, Ordering::Release);
            set_current_thread_realtime(80)
                .expect("this test needs SCHED_FIFO (run it as root or with rtprio 80)");
            for _ in 0..20 {
                let work = FollowTheWorker {
                    taken: AtomicBool::new(false),
                    done: AtomicBool::new(false),
                    worker_core: AtomicI32::new(-1),
                    moved: AtomicBool::new(false),
                    abandon: Arc::clone(&abandon),
                };
                pool.run(&work);
                if abandon.load(Ordering::Acquire) {
                    return;
                }
                // Free to go anywhere again for the next round.
                move_thread_to(0, &(0..cores).collect::<Vec<_>>());
            }
            finished.store(true, Ordering::Release);
        })
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !finished.load(Ordering::Acquire) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let stuck = !finished.load(Ordering::Acquire);
    let mut threads = String::new();
    if stuck {
        threads = thread_states();
        // Let the stuck callback end, and move the caller off every core but one so that
        // the worker it waits for can run, before failing.
        abandon.store(true, Ordering::Release);
        let tid = caller_tid.load(Ordering::Acquire) as libc::pid_t;
        let worker_free: Vec<usize> = (0..cores).collect();
        move_thread_to(tid, &worker_free[..1]);
    }
    audio.join().expect("the audio thread");
    assert!(
        !stuck,
        "20 callbacks in which the audio thread preempts the worker on its core did not \
         end within 20 s: it spins for a worker that cannot run\n{threads}"
    );
}

/// Each thread of this process: name, state, core, allowed cores and priority.
fn thread_states() -> String {
    let mut out = String::new();
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        // After the name's closing parenthesis: field 3 (state) is index 0, so the core
        // (field 39) is index 36 and the priority (field 18) index 15.
        let rest: Vec<&str> = stat
            .rsplit_once(')')
            .map_or(vec![], |(_, r)| r.split_whitespace().collect());
        let field = |k: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .unwrap_or("?")
                .trim()
                .to_owned()
        };
        out += &format!(
            "  {}: {}, core {}, allowed {}, priority {}\n",
            field("Name:"),
            field("State:"),
            rest.get(36).unwrap_or(&"?"),
            field("Cpus_allowed_list:"),
            rest.get(15).unwrap_or(&"?"),
        );
    }
    out
}
