//! `downbeat check PROJECT`: loads a project and builds its graph without running it.

use std::path::PathBuf;

use downbeat::project::Project;
use downbeat_cli::Failure;

/// `downbeat check` arguments.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The project file (.toml).
    project: PathBuf,
}

/// Prints what the project builds to, or why it does not (exit 2).
pub(crate) fn run(args: &Args) -> Result<(), Failure> {
    let p = Project::load(&args.project).map_err(|e| Failure::Input(e.to_string()))?;
    let s = p.build().map_err(|e| Failure::Input(e.to_string()))?;
    println!(
        "{}: ok, {} nodes, {} edges, {} Hz, {} frames per block, {} output channels, latency {} \
         frames",
        p.file,
        s.len(),
        p.edges.len(),
        p.sample_rate,
        p.block_size,
        s.channels(),
        s.latency()
    );
    Ok(())
}
