//! Element types that may cross the shared layout.

/// How an element is encoded in the shared layout's header, so that the JavaScript side can pick
/// the matching typed array and a Rust side can refuse memory laid out for another type.
///
/// The numeric values are part of the layout contract (`docs/ring-layout.md`).
///
/// ```
/// use downbeat_ring::{Element, ElementKind};
/// assert_eq!(<f32 as Element>::KIND, ElementKind::F32);
/// assert_eq!(ElementKind::F32 as u32, 9);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum ElementKind {
    /// A Rust type the header does not describe; only Rust code built with the same type may read it.
    Opaque = 0,
    /// `u8` (`Uint8Array`).
    U8 = 1,
    /// `i8` (`Int8Array`).
    I8 = 2,
    /// `u16` (`Uint16Array`).
    U16 = 3,
    /// `i16` (`Int16Array`).
    I16 = 4,
    /// `u32` (`Uint32Array`).
    U32 = 5,
    /// `i32` (`Int32Array`).
    I32 = 6,
    /// `u64` (`BigUint64Array`).
    U64 = 7,
    /// `i64` (`BigInt64Array`).
    I64 = 8,
    /// `f32` (`Float32Array`).
    F32 = 9,
    /// `f64` (`Float64Array`).
    F64 = 10,
}

impl ElementKind {
    /// The kind with this header code, if there is one.
    ///
    /// ```
    /// use downbeat_ring::ElementKind;
    /// assert_eq!(ElementKind::from_code(10), Some(ElementKind::F64));
    /// assert_eq!(ElementKind::from_code(99), None);
    /// ```
    pub const fn from_code(code: u32) -> Option<Self> {
        Some(match code {
            0 => Self::Opaque,
            1 => Self::U8,
            2 => Self::I8,
            3 => Self::U16,
            4 => Self::I16,
            5 => Self::U32,
            6 => Self::I32,
            7 => Self::U64,
            8 => Self::I64,
            9 => Self::F32,
            10 => Self::F64,
            _ => return None,
        })
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A primitive number that can live in memory shared with WebAssembly or JavaScript.
///
/// Sealed: the guarantees below are what make zero-copy write chunks and foreign memory sound,
/// so only types known to provide them implement it. Every element type has a size of 1, 2, 4 or
/// 8 bytes equal to its alignment, no padding, and every bit pattern is a valid value (so bytes
/// written by the other side, or never written at all, can be read without undefined behaviour).
///
/// ```
/// use downbeat_ring::Element;
/// fn kind_of<T: Element>() -> u32 { T::KIND as u32 }
/// assert_eq!(kind_of::<u32>(), 5);
/// ```
pub trait Element: Copy + Send + Sync + 'static + sealed::Sealed {
    /// The header code for this type.
    const KIND: ElementKind;
}

macro_rules! element {
    ($($t:ty => $kind:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const KIND: ElementKind = ElementKind::$kind;
        }
    )*};
}

element! {
    u8 => U8, i8 => I8, u16 => U16, i16 => I16, u32 => U32, i32 => I32,
    u64 => U64, i64 => I64, f32 => F32, f64 => F64,
}
