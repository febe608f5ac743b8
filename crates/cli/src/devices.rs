//! `downbeat devices`: the computer's sound devices, their channels and sample rates.

use downbeat::device::{devices, DeviceInfo};
use downbeat_cli::Failure;

/// Lists the devices (exit 2 in a build without the system device).
pub(crate) fn run() -> Result<(), Failure> {
    let list = devices()?;
    if list.is_empty() {
        println!("no sound devices found");
    }
    for d in &list {
        println!("{}", describe(d));
    }
    Ok(())
}

/// Two lines: the name with what it is the default for, then channels and rates.
fn describe(d: &DeviceInfo) -> String {
    let default = match (d.default_output, d.default_input) {
        (true, true) => " (default output and input)",
        (true, false) => " (default output)",
        (false, true) => " (default input)",
        _ => "",
    };
    let rates: Vec<String> = d
        .sample_rates
        .iter()
        .map(|&(lo, hi)| {
            if lo == hi {
                format!("{lo}")
            } else {
                format!("{lo}-{hi}")
            }
        })
        .collect();
    format!(
        "{}{default}: {}\n    out {} ch, in {} ch, {} Hz",
        d.name,
        d.description,
        d.output_channels,
        d.input_channels,
        if rates.is_empty() {
            "?".to_string()
        } else {
            rates.join(", ")
        }
    )
}
