//! [`Chunk`]: a stretch of decoded frames moving from the reader to the audio thread.

/// How a chunk ends its stream's data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// More follows (the next chunk of the same generation continues it, or wraps to the
    /// loop's start).
    More,
    /// The file ends after this chunk's frames.
    Eof,
    /// The file is damaged after this chunk's frames: nothing follows until a seek.
    Damaged,
}

/// Decoded frames in the file's channels and rate, with where they come from. Chunks are
/// allocated once per stream and go round between the reader (which fills them) and the
/// audio thread (which empties them) through two rings, so neither side allocates.
#[derive(Debug)]
pub(crate) struct Chunk {
    /// The seek generation the frames belong to: the audio thread drops any chunk of an
    /// earlier one, filled before the reader saw its latest seek.
    pub(crate) generation: u32,
    /// The file frame of the first frame held.
    pub(crate) frame: u64,
    /// Frames held (at most the capacity of `data`).
    pub(crate) frames: usize,
    pub(crate) end: End,
    /// Interleaved samples, `capacity × channels`.
    pub(crate) data: Box<[f32]>,
}

impl Chunk {
    pub(crate) fn new(frames: usize, channels: usize) -> Box<Self> {
        Box::new(Self {
            generation: 0,
            frame: 0,
            frames: 0,
            end: End::More,
            data: vec![0.0; frames * channels].into_boxed_slice(),
        })
    }
}
