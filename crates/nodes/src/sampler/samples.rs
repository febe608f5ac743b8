//! The sample data a [`Sampler`](super::Sampler) plays: [`Sample`]s (audio held in memory)
//! and a [`SampleSet`] that maps note numbers to them.

use std::fmt;

use super::interp::{PAD_AFTER, PAD_BEFORE};
use downbeat_graph::denormal::flush;

/// Most channels a sample may have (as many as a node's port).
pub const MAX_SAMPLE_CHANNELS: usize = 32;

/// Why a sample, a sample set or a sampler was refused. Every variant says what is wrong
/// and, where it applies, which note.
#[derive(Clone, Debug, PartialEq)]
pub enum SamplerError {
    /// A sample with no frames.
    Empty,
    /// A sample's channel count outside `1..=32`, or an interleaved buffer whose length is
    /// not a multiple of it.
    Channels {
        /// The channel count given.
        channels: usize,
        /// The length of the interleaved buffer.
        len: usize,
    },
    /// A sample rate of 0.
    Rate(u32),
    /// A sample value that is not a finite number.
    NotFinite {
        /// The frame it is in.
        frame: usize,
    },
    /// A root or kit note outside `0..=127`.
    Note(f32),
    /// A kit naming the same note twice.
    DuplicateNote(u8),
    /// A kit with no sample at all.
    NoSamples,
    /// A sample whose channel count is neither 1 nor the sampler's.
    ChannelMismatch {
        /// The note the sample plays on (its root).
        note: u8,
        /// The sample's channels.
        got: usize,
        /// The sampler's channels.
        expected: usize,
    },
    /// A setting out of range: its name, the value and what is accepted.
    Setting {
        /// The setting (`voices`, `release`, `gain`, `channels`).
        name: &'static str,
        /// The value given.
        value: f64,
        /// What is accepted.
        expected: &'static str,
    },
}

impl fmt::Display for SamplerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SamplerError::Empty => write!(f, "the sample has no frames"),
            SamplerError::Channels { channels, len } => write!(
                f,
                "{len} values cannot be a sample of {channels} channels (1 to \
                 {MAX_SAMPLE_CHANNELS} channels, a whole number of frames)"
            ),
            SamplerError::Rate(r) => write!(f, "sample rate {r} Hz must be above 0"),
            SamplerError::NotFinite { frame } => {
                write!(
                    f,
                    "the sample holds a value that is not a number at frame {frame}"
                )
            }
            SamplerError::Note(n) => write!(f, "note {n} is outside 0 to 127"),
            SamplerError::DuplicateNote(n) => {
                write!(f, "note {n} ({}) is given two samples", note_name(*n))
            }
            SamplerError::NoSamples => write!(f, "no sample given"),
            SamplerError::ChannelMismatch {
                note,
                got,
                expected,
            } => write!(
                f,
                "the sample on note {note} has {got} channels; the sampler has {expected} \
                 (a sample has 1 channel or the sampler's count)"
            ),
            SamplerError::Setting {
                name,
                value,
                expected,
            } => write!(f, "`{name}` is {value}, expected {expected}"),
        }
    }
}

impl std::error::Error for SamplerError {}

/// The name of MIDI note `note` with its octave, as most DAWs write it: 60 is `C4`.
///
/// ```
/// use downbeat_nodes::note_name;
/// assert_eq!(note_name(60), "C4");
/// assert_eq!(note_name(37), "C#2");
/// ```
pub fn note_name(note: u8) -> String {
    const NAMES: [&str; 12] = [
        "C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B",
    ];
    let octave = i32::from(note / 12) - 1;
    format!("{}{octave}", NAMES[usize::from(note % 12)])
}

/// The MIDI note a key of a kit names: a number (`"36"`) or a name with its octave as
/// [`note_name`] writes it (`"C2"`, `"F#2"`, `"Bb1"`; 60 is `C4`); `None` for anything
/// else or a note outside `0..=127`.
///
/// ```
/// use downbeat_nodes::parse_note;
/// assert_eq!(parse_note("36"), Some(36));
/// assert_eq!(parse_note("C2"), Some(36));
/// assert_eq!(parse_note("F#2"), Some(42));
/// assert_eq!(parse_note("Bb-1"), Some(10));
/// assert_eq!(parse_note("H2"), None);
/// assert_eq!(parse_note("128"), None);
/// ```
pub fn parse_note(key: &str) -> Option<u8> {
    let key = key.trim();
    if let Ok(n) = key.parse::<u8>() {
        return (n <= 127).then_some(n);
    }
    let mut chars = key.chars();
    let base: i32 = match chars.next()?.to_ascii_uppercase() {
        'C' => 0,
        'D' => 2,
        'E' => 4,
        'F' => 5,
        'G' => 7,
        'A' => 9,
        'B' => 11,
        _ => return None,
    };
    let rest = chars.as_str();
    let (shift, octave) = match rest.as_bytes().first() {
        Some(b'#') => (1, &rest[1..]),
        Some(b'b') => (-1, &rest[1..]),
        _ => (0, rest),
    };
    let octave: i32 = octave.parse().ok()?;
    let n = (octave + 1) * 12 + base + shift;
    u8::try_from(n).ok().filter(|&n| n <= 127)
}

/// Audio held in memory: one or more channels at a sample rate, kept per channel with a
/// few zeros before and after so that the interpolator reads past either end without a
/// test.
///
/// ```
/// use downbeat_nodes::Sample;
/// // Two stereo frames, interleaved.
/// let s = Sample::from_interleaved(&[0.1, 0.2, 0.3, 0.4], 2, 48000).unwrap();
/// assert_eq!((s.channels(), s.frames()), (2, 2));
/// assert!(Sample::from_interleaved(&[], 1, 48000).is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    channels: usize,
    frames: usize,
    rate: u32,
    /// Channel after channel, each `PAD_BEFORE` zeros, the frames, `PAD_AFTER` zeros.
    data: Box<[f32]>,
}

impl Sample {
    /// A sample from `channels` interleaved channels recorded at `rate` Hz (the sampler
    /// plays it at its own rate, pitched so that it sounds as recorded). A value smaller
    /// than [`TINY`](downbeat_graph::denormal::TINY) in magnitude is kept as 0.
    ///
    /// # Errors
    /// [`SamplerError::Channels`], [`SamplerError::Empty`], [`SamplerError::Rate`], or
    /// [`SamplerError::NotFinite`] for a NaN or infinite value.
    pub fn from_interleaved(
        samples: &[f32],
        channels: usize,
        rate: u32,
    ) -> Result<Self, SamplerError> {
        if !(1..=MAX_SAMPLE_CHANNELS).contains(&channels) || samples.len() % channels != 0 {
            return Err(SamplerError::Channels {
                channels,
                len: samples.len(),
            });
        }
        if samples.is_empty() {
            return Err(SamplerError::Empty);
        }
        if rate == 0 {
            return Err(SamplerError::Rate(rate));
        }
        if let Some(i) = samples.iter().position(|s| !s.is_finite()) {
            return Err(SamplerError::NotFinite {
                frame: i / channels,
            });
        }
        let frames = samples.len() / channels;
        let stride = PAD_BEFORE + frames + PAD_AFTER;
        let mut data = vec![0.0f32; stride * channels].into_boxed_slice();
        for c in 0..channels {
            let ch = &mut data[c * stride + PAD_BEFORE..c * stride + PAD_BEFORE + frames];
            for (d, s) in ch.iter_mut().zip(samples[c..].iter().step_by(channels)) {
                // Like every node's output, sample data is 0 or at least `TINY`: a
                // subnormal value in a file would be read as 0 by a processor in
                // flush-to-zero mode and kept by one without (WebAssembly).
                *d = flush(*s);
            }
        }
        Ok(Self {
            channels,
            frames,
            rate,
            data,
        })
    }

    /// Channels.
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// Frames.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// The rate it was recorded at, in Hz.
    pub fn rate(&self) -> u32 {
        self.rate
    }

    /// Bytes of sample data held.
    pub fn bytes(&self) -> usize {
        std::mem::size_of_val(&*self.data)
    }

    /// Channel `c` with its padding: frame `i` is at `PAD_BEFORE + i`.
    pub(super) fn padded(&self, c: usize) -> &[f32] {
        let stride = PAD_BEFORE + self.frames + PAD_AFTER;
        &self.data[c * stride..(c + 1) * stride]
    }
}

/// A sample and the note at which it sounds as recorded.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Zone {
    pub(super) sample: Sample,
    pub(super) root: f32,
}

/// Which sample each note plays: a drum kit (one sample per note, each at its recorded
/// pitch) or one sample played across the keyboard, pitched from its root note.
///
/// ```
/// use downbeat_nodes::{Sample, SampleSet};
/// let click = Sample::from_interleaved(&[1.0, 0.5], 1, 48000).unwrap();
/// let kit = SampleSet::kit([(36, click.clone()), (38, click.clone())]).unwrap();
/// assert_eq!(kit.notes().collect::<Vec<_>>(), [36, 38]);
/// // A kit naming a note twice is refused, naming the note.
/// let twice = SampleSet::kit([(36, click.clone()), (36, click.clone())]).unwrap_err();
/// assert_eq!(twice.to_string(), "note 36 (C2) is given two samples");
/// // One sample pitched across the keyboard: every note plays it.
/// let keys = SampleSet::keyboard(click, 60.0).unwrap();
/// assert_eq!(keys.notes().count(), 128);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SampleSet {
    pub(super) zones: Vec<Zone>,
    /// For each note, the zone it plays, or `NONE`.
    pub(super) map: [u16; 128],
}

pub(super) const NONE: u16 = u16::MAX;

impl SampleSet {
    /// One sample that every note plays, pitched by the note's distance from `root` (a
    /// note number, fractions allowed): `root` plays it as recorded, `root + 12` an octave
    /// up (twice as fast).
    ///
    /// # Errors
    /// [`SamplerError::Note`] for a root outside `0..=127`.
    pub fn keyboard(sample: Sample, root: f32) -> Result<Self, SamplerError> {
        if !(0.0..=127.0).contains(&root) {
            return Err(SamplerError::Note(root));
        }
        Ok(Self {
            zones: vec![Zone { sample, root }],
            map: [0; 128],
        })
    }

    /// A kit: each note plays its own sample as recorded; other notes play nothing.
    ///
    /// # Errors
    /// [`SamplerError::Note`] for a note above 127, [`SamplerError::DuplicateNote`] for a
    /// note given twice, [`SamplerError::NoSamples`] for an empty kit.
    pub fn kit(hits: impl IntoIterator<Item = (u8, Sample)>) -> Result<Self, SamplerError> {
        let mut map = [NONE; 128];
        let mut zones = Vec::new();
        for (note, sample) in hits {
            let slot = map
                .get_mut(usize::from(note))
                .ok_or(SamplerError::Note(f32::from(note)))?;
            if *slot != NONE {
                return Err(SamplerError::DuplicateNote(note));
            }
            *slot = zones.len() as u16;
            zones.push(Zone {
                sample,
                root: f32::from(note),
            });
        }
        if zones.is_empty() {
            return Err(SamplerError::NoSamples);
        }
        Ok(Self { zones, map })
    }

    /// The notes that play a sample, in ascending order.
    pub fn notes(&self) -> impl Iterator<Item = u8> + '_ {
        (0..128u8).filter(|&n| self.map[usize::from(n)] != NONE)
    }

    /// Bytes of sample data held, every sample counted once.
    pub fn bytes(&self) -> usize {
        self.zones.iter().map(|z| z.sample.bytes()).sum()
    }

    /// The zone note `note` plays (rounded to the nearest key), if any.
    pub(super) fn zone_for(&self, note: f32) -> Option<usize> {
        let key = note.round() as usize;
        match self.map.get(key) {
            Some(&z) if z != NONE => Some(usize::from(z)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use downbeat_graph::denormal::TINY;

    #[test]
    fn values_below_tiny_are_stored_as_zero() {
        let subnormal = f32::MIN_POSITIVE / 4.0;
        let s =
            Sample::from_interleaved(&[1e-35, 0.5, subnormal, -TINY, -1e-31], 1, 48_000).unwrap();
        let frames = &s.data[PAD_BEFORE..PAD_BEFORE + s.frames];
        assert_eq!(frames, [0.0, 0.5, 0.0, -TINY, 0.0]);
    }
}
