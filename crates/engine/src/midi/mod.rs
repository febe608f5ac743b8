//! MIDI: Standard MIDI Files turned into note events at exact sample frames.
//!
//! [`MidiFile::parse`] reads format 0 and format 1 files (running status, tempo changes,
//! ticks-per-quarter and SMPTE divisions) with the `midly` crate, after a validating pass
//! that locates any defect: a malformed or truncated file is refused with a
//! [`MidiError::Malformed`] naming the byte offset and what was expected there. Channel
//! messages become [`NoteEvent`]s (note on and off, sustain pedal, pitch bend, all notes
//! off) or, for other control changes, [`MidiMessage::Control`]; [`TempoMap`] converts
//! their ticks to frames with exact integer arithmetic.
//!
//! ```
//! use downbeat::midi::{MidiFile, MidiMessage};
//! use downbeat_graph::NoteEvent;
//!
//! // Format 0, 96 ticks per quarter: middle C for one quarter note at 120 bpm.
//! let bytes = [
//!     b"MThd".as_slice(), &[0, 0, 0, 6, 0, 0, 0, 1, 0, 96],
//!     b"MTrk", &[0, 0, 0, 11],
//!     &[0x00, 0x90, 60, 100], // delta 0: note on, channel 1
//!     &[0x60, 60, 0],         // delta 96, running status: velocity 0 = note off
//!     &[0x00, 0xFF, 0x2F, 0x00],
//! ]
//! .concat();
//! let file = MidiFile::parse(&bytes).unwrap();
//! let events: Vec<_> = file.frames(48000).collect();
//! assert_eq!(events[1].0, 24000); // half a second
//! assert_eq!(events[1].1, MidiMessage::Note(NoteEvent::Off { channel: 0, note: 60.0 }));
//!
//! let truncated = &bytes[..bytes.len() - 3];
//! let err = MidiFile::parse(truncated).unwrap_err();
//! assert!(err.to_string().starts_with("byte 30: expected"), "{err}");
//! ```

mod check;
mod live;
pub mod play;
mod tempo;

use std::fmt;
use std::path::{Path, PathBuf};

use downbeat_graph::NoteEvent;
use midly::{MetaMessage, MidiMessage as Wire, Timing, TrackEventKind};

pub use live::{MidiInput, MIDI_CAPACITY};
pub use tempo::{Division, TempoMap, DEFAULT_TEMPO};

/// Why a MIDI file could not be read.
#[derive(Debug)]
pub enum MidiError {
    /// The file could not be read from disk.
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The bytes are not a well-formed Standard MIDI File.
    Malformed {
        /// Byte offset from the start of the file where the defect is (the file's length
        /// when it ends too early).
        offset: usize,
        /// What the format requires there.
        expected: String,
        /// What is there instead.
        found: String,
    },
    /// A well-formed file using something this reader does not play.
    Unsupported {
        /// Byte offset of the field that says so.
        offset: usize,
        /// What is not supported and what is.
        what: String,
    },
}

impl MidiError {
    /// The byte offset of the defect, when the file could be read at all.
    pub fn offset(&self) -> Option<usize> {
        match self {
            MidiError::Io { .. } => None,
            MidiError::Malformed { offset, .. } | MidiError::Unsupported { offset, .. } => {
                Some(*offset)
            }
        }
    }
}

impl fmt::Display for MidiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MidiError::Io { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            MidiError::Malformed {
                offset,
                expected,
                found,
            } => write!(f, "byte {offset}: expected {expected}, found {found}"),
            MidiError::Unsupported { offset, what } => write!(f, "byte {offset}: {what}"),
        }
    }
}

impl std::error::Error for MidiError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MidiError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A channel message as the engine uses it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MidiMessage {
    /// Something for instruments: note on or off, pedal, bend, all notes off.
    Note(NoteEvent),
    /// Any other control change, for `[midi.cc]` mappings to parameters.
    Control {
        /// MIDI channel, `0..=15`.
        channel: u8,
        /// Controller number, `0..=127`.
        controller: u8,
        /// Value, `0..=127`.
        value: u8,
    },
}

/// The engine's meaning of a wire message, or `None` for what it does not use (program
/// change, aftertouch). Shared by files and live input.
///
/// | wire | becomes |
/// |------|---------|
/// | note on, velocity `v` > 0 | [`NoteEvent::On`] with velocity `v / 127` |
/// | note off, or note on with velocity 0 | [`NoteEvent::Off`] |
/// | controller 64 (sustain) | [`NoteEvent::Sustain`], down from 64 |
/// | controllers 120, 123 to 127 (all sound/notes off, mode changes) | [`NoteEvent::AllNotesOff`] |
/// | pitch bend | [`NoteEvent::PitchBend`], `-1..=1` |
/// | other controllers | [`MidiMessage::Control`] |
pub fn translate(channel: u8, message: Wire) -> Option<MidiMessage> {
    let note = |n: midly::num::u7| f32::from(n.as_int());
    Some(match message {
        Wire::NoteOn { key, vel } if vel.as_int() > 0 => MidiMessage::Note(NoteEvent::On {
            channel,
            note: note(key),
            velocity: f32::from(vel.as_int()) / 127.0,
        }),
        Wire::NoteOn { key, .. } | Wire::NoteOff { key, .. } => MidiMessage::Note(NoteEvent::Off {
            channel,
            note: note(key),
        }),
        Wire::Controller { controller, value } => match controller.as_int() {
            64 => MidiMessage::Note(NoteEvent::Sustain {
                channel,
                on: value.as_int() >= 64,
            }),
            120 | 123..=127 => MidiMessage::Note(NoteEvent::AllNotesOff {
                channel: Some(channel),
            }),
            c => MidiMessage::Control {
                channel,
                controller: c,
                value: value.as_int(),
            },
        },
        Wire::PitchBend { bend } => MidiMessage::Note(NoteEvent::PitchBend {
            channel,
            value: bend.as_f32().clamp(-1.0, 1.0),
        }),
        Wire::Aftertouch { .. } | Wire::ProgramChange { .. } | Wire::ChannelAftertouch { .. } => {
            return None
        }
    })
}

/// A message at a tick of the file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimedMessage {
    /// Ticks from the start of the file.
    pub tick: u64,
    /// The track it came from (0 for format 0).
    pub track: u16,
    /// Byte offset of the event in the file.
    pub offset: usize,
    /// The message.
    pub message: MidiMessage,
}

/// A Standard MIDI File, read and validated: its messages in playing order and its tempo
/// map.
#[derive(Clone, Debug)]
pub struct MidiFile {
    format: u16,
    tracks: u16,
    messages: Vec<TimedMessage>,
    tempo: TempoMap,
    end_tick: u64,
}

impl MidiFile {
    /// Reads and parses the file at `path`.
    ///
    /// # Errors
    /// [`MidiError::Io`] when it cannot be read; otherwise as [`MidiFile::parse`].
    pub fn read(path: &Path) -> Result<Self, MidiError> {
        let bytes = std::fs::read(path).map_err(|source| MidiError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&bytes)
    }

    /// Parses a Standard MIDI File of format 0 or 1.
    ///
    /// Messages of all tracks are merged in tick order; at one tick, earlier tracks come
    /// first and each track keeps its own order.
    ///
    /// # Errors
    /// [`MidiError::Malformed`] at the first defect, with its byte offset and what was
    /// expected there; [`MidiError::Unsupported`] for format 2.
    pub fn parse(bytes: &[u8]) -> Result<Self, MidiError> {
        let layout = check::check(bytes)?;
        let base = bytes.as_ptr() as usize;
        let offset_of = |s: &[u8]| (s.as_ptr() as usize).saturating_sub(base);
        // The validating pass has accepted the file; `midly` disagreeing would be a bug in
        // one of the two, reported at the place where it happened rather than hidden.
        let refused = |at: usize, e: midly::Error| MidiError::Malformed {
            offset: at,
            expected: "an event the MIDI parser accepts".into(),
            found: format!("an event it refuses ({e})"),
        };
        let (header, track_iter) = midly::parse(bytes).map_err(|e| refused(0, e))?;
        let division = match header.timing {
            Timing::Metrical(ppq) => Division::TicksPerQuarter(ppq.as_int()),
            Timing::Timecode(fps, ticks_per_frame) => Division::Smpte {
                fps: fps.as_int(),
                ticks_per_frame,
            },
        };
        let mut messages = Vec::new();
        let mut tempos = Vec::new();
        let mut end_tick = 0u64;
        for (track, events) in track_iter.enumerate() {
            let track = track as u16;
            let mut events = events.map_err(|e| refused(0, e))?.bytemapped();
            let mut tick = 0u64;
            loop {
                let at = offset_of(events.unread());
                let Some(event) = events.next() else { break };
                let (raw, event) = event.map_err(|e| refused(at, e))?;
                let offset = offset_of(raw);
                tick += u64::from(event.delta.as_int());
                match event.kind {
                    TrackEventKind::Midi { channel, message } => {
                        if let Some(message) = translate(channel.as_int(), message) {
                            messages.push(TimedMessage {
                                tick,
                                track,
                                offset,
                                message,
                            });
                        }
                    }
                    TrackEventKind::Meta(MetaMessage::Tempo(micros)) => {
                        tempos.push((tick, micros.as_int()));
                    }
                    _ => {}
                }
            }
            end_tick = end_tick.max(tick);
        }
        // Stable: at one tick, track order, then file order within a track.
        messages.sort_by_key(|m| (m.tick, m.track));
        Ok(Self {
            format: layout.format,
            tracks: layout.tracks,
            messages,
            tempo: TempoMap::new(division, tempos),
            end_tick,
        })
    }

    /// The file's format: 0 (one track) or 1 (simultaneous tracks).
    pub fn format(&self) -> u16 {
        self.format
    }

    /// Track chunks in the file.
    pub fn tracks(&self) -> u16 {
        self.tracks
    }

    /// The messages the engine uses, in playing order.
    pub fn messages(&self) -> &[TimedMessage] {
        &self.messages
    }

    /// The tempo map.
    pub fn tempo_map(&self) -> &TempoMap {
        &self.tempo
    }

    /// The tick of the file's last event (its latest End of Track).
    pub fn end_tick(&self) -> u64 {
        self.end_tick
    }

    /// The frame of the file's last event at `sample_rate`.
    pub fn end_frame(&self, sample_rate: u32) -> u64 {
        self.tempo.frame(self.end_tick, sample_rate)
    }

    /// The messages with the frames they fall on at `sample_rate`, in playing order.
    pub fn frames(&self, sample_rate: u32) -> impl Iterator<Item = (u64, MidiMessage)> + '_ {
        self.messages
            .iter()
            .map(move |m| (self.tempo.frame(m.tick, sample_rate), m.message))
    }
}
