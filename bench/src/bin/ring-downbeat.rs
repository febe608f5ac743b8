//! `downbeat-bench ring`'s child for `downbeat-ring`: this binary links no other ring, so
//! the loops are placed as they would be in a program that uses only this library.

use std::process::ExitCode;

use queues::{Bulk, Queue};

#[path = "../ring_child/common.rs"]
mod common;
#[path = "../ring_child/queues.rs"]
mod queues;

struct Downbeat;

impl Queue for Downbeat {
    type Tx = downbeat_ring::Producer<u64>;
    type Rx = downbeat_ring::Consumer<u64>;
    fn new(capacity: usize) -> (Self::Tx, Self::Rx) {
        downbeat_ring::RingBuffer::new(capacity)
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

impl<const N: usize> Bulk<N> for Downbeat {
    type Tx = downbeat_ring::Producer<f32>;
    type Rx = downbeat_ring::Consumer<f32>;
    fn new(capacity: usize) -> (Self::Tx, Self::Rx) {
        downbeat_ring::RingBuffer::new(capacity)
    }
    #[inline(always)]
    fn write(tx: &mut Self::Tx, block: &[f32; N]) -> bool {
        let Ok(mut chunk) = tx.write_chunk(N) else {
            return false;
        };
        let (a, b) = chunk.as_mut_slices();
        let (head, tail) = block.split_at(a.len());
        a.copy_from_slice(head);
        b.copy_from_slice(tail);
        chunk.commit_all();
        true
    }
    #[inline(always)]
    fn read(rx: &mut Self::Rx, block: &mut [f32; N]) -> bool {
        let Ok(chunk) = rx.read_chunk(N) else {
            return false;
        };
        let (a, b) = chunk.as_slices();
        let (head, tail) = block.split_at_mut(a.len());
        head.copy_from_slice(a);
        tail.copy_from_slice(b);
        chunk.commit_all();
        true
    }
}

fn main() -> ExitCode {
    common::main("ring-downbeat", queues::run_case::<Downbeat>)
}
