//! Every example project under the guard: the engine's process call, with the node types
//! the `downbeat` binary registers (plugins, `echoes`), makes no allocation, free, lock,
//! page fault or system call. Here and not in the engine's tests because only the CLI
//! registers those node types.

use downbeat::project::Project;
use downbeat::Engine;
use downbeat_graph::nodes::Capture;
use downbeat_rt::guard;

downbeat_rt::install_guard_allocator!();

mod projects;
mod support;

/// Every example project this build can run (those that need a plugin feature it lacks
/// are named on stderr with the reason), with a test signal for those that read input.
#[test]
fn engine_process_is_clean_for_every_example() {
    let missing = projects::register_node_types();
    let mut checked = 0;
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
        for _ in 0..200 {
            engine.process_with_input(&input, &mut block);
        }
        let report = guard::check(|| {
            for _ in 0..200 {
                engine.process_with_input(&input, &mut block);
            }
        });
        support::assert_complete(&report);
        assert!(report.is_clean(), "{}:\n{report}", path.display());
        assert_eq!(engine.summary().blocks, 400, "{}", path.display());
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
}
