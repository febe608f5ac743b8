//! Single-threaded behaviour of the plain ring: capacities, wrap-around, chunks, edge cases.

use downbeat_ring::{ChunkError, Full, RingBuffer};

#[test]
fn every_slot_is_usable_for_odd_capacities() {
    for capacity in [1, 2, 3, 5, 7, 100] {
        let (mut tx, mut rx) = RingBuffer::<u32>::new(capacity);
        // Run several laps so positions wrap past 2 * capacity.
        for lap in 0..5u32 {
            for i in 0..capacity as u32 {
                assert_eq!(tx.push(lap * 1000 + i), Ok(()), "capacity {capacity}");
            }
            assert!(tx.is_full());
            assert_eq!(tx.push(0), Err(Full(0)));
            assert_eq!(rx.available_read(), capacity);
            for i in 0..capacity as u32 {
                assert_eq!(rx.pop(), Some(lap * 1000 + i));
            }
            assert!(rx.is_empty());
            assert_eq!(tx.available_write(), capacity);
        }
    }
}

#[test]
fn zero_capacity_is_always_full_and_empty() {
    let (mut tx, mut rx) = RingBuffer::<u8>::new(0);
    assert!(tx.is_full() && rx.is_empty());
    assert_eq!(tx.push(1), Err(Full(1)));
    assert_eq!(tx.push_slice(&[1, 2]), 0);
    assert_eq!(rx.pop(), None);
    assert_eq!(rx.pop_slice(&mut [0; 2]), 0);
    tx.write_chunk(0).unwrap().commit_all();
    rx.read_chunk(0).unwrap().commit_all();
    assert_eq!(
        tx.write_chunk(1).unwrap_err(),
        ChunkError {
            requested: 1,
            available: 0
        }
    );
    assert!(rx.read_chunk(1).is_err());
}

#[test]
fn zero_sized_elements_are_counted() {
    let (mut tx, mut rx) = RingBuffer::<()>::new(3);
    assert_eq!(tx.push_slice(&[(); 5]), 3);
    assert_eq!(rx.pop(), Some(()));
    assert_eq!(rx.pop_slice(&mut [(); 5]), 2);
    assert_eq!(rx.pop(), None);
}

#[test]
fn over_aligned_elements_stay_aligned() {
    #[derive(Clone, Copy, Debug, PartialEq)]
    #[repr(align(256))]
    struct Wide(u8);
    let (mut tx, mut rx) = RingBuffer::<Wide>::new(3);
    for i in 0..10 {
        tx.push(Wide(i)).unwrap();
        // `black_box`: a reference is assumed aligned, so the optimiser would fold the check.
        let slot = std::hint::black_box(rx.peek().unwrap() as *const Wide as usize);
        assert_eq!(slot % 256, 0, "slot {i} at {slot:#x} is not 256-aligned");
        assert_eq!(rx.peek(), Some(&Wide(i)));
        assert_eq!(rx.pop(), Some(Wide(i)));
    }
}

#[test]
fn slices_wrap_around_the_end() {
    let (mut tx, mut rx) = RingBuffer::<u16>::new(5);
    assert_eq!(tx.push_slice(&[1, 2, 3, 4]), 4);
    let mut out = [0; 3];
    assert_eq!(rx.pop_slice(&mut out), 3);
    assert_eq!(out, [1, 2, 3]);
    assert_eq!(tx.push_slice(&[5, 6, 7, 8, 9]), 4);
    let mut out = [0; 8];
    assert_eq!(rx.pop_slice(&mut out), 5);
    assert_eq!(out[..5], [4, 5, 6, 7, 8]);
}

#[test]
fn chunks_wrap_and_commit_partially() {
    let (mut tx, mut rx) = RingBuffer::<i64>::new(4);
    tx.push_slice(&[1, 2, 3]);
    rx.read_chunk(3).unwrap().commit_all();

    let mut chunk = tx.write_chunk(4).unwrap();
    let (a, b) = chunk.as_mut_slices();
    assert_eq!((a.len(), b.len()), (1, 3));
    a[0] = 10;
    b.copy_from_slice(&[11, 12, 13]);
    chunk.commit(3);
    assert_eq!(tx.available_write(), 1);

    let chunk = rx.read_chunk(3).unwrap();
    assert_eq!(chunk.as_slices(), (&[10][..], &[11, 12][..]));
    chunk.commit(2);
    assert_eq!(rx.pop(), Some(12));
    assert_eq!(rx.read_chunk(1).unwrap_err().available, 0);
}

#[test]
fn dropped_chunks_publish_nothing() {
    let (mut tx, mut rx) = RingBuffer::<u8>::new(4);
    let _ = tx.write_chunk(4).unwrap();
    assert!(rx.is_empty());
    tx.push(1).unwrap();
    let _ = rx.read_chunk(1).unwrap();
    assert_eq!(rx.pop(), Some(1));
}

#[test]
#[should_panic(expected = "exceeds chunk")]
fn committing_more_than_the_chunk_panics() {
    let (mut tx, _rx) = RingBuffer::<u8>::new(4);
    tx.write_chunk(2).unwrap().commit(3);
}

#[test]
#[should_panic(expected = "MAX_CAPACITY")]
fn oversized_rings_are_refused() {
    let _ = RingBuffer::<u8>::new(downbeat_ring::layout::MAX_CAPACITY + 1);
}

#[test]
fn ends_can_be_dropped_in_either_order() {
    let (tx, rx) = RingBuffer::<u8>::new(4);
    drop(rx);
    drop(tx);
    let (tx, rx) = RingBuffer::<u8>::new(4);
    drop(tx);
    drop(rx);
}

#[test]
fn debug_output_names_the_state() {
    let (mut tx, rx) = RingBuffer::<u8>::new(4);
    tx.push(1).unwrap();
    assert!(format!("{tx:?}").contains("write_index: 1"));
    assert!(format!("{rx:?}").contains("read_index: 0"));
}

#[test]
fn values_cross_threads_in_order() {
    let n = if cfg!(miri) { 200 } else { 100_000 };
    let (mut tx, mut rx) = RingBuffer::<u64>::new(7);
    let producer = std::thread::spawn(move || {
        for i in 0..n {
            while tx.push(i).is_err() {
                common::backoff();
            }
        }
    });
    let mut expected = 0;
    while expected < n {
        match rx.pop() {
            Some(v) => {
                assert_eq!(v, expected);
                expected += 1;
            }
            None => common::backoff(),
        }
    }
    producer.join().unwrap();
}

mod common;
