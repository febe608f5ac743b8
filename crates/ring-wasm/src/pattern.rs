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
/// Distance between the channels of the audio sequence in the sample sequence (the square root
/// of 2 as a 32-bit fraction): far apart, so no channel repeats a nearby frame of another.
const CHANNEL_STEP: u32 = 0x6A09_E667;

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

/// Channel `channel` of frame `frame` of the interleaved audio sequence: sample
/// `frame + channel * 0x6A09E667` (wrapping) of [`sample`], so channel 0 is the f32 sequence
/// itself and every channel is a different stretch of it.
///
/// The value depends on the frame and channel only, never on the channel count, so a frame
/// split across the end of the ring, a dropped or repeated sample or swapped channels all show.
/// In JavaScript: `sample((frame + Math.imul(channel, 0x6A09E667)) >>> 0)`.
///
/// ```
/// use downbeat_ring_wasm::pattern::{audio, sample};
/// assert_eq!(audio(7, 0), sample(7));
/// assert_ne!(audio(7, 1), audio(7, 0));
/// ```
pub fn audio(frame: u32, channel: u32) -> f32 {
    sample(frame.wrapping_add(channel.wrapping_mul(CHANNEL_STEP)))
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
        assert_eq!(audio(0, 1), sample(0x6A09_E667));
        assert_eq!(audio(3, 3), sample(0x3E1D_B338));
        assert_eq!(f64::from(audio(3, 3)), -29_369.621_093_75);
        assert_eq!(f64::from(audio(0, 1)), -28_448.015_625);
        assert_eq!(f64::from(audio(123_456, 4)), -15_234.378_906_25);
    }

    #[test]
    fn audio_channels_differ_from_their_neighbours() {
        // A sample shifted by up to a frame of 8 channels, or taken from another channel, would
        // have to equal the expected one to go unnoticed.
        for frame in 0..20_000u32 {
            for channel in 0..8 {
                let v = audio(frame, channel);
                for other in 0..8 {
                    for later in frame..frame + 2 {
                        if (later, other) != (frame, channel) {
                            assert_ne!(v, audio(later, other), "{frame} {channel}");
                        }
                    }
                }
            }
        }
    }
}
