//! The deterministic sequences both sides of an interop test write and check.
//!
//! Element `i` of a sequence is a pure function of `i`, so the receiving side can verify every
//! element without being told what was sent. `web/interop/pattern.mjs` is the JavaScript twin of
//! this module and must stay identical to it.

use downbeat_ring::ParamChange;

/// Multiplier of the sample hash (the golden ratio as a 32-bit fraction, odd).
const SAMPLE_MUL: u32 = 0x9E37_79B1;
/// Multiplier of the parameter id hash (odd).
const ID_MUL: u32 = 0x85EB_CA6B;
/// Mixed into every parameter id, so that ids use all 32 bits from the first record.
const ID_XOR: u32 = 0xDB5E_ED00;

/// Sample `i` of the f32 sequence: 24 hashed bits of `i`, centred on zero and scaled by 2^-8.
///
/// Every value is exact in `f32` (a 24-bit integer times a power of two), never NaN, and takes
/// both signs and fractional parts, so a reordered, repeated, lost or byte-shuffled element
/// shows. In JavaScript: `((Math.imul(i, 0x9E3779B1) >>> 8) - 8388608) / 256`.
///
/// ```
/// use downbeat_ring_wasm::pattern::sample;
/// assert_eq!(sample(0), -32768.0);
/// assert_ne!(sample(1), sample(2));
/// ```
pub fn sample(i: u32) -> f32 {
    let bits = i.wrapping_mul(SAMPLE_MUL) >> 8;
    (bits as f32 - 8_388_608.0) / 256.0
}

/// Record `i` of the parameter sequence: a hashed 32-bit id, [`sample(i)`](sample) as the value
/// and `i` itself as the frame.
///
/// In JavaScript: `{ index: (Math.imul(i, 0x85EBCA6B) ^ 0xDB5EED00) >>> 0, value: sample(i),
/// frame: i >>> 0 }`.
///
/// ```
/// use downbeat_ring_wasm::pattern::{param, sample};
/// let change = param(5);
/// assert_eq!((change.value, change.frame), (sample(5), 5));
/// ```
pub fn param(i: u32) -> ParamChange {
    ParamChange {
        id: i.wrapping_mul(ID_MUL) ^ ID_XOR,
        value: sample(i),
        frame: i,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_exact_and_distinct_nearby() {
        for i in 0..100_000u32 {
            let v = sample(i);
            assert!(v.is_finite());
            // Exact: going through f64 (JavaScript's number) and back changes nothing.
            assert_eq!(f64::from(v) as f32, v);
            assert_ne!(v, sample(i + 1), "{i}");
        }
    }

    #[test]
    fn values_match_the_javascript_formula() {
        // Spot values computed with the JavaScript expressions in the docs above.
        assert_eq!(sample(0), -32768.0);
        assert_eq!(sample(1), 1_980_281.0 / 256.0);
        assert_eq!(sample(123_456_789), -21.281_25);
        assert_eq!(param(0).id, 0xDB5E_ED00);
        assert_eq!(param(1).id, 0x5EB5_276B);
    }
}
