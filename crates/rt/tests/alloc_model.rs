//! The allocator against a model: random allocations and frees never overlap, never lose data,
//! account for every byte, and coalesce back to one block when everything is freed.

use std::alloc::Layout;
use std::ptr::NonNull;

use downbeat_rt::alloc::{AllocError, Heap, RtAlloc};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct Live {
    ptr: NonNull<u8>,
    size: usize,
    fill: u8,
}

fn check_disjoint(live: &[Live]) {
    let mut spans: Vec<(usize, usize)> = live
        .iter()
        .map(|l| (l.ptr.as_ptr() as usize, l.ptr.as_ptr() as usize + l.size))
        .collect();
    spans.sort_unstable();
    for w in spans.windows(2) {
        assert!(w[0].1 <= w[1].0, "blocks overlap: {w:?}");
    }
}

fn run(seed: u64, steps: usize, heap_bytes: usize, max_size: u64) {
    let heap = Heap::new(heap_bytes).unwrap();
    let mut rt = heap.bind().unwrap();
    let mut rng = Rng(seed | 1);
    let mut live: Vec<Live> = Vec::new();
    let mut model_used = 0usize;
    let mut failures = 0;
    for step in 0..steps {
        if rng.below(100) < 55 || live.is_empty() {
            let size = 1 + rng.below(max_size) as usize;
            match rt.alloc(Layout::from_size_align(size, 8).unwrap()) {
                Ok(ptr) => {
                    assert_eq!(ptr.as_ptr() as usize % 16, 0);
                    let fill = (step % 251) as u8;
                    // SAFETY: a fresh block of at least `size` bytes.
                    unsafe { ptr.as_ptr().write_bytes(fill, size) };
                    model_used += size.div_ceil(16).max(1) * 16;
                    live.push(Live { ptr, size, fill });
                }
                Err(AllocError::OutOfMemory) => failures += 1,
                Err(e) => panic!("unexpected {e}"),
            }
        } else {
            let i = rng.below(live.len() as u64) as usize;
            let l = live.swap_remove(i);
            // SAFETY: live block of `size` bytes.
            let bytes = unsafe { std::slice::from_raw_parts(l.ptr.as_ptr(), l.size) };
            assert!(bytes.iter().all(|&b| b == l.fill), "block contents changed");
            model_used -= l.size.div_ceil(16).max(1) * 16;
            // SAFETY: allocated by `rt`, freed once.
            unsafe { rt.free(l.ptr) };
        }
        // usable_size may exceed the request when a remainder was too small to split.
        assert!(rt.used() >= model_used);
        if step % 64 == 0 {
            check_disjoint(&live);
        }
    }
    for l in live.drain(..) {
        // SAFETY: as above.
        unsafe { rt.free(l.ptr) };
    }
    assert_eq!(rt.used(), 0, "every byte accounted for");
    assert_eq!(rt.collect_remote(), 0);
    // Full coalescing: the whole heap is one block again.
    // TLSF rounds a request up to the next size class, so one block of size S serves requests
    // up to about S - S/32.
    let all = heap_bytes - heap_bytes / 16;
    let p = rt
        .alloc(Layout::from_size_align(all, 8).unwrap())
        .expect("everything freed coalesces back into one block");
    // SAFETY: just allocated.
    unsafe { rt.free(p) };
    assert!(failures < steps, "seed {seed}");
}

#[test]
fn random_small_blocks_match_the_model() {
    for seed in 1..=8 {
        run(seed, 20_000, 256 * 1024, 512);
    }
}

#[test]
fn random_delay_lines_match_the_model_under_pressure() {
    for seed in 100..=104 {
        run(seed, 20_000, 1 << 20, 64 * 1024);
    }
}

#[test]
fn out_of_memory_is_an_error_and_recovers() {
    let heap = Heap::new(64 * 1024).unwrap();
    let mut rt = heap.bind().unwrap();
    let mut held = Vec::new();
    loop {
        match rt.boxed([0u8; 1000]) {
            Ok(b) => held.push(b),
            Err(r) => {
                assert_eq!(r.error, AllocError::OutOfMemory);
                break;
            }
        }
    }
    assert!(held.len() >= 60);
    held.clear();
    assert_eq!(rt.used(), 0);
    assert!(rt.boxed([0u8; 1000]).is_ok());
    assert_eq!(
        rt.alloc(Layout::from_size_align(64, 64).unwrap()),
        Err(AllocError::Alignment)
    );
}

#[test]
fn boxes_and_vectors_drop_their_contents() {
    use std::rc::Rc;
    let heap = Heap::new(64 * 1024).unwrap();
    let mut rt = heap.bind().unwrap();
    let counter = Rc::new(());
    {
        let b = rt.boxed(counter.clone()).unwrap();
        let mut v = rt.vec::<Rc<()>>(3).unwrap();
        for _ in 0..3 {
            v.push(counter.clone()).unwrap();
        }
        v.reserve(&mut rt, 5).unwrap();
        v.push(counter.clone()).unwrap();
        assert_eq!(v.len(), 4);
        assert_eq!(Rc::strong_count(&counter), 6);
        drop(v.pop());
        drop(b);
        assert_eq!(Rc::strong_count(&counter), 4);
    }
    assert_eq!(Rc::strong_count(&counter), 1);
    assert_eq!(rt.used(), 0);
    let other = Heap::new(8192).unwrap();
    let mut v = other.bind().unwrap().vec::<u8>(1).unwrap();
    assert_eq!(v.reserve(&mut rt, 10), Err(AllocError::WrongHeap));
}

#[test]
fn frees_from_other_threads_come_back_to_the_owner() {
    let heap = Heap::new(1 << 20).unwrap();
    let mut rt: RtAlloc = heap.bind().unwrap();
    let mut boxes = Vec::new();
    for i in 0..1000u32 {
        boxes.push(rt.boxed([i; 16]).unwrap());
    }
    let used = rt.used();
    // The heap's payload per box (the request rounded up to the allocator's granule).
    let per_box = used / 1000;
    let (tx, rx) = std::sync::mpsc::channel();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let rx_boxes: Vec<_> = boxes.drain(..250).collect();
            let tx = tx.clone();
            std::thread::spawn(move || {
                for b in rx_boxes {
                    assert_eq!(b[15], b[0]);
                    drop(b);
                }
                tx.send(()).unwrap();
            })
        })
        .collect();
    // The owner keeps allocating meanwhile; each allocation applies a few remote frees.
    let mut mine = Vec::new();
    for _ in 0..4 {
        rx.recv().unwrap();
        mine.push(rt.boxed(0u64).unwrap());
    }
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(heap.remote_frees(), 1000);
    let mine_used = mine.len() * 16; // a u64 gets the smallest payload
    let applied_during = (used + mine_used).saturating_sub(rt.used()) / per_box;
    let rest = rt.collect_remote();
    assert_eq!(applied_during + rest, 1000);
    drop(mine);
    assert_eq!(rt.used(), 0);
}

#[test]
fn a_box_outliving_its_owner_handle_goes_back_through_the_remote_list() {
    let heap = Heap::new(8192).unwrap();
    let b = {
        let mut rt = heap.bind().unwrap();
        rt.boxed(1u32).unwrap()
    };
    drop(b); // no owner bound: remote path
    let mut rt = heap.bind().unwrap();
    assert_eq!(rt.used(), 16);
    assert_eq!(rt.collect_remote(), 1);
    assert_eq!(rt.used(), 0);
}

/// Remote frees beyond one allocation's share stay with the owner between allocations; the
/// next allocations must still find them (their check reads one shared word only), including
/// frees pushed while some are left over, and without `collect_remote`.
#[test]
fn remote_frees_left_over_are_applied_by_later_allocations() {
    let heap = Heap::new(1 << 20).unwrap();
    let mut rt = heap.bind().unwrap();
    let send_away = |rt: &mut RtAlloc, n: u32| {
        let boxes: Vec<_> = (0..n).map(|i| rt.boxed([i; 4]).unwrap()).collect();
        std::thread::spawn(move || drop(boxes)).join().unwrap();
    };
    // One pair applies a few of the 100, so most are left over.
    send_away(&mut rt, 100);
    let pair = |rt: &mut RtAlloc| {
        let p = rt.alloc(Layout::new::<u64>()).unwrap();
        // SAFETY: allocated just above, freed once.
        unsafe { rt.free(p) };
    };
    pair(&mut rt);
    assert!(rt.used() > 0, "the first allocation applied everything");
    // More arrive while those are pending: their list ends at the marker, not at null.
    send_away(&mut rt, 10);
    for _ in 0..200 {
        if rt.used() == 0 {
            break;
        }
        pair(&mut rt);
    }
    assert_eq!(heap.remote_frees(), 110);
    assert_eq!(
        rt.used(),
        0,
        "allocations stopped applying the left-over remote frees"
    );
    assert_eq!(rt.collect_remote(), 0);
}
