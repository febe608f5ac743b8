//! On every example project, the parallel processor's output is bit-identical to the serial one.

use downbeat::project::Project;
use downbeat_rt::pool::{Pool, PoolConfig};

#[test]
fn every_example_project_renders_bit_identically_in_parallel() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/projects");
    let mut projects: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    projects.sort();
    assert!(projects.len() >= 2);
    let pool = Pool::new(PoolConfig {
        workers: Some(3),
        realtime_priority: None,
        pin: false,
        ..PoolConfig::default()
    });
    for path in projects {
        let p = Project::load(&path).unwrap();
        let (mut serial, mut parallel) = (p.build().unwrap(), p.build().unwrap());
        // Two seconds of audio: long enough for notes, silences and FFT frames.
        let blocks = 2 * p.sample_rate as usize / p.block_size;
        let mut any_sound = false;
        for b in 0..blocks {
            serial.process(p.block_size);
            parallel.process_parallel(p.block_size, &pool);
            for c in 0..serial.channels() {
                let (a, z) = (serial.output().channel(c), parallel.output().channel(c));
                assert!(a == z, "{}: block {b} channel {c} differs", path.display());
                any_sound |= a.iter().any(|&s| s != 0.0);
            }
        }
        assert!(any_sound, "{} rendered silence", path.display());
    }
}
