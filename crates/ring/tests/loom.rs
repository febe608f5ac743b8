//! Exhaustive interleavings of the producer/consumer protocol on tiny rings.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p downbeat-ring --test loom --release` in a
//! target directory of its own. Every slot access is reported to loom, so a weakened ordering on
//! either index shows up as a causality violation, not just as a wrong value.
#![cfg(loom)]

use downbeat_ring::RingBuffer;
use loom::thread;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    builder.check(f);
}

#[test]
fn push_pop_in_order() {
    for capacity in [1, 2] {
        model(move || {
            let (mut tx, mut rx) = RingBuffer::<u32>::new(capacity);
            let producer = thread::spawn(move || {
                for i in 0..3 {
                    while tx.push(i).is_err() {
                        thread::yield_now();
                    }
                }
            });
            for i in 0..3 {
                loop {
                    if let Some(v) = rx.pop() {
                        assert_eq!(v, i);
                        break;
                    }
                    thread::yield_now();
                }
            }
            producer.join().unwrap();
        });
    }
}

#[test]
fn chunk_commit_publishes_whole_chunks() {
    model(|| {
        let (mut tx, mut rx) = RingBuffer::<u32>::new(3);
        let producer = thread::spawn(move || {
            // Chunks of 2 in a ring of 3: the second one wraps around the end.
            for round in 0..2u32 {
                loop {
                    if let Ok(mut chunk) = tx.write_chunk(2) {
                        let (a, b) = chunk.as_mut_slices();
                        for (i, x) in a.iter_mut().chain(b).enumerate() {
                            *x = round * 2 + i as u32;
                        }
                        chunk.commit_all();
                        break;
                    }
                    thread::yield_now();
                }
            }
        });
        let mut next = 0;
        while next < 4 {
            match rx.read_chunk(1) {
                Ok(chunk) => {
                    let (a, b) = chunk.as_slices();
                    assert_eq!(a.iter().chain(b).copied().collect::<Vec<_>>(), [next]);
                    chunk.commit_all();
                    next += 1;
                }
                Err(_) => thread::yield_now(),
            }
        }
        producer.join().unwrap();
    });
}

#[test]
fn partial_slices_wrap_without_races() {
    model(|| {
        let (mut tx, mut rx) = RingBuffer::<u8>::new(2);
        let producer = thread::spawn(move || {
            let data = [1u8, 2, 3];
            let mut sent = 0;
            while sent < data.len() {
                let n = tx.push_slice(&data[sent..]);
                if n == 0 {
                    thread::yield_now();
                }
                sent += n;
            }
        });
        let mut got = Vec::new();
        while got.len() < 3 {
            let mut buf = [0u8; 2];
            let n = rx.pop_slice(&mut buf);
            if n == 0 {
                thread::yield_now();
            }
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, [1, 2, 3]);
        producer.join().unwrap();
    });
}

/// Counts its drops in a counter the model checks after both threads are done.
struct Counted(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn the_last_end_to_drop_drops_what_is_left() {
    model(|| {
        let drops = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (mut tx, mut rx) = RingBuffer::<Counted>::new(2);
        let counter = drops.clone();
        // Each end pushes or pops, then drops, on its own thread: either may go last, and the
        // values it drops may have been written by the other thread after its last look at
        // the indices, so only the end-of-life synchronisation orders those writes first.
        let producer = thread::spawn(move || {
            for _ in 0..2 {
                let _ = tx.push(Counted(counter.clone()));
            }
        });
        let consumer = thread::spawn(move || {
            drop(rx.pop());
        });
        producer.join().unwrap();
        consumer.join().unwrap();
        assert_eq!(
            drops.load(std::sync::atomic::Ordering::Relaxed),
            2,
            "every value pushed is dropped exactly once"
        );
    });
}
