//! Arithmetic on positions, which run in `0..2 * capacity`.
//!
//! Counting to twice the capacity tells a full ring (positions `capacity` apart) from an empty one
//! (positions equal) without wasting a slot, for any capacity, with compares instead of a modulo.

/// Slots from position `from` forward to position `to`.
///
/// Exact when both are valid positions. One of them may come from a peer that breaks the
/// protocol (see [`checked`]); the arithmetic wraps then instead of panicking, and the caller
/// throws the result away.
#[inline(always)]
pub(crate) fn distance(from: u32, to: u32, capacity: u32) -> u32 {
    // Exact for valid positions: both are below `2 * capacity <= 2^31`.
    if to >= from {
        to - from
    } else {
        to.wrapping_add(2 * capacity).wrapping_sub(from)
    }
}

/// The distance from `from` to `to` when `peer`, the one of the two just read from the other
/// side, is a position and the distance is at most `capacity`; `None` for anything else, which
/// only a peer breaking the protocol can store.
///
/// A zero-capacity ring always gets `None`; every caller reads that as "no slots", which is
/// the right answer for that ring.
#[inline(always)]
pub(crate) fn checked(from: u32, to: u32, peer: u32, capacity: u32) -> Option<u32> {
    let d = distance(from, to, capacity);
    // `&`, not `&&`: both compares are cheap, and one branch is better than two.
    ((peer < 2 * capacity) & (d <= capacity)).then_some(d)
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
/// the chain, rather than a select that waits for the compare. What keeps the compiler from
/// turning the branch into a select is [`wrapped`].
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

/// Marks the wrap as a path of its own: an empty `asm!` block must run exactly when the branch
/// is taken, so the compiler cannot compute both sides and select.
///
/// This used to be a call to an empty `#[cold]` function. Compiled in another crate, that was
/// an unknown call to the optimiser, which then kept the producer's or consumer's fields in
/// memory around it: on a ring of 4, a call every 8 operations plus spills cost 17% more
/// instructions than this. The empty block touches no memory and no flags, so nothing is
/// spilled. Miri and wasm32 cannot run `asm!`; they get the select.
#[inline(always)]
fn wrapped() {
    #[cfg(all(not(miri), any(target_arch = "x86_64", target_arch = "aarch64")))]
    // SAFETY: an empty instruction sequence that reads and writes nothing.
    unsafe {
        core::arch::asm!("", options(nomem, nostack, preserves_flags));
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
