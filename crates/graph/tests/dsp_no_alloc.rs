//! `process` and `set_param` of every built-in node type never touch the heap: a counting
//! global allocator, armed only on this test's thread while processing, must see nothing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use downbeat_graph::{node_types, AudioMut, AudioRef, NodeConfig, ParamKind, ProcessContext};

struct Counting;

static HEAP_CALLS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
}

fn note_call() {
    if ARMED.try_with(Cell::get).unwrap_or(false) {
        HEAP_CALLS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_call();
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note_call();
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_call();
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_call();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` with the counter armed on this thread and returns how many heap calls it made.
fn heap_calls_during(f: impl FnOnce()) -> usize {
    let before = HEAP_CALLS.load(Ordering::Relaxed);
    ARMED.with(|a| a.set(true));
    f();
    ARMED.with(|a| a.set(false));
    HEAP_CALLS.load(Ordering::Relaxed) - before
}

#[test]
fn processing_and_live_params_never_allocate() {
    let cfg = NodeConfig {
        sample_rate: 48000.0,
        max_block: 512,
    };
    // Sanity check that the counter works at all.
    assert!(heap_calls_during(|| drop(std::hint::black_box(vec![1u8; 10]))) > 0);

    for ty in node_types() {
        let mut node = ty.instantiate(Vec::new(), &cfg).unwrap();
        let (ic, oc) = (node.input_channels(), node.output_channels());
        let stride = cfg.max_block;
        let input: Vec<f32> = (0..ic * stride)
            .map(|i| ((i * 31) % 17) as f32 / 17.0 - 0.5)
            .collect();
        let silence = vec![0.0f32; ic * stride];
        let mut output = vec![0.0f32; oc * stride];
        let live: Vec<(usize, f32)> = ty
            .params
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match p.kind {
                ParamKind::Float { default, .. } => Some((i, default as f32)),
                _ => None,
            })
            .collect();
        let mut position = 0u64;
        // Enough audio for FFT frames, note onsets and silence skips, in odd block sizes.
        let calls = heap_calls_during(|| {
            for (round, frames) in [511usize, 1, 100, 512, 37]
                .iter()
                .cycle()
                .take(600)
                .enumerate()
            {
                let frames = *frames;
                let src = if (round / 100) % 2 == 0 {
                    &input
                } else {
                    &silence
                };
                let ctx = ProcessContext {
                    sample_rate: cfg.sample_rate,
                    frames,
                    position,
                };
                node.process(
                    &ctx,
                    AudioRef::new(src, ic, stride, frames),
                    AudioMut::new(&mut output, oc, stride, frames),
                );
                if round % 50 == 0 {
                    for &(i, v) in &live {
                        node.set_param(i, v);
                    }
                }
                position += frames as u64;
            }
        });
        assert_eq!(calls, 0, "`{}` touched the heap while processing", ty.name);
    }
}
