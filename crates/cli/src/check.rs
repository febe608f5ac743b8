//! `downbeat check PROJECT`: loads a project and builds its graph without running it, and
//! prints the memory the nodes that report it hold (`MEMORY_BYTES`: a sampler's samples).

use std::path::PathBuf;

use downbeat::project::Project;
use downbeat_cli::Failure;
use downbeat_graph::MEMORY_BYTES;

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
    // Nodes that hold memory of their own (a sampler's samples) say how much.
    for (node, monitor) in s.monitors() {
        for count in monitor.counts() {
            if count.name == MEMORY_BYTES {
                println!(
                    "  node `{node}` holds {} bytes ({:.1} MiB)",
                    count.value,
                    count.value as f64 / (1024.0 * 1024.0)
                );
            }
        }
    }
    Ok(())
}
