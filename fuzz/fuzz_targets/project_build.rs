//! Project graphs: a project that parses is built (every node type's parameters reach its
//! constructor, the graph is compiled, automation and `[midi.cc]` are resolved) and renders
//! two blocks, as `downbeat run` does. The `player` and `sampler` nodes find two small WAV
//! files in memory (`mono.wav`, `stereo.wav`); see `downbeat_fuzz::register_node_types`.
#![no_main]

use downbeat::project::Project;
use downbeat::Engine;
use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: {
        downbeat_fuzz::register_node_types();
        let _ = downbeat_fuzz::instruments_project().build();
    },
    |data: &[u8]| {
        downbeat_fuzz::register_node_types();
        let Ok(text) = std::str::from_utf8(data) else {
            return;
        };
        let Ok(project) = Project::parse(text, "fuzz.toml") else {
            return;
        };
        if !downbeat_fuzz::only_files_in_memory(&project)
            || !downbeat_fuzz::cheap_to_resample(&project)
        {
            return;
        }
        let schedule = match project.build() {
            Ok(s) => s,
            Err(e) => {
                let _ = e.to_string();
                return;
            }
        };
        let mut engine = Engine::new(schedule);
        let mut out = vec![0.0f32; engine.block_size() * engine.channels()];
        for _ in 0..2 {
            engine.process(&mut out);
        }
    }
);
