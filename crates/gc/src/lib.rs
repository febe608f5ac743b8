//! The snapshot garbage collector for real-time audio (seed 002).
