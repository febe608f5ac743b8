//! Output that does not depend on the processor's subnormal mode.
//!
//! With flush-to-zero and denormals-are-zero set (`downbeat_rt::denormals::FlushDenormals`,
//! which the schedule sets: subnormal arithmetic is slow on x86), a result below
//! `f32::MIN_POSITIVE` becomes 0; without them (WebAssembly has no such mode) it stays a
//! subnormal number. A node whose output or state could become that small would render
//! different bits in the two modes. Each built-in node therefore flushes, in code, every
//! value that can decay (a feedback state, an envelope, an output) to exactly 0 once it
//! falls below [`TINY`], far above the subnormal range: `2^-100`, -602 dBFS, so nothing
//! audible changes.
//!
//! Why that is enough: a node's inputs are 0 or at least `TINY` in magnitude (every node
//! outputs that), so a product with a coefficient above `2^-25` or a sum of two such values
//! is never subnormal. Where a chain of operations can still reach the subnormal range (an
//! FFT's butterflies, a filter's small coefficients), a subnormal number added to anything
//! of at least `2^-102` disappears in the rounding in both modes, so it can only change a
//! value that is itself below `2^-100` or so, which the flush then zeroes in both modes.

/// The smallest magnitude, other than 0, a built-in node outputs or keeps in a decaying
/// state: `2^-100`.
///
/// ```
/// use downbeat_graph::denormal::TINY;
/// assert_eq!(TINY, 2f32.powi(-100));
/// assert!(TINY > f32::MIN_POSITIVE * 2f32.powi(25));
/// ```
pub const TINY: f32 = 7.888_609e-31;

/// `x`, or 0 when `x` is smaller than [`TINY`] in magnitude. A comparison and a mask:
/// vectorises, no branch.
///
/// ```
/// use downbeat_graph::denormal::flush;
/// assert_eq!(flush(1e-31), 0.0);
/// assert_eq!(flush(-1e-20), -1e-20);
/// assert_eq!(flush(f32::MIN_POSITIVE / 2.0), 0.0); // a subnormal number, in either mode
/// ```
#[inline(always)]
pub fn flush(x: f32) -> f32 {
    if x.abs() < TINY {
        0.0
    } else {
        x
    }
}

/// [`flush`] on every sample of a block.
///
/// ```
/// use downbeat_graph::denormal::flush_block;
/// let mut block = [0.5, 1e-35, -1e-32, -0.25];
/// flush_block(&mut block);
/// assert_eq!(block, [0.5, 0.0, 0.0, -0.25]);
/// ```
#[inline]
pub fn flush_block(block: &mut [f32]) {
    for x in block.iter_mut() {
        *x = flush(*x);
    }
}
