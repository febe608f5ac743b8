//! `downbeat-bench ring`'s child for the ringbuf crate: this binary links no other ring, so
//! the loops are placed as they would be in a program that uses only ringbuf.

use std::process::ExitCode;

use queues::{Bulk, Queue};

#[path = "../ring_child/common.rs"]
mod common;
#[path = "../ring_child/queues.rs"]
mod queues;

struct Ringbuf;

impl Queue for Ringbuf {
    type Tx = ringbuf::HeapProd<u64>;
    type Rx = ringbuf::HeapCons<u64>;
    fn new(capacity: usize) -> (Self::Tx, Self::Rx) {
        use ringbuf::traits::Split;
        ringbuf::HeapRb::new(capacity).split()
    }
    #[inline(always)]
    fn push(tx: &mut Self::Tx, value: u64) -> bool {
        use ringbuf::traits::Producer;
        tx.try_push(value).is_ok()
    }
    #[inline(always)]
    fn pop(rx: &mut Self::Rx) -> Option<u64> {
        use ringbuf::traits::Consumer;
        rx.try_pop()
    }
}

impl<const N: usize> Bulk<N> for Ringbuf {
    type Tx = ringbuf::HeapProd<f32>;
    type Rx = ringbuf::HeapCons<f32>;
    fn new(capacity: usize) -> (Self::Tx, Self::Rx) {
        use ringbuf::traits::Split;
        ringbuf::HeapRb::new(capacity).split()
    }
    #[inline(always)]
    fn write(tx: &mut Self::Tx, block: &[f32; N]) -> bool {
        use ringbuf::traits::{Observer, Producer};
        if tx.vacant_len() < N {
            return false;
        }
        tx.push_slice(block);
        true
    }
    #[inline(always)]
    fn read(rx: &mut Self::Rx, block: &mut [f32; N]) -> bool {
        use ringbuf::traits::{Consumer, Observer};
        if rx.occupied_len() < N {
            return false;
        }
        rx.pop_slice(block);
        true
    }
}

fn main() -> ExitCode {
    common::main("ring-ringbuf", queues::run_case::<Ringbuf>)
}
