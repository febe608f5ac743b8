//! The owner's side of the allocator is real-time safe: no heap call, system call, lock, context
//! switch or page fault, including applying frees made on other threads.

use std::alloc::Layout;

use downbeat_rt::alloc::{Heap, RtBox};
use downbeat_rt::guard;

downbeat_rt::install_guard_allocator!();

#[test]
fn alloc_free_boxes_and_vectors_are_clean() {
    let heap = Heap::new(4 << 20).unwrap();
    // Boxes made on the audio thread, sent away and dropped elsewhere come back remotely.
    let (remote, report) = guard::check_with(&guard::Options::new(), || {
        let mut rt = heap.bind().unwrap();
        let mut seed = 1u64;
        let mut ptrs = [None; 64];
        for i in 0..20_000usize {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let slot = i % 64;
            if let Some(p) = ptrs[slot].take() {
                // SAFETY: allocated below, freed once.
                unsafe { rt.free(p) };
            }
            let size = 16 + (seed >> 40) as usize % 65_536;
            ptrs[slot] = rt.alloc(Layout::from_size_align(size, 16).unwrap()).ok();
        }
        for p in ptrs.iter_mut().filter_map(Option::take) {
            // SAFETY: as above.
            unsafe { rt.free(p) };
        }
        let mut line = rt.vec::<f32>(4800).unwrap();
        while line.push(0.5).is_ok() {}
        line.reserve(&mut rt, 100).unwrap();
        drop(line);
        let voices: [RtBox<[f32; 32]>; 8] = std::array::from_fn(|_| rt.boxed([0.0; 32]).unwrap());
        drop(rt);
        voices
    });
    assert!(report.is_complete(), "{report}");
    report.assert_clean();

    // Dropped off the audio thread...
    drop(remote);
    assert_eq!(heap.remote_frees(), 8);
    // ...and applied on it, still clean.
    let (applied, report) = guard::check_with(&guard::Options::new(), || {
        let mut rt = heap.bind().unwrap();
        let n = rt.collect_remote();
        assert_eq!(rt.used(), 0);
        n
    });
    assert!(report.is_complete(), "{report}");
    report.assert_clean();
    assert_eq!(applied, 8);
}

#[test]
fn remote_frees_applied_a_few_per_allocation_are_clean() {
    let heap = Heap::new(1 << 20).unwrap();
    let mut rt = heap.bind().unwrap();
    let boxes: Vec<RtBox<[u64; 4]>> = (0..100).map(|i| rt.boxed([i; 4]).unwrap()).collect();
    drop(rt);
    std::thread::spawn(move || drop(boxes)).join().unwrap();
    assert_eq!(heap.remote_frees(), 100);
    // Each allocation applies a few, leaving the rest pending (the path that marks the shared
    // list as still holding work), until none is left.
    let ((), report) = guard::check_with(&guard::Options::new(), || {
        let mut rt = heap.bind().unwrap();
        for _ in 0..100 {
            let p = rt.alloc(Layout::new::<[u8; 48]>()).unwrap();
            // SAFETY: allocated just above, freed once.
            unsafe { rt.free(p) };
        }
        assert_eq!(rt.used(), 0);
    });
    assert!(report.is_complete(), "{report}");
    report.assert_clean();
}
