//! The collector's threads start with real-time defaults: the snapshot thread at SCHED_FIFO
//! 70 (or a note saying why not, and then there is no snapshot thread: the audio thread
//! copies), both collector threads pinned to the last CPU as the thesis pins them, and idle
//! threads that sleep instead of polling.
#![cfg(target_os = "linux")]

use std::time::Duration;

use downbeat_gc::{start, Config};

mod support;

/// `(name, policy, cpus allowed)` of this process's threads whose name starts with `prefix`.
fn threads(prefix: &str) -> Vec<(String, u32, String)> {
    let mut found = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let path = task.path();
        let name = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        if !name.starts_with(prefix) {
            continue;
        }
        let sched = std::fs::read_to_string(path.join("sched")).unwrap_or_default();
        let policy = sched
            .lines()
            .find(|l| l.starts_with("policy"))
            .and_then(|l| l.split(':').nth(1))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(u32::MAX);
        let status = std::fs::read_to_string(path.join("status")).unwrap_or_default();
        let cpus = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap_or("?")
            .trim()
            .to_owned();
        found.push((name.trim().to_owned(), policy, cpus));
    }
    found
}

#[test]
fn snapshot_thread_is_realtime_and_collector_threads_are_pinned() {
    const TEST: &str = "snapshot_thread_is_realtime_and_collector_threads_are_pinned";
    let config = Config::small();
    let cpu = config.collector_cpu;
    let (_m, c) = start(config).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let stats = c.stats();
    let snapshot = threads("downbeat-gc-sna");
    let sweep = threads("downbeat-gc-swe");
    assert_eq!(sweep.len(), 1, "{sweep:?}");
    match &stats.priority_note {
        None => {
            assert_eq!(snapshot.len(), 1, "{snapshot:?}");
            assert_eq!(snapshot[0].1, 1, "SCHED_FIFO: {snapshot:?}");
        }
        Some(note) => {
            assert!(note.contains("audio thread"), "{note}");
            assert!(snapshot.is_empty(), "no snapshot thread without priority");
            support::refused(TEST, note);
        }
    }
    assert_eq!(sweep[0].1, 0, "mark and sweep at normal priority");
    match (cpu, &stats.pin_note) {
        (Some(cpu), None) => {
            for t in snapshot.iter().chain(&sweep) {
                assert_eq!(t.2, cpu.to_string(), "pinned: {t:?}");
            }
        }
        (Some(_), Some(note)) => support::refused(TEST, note),
        (None, _) => assert_eq!(
            std::thread::available_parallelism().unwrap().get(),
            1,
            "only a one-CPU machine leaves them unpinned by default"
        ),
    }
}
