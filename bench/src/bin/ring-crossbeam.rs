//! `downbeat-bench ring`'s child for crossbeam's `ArrayQueue`: this binary links no other
//! ring, so the loops are placed as they would be in a program that uses only crossbeam.

use std::process::ExitCode;
use std::sync::Arc;

use crossbeam_queue::ArrayQueue;
use queues::{Bulk, Queue};

#[path = "../ring_child/common.rs"]
mod common;
#[path = "../ring_child/queues.rs"]
mod queues;

struct Crossbeam;

impl Queue for Crossbeam {
    type Tx = Arc<ArrayQueue<u64>>;
    type Rx = Arc<ArrayQueue<u64>>;
    fn new(capacity: usize) -> (Self::Tx, Self::Rx) {
        let q = Arc::new(ArrayQueue::new(capacity));
        (q.clone(), q)
    }
    #[inline(always)]
    fn push(tx: &mut Self::Tx, value: u64) -> bool {
        tx.push(value).is_ok()
    }
    #[inline(always)]
    fn pop(rx: &mut Self::Rx) -> Option<u64> {
        rx.pop()
    }
}

/// `ArrayQueue` has no slice API; its best bulk transfer moves whole blocks as values, in a
/// queue of as many whole blocks as fit the ring's samples.
impl<const N: usize> Bulk<N> for Crossbeam {
    type Tx = Arc<ArrayQueue<[f32; N]>>;
    type Rx = Arc<ArrayQueue<[f32; N]>>;
    fn new(capacity: usize) -> (Self::Tx, Self::Rx) {
        let q = Arc::new(ArrayQueue::new((capacity / N).max(1)));
        (q.clone(), q)
    }
    #[inline(always)]
    fn write(tx: &mut Self::Tx, block: &[f32; N]) -> bool {
        !tx.is_full() && tx.push(*block).is_ok()
    }
    #[inline(always)]
    fn read(rx: &mut Self::Rx, block: &mut [f32; N]) -> bool {
        match rx.pop() {
            Some(b) => {
                *block = b;
                true
            }
            None => false,
        }
    }
}

fn main() -> ExitCode {
    common::main("ring-crossbeam", queues::run_case::<Crossbeam>)
}
