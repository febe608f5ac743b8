//! `downbeat nodes`: the node types and their parameters, as text, Markdown or JSON.

use downbeat_cli::Failure;

/// `downbeat nodes` arguments.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Prints the reference as a Markdown page (the guide's node-type reference is this
    /// output from a build with `--features lv2`).
    #[arg(long, conflicts_with = "json")]
    markdown: bool,
    /// Prints the reference as JSON: an array of types, each with its name, doc, parameters
    /// (name, kind, min, max, default, options, unit, live, doc) and open parameters.
    #[arg(long)]
    json: bool,
}

/// Prints the reference of every registered node type.
pub(crate) fn run(args: &Args) -> Result<(), Failure> {
    let text = if args.markdown {
        downbeat::project::node_reference_markdown()
    } else if args.json {
        downbeat::project::node_reference_json()
    } else {
        downbeat::project::node_reference()
    };
    print!("{text}");
    Ok(())
}
