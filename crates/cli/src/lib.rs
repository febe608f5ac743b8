//! What the `downbeat` binary and its audit probe (`downbeat-audit-probe`, the child process
//! `downbeat audit` runs) share: how a failure becomes an exit code, and the audit's
//! arguments. The commands themselves live in the binary, one module each.

pub mod audit_args;
pub mod failure;

pub use failure::Failure;
