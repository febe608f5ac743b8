//! [`TRANSPORT_ID`]: a plugin that writes the transport of each `process` call into its audio
//! output, exactly, so that a host's test can read back what the plugin was given.
//!
//! It has no audio input and one output port of [`TRANSPORT_CHANNELS`] channels. Each field
//! of [`TransportField`] is a 64-bit word (an integer, the bits of a CLAP fixed-point time,
//! or the bits of an `f64`) written over three channels, `3 * field` to `3 * field + 2`:
//! bits 0 to 23, 24 to 47 and 48 to 63, each a whole number below 2^24 and so exact in an
//! `f32`. Every sample of a channel holds the same value, so a block of one frame carries
//! the whole record. [`decode`] reads a record back from the first frame of each channel.

use clack_plugin::events::spaces::CoreEventSpace;
use clack_plugin::prelude::*;

/// Plugin id of the transport recorder.
pub const TRANSPORT_ID: &str = "org.downbeat.test.transport";

/// One field of the record, in channel order (field `f` is in channels `3f` to `3f + 2`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum TransportField {
    /// 1 when `clap_process.transport` was given, 0 when it was null (every other field is
    /// then 0, but for the two last).
    Given,
    /// The transport's flags (`CLAP_TRANSPORT_*`).
    Flags,
    /// `song_pos_beats`: CLAP fixed point, 2^31 to the beat, as an `i64`'s bits.
    SongPosBeats,
    /// `song_pos_seconds`: fixed point, 2^31 to the second.
    SongPosSeconds,
    /// `tempo`, the bits of an `f64` (bpm).
    Tempo,
    /// `tempo_inc`, the bits of an `f64` (bpm per sample).
    TempoInc,
    /// `loop_start_beats`, fixed point.
    LoopStartBeats,
    /// `loop_end_beats`, fixed point.
    LoopEndBeats,
    /// `loop_start_seconds`, fixed point.
    LoopStartSeconds,
    /// `loop_end_seconds`, fixed point.
    LoopEndSeconds,
    /// `bar_start`, fixed point.
    BarStart,
    /// `bar_number`, sign-extended to 64 bits.
    BarNumber,
    /// `tsig_num`.
    TsigNum,
    /// `tsig_denom`.
    TsigDenom,
    /// How many `CLAP_EVENT_TRANSPORT` events the input event list held.
    TransportEvents,
    /// The call's frame count.
    Frames,
}

/// How many fields a record has.
pub const TRANSPORT_FIELDS: usize = TransportField::Frames as usize + 1;

/// The recorder's output channels: three per field.
pub const TRANSPORT_CHANNELS: usize = 3 * TRANSPORT_FIELDS;

/// The record of one call: each field's 64 bits, in [`TransportField`] order.
fn record(process: &Process, events: &Events, frames: u32) -> [u64; TRANSPORT_FIELDS] {
    let mut r = [0u64; TRANSPORT_FIELDS];
    if let Some(t) = process.transport {
        let fixed = |v: clack_plugin::utils::FixedPoint| v.to_bits() as u64;
        r[TransportField::Given as usize] = 1;
        r[TransportField::Flags as usize] = u64::from(t.flags.bits());
        r[TransportField::SongPosBeats as usize] = fixed(t.song_pos_beats);
        r[TransportField::SongPosSeconds as usize] = fixed(t.song_pos_seconds);
        r[TransportField::Tempo as usize] = t.tempo.to_bits();
        r[TransportField::TempoInc as usize] = t.tempo_inc.to_bits();
        r[TransportField::LoopStartBeats as usize] = fixed(t.loop_start_beats);
        r[TransportField::LoopEndBeats as usize] = fixed(t.loop_end_beats);
        r[TransportField::LoopStartSeconds as usize] = fixed(t.loop_start_seconds);
        r[TransportField::LoopEndSeconds as usize] = fixed(t.loop_end_seconds);
        r[TransportField::BarStart as usize] = fixed(t.bar_start);
        r[TransportField::BarNumber as usize] = i64::from(t.bar_number) as u64;
        r[TransportField::TsigNum as usize] = u64::from(t.time_signature_numerator);
        r[TransportField::TsigDenom as usize] = u64::from(t.time_signature_denominator);
    }
    r[TransportField::TransportEvents as usize] = events
        .input
        .iter()
        .filter(|e| matches!(e.as_core_event(), Some(CoreEventSpace::Transport(_))))
        .count() as u64;
    r[TransportField::Frames as usize] = u64::from(frames);
    r
}

/// The three exact `f32` pieces of a word: bits 0 to 23, 24 to 47, 48 to 63.
fn split(word: u64) -> [f32; 3] {
    const LOW: u64 = (1 << 24) - 1;
    [
        (word & LOW) as f32,
        ((word >> 24) & LOW) as f32,
        (word >> 48) as f32,
    ]
}

/// Reads a record back from the value of each of the [`TRANSPORT_CHANNELS`] channels (any
/// one sample of each: they are all alike).
///
/// ```
/// use downbeat_clap_test_plugins::{decode, TransportField, TRANSPORT_CHANNELS};
///
/// let mut channels = [0.0f32; TRANSPORT_CHANNELS];
/// channels[3 * TransportField::Tempo as usize + 2] = 16478.0; // 0x405E: 120.0's top bits
/// assert_eq!(f64::from_bits(decode(&channels)[TransportField::Tempo as usize]), 120.0);
/// ```
pub fn decode(channels: &[f32]) -> [u64; TRANSPORT_FIELDS] {
    let mut r = [0u64; TRANSPORT_FIELDS];
    for (word, parts) in r.iter_mut().zip(channels.chunks_exact(3)) {
        *word = parts[0] as u64 | (parts[1] as u64) << 24 | (parts[2] as u64) << 48;
    }
    r
}

/// The recorder's `process`: the record, written over the whole block.
pub(crate) fn process(
    process: &Process,
    audio: &mut Audio,
    events: &Events,
) -> Result<(), PluginError> {
    let frames = audio.frames_count();
    let words = record(process, events, frames);
    let mut port = audio
        .output_port(0)
        .ok_or(PluginError::Message("no audio output"))?;
    let mut channels = port
        .channels()?
        .into_f32()
        .ok_or(PluginError::Message("expected 32-bit float audio"))?;
    for (c, ch) in channels.iter_mut().enumerate() {
        let value = words.get(c / 3).map_or(0.0, |&w| split(w)[c % 3]);
        ch.fill(value);
    }
    Ok(())
}
