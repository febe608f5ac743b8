//! Helpers shared by the integration tests.
#![allow(dead_code)]

/// A small deterministic generator (xorshift64*), so failures replay from the printed seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Waits politely: under Miri a spinning thread must let the other one run.
pub fn backoff() {
    if cfg!(miri) {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}
