//! The `echoes` node's `process` is real-time safe while its collector keeps up: making taps
//! (objects and delay lines allocated in the collected heap), rendering them, unlinking the
//! faded ones, and the collector block around it all (`begin_block`, the frees it applies,
//! ending the block and requesting a snapshot) make no allocation, free, lock or system call.

use downbeat_gc_nodes::{Echoes, EchoesSettings};
use downbeat_graph::{AudioMut, AudioRef, Node, ProcessContext};
use downbeat_rt::guard;

downbeat_rt::install_guard_allocator!();

const BLOCK: usize = 128;
const CHANNELS: usize = 2;

/// A click every `every` blocks on both channels, so taps are born while older ones fade.
fn block_input(n: usize, every: usize, x: &mut [f32]) {
    x.fill(0.0);
    if n % every == 0 {
        x[5] = 0.8;
        x[BLOCK + 5] = -0.6;
    }
}

/// Plays `blocks` blocks. Before each one it spins (no system call) until the previous
/// snapshot is copied, and now and then until the collector is idle, so that the audio side
/// never has to wait and frees come back inside the watched scope on a busy machine: the
/// guarantee is the audio side's, given a collector that keeps up.
fn play(node: &mut Echoes, blocks: usize, x: &mut [f32], y: &mut [f32]) -> f32 {
    let mut sum = 0.0;
    for n in 0..blocks {
        if n % 50 == 49 {
            while !node.collector_idle() {
                std::hint::spin_loop();
            }
        }
        while node.snapshot_pending() {
            std::hint::spin_loop();
        }
        block_input(n, 12, x);
        let ctx = ProcessContext::new(48_000, BLOCK, (n * BLOCK) as u64);
        node.process(
            &ctx,
            AudioRef::new(x, CHANNELS, BLOCK, BLOCK),
            AudioMut::new(y, CHANNELS, BLOCK, BLOCK),
        );
        sum += y.iter().map(|s| s.abs()).sum::<f32>();
    }
    sum
}

#[test]
fn process_with_taps_born_and_collected_is_real_time_safe() {
    // 10 ms delay, 0.7 feedback: a tap lives 20 passes, 0.2 s (75 blocks); a click every 12
    // blocks keeps six or seven alive, and they end all the time.
    let settings = EchoesSettings {
        delay: 0.01,
        feedback: 0.7,
        mix: 0.5,
        ..EchoesSettings::default()
    };
    let mut node = Echoes::new(CHANNELS, 48_000, &settings).unwrap();
    let monitor = node.monitor();
    let (mut x, mut y) = (
        vec![0.0f32; BLOCK * CHANNELS],
        vec![0.0f32; BLOCK * CHANNELS],
    );
    // Warm up outside the guard: code paths, the collector's threads, a few collections.
    play(&mut node, 300, &mut x, &mut y);
    let (counts, heap) = (monitor.counts(), node.heap());
    assert!(
        counts.ended > 0,
        "taps ended during the warm-up: {counts:?}"
    );
    let (sum, report) = guard::check_with(&guard::Options::new(), || {
        play(&mut node, 1500, &mut x, &mut y)
    });
    assert!(report.is_complete(), "{report}");
    report.assert_clean();
    let (after, heap_after) = (monitor.counts(), node.heap());
    assert!(
        after.started >= counts.started + 100,
        "taps were born: {after:?}"
    );
    assert!(
        after.ended >= counts.ended + 100,
        "taps were unlinked: {after:?}"
    );
    assert!(
        heap_after.objects_freed > heap.objects_freed && heap_after.lines_freed > heap.lines_freed,
        "the collector's frees were applied inside the scope: {heap:?} -> {heap_after:?}"
    );
    assert_eq!(
        (after.dropped_heap, after.dropped_full, after.errors),
        (0, 0, 0)
    );
    assert!(sum > 0.0, "it played");
}
