//! Real-time building blocks: guard, clock, notify, pool, reclaim, allocator.
//!
//! [`guard`] checks, in tests, that code meant for the audio thread never
//! allocates, frees, locks or makes system calls.
//!
//! On `wasm32` (the engine in a browser) only what runs there is built: [`denormals`],
//! [`reclaim`] and a serial [`pool`]. The guard, the clocks, `notify` and the allocator
//! call the operating system (or assume 64-bit pointers) and do not exist there.
#![warn(missing_docs)]

#[cfg(not(target_arch = "wasm32"))]
pub mod alloc;
#[cfg(not(target_arch = "wasm32"))]
pub mod clock;
pub mod denormals;
#[cfg(not(target_arch = "wasm32"))]
pub mod guard;
#[cfg(not(target_arch = "wasm32"))]
pub mod notify;
pub mod pool;
pub mod reclaim;

mod os_error;
pub use os_error::OsError;
