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
