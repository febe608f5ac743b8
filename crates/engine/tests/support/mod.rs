//! What the engine's tests share. `crates/cli/tests/support` includes this file and adds what
//! the tests that run the `downbeat` binary need.
// Each test binary includes this module and uses a part of it.
#![allow(dead_code)]

/// A project in which a constant 1.0 (a sine at 0 Hz, a quarter turn in) goes through the
/// gain `g` to the output, so the output is the gain, sample for sample. `[nodes.g]` comes
/// last: a caller may append keys of `g` (`gain = 0.0`) and then tables (`[[automation]]`).
pub fn constant_through_gain(block_size: usize) -> String {
    format!(
        r#"block_size = {block_size}
edges = ["s -> g -> out"]
[nodes.s]
type = "sine"
freq = 0.0
phase = 0.25
amp = 1.0
channels = 1
[nodes.out]
type = "output"
channels = 1
[nodes.g]
type = "gain"
channels = 1
"#
    )
}

/// Where two recordings stop being the same, bit for bit: the first sample whose bits
/// differ, or the shorter length when one is a prefix of the other (a truncated file is a
/// difference, which a bare `zip` would hide); `None` when they are identical.
pub fn first_difference(a: &[f32], b: &[f32]) -> Option<usize> {
    a.iter()
        .zip(b)
        .position(|(x, y)| x.to_bits() != y.to_bits())
        .or((a.len() != b.len()).then(|| a.len().min(b.len())))
}

/// Fails with `what`, both lengths and the first differing sample unless `a` and `b` are
/// the same length and identical bit for bit.
pub fn assert_bit_identical(a: &[f32], b: &[f32], what: &str) {
    if let Some(i) = first_difference(a, b) {
        panic!(
            "{what}: {} and {} samples, first difference at sample {i} ({:?} against {:?})",
            a.len(),
            b.len(),
            a.get(i),
            b.get(i)
        );
    }
}

/// Fails unless the guard could watch everything it watches on this platform (on Linux
/// x86-64, system calls too): a clean report from a guard that saw nothing proves nothing.
pub fn assert_complete(r: &downbeat_rt::guard::Report) {
    if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        assert!(
            r.is_complete(),
            "guard could not track everything here:\n{r}"
        );
    }
}

/// The real-time priority and scheduling policy of this process's thread named `name`
/// (`/proc/self/task/*/stat`), once it reports priority `want` or after a second of
/// asking (a thread sets its priority first thing after it starts).
pub fn thread_priority(name: &str, want: i32) -> Option<(i32, i32)> {
    let tag = format!("({name}");
    let mut found = None;
    for _ in 0..200 {
        found = std::fs::read_dir("/proc/self/task")
            .ok()?
            .flatten()
            .find_map(|t| {
                let stat = std::fs::read_to_string(t.path().join("stat")).ok()?;
                let (head, rest) = stat.split_once(") ")?;
                if !head.ends_with(&tag) {
                    return None;
                }
                // After the name: field 3 is index 0, so rt_priority (40) and policy
                // (41) are 37 and 38.
                let f: Vec<&str> = rest.split_whitespace().collect();
                Some((f[37].parse::<i32>().ok()?, f[38].parse::<i32>().ok()?))
            });
        if matches!(found, Some((p, _)) if p == want) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    found
}
