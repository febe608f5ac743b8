//! Note events: what a keyboard, a sequencer or a MIDI file tells an instrument.
//!
//! A [`NoteEvent`] carries no time of its own: whoever delivers it (a node's
//! `note_on`-style methods, the schedule's per-block event list) pairs it with the frame it
//! takes effect at. Channels are numbered as on the MIDI wire, `0..=15`; project files and
//! the command line count them `1..=16` like every MIDI device does.

use std::fmt;

use crate::math;

/// Highest MIDI channel number as carried by a [`NoteEvent`] (`0..=15`).
pub const MAX_CHANNEL: u8 = 15;

/// Highest note number accepted: MIDI's own range, `0..=127`, fractions allowed in between.
pub const MAX_NOTE: f32 = 127.0;

/// A note or performance event.
///
/// Velocity is `0..=1` (MIDI velocity / 127). As in MIDI, a note on with velocity 0 is a note
/// off; [`NoteEvent::normalized`] turns it into one, and every receiver treats the two the
/// same.
///
/// ```
/// use downbeat_graph::NoteEvent;
///
/// let on = NoteEvent::On { channel: 0, note: 60.5, velocity: 0.8 };
/// assert!(on.validate().is_ok());
/// let silent = NoteEvent::On { channel: 0, note: 60.5, velocity: 0.0 };
/// assert_eq!(silent.normalized(), NoteEvent::Off { channel: 0, note: 60.5 });
/// assert!(NoteEvent::On { channel: 16, note: 60.0, velocity: 1.0 }.validate().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NoteEvent {
    /// Starts a note.
    On {
        /// MIDI channel, `0..=15`.
        channel: u8,
        /// Note number, `0..=127`; 69 is A4 (440 Hz), fractions are microtones.
        note: f32,
        /// Strength, `0..=1`; 0 means note off.
        velocity: f32,
    },
    /// Releases the note `note` held on `channel` (the same number the note on carried).
    Off {
        /// MIDI channel, `0..=15`.
        channel: u8,
        /// Note number, as given to the note on.
        note: f32,
    },
    /// Releases every note, on one channel or (with `None`) on all of them.
    AllNotesOff {
        /// The channel, or `None` for every channel.
        channel: Option<u8>,
    },
    /// Bends the pitch of every note on `channel`.
    PitchBend {
        /// MIDI channel, `0..=15`.
        channel: u8,
        /// `-1..=1`, where ±1 is the receiver's bend range (MIDI's 14-bit value, centred and
        /// scaled; 0 is no bend).
        value: f32,
    },
    /// The sustain pedal: while it is down, released notes keep sounding until it is up.
    Sustain {
        /// MIDI channel, `0..=15`.
        channel: u8,
        /// `true` while the pedal is down.
        on: bool,
    },
}

impl NoteEvent {
    /// The same event with a velocity-0 note on written as the note off it means.
    pub fn normalized(self) -> Self {
        match self {
            NoteEvent::On {
                channel,
                note,
                velocity: 0.0,
            } => NoteEvent::Off { channel, note },
            other => other,
        }
    }

    /// The channel the event is on; `None` for an all-notes-off sent to every channel.
    pub fn channel(&self) -> Option<u8> {
        match *self {
            NoteEvent::On { channel, .. }
            | NoteEvent::Off { channel, .. }
            | NoteEvent::PitchBend { channel, .. }
            | NoteEvent::Sustain { channel, .. } => Some(channel),
            NoteEvent::AllNotesOff { channel } => channel,
        }
    }

    /// Checks every field against its range. Receivers refuse what this refuses; call it
    /// on the control side to report the reason. Real-time safe (no allocation).
    ///
    /// # Errors
    /// The first field out of range, as a [`NoteError`].
    pub fn validate(&self) -> Result<(), NoteError> {
        if let Some(channel) = self.channel() {
            if channel > MAX_CHANNEL {
                return Err(NoteError::Channel(channel));
            }
        }
        match *self {
            NoteEvent::On { note, velocity, .. } => {
                check_note(note)?;
                if !(0.0..=1.0).contains(&velocity) {
                    return Err(NoteError::Velocity(velocity));
                }
            }
            NoteEvent::Off { note, .. } => check_note(note)?,
            NoteEvent::PitchBend { value, .. } => {
                if !(-1.0..=1.0).contains(&value) {
                    return Err(NoteError::Bend(value));
                }
            }
            NoteEvent::AllNotesOff { .. } | NoteEvent::Sustain { .. } => {}
        }
        Ok(())
    }
}

fn check_note(note: f32) -> Result<(), NoteError> {
    if (0.0..=MAX_NOTE).contains(&note) {
        Ok(())
    } else {
        Err(NoteError::Note(note))
    }
}

/// Why a note event was refused. `Copy` and free of allocation, so the audio thread can
/// return it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NoteError {
    /// A channel above 15.
    Channel(u8),
    /// A note number outside `0..=127` (or not a number).
    Note(f32),
    /// A velocity outside `0..=1` (or not a number).
    Velocity(f32),
    /// A pitch bend outside `-1..=1` (or not a number).
    Bend(f32),
    /// The node does not play notes.
    NotAnInstrument,
    /// The receiver's list of pending events is full (its capacity is fixed when it is
    /// built, so the audio thread never allocates); the event was not taken.
    Full {
        /// How many events the list holds.
        capacity: usize,
    },
}

impl fmt::Display for NoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            NoteError::Channel(c) => write!(
                f,
                "MIDI channel {} does not exist (channels are 1 to 16)",
                u32::from(c) + 1
            ),
            NoteError::Note(n) => write!(f, "note number {n} is outside 0 to 127"),
            NoteError::Velocity(v) => write!(f, "velocity {v} is outside 0 to 1"),
            NoteError::Bend(b) => write!(f, "pitch bend {b} is outside -1 to 1"),
            NoteError::NotAnInstrument => write!(f, "this node does not play notes"),
            NoteError::Full { capacity } => write!(
                f,
                "the list of pending note events is full ({capacity} events)"
            ),
        }
    }
}

impl std::error::Error for NoteError {}

/// The frequency in Hz of note number `note` (69 = A4 = 440 Hz, twelve-tone equal
/// temperament; fractions are microtones).
///
/// ```
/// assert_eq!(downbeat_graph::note_to_hz(69.0), 440.0);
/// assert!((downbeat_graph::note_to_hz(60.0) - 261.6256).abs() < 1e-4);
/// ```
pub fn note_to_hz(note: f64) -> f64 {
    440.0 * math::exp2((note - 69.0) / 12.0)
}
