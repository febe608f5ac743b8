//! One trial of the largest-heap search: a rooted live structure of a given size, an audio
//! thread loaded to half of every block, and the question whether any block ends late.
//!
//! The live structure is an array of lists: [`LISTS`] root slots each hold the head of a list
//! of nodes with two reference fields (`next`, and a `cross` link to any other node) and five
//! data words, 64 bytes with the header. Every block, the audio thread
//!
//! * allocates [`GARBAGE`] small objects linked into a list and one atomic block of
//!   [`ATOMIC_BYTES`], and drops them (garbage for the collector);
//! * rewrites the `cross` field of [`REWRITES`] random live nodes to other random live
//!   nodes, which keeps the write barrier busy without changing what is live;
//! * then spins until half the block period has passed since its work started.
//!
//! Blocks are paced by absolute deadlines at the block period. A block is **missed** when it
//! started on time and ends after its deadline (the start of the next one), whatever made it
//! late: the collector or the machine. A block the OS woke more than half a period late is
//! counted apart (`late_starts`), as the song counts it: on a virtual machine a SCHED_FIFO
//! thread is now and then woken milliseconds late whatever the collector does, and that is not
//! a heap the collector failed to sustain. Every collector gets the same structure,
//! churn, pacing, pinning and priority, and a pointer heap of the live size divided by
//! [`SAFETY_FRACTION`] plus [`HEAP_SLACK`].

use std::hint::black_box;
use std::time::{Duration, Instant};

use downbeat_gc::{start, AccessError, Config, Gc, GcError, Mode, Stats};

use crate::rng::Rng;

/// Lists the live structure is split into, one root slot each.
pub const LISTS: usize = 256;
/// Bytes of one live node: header, two references, five data words.
pub const NODE_BYTES: usize = 64;
/// Garbage objects allocated per block.
pub const GARBAGE: usize = 8;
/// Bytes of the atomic block allocated (and dropped) per block.
pub const ATOMIC_BYTES: usize = 256;
/// Reference fields of live nodes rewritten per block.
pub const REWRITES: usize = 32;
/// The pointer heap is the live size divided by this (the collector's default safety
/// fraction: the live structure stays out of its safety buffer).
pub const SAFETY_FRACTION: f64 = 0.7;
/// Added to every pointer heap for the churn's garbage, which waits a few blocks for its
/// collection.
pub const HEAP_SLACK: usize = 256 << 10;
/// Sample rate of the trials.
pub const RATE: f64 = 48_000.0;

/// What one trial runs.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    /// The collector.
    pub mode: Mode,
    /// Frames per block at [`RATE`].
    pub frames: usize,
    /// Bytes of the rooted live structure.
    pub live_bytes: usize,
    /// How long the audio runs, if no block is missed first.
    pub seconds: f64,
    /// p(M), measured once for all collectors.
    pub copy_rate: f64,
    /// CPU of the collector's threads (the audio thread runs on CPU 0).
    pub collector_cpu: usize,
    /// Whether the first missed block ends the trial (the search); `false` runs the whole
    /// time and counts them (the pause measurement).
    pub stop_on_miss: bool,
}

impl Setup {
    /// The pointer heap every collector gets for this live size.
    pub fn heap_bytes(&self) -> usize {
        let words = ((self.live_bytes as f64 / SAFETY_FRACTION) as usize + HEAP_SLACK).div_ceil(8);
        words * 8
    }

    fn period(&self) -> Duration {
        period_of(self.frames)
    }
}

/// Why a trial did not sustain its heap.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// Block `block` (at `at_s` seconds) ended `late_us` after its deadline; it had started
    /// `woke_late_us` after its due time.
    Missed {
        /// Which block.
        block: usize,
        /// Seconds into the trial.
        at_s: f64,
        /// How far past the deadline it ended.
        late_us: f64,
        /// How late it started (the OS's share).
        woke_late_us: f64,
        /// What the collector held the audio thread for in that block.
        pause_us: f64,
    },
    /// An allocation of the churn failed: the collector did not keep up with the garbage.
    OutOfMemory {
        /// Which block.
        block: usize,
    },
    /// A live node's handle was refused (a collector bug: the node is reachable).
    Access {
        /// Which block.
        block: usize,
        /// The refusal.
        error: AccessError,
    },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Missed {
                block,
                at_s,
                late_us,
                woke_late_us,
                pause_us,
            } => write!(
                f,
                "block {block} ({at_s:.2} s) ended {late_us:.0} us late (woke {woke_late_us:.0} us \
                 late, collector pause {pause_us:.0} us)"
            ),
            Failure::OutOfMemory { block } => {
                write!(
                    f,
                    "block {block}: the pointer heap was full (collector behind)"
                )
            }
            Failure::Access { block, error } => {
                write!(f, "block {block}: live node refused: {error}")
            }
        }
    }
}

/// Why a trial could not run at all.
#[derive(Clone, Debug, PartialEq)]
pub enum SetupError {
    /// The collector refused the configuration or could not start.
    Start(GcError),
    /// The live structure did not fit.
    Build(GcError),
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetupError::Start(e) => write!(f, "collector did not start: {e}"),
            SetupError::Build(e) => write!(f, "live structure did not fit: {e}"),
        }
    }
}

impl std::error::Error for SetupError {}

/// What one trial did.
pub struct Outcome {
    /// `None` when every block met its deadline; else the first failure.
    pub failure: Option<Failure>,
    /// Blocks that started on time and ended after their deadline.
    pub missed: usize,
    /// Blocks the OS woke more than half a period late (not judged).
    pub late_starts: usize,
    /// Blocks run (up to and including a missed one).
    pub blocks: usize,
    /// Per block run: what the collector held the heap for (µs): the wait in the block or the
    /// copy since the previous one, whichever is longer.
    pub pause_us: Vec<f64>,
    /// The collector's totals at the end.
    pub stats: Stats,
    /// Pinning or priority that could not be had.
    pub notes: Vec<String>,
}

/// Builds the live structure (not timed) and runs the audio for `setup.seconds` or until the
/// first failure.
pub fn run(setup: &Setup) -> Result<Outcome, SetupError> {
    let config = Config {
        mode: setup.mode,
        heap_bytes: setup.heap_bytes(),
        copy_rate: Some(setup.copy_rate),
        snapshot_priority: Some(super::PRIORITY),
        collector_cpu: Some(setup.collector_cpu),
        ..Config::default()
    };
    let (mut m, collector) = start(config).map_err(SetupError::Start)?;
    let n = (setup.live_bytes / NODE_BYTES).max(LISTS);
    // Handles to every live node, for the cross-link rewrites; kept outside the heap and
    // allocated here, before the audio starts.
    let nodes = build(&mut m, n).map_err(SetupError::Build)?;
    // Let the collection of the build block finish before the clock starts.
    while !collector.is_idle() {
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(m.begin_block());
    while !collector.is_idle() {
        std::thread::sleep(Duration::from_millis(1));
    }
    let st = collector.stats();
    let mut notes: Vec<String> = st.priority_note.into_iter().chain(st.pin_note).collect();
    let period = setup.period();
    let blocks = blocks_in(setup.frames, setup.seconds);
    let collector_ref = &collector;
    let (result, _m) = std::thread::scope(|s| {
        s.spawn(move || {
            let notes = super::become_audio_thread();
            let r = audio(
                &mut m,
                collector_ref,
                &nodes,
                period,
                blocks,
                setup.stop_on_miss,
            );
            ((r, notes), m)
        })
        .join()
        .expect("audio thread")
    });
    let ((failure, (missed, late_starts), pause_us), audio_notes) = result;
    notes.extend(audio_notes);
    Ok(Outcome {
        failure,
        missed,
        late_starts,
        blocks: pause_us.len(),
        pause_us,
        stats: collector.stats(),
        notes,
    })
}

/// Builds the live structure of `n` nodes in one block (not timed) and returns a handle to
/// every node.
fn build(m: &mut downbeat_gc::Mutator, n: usize) -> Result<Vec<Gc>, GcError> {
    let mut nodes: Vec<Gc> = Vec::with_capacity(n);
    let mut b = m.begin_block();
    let mut heads: [Option<Gc>; LISTS] = [None; LISTS];
    for i in 0..n {
        let node = b.alloc(2, 5)?;
        let list = i % LISTS;
        let set = b
            .set_ref(node, 0, heads[list])
            .and_then(|()| b.set_data(node, 0, i as u64));
        set.expect("a node allocated in this block is live");
        heads[list] = Some(node);
        nodes.push(node);
    }
    for (slot, head) in heads.into_iter().enumerate() {
        b.set_root(slot, head)
            .expect("LISTS is below the default root count");
    }
    Ok(nodes)
}

/// The period of a block of `frames` at [`RATE`].
fn period_of(frames: usize) -> Duration {
    Duration::from_secs_f64(frames as f64 / RATE)
}

/// Blocks of `frames` in `seconds` (counted in frames: 0.2 s of 64 frames is 150 blocks,
/// where seconds over the period in floating point make it 151).
fn blocks_in(frames: usize, seconds: f64) -> usize {
    (seconds * RATE / frames as f64).ceil() as usize
}

/// How a block went, judged against its own due time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    /// Woken in time and done before the next block is due.
    Kept,
    /// Woken in time, done after the next block was due.
    Missed,
    /// Woken over half a period late by the OS: counted, not judged.
    StartedLate,
}

fn judge(due: Instant, woke: Instant, end: Instant, period: Duration) -> Verdict {
    if woke > due + period / 2 {
        Verdict::StartedLate
    } else if end > due + period {
        Verdict::Missed
    } else {
        Verdict::Kept
    }
}

/// The audio loop: `blocks` blocks of `period`, or until the first failure (a missed block
/// only with `stop_on_miss`). Returns the first failure, the missed blocks and the pauses.
fn audio(
    m: &mut downbeat_gc::Mutator,
    collector: &downbeat_gc::Collector,
    nodes: &[Gc],
    period: Duration,
    blocks: usize,
    stop_on_miss: bool,
) -> (Option<Failure>, (usize, usize), Vec<f64>) {
    let mut rng = Rng(0x5eed_1800);
    let mut held = collector.copy_time();
    paced(period, blocks, stop_on_miss, |k| {
        let mut b = m.begin_block();
        let work = Instant::now();
        churn(&mut b, nodes, &mut rng, k)?;
        load_until(work + period / 2, k);
        drop(b);
        // The thesis' measure: what the collector held the heap for. The snapshot thread's
        // copy after the previous block holds it without the audio thread waiting (it runs
        // on another CPU), so count the copy time since then as well as the wait; the larger
        // of the two, since a copy the audio thread made itself is in both.
        let now_held = collector.copy_time();
        let copied = now_held.saturating_sub(held);
        held = now_held;
        Ok(m.stats().last_blocking.max(copied))
    })
}

/// The rest of the audio thread's half of the block: arithmetic it cannot skip.
fn load_until(until: Instant, block: usize) {
    let mut x = block as u64 | 1;
    while Instant::now() < until {
        for _ in 0..64 {
            x = black_box(x.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(7));
        }
    }
    black_box(x);
}

/// Blocks of `period` paced by absolute deadlines, each judged by [`judge`]; `block(k)` does
/// block `k`'s work and returns the collector's pause in it, or the failure that ends the
/// trial. Returns the first failure, the missed and late-started blocks, and the pauses (µs).
fn paced(
    period: Duration,
    blocks: usize,
    stop_on_miss: bool,
    mut block: impl FnMut(usize) -> Result<Duration, Failure>,
) -> (Option<Failure>, (usize, usize), Vec<f64>) {
    let mut first = None;
    let mut missed = 0;
    let mut late_starts = 0;
    // Filled by index: the loop must not grow a vector.
    let mut pause = vec![0.0; blocks];
    let t0 = Instant::now() + Duration::from_millis(10);
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    for k in 0..blocks {
        let due = t0 + period * k as u32;
        let now = Instant::now();
        if now < due {
            std::thread::sleep(due - now);
        }
        let woke = Instant::now();
        match block(k) {
            Ok(held) => pause[k] = us(held),
            Err(f) => {
                pause.truncate(k + 1);
                return (first.or(Some(f)), (missed, late_starts), pause);
            }
        }
        let end = Instant::now();
        let verdict = judge(due, woke, end, period);
        late_starts += usize::from(verdict == Verdict::StartedLate);
        if verdict == Verdict::Missed {
            missed += 1;
            first = first.or(Some(Failure::Missed {
                block: k,
                at_s: (due - t0).as_secs_f64(),
                late_us: us(end - (due + period)),
                woke_late_us: us(woke.saturating_duration_since(due)),
                pause_us: pause[k],
            }));
            if stop_on_miss {
                pause.truncate(k + 1);
                return (first, (missed, late_starts), pause);
            }
        }
    }
    (first, (missed, late_starts), pause)
}

/// What the machine does with no collector at all: the same pacing, pinning, priority and
/// half-block load as a trial, without a heap.
pub struct Machine {
    /// Blocks that started on time and ended after their deadline.
    pub missed: usize,
    /// Blocks the OS woke more than half a period late (not judged).
    pub late_starts: usize,
    /// Blocks run.
    pub blocks: usize,
    /// The first missed block.
    pub first: Option<Failure>,
    /// Pinning or priority that could not be had.
    pub notes: Vec<String>,
}

/// Runs `seconds` of `frames`-frame blocks with the audio thread's half-block load and no
/// collector: how many blocks this machine misses on its own, the floor under every
/// collector's trial.
pub fn machine(frames: usize, seconds: f64) -> Machine {
    let period = period_of(frames);
    let blocks = blocks_in(frames, seconds);
    std::thread::scope(|s| {
        s.spawn(move || {
            let notes = super::become_audio_thread();
            let (first, (missed, late_starts), pause) = paced(period, blocks, false, |k| {
                load_until(Instant::now() + period / 2, k);
                Ok(Duration::ZERO)
            });
            Machine {
                missed,
                late_starts,
                blocks: pause.len(),
                first,
                notes,
            }
        })
        .join()
        .expect("audio thread")
    })
}

/// One block's garbage and reference rewrites.
fn churn(
    b: &mut downbeat_gc::Block<'_>,
    nodes: &[Gc],
    rng: &mut Rng,
    block: usize,
) -> Result<(), Failure> {
    let oom = |_| Failure::OutOfMemory { block };
    let access = |error| Failure::Access { block, error };
    let mut head = None;
    for i in 0..GARBAGE {
        let o = b.alloc(2, 2).map_err(oom)?;
        b.set_ref(o, 0, head).map_err(access)?;
        b.set_data(o, 0, i as u64).map_err(access)?;
        head = Some(o);
    }
    black_box(b.alloc_atomic(ATOMIC_BYTES).map_err(oom)?);
    for _ in 0..REWRITES {
        let from = nodes[(rng.next() % nodes.len() as u64) as usize];
        let to = nodes[(rng.next() % nodes.len() as u64) as usize];
        b.set_ref(from, 1, Some(to)).map_err(access)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use downbeat_gc::{Barrier, Mutator};
    use downbeat_rt::guard;

    use super::*;

    fn play(m: &mut Mutator, nodes: &[Gc], rng: &mut Rng, blocks: std::ops::Range<usize>) {
        for k in blocks {
            // Spin until the last snapshot is copied, so begin_block never falls back to
            // yielding (a system call) when the collector threads are slow to get a CPU.
            while m.snapshot_pending() {
                std::hint::spin_loop();
            }
            let mut b = m.begin_block();
            churn(&mut b, nodes, rng, k).expect("the heap has room for the churn");
        }
    }

    #[test]
    fn a_block_is_missed_only_when_it_started_in_time_and_ended_late() {
        let t = Instant::now();
        let p = Duration::from_micros(1333);
        let us = Duration::from_micros;
        assert_eq!(judge(t, t + us(10), t + us(900), p), Verdict::Kept);
        assert_eq!(judge(t, t + us(10), t + us(1400), p), Verdict::Missed);
        assert_eq!(judge(t, t + us(600), t + us(1400), p), Verdict::Missed);
        assert_eq!(judge(t, t + us(700), t + us(1400), p), Verdict::StartedLate);
        assert_eq!(
            judge(t, t + us(5000), t + us(5700), p),
            Verdict::StartedLate
        );
    }

    #[test]
    fn the_trial_block_is_real_time_safe_under_every_collector() {
        for mode in [
            Mode::Snapshot,
            Mode::Replicating(Barrier::Stacks),
            Mode::Replicating(Barrier::Block),
            Mode::StopTheWorld,
        ] {
            let (mut m, c) = start(Config {
                mode,
                heap_bytes: 2 << 20,
                copy_rate: Some(5.0),
                ..Config::default()
            })
            .unwrap();
            let nodes = build(&mut m, 8192).unwrap();
            let mut rng = Rng(1);
            play(&mut m, &nodes, &mut rng, 0..8);
            let (_, report) = guard::check_with(&guard::Options::new(), || {
                play(&mut m, &nodes, &mut rng, 8..500);
                // What the audio loop reads each block for the pause.
                std::hint::black_box(c.copy_time());
            });
            assert!(report.is_complete(), "{mode:?}: {report}");
            report.assert_clean();
            assert_eq!(m.stats().objects_allocated as usize, 8192 + 500 * GARBAGE);
        }
    }
}
