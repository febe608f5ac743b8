//! `downbeat reference cli|osc|project` (hidden): the guide's reference chapters
//! (`docs/guide/src/reference/`), generated from the code: the command line from the
//! argument parser, the OSC addresses from the handler's table, the project keys from the
//! parser's. `scripts/references.sh` writes them; `tests/reference_docs.rs` fails when a
//! committed chapter differs from what this prints.

use clap::builder::PossibleValue;
use clap::{Arg, ArgAction, CommandFactory, ValueEnum};
use downbeat_cli::Failure;

/// `downbeat reference` arguments.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The reference to print, as markdown.
    #[arg(value_enum)]
    which: Which,
}

/// A reference chapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Which {
    /// The command line (`cli.md`).
    Cli,
    /// The OSC addresses (`osc.md`).
    Osc,
    /// The keys of a project file (`project.md`).
    Project,
}

/// Prints the chapter.
pub(crate) fn run(args: &Args) -> Result<(), Failure> {
    print!("{}", chapter(args.which));
    Ok(())
}

/// The chapter: its title, where it comes from, and its body.
fn chapter(which: Which) -> String {
    let (title, from, body) = match which {
        Which::Cli => (
            "Command line",
            "the argument parser (`crates/cli/src/main.rs` and each command's module)",
            cli(),
        ),
        Which::Osc => (
            "OSC addresses",
            "the OSC handler's table (`downbeat::control::osc::ADDRESSES`)",
            downbeat::control::osc::reference_markdown(),
        ),
        Which::Project => (
            "Project files",
            "the project parser's table (`downbeat::project::KEYS`)",
            downbeat::project::keys_markdown(),
        ),
    };
    let name = match which {
        Which::Cli => "cli",
        Which::Osc => "osc",
        Which::Project => "project",
    };
    format!(
        "# {title}\n\nThis page is generated from {from} by `bash scripts/references.sh` \
         (`downbeat reference {name}`); do not edit it by hand.\n\n{body}"
    )
}

/// Every command that is not hidden, with its usage and a table of its arguments.
fn cli() -> String {
    let mut root = crate::Cli::command();
    root.build();
    let mut s = String::new();
    if let Some(about) = root.get_about() {
        s.push_str(&format!("{}\n\n", text(&about.to_string())));
    }
    s.push_str(&format!(
        "```text\n{}\n```\n\n\
         Every command also takes `-h` (a summary) and `--help` (all of it); `downbeat \
         --version` prints the version. The commands and their flags are the same whichever \
         features the binary was built with (`jack`, `system`, `lv2`, `clap`): the features \
         decide which devices and plugin formats work, not which flags there are.\n",
        usage(&mut root)
    ));
    for sub in root.get_subcommands_mut() {
        // `help` is clap's own, the same for every command.
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        s.push_str(&format!("\n## `downbeat {}`\n\n", sub.get_name()));
        if let Some(about) = sub.get_long_about().or(sub.get_about()) {
            s.push_str(&format!("{}\n\n", text(&about.to_string())));
        }
        s.push_str(&format!("```text\n{}\n```\n", usage(sub)));
        let args: Vec<&Arg> = sub
            .get_arguments()
            .filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
            .collect();
        if args.is_empty() {
            continue;
        }
        s.push_str("\n| argument | default | possible values | meaning |\n|---|---|---|---|\n");
        for a in args {
            s.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                flag(a),
                default(a),
                possible_values(a),
                a.get_long_help()
                    .or(a.get_help())
                    .map_or_else(String::new, |h| cell(&h.to_string()))
            ));
        }
    }
    s
}

/// The usage line, without its `Usage: ` label.
fn usage(cmd: &mut clap::Command) -> String {
    let usage = cmd.render_usage().to_string();
    usage
        .strip_prefix("Usage: ")
        .unwrap_or(&usage)
        .trim()
        .to_string()
}

/// How an argument is written: `<PROJECT>`, `--device <DEVICE>`, `-n, --dry-run`.
fn flag(a: &Arg) -> String {
    let value = a
        .get_value_names()
        .map(|names| {
            names
                .iter()
                .map(|n| format!("<{n}>"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| format!("<{}>", a.get_id().as_str().to_uppercase()));
    if a.is_positional() {
        return format!("`{value}`");
    }
    let mut names = Vec::new();
    if let Some(short) = a.get_short() {
        names.push(format!("-{short}"));
    }
    if let Some(long) = a.get_long() {
        names.push(format!("--{long}"));
    }
    let names = names.join(", ");
    if takes_value(a) {
        format!("`{names} {value}`")
    } else {
        format!("`{names}`")
    }
}

fn takes_value(a: &Arg) -> bool {
    !matches!(
        a.get_action(),
        ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count | ArgAction::Help
    )
}

/// The default, when the argument takes a value and has one.
fn default(a: &Arg) -> String {
    if !takes_value(a) {
        return String::new();
    }
    a.get_default_values()
        .iter()
        .map(|v| format!("`{}`", v.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The values an argument takes, when they are a fixed list, each with what it means.
fn possible_values(a: &Arg) -> String {
    if !takes_value(a) {
        return String::new();
    }
    a.get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v: &PossibleValue| match v.get_help() {
            Some(help) => format!("`{}`: {}", v.get_name(), cell(&help.to_string())),
            None => format!("`{}`", v.get_name()),
        })
        .collect::<Vec<_>>()
        .join("<br>")
}

/// `s` as the text of a paragraph: angle brackets outside code spans escaped, so that
/// markdown does not read them as HTML.
fn text(s: &str) -> String {
    let mut out = String::new();
    for (i, piece) in s.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        if i % 2 == 1 {
            out.push_str(piece);
        } else {
            out.push_str(&piece.replace('<', "&lt;").replace('>', "&gt;"));
        }
    }
    out
}

/// `s` in a table cell: as [`text`], its lines joined, `|` escaped.
fn cell(s: &str) -> String {
    text(&s.split('\n').map(str::trim).collect::<Vec<_>>().join(" ")).replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn angle_brackets_outside_code_are_escaped() {
        assert_eq!(text("a <b> `c <d>`"), "a &lt;b&gt; `c <d>`");
        assert_eq!(cell("x |\n y"), "x \\| y");
    }

    #[test]
    fn hidden_commands_and_flags_stay_out() {
        let md = cli();
        assert!(md.contains("## `downbeat run`"));
        assert!(!md.contains("downbeat reference"));
        assert!(!md.contains("test-record-pause-ms"));
    }
}
