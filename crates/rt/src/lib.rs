//! Real-time building blocks: guard, clock, notify, pool, reclaim, allocator.
