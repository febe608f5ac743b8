//! On every example project, the parallel processor's output is bit-identical to the serial one.

use downbeat::nodes::Capture;
use downbeat::project::Project;
use downbeat_graph::{Event, NoteEvent};
use downbeat_rt::pool::{Pool, PoolConfig};

mod projects;

#[test]
fn every_example_project_renders_bit_identically_in_parallel() {
    let missing = projects::register_node_types();
    let pool = Pool::new(PoolConfig {
        workers: Some(3),
        realtime_priority: None,
        ..PoolConfig::default()
    });
    let mut rendered = 0;
    for path in projects::examples() {
        if let Some(why) = projects::unbuilt_feature(&path, &missing) {
            // `crates/plugin/ci.sh` runs this test with every plugin feature on.
            eprintln!("skipped {}: {why}", path.display());
            continue;
        }
        let p = Project::load(&path).unwrap();
        // Projects that read the device's input hear a test signal (without one they would
        // render silence, which proves nothing); both schedules read the same capture.
        let capture = Capture::new(projects::CAPTURE_CHANNELS, p.block_size);
        let build = || capture.connect(|| p.build()).unwrap();
        let (mut serial, mut parallel) = (build(), build());
        // Rendered offline: a file player then waits for its reader thread instead of
        // playing silence where the reader is late, which on a loaded machine made the two
        // renders differ (player.toml, block 137, with two fuzzers and a build beside it).
        serial.set_offline(true);
        parallel.set_offline(true);
        // Instruments hear a few notes, General MIDI drums and middle C (a sampler's kit is
        // silent without them), the same in both.
        for s in [&mut serial, &mut parallel] {
            if s.instrument_count() > 0 {
                for (k, note) in [36.0, 38.0, 42.0, 60.0].into_iter().enumerate() {
                    let on = NoteEvent::On {
                        channel: 9,
                        note,
                        velocity: 1.0,
                    };
                    s.push_event(Event::note_to_instruments(Some(k as u64 * 4800), on))
                        .unwrap();
                }
            }
        }
        let input = projects::reads_input(&path);
        // Two seconds of audio: long enough for notes, silences and FFT frames.
        let blocks = 2 * p.sample_rate as usize / p.block_size;
        let mut any_sound = false;
        let mut frame = 0;
        let mut interleaved = vec![0.0; p.block_size * projects::CAPTURE_CHANNELS];
        for b in 0..blocks {
            if input {
                for (k, s) in interleaved.iter_mut().enumerate() {
                    *s = projects::input_sample(
                        frame + k / projects::CAPTURE_CHANNELS,
                        k % projects::CAPTURE_CHANNELS,
                    );
                }
                capture.write_interleaved(&interleaved);
                frame += p.block_size;
            }
            serial.process(p.block_size);
            parallel.process_parallel(p.block_size, &pool);
            for c in 0..serial.channels() {
                let (a, z) = (serial.output().channel(c), parallel.output().channel(c));
                assert!(a == z, "{}: block {b} channel {c} differs", path.display());
                any_sound |= a.iter().any(|&s| s != 0.0);
            }
        }
        assert!(any_sound, "{} rendered silence", path.display());
        rendered += 1;
    }
    assert!(rendered >= 2, "only {rendered} projects rendered");
}
