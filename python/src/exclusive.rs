//! [`Exclusive`]: a value only reachable through `&mut`, which may be shared between threads.

/// A value reachable only through `&mut`: shared references give nothing, so sharing one
/// between threads is sound whatever `T` is (the idea of `std::sync::Exclusive`). A chain's
/// graph is not `Sync`, and Python classes must be; every method that touches it takes
/// `&mut self`, which PyO3's borrow flag makes exclusive.
pub(crate) struct Exclusive<T>(pub(crate) T);

// SAFETY: no `&self` method exposes the inner value, so two threads can never reach it at
// once through shared references; `&mut` access is exclusive by Rust's rules.
unsafe impl<T: Send> Sync for Exclusive<T> {}

impl<T> Exclusive<T> {
    pub(crate) fn get_mut(&mut self) -> &mut T {
        &mut self.0
    }
}
