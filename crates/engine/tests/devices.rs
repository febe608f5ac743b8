//! The devices that need no server: what they leave behind and what they record. (Their
//! `--input` file through the binary: `crates/cli/tests/input_file.rs`.)

use downbeat::device::{Device, Offline, RunLength, Virtual};
use downbeat::project::Project;
use downbeat::Engine;

fn tone() -> Project {
    Project::parse(
        "block_size = 480\nedges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n",
        "tone.toml",
    )
    .unwrap()
}

/// The calling thread's scheduling policy and priority, and its timer slack.
#[cfg(target_os = "linux")]
fn thread_settings() -> (i32, i32, i32) {
    let (mut policy, mut param) = (0, libc::sched_param { sched_priority: 0 });
    // SAFETY: the calling thread; both out-pointers are valid.
    let rc = unsafe { libc::pthread_getschedparam(libc::pthread_self(), &mut policy, &mut param) };
    assert_eq!(rc, 0);
    // SAFETY: PR_GET_TIMERSLACK takes no argument and reads the calling thread's slack.
    let slack = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    (policy, param.sched_priority, slack)
}

#[cfg(target_os = "linux")]
#[test]
fn the_virtual_device_leaves_the_calling_threads_scheduling_alone() {
    std::thread::spawn(|| {
        let before = thread_settings();
        let engine = Engine::new(tone().build().unwrap());
        let run = Virtual::new(None)
            .run(engine, RunLength { frames: 4800 })
            .unwrap();
        assert_eq!(run.engine.summary().blocks, 10);
        assert_eq!(
            thread_settings(),
            before,
            "(policy, priority, timer slack) changed"
        );
    })
    .join()
    .unwrap();
}

#[test]
fn the_virtual_recording_matches_an_offline_render() {
    let dir = std::env::temp_dir().join(format!("downbeat-devices-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (live, offline) = (dir.join("virtual.wav"), dir.join("offline.wav"));
    let length = RunLength { frames: 4800 + 123 };
    let engine = Engine::new(tone().build().unwrap());
    Virtual::new(Some(live.clone()))
        .run(engine, length)
        .unwrap();
    let engine = Engine::new(tone().build().unwrap());
    Offline::new(Some(offline.clone()))
        .run(engine, length)
        .unwrap();
    let read = |p: &std::path::Path| -> Vec<f32> {
        hound::WavReader::open(p)
            .unwrap()
            .samples::<f32>()
            .map(Result::unwrap)
            .collect()
    };
    let (a, b) = (read(&live), read(&offline));
    assert_eq!(a.len(), 2 * 4923);
    assert!(a == b, "the virtual device recorded something else");
    assert!(a.iter().any(|&s| s != 0.0));
}
