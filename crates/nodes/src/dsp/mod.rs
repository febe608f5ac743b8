//! Block-at-a-time DSP kernels the built-in nodes share.
//!
//! Each kernel is a plain loop over a whole block that the compiler vectorises for the
//! baseline target (SSE2 on x86-64, SIMD128 or scalar on wasm32): no per-sample calls into
//! a math library, no branches that depend on the data, `f32` where the precision is not audible.
//!
//! Every kernel gives the same bits on every target: the arithmetic is written out in a
//! fixed order, with no fused multiply-add (Rust never contracts `a * b + c` on its own, and
//! nothing here calls `mul_add`), and integer phase accumulators instead of floating-point
//! ones, so a wasm32 build renders what a native build renders. Where a node needs an
//! elementary function (a coefficient's `tan`, a level's `log10`), it calls
//! [`downbeat_graph::math`], the same code on every target, never the platform's.
//!
//! Nor does any depend on the processor's subnormal mode (flush-to-zero, which
//! WebAssembly lacks): see [`downbeat_graph::denormal`].

pub mod fft;
pub mod sine;

pub use sine::{hz_to_phase_inc, phase_to_turns, sin_turn, turns_to_phase, SineFill};
