//! Two threads, random mixes of every operation and chunk size, every value checked in order.
//!
//! 10^7 items by default; set `DOWNBEAT_RING_STRESS_ITEMS` (e.g. `1000000000`) for a longer run.

use downbeat_ring::{Full, RingBuffer};

mod common;
use common::{backoff, Rng};

fn items() -> u64 {
    if cfg!(miri) {
        return 3_000;
    }
    std::env::var("DOWNBEAT_RING_STRESS_ITEMS")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .map_or(10_000_000, |n| n as u64)
}

fn run(capacity: usize, total: u64, seed: u64) {
    let (mut tx, mut rx) = RingBuffer::<u64>::new(capacity);
    let producer = std::thread::spawn(move || {
        let mut rng = Rng::new(seed);
        let mut next = 0u64;
        let mut scratch = vec![0u64; 2 * capacity + 1];
        while next < total {
            let left = (total - next) as usize;
            let progress = match rng.below(3) {
                0 => usize::from(tx.push(next).is_ok()),
                1 => {
                    let n = (1 + rng.below(scratch.len())).min(left);
                    for (i, x) in scratch[..n].iter_mut().enumerate() {
                        *x = next + i as u64;
                    }
                    tx.push_slice(&scratch[..n])
                }
                _ => {
                    let n = (1 + rng.below(capacity)).min(left);
                    match tx.write_chunk(n) {
                        Ok(mut chunk) => {
                            let (a, b) = chunk.as_mut_slices();
                            for (i, x) in a.iter_mut().chain(b).enumerate() {
                                *x = next + i as u64;
                            }
                            // Sometimes publish only part of what was written.
                            let k = if rng.below(4) == 0 {
                                rng.below(n + 1)
                            } else {
                                n
                            };
                            chunk.commit(k);
                            k
                        }
                        Err(_) => 0,
                    }
                }
            };
            if progress == 0 {
                backoff();
            }
            next += progress as u64;
        }
    });

    let mut rng = Rng::new(seed ^ 0x9e37_79b9_7f4a_7c15);
    let mut expected = 0u64;
    let mut scratch = vec![0u64; 2 * capacity + 1];
    while expected < total {
        let check = |values: &[u64], expected: u64| {
            for (i, &v) in values.iter().enumerate() {
                assert_eq!(v, expected + i as u64, "capacity {capacity}, seed {seed}");
            }
        };
        let progress = match rng.below(3) {
            0 => match rx.pop() {
                Some(v) => {
                    check(&[v], expected);
                    1
                }
                None => 0,
            },
            1 => {
                let n = 1 + rng.below(scratch.len());
                let got = rx.pop_slice(&mut scratch[..n]);
                check(&scratch[..got], expected);
                got
            }
            _ => {
                let n = 1 + rng.below(capacity);
                match rx.read_chunk(n) {
                    Ok(chunk) => {
                        let (a, b) = chunk.as_slices();
                        check(a, expected);
                        check(b, expected + a.len() as u64);
                        let k = if rng.below(4) == 0 {
                            rng.below(n + 1)
                        } else {
                            n
                        };
                        chunk.commit(k);
                        k
                    }
                    Err(_) => 0,
                }
            }
        };
        if progress == 0 {
            backoff();
        }
        expected += progress as u64;
    }
    producer.join().unwrap();
    assert!(rx.is_empty());
}

#[test]
fn sequence_survives_random_chunks() {
    let total = items();
    // Tiny capacities hammer the full/empty edges; larger ones the wrap-around of chunks.
    let plan = [(1, 1), (3, 2), (7, 2), (64, 3), (1000, 2)];
    let shares: u64 = plan.iter().map(|p| p.1).sum();
    for (i, (capacity, share)) in plan.into_iter().enumerate() {
        run(capacity, total * share / shares, 1 + i as u64);
    }
}

/// Owned payloads, pushed and popped one at a time (slices and chunks are for `Copy` types):
/// every box and string must arrive intact and in order, and what is still in the ring when both
/// ends are gone is freed with it (Miri fails the test on a leak).
fn run_owned(capacity: usize, total: u64, seed: u64) {
    let (mut tx, mut rx) = RingBuffer::<(Box<u64>, String)>::new(capacity);
    let producer = std::thread::spawn(move || {
        let mut rng = Rng::new(seed);
        // Past `total` the producer keeps pushing until the ring is full, so the consumer
        // leaves values behind.
        let mut next = 0u64;
        // A refused value comes back and is pushed again, not rebuilt: allocating on every
        // retry only measured the allocator.
        let mut refused = None;
        loop {
            let value = refused
                .take()
                .unwrap_or_else(|| (Box::new(next), next.to_string()));
            match tx.push(value) {
                Ok(()) => next += 1,
                Err(_) if next >= total => break,
                Err(Full(value)) => {
                    refused = Some(value);
                    backoff();
                }
            }
            if rng.below(64) == 0 {
                backoff();
            }
        }
        next
    });
    let mut rng = Rng::new(seed ^ 0x9e37_79b9_7f4a_7c15);
    let mut expected = 0u64;
    while expected < total {
        match rx.pop() {
            Some((boxed, text)) => {
                assert_eq!(*boxed, expected, "capacity {capacity}, seed {seed}");
                assert_eq!(
                    text,
                    expected.to_string(),
                    "capacity {capacity}, seed {seed}"
                );
                expected += 1;
            }
            None => backoff(),
        }
        if rng.below(64) == 0 {
            backoff();
        }
    }
    let pushed = producer.join().unwrap();
    assert_eq!(rx.available_read() as u64, pushed - total);
    assert_eq!(
        rx.peek().map(|(b, _)| **b),
        (pushed > total).then_some(total)
    );
}

#[test]
fn owned_payloads_arrive_in_order() {
    let total = items() / 10;
    for (i, capacity) in [1, 2, 7, 64].into_iter().enumerate() {
        run_owned(capacity, total / 4, 10 + i as u64);
    }
}
