//! On every example project, the parallel processor's output is bit-identical to the serial one.

use downbeat::project::Project;
use downbeat_rt::pool::{Pool, PoolConfig};

/// Plugin node types this build has, and `echoes`, registered as the `downbeat` binary does;
/// the names of those it lacks.
fn register_plugins() -> Vec<&'static str> {
    downbeat_gc_nodes::register().unwrap();
    #[cfg(feature = "clap")]
    downbeat_plugin::clap::register().unwrap();
    #[cfg(feature = "lv2")]
    downbeat_plugin::lv2::register().unwrap();
    [
        ("clap", cfg!(feature = "clap")),
        ("lv2", cfg!(feature = "lv2")),
    ]
    .into_iter()
    .filter(|&(_, built)| !built)
    .map(|(name, _)| name)
    .collect()
}

/// Whether `path` uses a node type of a feature this build lacks (`type = "lv2"`).
fn needs_missing_feature(path: &std::path::Path, missing: &[&str]) -> Option<String> {
    let text = std::fs::read_to_string(path).unwrap();
    missing
        .iter()
        .find(|t| text.contains(&format!("type = \"{t}\"")))
        .map(|t| (*t).to_owned())
}

#[test]
fn every_example_project_renders_bit_identically_in_parallel() {
    let missing = register_plugins();
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
        if let Some(t) = needs_missing_feature(&path, &missing) {
            // `crates/plugin/ci.sh` renders these with the feature on.
            eprintln!("skipped {}: this build has no `{t}` nodes", path.display());
            continue;
        }
        if std::fs::read_to_string(&path)
            .unwrap()
            .contains("type = \"input\"")
        {
            // Without audio coming in it renders silence, which proves nothing here; the
            // LV2 example's parallel rendering is checked by crates/plugin/tests/lv2_parallel.rs.
            eprintln!("skipped {}: it processes audio input", path.display());
            continue;
        }
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
