//! Every example project under the guard: the engine's process call, with the node types
//! the `downbeat` binary registers (plugins, `echoes`), makes no allocation, free, lock,
//! page fault or system call, also while the projects that play notes get notes from a
//! device's MIDI (`Engine::midi`, as a driver's callback hands them over) and their voices
//! start, sound, are released and stolen. Here and not in the engine's tests because only
//! the CLI registers those node types.

use downbeat::nodes::Capture;
use downbeat::project::Project;
use downbeat::Engine;
use downbeat_rt::guard;

downbeat_rt::install_guard_allocator!();

mod projects;
mod support;

/// Notes for guarded block `b`, as `(offset, bytes)`: a note on every block (General MIDI
/// drums the example kit maps, and pitched notes), each released two blocks later, so that
/// a synth holds several voices and steals; a pitch bend now and then; all notes off in
/// the last block.
fn notes(b: usize, blocks: usize, frames: usize) -> impl Iterator<Item = (u32, [u8; 3])> {
    const NOTES: [u8; 8] = [36, 60, 38, 64, 42, 67, 46, 71];
    let note = |b: usize| NOTES[b % NOTES.len()];
    let at = |k: usize| ((b * 53 + k * 17) % frames) as u32;
    let on = (b + 2 < blocks).then(|| (at(0), [0x90, note(b), 100]));
    let off = (b >= 2).then(|| (at(1), [0x80, note(b - 2), 0]));
    let bend = (b % 16 == 5).then(|| (at(2), [0xE0, 0, (b % 128) as u8]));
    let all_off = (b + 1 == blocks).then_some((0, [0xB0, 123, 0]));
    [on, off, bend, all_off].into_iter().flatten()
}

/// Every example project this build can run (those that need a plugin feature it lacks
/// are named on stderr with the reason), with a test signal for those that read input and
/// notes for those that play them.
#[test]
fn engine_process_is_clean_for_every_example() {
    const BLOCKS: usize = 200;
    let missing = projects::register_node_types();
    let mut checked = 0;
    let mut played = 0;
    for path in projects::examples() {
        if let Some(why) = projects::unbuilt_feature(&path, &missing) {
            // `crates/plugin/ci.sh` runs this test with every plugin feature on.
            eprintln!("skipped {}: {why}", path.display());
            continue;
        }
        let p = Project::load(&path).unwrap();
        let capture = Capture::new(projects::CAPTURE_CHANNELS, p.block_size);
        let mut engine = Engine::new(capture.connect(|| p.build()).unwrap());
        let reads_input = projects::reads_input(&path);
        if reads_input {
            engine.set_capture(capture);
        }
        let frames = engine.block_size();
        let mut block = vec![0.0f32; frames * engine.channels()];
        let input: Vec<f32> = (0..frames * projects::CAPTURE_CHANNELS)
            .map(|k| {
                projects::input_sample(
                    k / projects::CAPTURE_CHANNELS,
                    k % projects::CAPTURE_CHANNELS,
                )
            })
            .collect();
        let table = engine.schedule().param_table();
        let instruments: Vec<String> = table
            .note_nodes()
            .filter_map(|k| table.node_name(k).map(str::to_string))
            .collect();
        // Per-node levels show each instrument's own output, whatever follows it.
        engine.schedule_mut().set_levels(true);
        for _ in 0..BLOCKS {
            engine.process_with_input(&input, &mut block);
        }
        engine.schedule_mut().take_levels(|_, _| ());
        let plays = !instruments.is_empty();
        let report = guard::check(|| {
            for b in 0..BLOCKS {
                if plays {
                    for (at, bytes) in notes(b, BLOCKS, frames) {
                        engine.midi(at, &bytes);
                    }
                }
                engine.process_with_input(&input, &mut block);
            }
        });
        support::assert_complete(&report);
        assert!(report.is_clean(), "{}:\n{report}", path.display());
        assert_eq!(
            engine.summary().blocks,
            2 * BLOCKS as u64,
            "{}",
            path.display()
        );
        let midi = engine.midi_input();
        assert_eq!(
            (midi.dropped(), midi.ignored()),
            (0, 0),
            "{}: notes were lost",
            path.display()
        );
        let names = engine.schedule().names().to_vec();
        let mut peaks = vec![0.0f32; names.len()];
        engine
            .schedule_mut()
            .take_levels(|n, level| peaks[n] = level.peak);
        for node in &instruments {
            let n = names.iter().position(|m| m == node).unwrap();
            assert!(
                peaks[n] > 1e-3,
                "{}: instrument `{node}` was silent under the notes (peak {})",
                path.display(),
                peaks[n]
            );
        }
        played += usize::from(plays);
        if reads_input {
            assert!(
                block.iter().any(|&s| s != 0.0),
                "{} heard its input as silence",
                path.display()
            );
        }
        checked += 1;
    }
    assert!(checked >= 4, "only {checked} examples checked");
    // drums.toml (a sampler) and synth.toml (a synth and a string) at least.
    assert!(played >= 2, "only {played} examples played notes");
}
