//! Node types whose state lives in the collected heap of [`downbeat_gc`], the snapshot
//! collector of K. S. Matheussen, "Realtime Audio with Garbage Collection" (2010): the engine
//! using the collector, not only its tests.
//!
//! One type so far, [`echoes`](Echoes) (`type = "echoes"` in a project file once
//! [`ECHOES`] is registered with `downbeat::register_node_type`; the `downbeat` binary does
//! it at start). Each onset of its input
//! allocates, on the audio thread, a tap object with a delay line of its own, linked into a
//! list that a root holds; each tap repeats what followed its onset with a decaying gain, and
//! once it has faded below -60 dB it is unlinked and the collector frees it. Its heap grows
//! with onsets and shrinks as they fade, while it plays.
//!
//! # How a node uses the collected heap
//!
//! * **One collector per node.** [`Echoes::new`] (the node type's build, off the audio
//!   thread) sizes the heaps and calls [`downbeat_gc::start`] with the collector's defaults
//!   otherwise: the node owns the [`Mutator`](downbeat_gc::Mutator) and the
//!   [`Collector`](downbeat_gc::Collector), whose mark-and-sweep thread (and snapshot thread
//!   at SCHED_FIFO 70, where the system grants it; without it the audio thread copies the
//!   node's few KiB of pointer heap itself at the end of a block) run pinned to the last
//!   CPU. Dropping the node stops them; the engine drops retired schedules off the audio
//!   thread.
//! * **One collector block per `process`.** `process` calls
//!   [`Mutator::begin_block`](downbeat_gc::Mutator::begin_block) once, allocates, renders and
//!   unlinks through that block, and ends it: the collector then decides whether to take a
//!   snapshot. Everything the node keeps between blocks is reachable from root slot 0; local
//!   handles never outlive the block.
//! * **Real time.** With the default [`Wake::Poll`](downbeat_gc::Wake::Poll), `process` makes
//!   no allocation, free, lock or system call while the collector keeps up
//!   (`tests/guard.rs` proves it under `downbeat_rt::guard`). If a snapshot thread is still
//!   copying 2 ms into the next block (preempted), `begin_block` yields with `sched_yield`
//!   until it is done, the collector's one documented exception.
//! * **Sizes, worst case first.** [`HeapPlan`] gives each node a pointer heap and an atomic
//!   heap that hold `max_taps` live taps plus every tap that can end in [`SLACK_SECONDS`]
//!   (0.5 s) before the collector returns it; with the defaults (2 channels, 0.25 s, 16
//!   taps at 48 kHz) that is 48 taps: 4.4 KiB of pointer heap and about 4.7 MiB of atomic
//!   heap. A combination needing more than [`MAX_ATOMIC_BYTES`] (256 MiB) is refused when
//!   the node is built, naming `max_taps`.
//! * **Errors on the audio thread are counted, never panics.** An onset that finds
//!   `max_taps` taps alive, or a heap without room (`GcError::OutOfMemory` /
//!   `OutOfSlots`: the collector more than the slack behind), is dropped and counted; a
//!   refused access (`AccessError`, which would be a bug here) is counted and the block's
//!   remaining taps are skipped. [`Echoes::monitor`] reads the counts from any thread while
//!   the node plays ([`TapCounts`]). The `downbeat` binary does not print them yet (a node
//!   inside a schedule is a `Box<dyn Node>`); code that wants them builds the node with
//!   [`Echoes::from_params`] and keeps the monitor.
//! * **Offline renders.** The slack is counted in audio time. An offline device runs blocks
//!   hundreds of times faster than real time, so there the collector has that much less wall
//!   time to return garbage; on a machine too loaded for it, onsets are dropped (counted in
//!   `dropped_heap`) and the render depends on timing. Otherwise the output depends only on
//!   the input and the parameters, and not on block sizes unless onsets find `max_taps`
//!   taps alive (that count is taken as a block begins).
//!
//! ```
//! use downbeat_gc_nodes::{Echoes, EchoesSettings};
//! use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};
//!
//! // Echoes every 10 ms (480 samples at 48 kHz), each 0.6 times the one before.
//! let settings = EchoesSettings { delay: 0.01, feedback: 0.6, mix: 1.0, ..Default::default() };
//! let mut node = Echoes::new(1, 48_000, &settings).unwrap();
//! let monitor = node.monitor(); // keep it: the node may move into a schedule
//! let ctx = ProcessContext::new(48_000, 240, 0);
//! let (mut input, mut out) = (vec![0.0f32; 240], vec![0.0f32; 240]);
//! let mut played = Vec::new();
//! for block in 0..20 {
//!     input.fill(0.0);
//!     if block == 0 {
//!         input[0] = 1.0; // one click: one onset, one tap
//!     }
//!     node.process(&ctx, AudioRef::new(&input, 1, 240, 240), AudioMut::new(&mut out, 1, 240, 240));
//!     played.extend_from_slice(&out);
//! }
//! assert_eq!(played[480], 0.6); // the first echo, one delay after the click
//! assert!((played[960] - 0.36).abs() < 1e-6);
//! assert_eq!(monitor.counts().started, 1);
//! assert_eq!(node.heap().live_objects, 1); // the tap, in the collected heap
//! ```

mod echoes;
mod plan;

pub use echoes::{
    Echoes, EchoesMonitor, EchoesSettings, HeapStats, TapCounts, DEATH_LEVEL, ECHOES,
    FULL_SNAPSHOT_EVERY, MAX_TAPS, REARM, RELEASE_SECONDS,
};
pub use plan::{HeapPlan, MAX_ATOMIC_BYTES, SLACK_SECONDS, TAP_BYTES};
