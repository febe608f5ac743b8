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
