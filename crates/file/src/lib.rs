//! Audio files: decoding, resampling, and the `player` node that streams a file from disk.

pub mod player;
pub mod stream;


