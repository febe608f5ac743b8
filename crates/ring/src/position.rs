//! Arithmetic on positions, which run in `0..2 * capacity`.
//!
//! Counting to twice the capacity tells a full ring (positions `capacity` apart) from an empty one
//! (positions equal) without wasting a slot, for any capacity, with compares instead of a modulo.

/// Slots from position `from` forward to position `to`.
#[inline(always)]
pub(crate) fn distance(from: u32, to: u32, capacity: u32) -> u32 {
    // Cannot overflow: both are below `2 * capacity <= 2^31`.
    if to >= from {
        to - from
    } else {
        to + 2 * capacity - from
    }
}

/// The storage slot of a valid position.
#[inline(always)]
pub(crate) fn slot(position: u32, capacity: u32) -> u32 {
    if position < capacity {
        position
    } else {
        position - capacity
    }
}

/// The position `n <= capacity` slots after a valid one.
#[inline(always)]
pub(crate) fn advance(position: u32, n: u32, capacity: u32) -> u32 {
    // Below 3 * 2^30, so no overflow.
    let next = position + n;
    if next >= 2 * capacity {
        next - 2 * capacity
    } else {
        next
    }
}

/// The position after a valid one.
///
/// The next operation loads its position back from this one's store, so this sits on the
/// dependency chain that carries from each push to the next (and pop to pop). Wrapping is rare
/// and predictable, so it should be a branch the CPU speculates past, leaving a single add on
/// the chain, rather than a select that waits for the compare; the call to a cold function is
/// what keeps the compiler from turning the branch into a select.
#[inline(always)]
pub(crate) fn next(position: u32, capacity: u32) -> u32 {
    let next = position + 1;
    if next == 2 * capacity {
        wrapped();
        0
    } else {
        next
    }
}

#[cold]
#[inline(never)]
fn wrapped() {}

/// Whether a position read from shared memory can be trusted.
#[inline(always)]
pub(crate) fn valid(position: u32, capacity: u32) -> bool {
    // A zero-capacity ring only ever has position 0.
    position < 2 * capacity || position == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_wraps() {
        assert_eq!(distance(0, 0, 3), 0);
        assert_eq!(distance(1, 4, 3), 3);
        assert_eq!(distance(5, 2, 3), 3);
        assert_eq!(distance(5, 0, 3), 1);
        let max = crate::layout::MAX_CAPACITY as u32;
        assert_eq!(distance(2 * max - 1, max - 1, max), max);
    }

    #[test]
    fn slots_advance_and_validity() {
        assert_eq!((slot(2, 3), slot(3, 3), slot(5, 3)), (2, 0, 2));
        assert_eq!(
            (advance(5, 1, 3), advance(4, 3, 3), advance(0, 0, 0)),
            (0, 1, 0)
        );
        let max = crate::layout::MAX_CAPACITY as u32;
        assert_eq!(advance(2 * max - 1, max, max), max - 1);
        assert_eq!(
            (next(4, 3), next(5, 3), next(0, 1), next(1, 1)),
            (5, 0, 1, 0)
        );
        assert!(valid(0, 0) && valid(5, 3) && !valid(6, 3) && !valid(1, 0));
    }
}
