//! [`DeviceSample`]: the sample formats sound cards take and give.

/// A sample format a driver may use, converted from and to the engine's `f32`.
///
/// Integer formats saturate at full scale rather than wrap: a sample above 1.0 becomes the
/// largest value, as a sound card's converter would clip it.
///
/// ```
/// use downbeat::device::DeviceSample;
/// assert_eq!(i16::from_f32(0.5), 16384);
/// assert_eq!(i16::from_f32(4.0), i16::MAX);
/// assert_eq!(u8::from_f32(0.0), 128);
/// assert_eq!(i16::MIN.to_f32(), -1.0);
/// ```
pub trait DeviceSample: Copy + Send + 'static {
    /// The sample for `s` (1.0 is full scale).
    fn from_f32(s: f32) -> Self;
    /// This sample as `f32` (1.0 is full scale).
    fn to_f32(self) -> f32;
}

impl DeviceSample for f32 {
    fn from_f32(s: f32) -> Self {
        s
    }
    fn to_f32(self) -> f32 {
        self
    }
}

impl DeviceSample for f64 {
    fn from_f32(s: f32) -> Self {
        f64::from(s)
    }
    fn to_f32(self) -> f32 {
        self as f32
    }
}

/// Signed integers: full scale is 2^(bits-1); `as` from a float saturates.
macro_rules! signed {
    ($($t:ty),*) => {$(
        impl DeviceSample for $t {
            fn from_f32(s: f32) -> Self {
                (f64::from(s) * -(<$t>::MIN as f64)).round() as $t
            }
            fn to_f32(self) -> f32 {
                (self as f64 / -(<$t>::MIN as f64)) as f32
            }
        }
    )*};
}
signed!(i8, i16, i32);

/// Unsigned integers: the signed value offset by half the range.
macro_rules! unsigned {
    ($($t:ty),*) => {$(
        impl DeviceSample for $t {
            fn from_f32(s: f32) -> Self {
                let half = (<$t>::MAX as f64 + 1.0) / 2.0;
                (f64::from(s) * half + half).round() as $t
            }
            fn to_f32(self) -> f32 {
                let half = (<$t>::MAX as f64 + 1.0) / 2.0;
                ((self as f64 - half) / half) as f32
            }
        }
    )*};
}
unsigned!(u8, u16, u32);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_scale_round_trips_and_clips() {
        assert_eq!(i16::from_f32(-1.0), i16::MIN);
        assert_eq!(i16::from_f32(1.0), i16::MAX); // 32768 saturates to 32767
        assert_eq!(i32::from_f32(-2.0), i32::MIN);
        assert_eq!(u16::from_f32(0.0), 32768);
        assert_eq!(u16::from_f32(-1.0), 0);
        assert_eq!(u16::from_f32(1.5), u16::MAX);
        for s in [0.25f32, -0.5, 0.125] {
            assert!((i16::from_f32(s).to_f32() - s).abs() < 1e-4);
            assert!((u8::from_f32(s).to_f32() - s).abs() < 1e-2);
            assert!((i32::from_f32(s).to_f32() - s).abs() < 1e-7);
        }
    }
}
