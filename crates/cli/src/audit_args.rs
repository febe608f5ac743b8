//! The arguments of `downbeat audit`, which hands them on to the probe that runs the audit.

use std::ffi::OsString;

/// `downbeat audit` arguments.
#[derive(clap::Args, Clone, Debug, PartialEq, Eq)]
pub struct Args {
    /// A CLAP file (`FILE.clap`, or `FILE.clap#PLUGIN_ID` when it holds several plugins),
    /// a VST3 bundle (`NAME.vst3`, or `NAME.vst3#CLASS`), an LV2 plugin URI (with the `lv2`
    /// feature), or a folder: every plugin of every CLAP file, VST3 bundle and LV2 bundle
    /// under it.
    pub plugin: String,
    /// Process calls to audit.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub blocks: u32,
    /// Frames per process call.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub block: u32,
    /// Sample rate the plugin is activated at.
    #[arg(long, default_value_t = 48000, value_parser = clap::value_parser!(u32).range(1000..=768_000))]
    pub sample_rate: u32,
    /// Print the report as one JSON object on stdout (and nothing else there); for a
    /// folder, one JSON array with an object per plugin.
    #[arg(long)]
    pub json: bool,
    /// Seconds each plugin's child process may take (listing, loading, the audit and the
    /// teardown) before it is killed and the plugin reported as crashed where it hung
    /// (0: no limit). `downbeat audit` applies it; the probe ignores it.
    #[arg(long, default_value_t = 120)]
    pub timeout: u32,
}

impl Args {
    /// The command line that gives these arguments back when parsed (but `timeout`, which
    /// stays with `downbeat audit`: the probe gets the default).
    ///
    /// ```
    /// use clap::Parser;
    /// use downbeat_cli::audit_args::Args;
    ///
    /// #[derive(Parser)]
    /// struct Probe {
    ///     #[command(flatten)]
    ///     args: Args,
    /// }
    /// let args = Probe::parse_from(["probe", "gain.clap", "--blocks", "7", "--json"]).args;
    /// let again = Probe::parse_from(std::iter::once("probe".into()).chain(args.to_argv()));
    /// assert_eq!(again.args, args);
    /// ```
    pub fn to_argv(&self) -> Vec<OsString> {
        let mut argv: Vec<OsString> = vec![
            "--blocks".into(),
            self.blocks.to_string().into(),
            "--block".into(),
            self.block.to_string().into(),
            "--sample-rate".into(),
            self.sample_rate.to_string().into(),
        ];
        if self.json {
            argv.push("--json".into());
        }
        // After `--`, a plugin name that starts with `-` stays a name.
        argv.push("--".into());
        argv.push(self.plugin.clone().into());
        argv
    }
}
