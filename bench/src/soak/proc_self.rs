//! What the process holds, from `/proc/self`: resident memory, threads, file descriptors.

use std::io;

/// One reading of the process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// `VmRSS`, in kB (KiB, as the kernel writes it).
    pub rss_kb: u64,
    /// `Threads`.
    pub threads: u64,
    /// Entries of `/proc/self/fd` (the one the listing itself opens included, every time).
    pub fds: u64,
}

/// Reads the counts now.
pub fn read() -> io::Result<Counts> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let field = |name: &str| -> io::Result<u64> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| io::Error::other(format!("no {name} in /proc/self/status")))
    };
    Ok(Counts {
        rss_kb: field("VmRSS:")?,
        threads: field("Threads:")?,
        fds: std::fs::read_dir("/proc/self/fd")?.count() as u64,
    })
}

/// What the descriptors point at and what the threads are called (`fd -> /tmp/x.wav`,
/// `thread soak-control`), sorted: said when a reading differs from the first.
pub fn describe() -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
        for e in dir.flatten() {
            let target = std::fs::read_link(e.path())
                .map_or_else(|_| "?".to_owned(), |t| t.display().to_string());
            out.push(format!("fd -> {target}"));
        }
    }
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for e in dir.flatten() {
            let name = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            out.push(format!("thread {}", name.trim()));
        }
    }
    out.sort();
    out
}

/// Each thread: name, state, the CPU it last ran on, its real-time priority and scheduling
/// policy (0 normal, 1 FIFO, 2 round-robin), and the CPUs it may run on. What a hang needs
/// to be understood (which thread holds which core).
pub fn threads() -> Vec<String> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for e in dir.flatten() {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let status = std::fs::read_to_string(e.path().join("status")).unwrap_or_default();
        // The name is in parentheses and may hold spaces: the fields start after the last.
        let name = stat
            .find('(')
            .zip(stat.rfind(')'))
            .map_or("?", |(a, b)| &stat[a + 1..b]);
        let fields: Vec<&str> = stat
            .rfind(')')
            .map_or("", |b| &stat[b + 1..])
            .split_whitespace()
            .collect();
        // Fields 3, 39, 40 and 41 of proc(5), counted from the state.
        let field = |n: usize| fields.get(n - 3).copied().unwrap_or("?");
        let cpus = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map_or("?", str::trim);
        out.push(format!(
            "{name} (tid {}): state {}, on cpu {}, rt priority {}, policy {}, cpus {cpus}",
            e.file_name().to_string_lossy(),
            field(3),
            field(39),
            field(40),
            field(41)
        ));
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_and_a_file_show() {
        let file = std::fs::File::open("/proc/self/status").unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || rx.recv());
        let during = read().unwrap();
        drop(tx);
        t.join().unwrap().unwrap_err();
        drop(file);
        // This thread and ours; stdin, stdout, stderr, the file and the listing itself.
        assert!(during.threads >= 2, "{during:?}");
        assert!(during.fds >= 5, "{during:?}");
        assert!(during.rss_kb > 0);
        assert!(describe().iter().any(|l| l.starts_with("thread ")));
        assert!(threads()
            .iter()
            .any(|l| l.contains("state") && l.contains("policy 0")));
    }
}
