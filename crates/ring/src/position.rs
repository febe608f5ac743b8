//! Arithmetic on positions, which run in `0..2 * capacity`.
//!
//! Counting to twice the capacity tells a full ring (positions `capacity` apart) from an empty one
//! (positions equal) without wasting a slot, for any capacity, with compares instead of a modulo.
//! Each side keeps its own position split as `slot + lap`, where `lap` is `0` or `capacity`, so
//! the hot path never has to turn a position back into a slot.

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

/// Splits a valid position into `(slot, lap)`.
#[inline]
pub(crate) fn split(position: u32, capacity: u32) -> (u32, u32) {
    if position < capacity {
        (position, 0)
    } else {
        (position - capacity, capacity)
    }
}

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
    fn split_and_valid() {
        assert_eq!(split(2, 3), (2, 0));
        assert_eq!(split(3, 3), (0, 3));
        assert_eq!(split(5, 3), (2, 3));
        assert!(valid(0, 0) && valid(5, 3) && !valid(6, 3) && !valid(1, 0));
    }
}
