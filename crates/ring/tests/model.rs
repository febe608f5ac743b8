//! Property tests: any sequence of operations behaves like a bounded `VecDeque`.

use std::collections::VecDeque;

use downbeat_ring::RingBuffer;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Push(u16),
    PushSlice(Vec<u16>),
    WriteChunk { n: usize, commit: usize, fill: u16 },
    Pop,
    PopSlice(usize),
    ReadChunk { n: usize, commit: usize },
    Peek,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        any::<u16>().prop_map(Op::Push),
        prop::collection::vec(any::<u16>(), 0..12).prop_map(Op::PushSlice),
        (0..12usize, 0..12usize, any::<u16>()).prop_map(|(n, commit, fill)| Op::WriteChunk {
            n,
            commit,
            fill
        }),
        Just(Op::Pop),
        (0..12usize).prop_map(Op::PopSlice),
        (0..12usize, 0..12usize).prop_map(|(n, commit)| Op::ReadChunk { n, commit }),
        Just(Op::Peek),
    ]
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 512 },
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn behaves_like_a_bounded_deque(capacity in 0..9usize, ops in prop::collection::vec(op(), 0..60)) {
        let (mut tx, mut rx) = RingBuffer::<u16>::new(capacity);
        let mut model = VecDeque::new();
        for op in ops {
            match op {
                Op::Push(v) => {
                    let fits = model.len() < capacity;
                    prop_assert_eq!(tx.push(v).is_ok(), fits);
                    if fits {
                        model.push_back(v);
                    }
                }
                Op::PushSlice(values) => {
                    let n = values.len().min(capacity - model.len());
                    prop_assert_eq!(tx.push_slice(&values), n);
                    model.extend(&values[..n]);
                }
                Op::WriteChunk { n, commit, fill } => match tx.write_chunk(n) {
                    Ok(mut chunk) => {
                        prop_assert!(n <= capacity - model.len());
                        let (a, b) = chunk.as_mut_slices();
                        prop_assert_eq!(a.len() + b.len(), n);
                        for (i, x) in a.iter_mut().chain(b).enumerate() {
                            *x = fill.wrapping_add(i as u16);
                        }
                        let commit = commit.min(n);
                        chunk.commit(commit);
                        model.extend((0..commit).map(|i| fill.wrapping_add(i as u16)));
                    }
                    Err(e) => {
                        prop_assert!(n > capacity - model.len());
                        prop_assert_eq!(e.available, capacity - model.len());
                    }
                },
                Op::Pop => prop_assert_eq!(rx.pop(), model.pop_front()),
                Op::PopSlice(len) => {
                    let mut out = vec![0; len];
                    let n = rx.pop_slice(&mut out);
                    prop_assert_eq!(n, len.min(model.len()));
                    let expected: Vec<u16> = model.drain(..n).collect();
                    prop_assert_eq!(&out[..n], &expected[..]);
                }
                Op::ReadChunk { n, commit } => match rx.read_chunk(n) {
                    Ok(chunk) => {
                        let (a, b) = chunk.as_slices();
                        let seen: Vec<u16> = a.iter().chain(b).copied().collect();
                        let expected: Vec<u16> = model.iter().take(n).copied().collect();
                        prop_assert_eq!(seen, expected);
                        let commit = commit.min(n);
                        chunk.commit(commit);
                        model.drain(..commit);
                    }
                    Err(e) => {
                        prop_assert!(n > model.len());
                        prop_assert_eq!(e.available, model.len());
                    }
                },
                Op::Peek => prop_assert_eq!(rx.peek(), model.front()),
            }
            prop_assert_eq!(rx.available_read(), model.len());
            prop_assert_eq!(tx.available_write(), capacity - model.len());
            prop_assert_eq!(rx.is_empty(), model.is_empty());
            prop_assert_eq!(tx.is_full(), model.len() == capacity);
        }
    }
}
