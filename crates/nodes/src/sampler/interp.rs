//! Six-point, fifth-order Lagrange interpolation: what a pitched sample is read with.
//!
//! The interpolating polynomial through the six samples around the read position (two
//! before, three after the one at or below it). At a whole position it returns that
//! sample exactly, and for content well below half the sample rate it is very clean: a
//! 1 kHz sine recorded at 48 kHz and played a fifth up or a fourth down keeps everything
//! that is not its new pitch at -142 dB (the f32 floor), a 5 kHz sine at -79 dB
//! (`tests/sampler.rs` checks below -120 and -75 dB).
//! Like every polynomial interpolator it has no low-pass of its own, so a sample played
//! far up folds its top octave back (what the tests above measure), and its response
//! droops near half the rate (about -3 dB at 0.4 of the rate).

/// Zeros kept before a sample's first frame: the points the interpolator reads before
/// the position.
pub(crate) const PAD_BEFORE: usize = 2;
/// Zeros kept after a sample's last frame.
pub(crate) const PAD_AFTER: usize = 3;

/// The value at `pos` (frames from the first, `0 <= pos < frames`) of a padded channel
/// (see [`Sample::padded`](super::Sample)).
#[inline]
pub(crate) fn read(padded: &[f32], pos: f64) -> f32 {
    let i = pos as usize;
    let t = (pos - i as f64) as f32;
    // The six points around `i`, which sits at `PAD_BEFORE` in the window.
    let x = &padded[i..i + 6];
    let a = t + 2.0;
    let b = t + 1.0;
    let c = t;
    let d = t - 1.0;
    let e = t - 2.0;
    let f = t - 3.0;
    let cd = c * d;
    let ef = e * f;
    let ab = a * b;
    let w0 = -(b * cd * ef) * (1.0 / 120.0);
    let w1 = (a * cd * ef) * (1.0 / 24.0);
    let w2 = -(ab * d * ef) * (1.0 / 12.0);
    let w3 = (ab * c * ef) * (1.0 / 12.0);
    let w4 = -(ab * cd * f) * (1.0 / 24.0);
    let w5 = (ab * cd * e) * (1.0 / 120.0);
    w0 * x[0] + w1 * x[1] + w2 * x[2] + w3 * x[3] + w4 * x[4] + w5 * x[5]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_positions_return_the_sample() {
        let padded = [0.0, 0.0, 0.3, -0.7, 0.11, 0.0, 0.0, 0.0];
        assert_eq!(read(&padded, 0.0), 0.3);
        assert_eq!(read(&padded, 1.0), -0.7);
        assert_eq!(read(&padded, 2.0), 0.11);
    }

    #[test]
    fn a_cubic_is_reproduced_between_points() {
        // Fifth order: any polynomial up to degree 5 is exact.
        let p = |x: f64| 0.01 * x * x * x - 0.1 * x * x + 0.2 * x - 0.3;
        let padded: Vec<f32> = (-2..10).map(|i| p(f64::from(i)) as f32).collect();
        for k in 0..50 {
            let pos = 1.0 + f64::from(k) * 0.1;
            assert!(
                (f64::from(read(&padded, pos)) - p(pos)).abs() < 1e-5,
                "at {pos}"
            );
        }
    }
}
