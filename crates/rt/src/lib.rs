//! Real-time building blocks: guard, clock, notify, pool, reclaim, allocator.
//!
//! [`guard`] checks, in tests, that code meant for the audio thread never
//! allocates, frees, locks or makes system calls.
#![warn(missing_docs)]

pub mod alloc;
pub mod clock;
pub mod denormals;
pub mod guard;
pub mod notify;
pub mod pool;
pub mod reclaim;

mod os_error;
pub use os_error::OsError;
