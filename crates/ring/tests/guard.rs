//! Every push, pop and chunk path runs under the real-time guard: no allocation, free, lock,
//! system call, blocking switch or page fault.
//!
//! Rings are created and touched once before each check, because creating them allocates and
//! the first write to fresh pages faults: both belong off the audio thread.

#![cfg(not(miri))]

use downbeat_ring::layout::RingLayout;
use downbeat_ring::{
    deinterleave, interleave, AudioQueue, Consumer, Full, ParamChange, ParamQueue, Producer,
    RingBuffer,
};
use downbeat_rt::guard;

#[global_allocator]
static A: guard::GuardAlloc = guard::GuardAlloc;

/// A ring whose every slot has been written and read once.
fn warm<T: Copy + Default>(capacity: usize) -> (Producer<T>, Consumer<T>) {
    let (mut tx, mut rx) = RingBuffer::new(capacity);
    for _ in 0..2 {
        while tx.push(T::default()).is_ok() {}
        while rx.pop().is_some() {}
    }
    (tx, rx)
}

#[test]
fn single_elements() {
    let (mut tx, mut rx) = warm::<u64>(64);
    guard::check(|| {
        for round in 0..100u64 {
            for i in 0..50 {
                tx.push(round * 50 + i).unwrap();
            }
            assert!(tx.push(0).is_ok() && !tx.is_full());
            assert_eq!(rx.peek(), Some(&(round * 50)));
            for i in 0..50 {
                assert_eq!(rx.pop(), Some(round * 50 + i));
            }
            assert_eq!(rx.pop(), Some(0));
            assert!(rx.pop().is_none() && rx.is_empty());
        }
        // Full and empty are answered without side effects too.
        while tx.push(1).is_ok() {}
        assert!(tx.is_full() && tx.push(2).is_err());
        assert_eq!((tx.available_write(), rx.available_read()), (0, 64));
        while rx.pop().is_some() {}
    })
    .assert_clean();
}

#[test]
fn owned_values_move_without_allocating_or_freeing() {
    let (mut tx, mut rx) = RingBuffer::<Box<[f32; 64]>>::new(16);
    // Made and freed off the audio thread; the ring only moves the boxes.
    let mut outgoing: Vec<Box<[f32; 64]>> = (0..100).map(|i| Box::new([i as f32; 64])).collect();
    let mut arrived = Vec::with_capacity(outgoing.len());
    for _ in 0..2 {
        tx.push(Box::new([0.0; 64])).unwrap();
        drop(rx.pop());
    }
    guard::check(|| {
        while let Some(block) = outgoing.pop() {
            if let Err(Full(back)) = tx.push(block) {
                outgoing.push(back);
            }
            if rx.peek().is_some() {
                arrived.extend(rx.pop());
            }
        }
        while let Some(block) = rx.pop() {
            arrived.push(block);
        }
    })
    .assert_clean();
    let firsts: Vec<f32> = arrived.iter().map(|b| b[0]).collect();
    assert_eq!(firsts, (0..100).rev().map(|i| i as f32).collect::<Vec<_>>());
}

#[test]
fn slices() {
    let (mut tx, mut rx) = warm::<f32>(100);
    let input = [0.5f32; 37];
    let mut output = [0f32; 41];
    guard::check(|| {
        let mut moved = 0;
        for _ in 0..200 {
            tx.push_slice(&input);
            moved += rx.pop_slice(&mut output);
        }
        assert!(moved > 0);
        assert_eq!(tx.push_slice(&[]), 0);
    })
    .assert_clean();
}

#[test]
fn chunks() {
    let (mut tx, mut rx) = warm::<i32>(64);
    guard::check(|| {
        for round in 0..200 {
            let n = 1 + round % 40;
            let mut chunk = tx.write_chunk(n).unwrap();
            let (a, b) = chunk.as_mut_slices();
            a.fill(round as i32);
            b.fill(round as i32);
            chunk.commit(n);
            let chunk = rx.read_chunk(n).unwrap();
            let (a, b) = chunk.as_slices();
            assert!(a.iter().chain(b).all(|&x| x == round as i32));
            chunk.commit_all();
        }
        assert!(rx.read_chunk(1).is_err());
        assert!(tx.write_chunk(65).is_err());
    })
    .assert_clean();
}

#[test]
fn shared_memory_ends() {
    let layout = RingLayout::new::<u16>(48).unwrap();
    let mut mem = vec![0u64; layout.bytes().div_ceil(8)];
    let (ptr, len) = (mem.as_mut_ptr().cast::<u8>(), mem.len() * 8);
    // SAFETY: `mem` outlives both ends, the only ones attached.
    let (mut tx, mut rx) = unsafe {
        layout.init(ptr, len).unwrap();
        (
            Producer::<u16>::from_raw(ptr, len).unwrap(),
            Consumer::<u16>::from_raw(ptr, len).unwrap(),
        )
    };
    guard::check(|| {
        for i in 0..1000u16 {
            tx.push(i).unwrap();
            assert_eq!(rx.pop(), Some(i));
        }
    })
    .assert_clean();
}

#[test]
fn parameter_queue() {
    let (mut tx, mut rx) = ParamQueue::new(32);
    let change = |i: u32| ParamChange {
        id: i,
        value: i as f32,
        frame: i % 512,
    };
    for i in 0..64 {
        tx.push(change(i)).unwrap();
        rx.pop().unwrap();
    }
    guard::check(|| {
        for round in 0..100 {
            for i in 0..20 {
                tx.push(change(round * 20 + i)).unwrap();
            }
            assert_eq!(rx.pop(), Some(change(round * 20)));
            assert_eq!(rx.drain().count(), 19);
            assert!(rx.is_empty() && rx.available_read() == 0);
            assert!(!tx.is_full() && tx.available_write() == 32);
        }
    })
    .assert_clean();
}

#[test]
fn audio_queue_and_interleaving() {
    let (mut tx, mut rx) = AudioQueue::new(2, 1024);
    let (left, right) = (vec![0.25f32; 128], vec![-0.25f32; 128]);
    let (mut out_l, mut out_r) = (vec![0f32; 128], vec![0f32; 128]);
    let mut inter = vec![0f32; 256];
    for _ in 0..10 {
        tx.push_planar(&[&left, &right]);
        rx.pop_planar(&mut [&mut out_l, &mut out_r]);
    }
    guard::check(|| {
        for _ in 0..100 {
            assert_eq!(tx.push_planar(&[&left, &right]), 128);
            assert_eq!(rx.pop_interleaved(&mut inter), 128);
            assert_eq!(tx.push_interleaved(&inter), 128);
            assert_eq!(rx.pop_planar(&mut [&mut out_l, &mut out_r]), 128);
            assert_eq!(interleave(&[&out_l, &out_r], &mut inter), 128);
            assert_eq!(deinterleave(&inter, &mut [&mut out_l, &mut out_r]), 128);
        }
        assert_eq!((tx.available_write(), rx.available_read()), (1024, 0));
    })
    .assert_clean();
    assert_eq!((out_l[0], out_r[127]), (0.25, -0.25));
}

#[test]
fn consumer_keeps_up_with_another_thread() {
    let (mut tx, mut rx) = warm::<u64>(256);
    let n = 100_000u64;
    std::thread::scope(|s| {
        s.spawn(move || {
            for i in 0..n {
                while tx.push(i).is_err() {
                    std::hint::spin_loop();
                }
            }
        });
        // The audio side: pops everything, spinning (never sleeping) while it waits.
        guard::check(|| {
            let mut expected = 0;
            while expected < n {
                if let Some(v) = rx.pop() {
                    assert_eq!(v, expected);
                    expected += 1;
                } else {
                    std::hint::spin_loop();
                }
            }
        })
        .assert_clean();
    });
}

#[test]
fn the_guard_is_watching() {
    // Creating and dropping a ring allocates and frees: a guard that misses this proves nothing.
    let report = guard::check(|| drop(RingBuffer::<u8>::new(4)));
    assert!(!report.is_clean(), "{report}");
}

#[test]
fn a_fresh_ring_never_faults_on_first_use() {
    // 1 MiB of storage, never touched since construction: construction must have faulted the
    // pages in, or the first lap would take a page fault per 4 KiB on the audio thread.
    let (mut tx, mut rx) = RingBuffer::<u64>::new(1 << 17);
    guard::check(|| {
        while tx.push(7).is_ok() {}
        while rx.pop().is_some() {}
    })
    .assert_clean();
}
