//! Wait-free single-producer single-consumer ring buffer, with one memory layout shared by Rust,
//! WebAssembly and JavaScript.
//!
//! The ring is how every other thread talks to the audio thread: pushes and pops finish in a
//! bounded number of steps, never lock, never allocate and never make a system call.
//!
//! * [`RingBuffer::new`] gives a [`Producer`] and a [`Consumer`] of any type. Single values
//!   move in and out ([`push`](Producer::push) / [`pop`](Consumer::pop), and
//!   [`peek`](Consumer::peek) lends one), so a `Box` crosses without an allocation or a free on
//!   either side; values never popped are dropped, exactly once, when both ends are gone. For
//!   `Copy` types there are also partial slices ([`push_slice`](Producer::push_slice) /
//!   [`pop_slice`](Consumer::pop_slice)) and zero-copy chunks
//!   ([`write_chunk`](Producer::write_chunk) / [`read_chunk`](Consumer::read_chunk)).
//! * [`ParamQueue`] carries parameter changes with a frame offset for sample-accurate
//!   automation; [`AudioQueue`] carries interleaved audio and never splits a frame.
//! * [`layout`] describes the memory, so that [`Producer::from_raw`] and [`Consumer::from_raw`]
//!   can attach to a ring inside a `SharedArrayBuffer` that JavaScript reads and writes too.
//!
//! ```
//! use downbeat_ring::{ParamChange, ParamQueue, RingBuffer};
//!
//! let (mut tx, mut rx) = RingBuffer::<f32>::new(1024);
//! tx.push_slice(&[0.1, 0.2, 0.3]);
//! let mut block = [0.0; 64];
//! assert_eq!(rx.pop_slice(&mut block), 3);
//!
//! let (mut boxes, mut audio_thread) = RingBuffer::<Box<[f32]>>::new(4);
//! boxes.push(vec![0.0; 512].into_boxed_slice()).unwrap();
//! let buffer = audio_thread.pop().unwrap(); // moved, not copied: no allocation, no free
//! assert_eq!(buffer.len(), 512);
//!
//! let (mut params, mut automation) = ParamQueue::new(32);
//! params.push(ParamChange { id: 7, value: 0.5, frame: 100 }).unwrap();
//! assert_eq!(automation.pop(), Some(ParamChange { id: 7, value: 0.5, frame: 100 }));
//! ```
//!
//! The crate is `no_std` (it needs `alloc`) and builds for `wasm32-unknown-unknown`.
#![no_std]
#![warn(missing_docs, missing_debug_implementations)]

extern crate alloc;

mod audio;
mod chunk;
mod consumer;
mod element;
mod error;
pub mod layout;
mod param;
mod position;
mod producer;
mod region;
mod ring;
mod sync;

pub use audio::{deinterleave, interleave, AudioQueue, AudioReader, AudioWriter};
pub use chunk::{ReadChunk, WriteChunk};
pub use consumer::Consumer;
pub use element::{Element, ElementKind};
pub use error::{ChunkError, Full, LayoutError};
pub use param::{ParamChange, ParamDrain, ParamQueue, ParamReader, ParamWriter, PARAM_RECORD_LEN};
pub use producer::Producer;
pub use ring::RingBuffer;
