//! What the `downbeat` binary and its audit probe (`downbeat-audit-probe`, the child process
//! `downbeat audit` runs) share: how a failure becomes an exit code, the audit's arguments,
//! the phases the probe announces, the node types the binary registers, and the heap setting
//! both start with. The commands themselves live in the binary, one
//! module each.

pub mod audit_args;
pub mod audit_phase;
pub mod failure;
pub mod heap;
pub mod node_types;

pub use failure::Failure;
pub use node_types::register_node_types;
