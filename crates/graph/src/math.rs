//! The elementary functions every built-in node uses, with the same bits on every target.
//!
//! `f64::sin`, `f32::exp` and the other transcendental methods of the standard library call
//! the C library natively (glibc on Linux, which also picks an FMA variant at run time) and
//! Rust's port of musl's `libm` on `wasm32-unknown-unknown`. Neither is correctly rounded,
//! so the last bit of a result can differ between the two, and with it a filter coefficient,
//! an envelope's slope or a gain, and then every sample after. These wrappers call the
//! [`libm`] crate, the same Rust code on every target, instead.
//!
//! Operations that IEEE 754 defines exactly (`+ - * /`, `sqrt`, `abs`, `floor`, `ceil`,
//! `round`, `trunc`, `%`, comparisons) give the same bits everywhere and stay as they are.
//! `clippy.toml` refuses the platform functions in `downbeat-graph` and `downbeat-file`, so a
//! new node cannot call one by accident; it also refuses `mul_add` (a fused multiply-add
//! rounds once where `a * b + c` rounds twice), `powi` (see [`powi_f32`]) and `f32::max`
//! and `min`, whose choice between -0.0 and 0.0 is unspecified: write the comparison.

/// `sin(x)`, radians.
///
/// ```
/// use downbeat_graph::math::sin;
/// assert_eq!(sin(0.0), 0.0);
/// assert!((sin(std::f64::consts::FRAC_PI_2) - 1.0).abs() < 1e-15);
/// ```
#[inline]
pub fn sin(x: f64) -> f64 {
    libm::sin(x)
}

/// `cos(x)`, radians.
///
/// ```
/// use downbeat_graph::math::cos;
/// assert_eq!(cos(0.0), 1.0);
/// ```
#[inline]
pub fn cos(x: f64) -> f64 {
    libm::cos(x)
}

/// `(sin(x), cos(x))`, radians.
///
/// ```
/// use downbeat_graph::math::{cos, sin, sin_cos};
/// assert_eq!(sin_cos(0.3), (sin(0.3), cos(0.3)));
/// ```
#[inline]
pub fn sin_cos(x: f64) -> (f64, f64) {
    // `libm::sincos` shares the argument reduction and returns what `sin` and `cos` do.
    libm::sincos(x)
}

/// `tan(x)`, radians.
///
/// ```
/// use downbeat_graph::math::tan;
/// assert!((tan(std::f64::consts::FRAC_PI_4) - 1.0).abs() < 1e-15);
/// ```
#[inline]
pub fn tan(x: f64) -> f64 {
    libm::tan(x)
}

/// `e^x`.
///
/// ```
/// use downbeat_graph::math::exp;
/// assert_eq!(exp(0.0), 1.0);
/// ```
#[inline]
pub fn exp(x: f64) -> f64 {
    libm::exp(x)
}

/// `2^x`.
///
/// ```
/// use downbeat_graph::math::exp2;
/// assert_eq!(exp2(10.0), 1024.0);
/// assert_eq!(exp2(-1.0), 0.5);
/// ```
#[inline]
pub fn exp2(x: f64) -> f64 {
    libm::exp2(x)
}

/// The natural logarithm.
///
/// ```
/// use downbeat_graph::math::ln;
/// assert_eq!(ln(1.0), 0.0);
/// ```
#[inline]
pub fn ln(x: f64) -> f64 {
    libm::log(x)
}

/// The base-2 logarithm.
///
/// ```
/// use downbeat_graph::math::log2;
/// assert_eq!(log2(8.0), 3.0);
/// ```
#[inline]
pub fn log2(x: f64) -> f64 {
    libm::log2(x)
}

/// The base-10 logarithm.
///
/// ```
/// use downbeat_graph::math::log10;
/// assert_eq!(log10(1000.0), 3.0);
/// ```
#[inline]
pub fn log10(x: f64) -> f64 {
    libm::log10(x)
}

/// `x^y`.
///
/// ```
/// use downbeat_graph::math::pow;
/// assert_eq!(pow(10.0, 2.0), 100.0);
/// ```
#[inline]
pub fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}

/// The amplitude factor of a level in decibels: `10^(db / 20)`.
///
/// ```
/// use downbeat_graph::math::db_to_gain;
/// assert_eq!(db_to_gain(0.0), 1.0);
/// assert_eq!(db_to_gain(-20.0), 0.1);
/// ```
#[inline]
pub fn db_to_gain(db: f64) -> f64 {
    pow(10.0, db / 20.0)
}

/// `e^x` in `f32`.
///
/// ```
/// use downbeat_graph::math::expf;
/// assert_eq!(expf(0.0), 1.0);
/// ```
#[inline]
pub fn expf(x: f32) -> f32 {
    libm::expf(x)
}

/// The base-10 logarithm in `f32`.
///
/// ```
/// use downbeat_graph::math::log10f;
/// assert_eq!(log10f(100.0), 2.0);
/// ```
#[inline]
pub fn log10f(x: f32) -> f32 {
    libm::log10f(x)
}

/// `x^n` by repeated squaring, in a fixed order of multiplications. (`f32::powi` is an LLVM
/// intrinsic: it may be expanded inline or call a runtime function, whose order of
/// multiplication is not promised.)
///
/// ```
/// use downbeat_graph::math::powi_f32;
/// assert_eq!(powi_f32(0.5, 3), 0.125);
/// assert_eq!(powi_f32(3.0, 0), 1.0);
/// assert_eq!(powi_f32(2.0, -2), 0.25);
/// ```
#[inline]
pub fn powi_f32(x: f32, n: i32) -> f32 {
    let mut base = x;
    let mut left = n.unsigned_abs();
    let mut result = 1.0f32;
    while left > 0 {
        if left & 1 == 1 {
            result *= base;
        }
        left >>= 1;
        if left > 0 {
            base *= base;
        }
    }
    if n < 0 {
        1.0 / result
    } else {
        result
    }
}
