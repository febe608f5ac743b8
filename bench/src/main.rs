//! Side-by-side benchmarks of Downbeat against rival libraries.
fn main() {}
