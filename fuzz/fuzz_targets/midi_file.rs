//! MIDI files: `MidiFile::parse` on any bytes, and for a file it accepts what
//! `downbeat run --midi` does next: its events for a project's instruments and `[midi.cc]`
//! mappings, on the timeline of a fresh schedule, one block rendered, and the run's length.
#![no_main]

use downbeat::midi::{play, MidiFile};
use downbeat::Engine;
use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: {
        let _ = downbeat_fuzz::instruments_project().build();
    },
    |data: &[u8]| {
        let file = match MidiFile::parse(data) {
            Ok(f) => f,
            Err(e) => {
                let _ = (e.to_string(), e.offset());
                return;
            }
        };
        // The tick-to-frame arithmetic at the lowest and highest rates a project takes.
        for rate in [8_000, 384_000] {
            let _ = file.end_frame(rate);
            let _ = file.frames(rate).last();
        }
        let project = downbeat_fuzz::instruments_project();
        let mut engine = Engine::new(project.build().expect("the fixed project builds"));
        let rate = engine.sample_rate();
        let table = engine.schedule().param_table();
        let cc = project
            .cc_mappings(&table)
            .expect("the fixed project's mappings resolve");
        let _ = play::run_frames(&file, &table, rate);
        let Ok(events) = play::events(&file, &table, &cc, rate) else {
            return;
        };
        engine
            .schedule_mut()
            .add_to_timeline(events)
            .expect("the events name nodes that play notes");
        let mut out = vec![0.0f32; engine.block_size() * engine.channels()];
        engine.process(&mut out);
    }
);
