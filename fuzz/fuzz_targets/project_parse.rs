//! Project text: `Project::parse`, the loader `downbeat check` and `run` use, on any bytes.
//! Every refusal must be an error whose message points into the text (rendering it runs the
//! line, column and underline arithmetic), never a panic.
#![no_main]

use downbeat::project::Project;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    downbeat_fuzz::register_node_types();
    // `Project::load` refuses a file that is not UTF-8 before parsing it.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Project::parse(text, "fuzz.toml") {
        Ok(project) => {
            for i in 0..project.nodes.len() {
                let _ = project.node_error(i, "fuzz").to_string();
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
