//! Downbeat engine.
