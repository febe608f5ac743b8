//! `downbeat nodes`: the node types and their parameters.

use downbeat_cli::Failure;

/// Prints the reference of every registered node type.
pub(crate) fn run() -> Result<(), Failure> {
    print!("{}", downbeat::project::node_reference());
    Ok(())
}
