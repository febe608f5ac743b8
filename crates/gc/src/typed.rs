//! A typed layer over the untyped words: declare a struct's reference fields and data words
//! once with [`gc_struct!`](crate::gc_struct), then read and write them by name.
//!
//! The layer is only naming: every accessor is one call of the untyped [`Block`] method for
//! the field's index, so it keeps their guarantees (O(1), no allocation, lock or system call;
//! a stale handle or a missing field is an [`AccessError`], never a panic). Sample buffers
//! stay in the atomic heap, where [`Block::samples`] and [`Block::read_samples`] lend them as
//! plain `&mut [f32]` / `&[f32]`: an inner loop over samples does ordinary loads and stores,
//! not an atomic load per sample.
//!
//! ```
//! use downbeat_gc::{gc_struct, start, Atomic, Config};
//!
//! gc_struct! {
//!     /// A plucked string: a delay line, and where in it the next sample goes.
//!     pub struct Pluck {
//!         refs {
//!             /// The delay line (an atomic block of `f32`).
//!             line / set_line: Atomic,
//!             /// The next voice in a chain.
//!             next / set_next: Pluck,
//!         }
//!         data {
//!             /// Write position in the line.
//!             pos / set_pos: usize,
//!             /// Feedback gain.
//!             feedback / set_feedback: f32,
//!         }
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let (mut m, _c) = start(Config::small())?;
//! let mut b = m.begin_block();
//! // note-on: the voice, its line, rooted so that it lives on
//! let v = Pluck::alloc(&mut b)?;
//! let line = b.alloc_atomic(100 * 4)?;
//! b.samples(line).ok_or("fresh line")?.fill(0.5); // the initial burst
//! v.set_line(&mut b, Some(line))?;
//! v.set_feedback(&mut b, 0.9)?;
//! b.set_root(0, Some(v.gc()))?;
//!
//! // the render loop: read the fields once, then plain slice access per sample
//! let (line, mut pos, fb) = (v.line(&b)?.ok_or("no line")?, v.pos(&b)?, v.feedback(&b)?);
//! let mut out = [0.0f32; 64];
//! let buf = b.samples(line).ok_or("stale line")?;
//! for y in out.iter_mut() {
//!     *y = buf[pos];
//!     let next = (pos + 1) % buf.len();
//!     buf[pos] = fb * 0.5 * (buf[pos] + buf[next]);
//!     pos = next;
//! }
//! v.set_pos(&mut b, pos)?;
//! assert_eq!(out[0], 0.5);
//! assert_eq!(v.pos(&b)?, 64);
//! assert_eq!(v.next(&b)?, None);
//! # Ok(())
//! # }
//! ```

use crate::{AccessError, Atomic, Block, Gc};

/// A value stored in one data word (64 bits).
///
/// ```
/// use downbeat_gc::typed::Word;
/// assert_eq!(f32::from_word(0.25f32.to_word()), 0.25);
/// assert_eq!(i64::from_word((-3i64).to_word()), -3);
/// ```
pub trait Word: Copy {
    /// The word that stores `self`.
    fn to_word(self) -> u64;
    /// The value a word stores (any word decodes: a fresh object's words are 0).
    fn from_word(w: u64) -> Self;
}

macro_rules! int_word {
    ($($t:ty),*) => {$(
        impl Word for $t {
            #[inline]
            fn to_word(self) -> u64 {
                self as u64
            }
            #[inline]
            fn from_word(w: u64) -> Self {
                w as $t
            }
        }
    )*};
}
int_word!(u64, i64, u32, i32, u16, i16, u8, i8, usize, isize);

impl Word for f64 {
    #[inline]
    fn to_word(self) -> u64 {
        self.to_bits()
    }
    #[inline]
    fn from_word(w: u64) -> Self {
        f64::from_bits(w)
    }
}

impl Word for f32 {
    #[inline]
    fn to_word(self) -> u64 {
        self.to_bits() as u64
    }
    #[inline]
    fn from_word(w: u64) -> Self {
        f32::from_bits(w as u32)
    }
}

impl Word for bool {
    #[inline]
    fn to_word(self) -> u64 {
        self as u64
    }
    #[inline]
    fn from_word(w: u64) -> Self {
        w != 0
    }
}

/// A value a reference field holds: an object ([`Gc`] or a typed struct) or an atomic block.
///
/// Writing goes through [`Block::set_ref`] / [`Block::set_atomic`], never around them: they
/// are the one place a reference enters the heap, where the replicating collector's write barrier sits.
pub trait Ref: Copy {
    /// Reads reference field `field` of `o`.
    ///
    /// # Errors
    ///
    /// As [`Block::get_ref`].
    fn get(b: &Block<'_>, o: Gc, field: usize) -> Result<Option<Self>, AccessError>;
    /// Writes reference field `field` of `o`.
    ///
    /// # Errors
    ///
    /// As [`Block::set_ref`].
    fn set(b: &mut Block<'_>, o: Gc, field: usize, v: Option<Self>) -> Result<(), AccessError>;
}

impl Ref for Gc {
    #[inline]
    fn get(b: &Block<'_>, o: Gc, field: usize) -> Result<Option<Self>, AccessError> {
        b.get_ref(o, field)
    }
    #[inline]
    fn set(b: &mut Block<'_>, o: Gc, field: usize, v: Option<Self>) -> Result<(), AccessError> {
        b.set_ref(o, field, v)
    }
}

impl Ref for Atomic {
    #[inline]
    fn get(b: &Block<'_>, o: Gc, field: usize) -> Result<Option<Self>, AccessError> {
        b.get_atomic(o, field)
    }
    #[inline]
    fn set(b: &mut Block<'_>, o: Gc, field: usize, v: Option<Self>) -> Result<(), AccessError> {
        b.set_atomic(o, field, v)
    }
}

/// Declares a typed view of a collected object: a `Copy` handle wrapping a [`Gc`], with a
/// getter and a setter per field, named in the declaration (`name / set_name: Type`).
///
/// * `refs { ... }` lists the reference fields, of types implementing
///   [`Ref`](crate::typed::Ref): [`Gc`], [`Atomic`](crate::Atomic) or another `gc_struct!`.
///   Getters return `Result<Option<T>, AccessError>`, setters take `Option<T>`.
/// * `data { ... }` lists the data words, of types implementing
///   [`Word`](crate::typed::Word) (integers, `f32`, `f64`, `bool`).
///
/// Generated: `alloc(&mut Block)`, `gc()` (the untyped handle, e.g. for a root),
/// `from_gc(Gc)` (trusts that the object has this shape: a wrong one is still memory safe,
/// every access is bounds checked), `REFS`, `DATA`, and the accessors, each O(1) and one call
/// of the untyped [`Block`](crate::Block) method. See [the module](crate::typed) for an
/// example.
///
/// ```
/// downbeat_gc::gc_struct! {
///     /// A sine oscillator.
///     pub struct Osc {
///         refs {}
///         data {
///             /// Phase in cycles.
///             phase / set_phase: f64,
///             /// Cycles per sample.
///             step / set_step: f64,
///         }
///     }
/// }
/// let (mut m, _c) = downbeat_gc::start(downbeat_gc::Config::small()).unwrap();
/// let mut b = m.begin_block();
/// let o = Osc::alloc(&mut b).unwrap();
/// o.set_step(&mut b, 440.0 / 48_000.0).unwrap();
/// assert_eq!(o.step(&b), Ok(440.0 / 48_000.0));
/// assert_eq!((Osc::REFS, Osc::DATA), (0, 2));
/// ```
#[macro_export]
macro_rules! gc_struct {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            refs { $($(#[$rmeta:meta])* $rget:ident / $rset:ident : $rty:ty),* $(,)? }
            data { $($(#[$dmeta:meta])* $dget:ident / $dset:ident : $dty:ty),* $(,)? }
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis struct $name($crate::Gc);

        impl $name {
            /// Number of reference fields.
            pub const REFS: usize = 0 $(+ $crate::gc_struct!(@one $rget))*;
            /// Number of data words.
            pub const DATA: usize = 0 $(+ $crate::gc_struct!(@one $dget))*;

            /// Allocates one, every field zero (references null).
            ///
            /// # Errors
            ///
            /// As [`Block::alloc`]($crate::Block::alloc).
            #[allow(dead_code)]
            pub fn alloc(b: &mut $crate::Block<'_>) -> Result<Self, $crate::GcError> {
                b.alloc(Self::REFS, Self::DATA).map(Self)
            }

            /// The untyped handle (to root it, or to pass it to the untyped API).
            #[allow(dead_code)]
            pub fn gc(self) -> $crate::Gc {
                self.0
            }

            /// Views an untyped handle as this type, trusting that the object was allocated
            /// with this shape (a wrong shape is refused field by field, never unsafe).
            #[allow(dead_code)]
            pub fn from_gc(g: $crate::Gc) -> Self {
                Self(g)
            }
        }

        impl $crate::typed::Ref for $name {
            #[inline]
            fn get(
                b: &$crate::Block<'_>,
                o: $crate::Gc,
                field: usize,
            ) -> Result<Option<Self>, $crate::AccessError> {
                b.get_ref(o, field).map(|g| g.map(Self))
            }
            #[inline]
            fn set(
                b: &mut $crate::Block<'_>,
                o: $crate::Gc,
                field: usize,
                v: Option<Self>,
            ) -> Result<(), $crate::AccessError> {
                b.set_ref(o, field, v.map(|s| s.0))
            }
        }

        $crate::gc_struct!(@refs $name, 0usize, $($(#[$rmeta])* $rget / $rset : $rty,)*);
        $crate::gc_struct!(@data $name, 0usize, $($(#[$dmeta])* $dget / $dset : $dty,)*);
    };
    (@one $x:ident) => { 1 };
    (@refs $name:ident, $idx:expr, ) => {};
    (@refs $name:ident, $idx:expr,
        $(#[$m:meta])* $get:ident / $set:ident : $t:ty, $($rest:tt)*) => {
        impl $name {
            $(#[$m])*
            ///
            /// # Errors
            ///
            /// [`AccessError::Stale`]($crate::AccessError::Stale) if the object was collected.
            #[allow(dead_code)]
            #[inline]
            pub fn $get(self, b: &$crate::Block<'_>) -> Result<Option<$t>, $crate::AccessError> {
                <$t as $crate::typed::Ref>::get(b, self.0, $idx)
            }

            /// Writes the field of the same name (see its getter). Goes through
            /// `Block::set_ref` / `set_atomic`: the one place the replicating collector's write barrier sits.
            ///
            /// # Errors
            ///
            /// [`AccessError::Stale`]($crate::AccessError::Stale) if the object or the value
            /// was collected (nothing is written then).
            #[allow(dead_code)]
            #[inline]
            pub fn $set(
                self,
                b: &mut $crate::Block<'_>,
                v: Option<$t>,
            ) -> Result<(), $crate::AccessError> {
                <$t as $crate::typed::Ref>::set(b, self.0, $idx, v)
            }
        }
        $crate::gc_struct!(@refs $name, $idx + 1, $($rest)*);
    };
    (@data $name:ident, $idx:expr, ) => {};
    (@data $name:ident, $idx:expr,
        $(#[$m:meta])* $get:ident / $set:ident : $t:ty, $($rest:tt)*) => {
        impl $name {
            $(#[$m])*
            ///
            /// # Errors
            ///
            /// [`AccessError::Stale`]($crate::AccessError::Stale) if the object was collected.
            #[allow(dead_code)]
            #[inline]
            pub fn $get(self, b: &$crate::Block<'_>) -> Result<$t, $crate::AccessError> {
                b.data(self.0, $idx).map(<$t as $crate::typed::Word>::from_word)
            }

            /// Writes the data word of the same name (see its getter).
            ///
            /// # Errors
            ///
            /// [`AccessError::Stale`]($crate::AccessError::Stale) if the object was collected.
            #[allow(dead_code)]
            #[inline]
            pub fn $set(self, b: &mut $crate::Block<'_>, v: $t) -> Result<(), $crate::AccessError> {
                b.set_data(self.0, $idx, <$t as $crate::typed::Word>::to_word(v))
            }
        }
        $crate::gc_struct!(@data $name, $idx + 1, $($rest)*);
    };
}
