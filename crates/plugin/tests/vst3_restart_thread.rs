//! The VST3 host's restart thread runs while VST3 nodes live, and only then: it ends with
//! the last node, so an idle process is not woken every 5 ms, and starts again with the
//! next. A file of its own, so that no other test's nodes keep the thread alive.

#![cfg(all(feature = "lv2", feature = "vst3"))]

use std::path::Path;
use std::time::{Duration, Instant};

use downbeat_plugin::vst3::Vst3Node;

const COMP: &str = "/usr/lib/vst3/ZamComp.vst3";

/// Threads of this process named `vst3-restart`.
fn restart_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "vst3-restart")
        .count()
}

/// Waits up to 2 s for `n` restart threads.
fn wait_for(n: usize) -> usize {
    let t = Instant::now();
    while restart_threads() != n && t.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(5));
    }
    restart_threads()
}

#[test]
fn the_restart_thread_lives_while_nodes_do() {
    assert!(
        Path::new(COMP).is_dir(),
        "{COMP} is missing: install zam-plugins (crates/plugin/ci.sh does)"
    );
    let load = || Vst3Node::load(Path::new(COMP), None, 48000, 256, None).unwrap();
    assert_eq!(restart_threads(), 0);
    let (a, b) = (load(), load());
    assert_eq!(wait_for(1), 1, "one thread serves every node");
    drop(a);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(restart_threads(), 1, "a node still lives");
    drop(b);
    assert_eq!(wait_for(0), 0, "the thread outlived the last node");
    let c = load();
    assert_eq!(wait_for(1), 1, "a new node starts it again");
    drop(c);
    assert_eq!(wait_for(0), 0);
}
