//! `downbeat-bench ring`'s child for rtrb: this binary links no other ring, so the loops
//! are placed as they would be in a program that uses only rtrb.

use std::process::ExitCode;

use queues::{Bulk, Queue};

#[path = "../ring_child/common.rs"]
mod common;
#[path = "../ring_child/queues.rs"]
mod queues;

struct Rtrb;

impl Queue for Rtrb {
    type Tx = rtrb::Producer<u64>;
    type Rx = rtrb::Consumer<u64>;
    fn new(capacity: usize) -> (Self::Tx, Self::Rx) {
        rtrb::RingBuffer::new(capacity)
    }
    #[inline(always)]
    fn push(tx: &mut Self::Tx, value: u64) -> bool {
        tx.push(value).is_ok()
    }
    #[inline(always)]
    fn pop(rx: &mut Self::Rx) -> Option<u64> {
        rx.pop().ok()
    }
}

impl<const N: usize> Bulk<N> for Rtrb {
    type Tx = rtrb::Producer<f32>;
    type Rx = rtrb::Consumer<f32>;
    fn new(capacity: usize) -> (Self::Tx, Self::Rx) {
        rtrb::RingBuffer::new(capacity)
    }
    #[inline(always)]
    fn write(tx: &mut Self::Tx, block: &[f32; N]) -> bool {
        use rtrb::CopyToUninit;
        // The uninit chunk is rtrb's fastest write path: `write_chunk` would first fill every
        // slot with `Default`.
        let Ok(mut chunk) = tx.write_chunk_uninit(N) else {
            return false;
        };
        let (a, b) = chunk.as_mut_slices();
        let (head, tail) = block.split_at(a.len());
        head.copy_to_uninit(a);
        tail.copy_to_uninit(b);
        // SAFETY: `a` and `b` are the whole chunk and were both just initialised above.
        unsafe { chunk.commit_all() };
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
    common::main("ring-rtrb", queues::run_case::<Rtrb>)
}
