//! Atom sequences: how notes reach a plugin's MIDI input, at their frames.
//!
//! A sequence is an `LV2_Atom_Sequence` (header, then events of a 64-bit frame time, an
//! atom header and the MIDI bytes, each padded to 8 bytes) in a buffer of 64-bit words, so
//! that every field is aligned as the C structs require.

use std::ffi::CStr;

use downbeat_graph::{NoteError, NoteEvent};

use super::features::urid;

/// Bytes of each atom port's buffer.
pub const ATOM_BUFFER_BYTES: usize = 16 * 1024;

/// MIDI messages the node holds for coming blocks.
pub const NOTE_CAPACITY: usize = 512;

/// The smallest page size of the machines Downbeat runs on: [`prefault_spare`] and
/// [`AtomBuffer::new`] store once per this many bytes.
const PAGE: usize = 4096;

/// Offsets, `PAGE` apart, of a byte on every page of a region of `len` bytes however it is
/// aligned (the last byte too, whose page the stride can skip).
fn page_offsets(len: usize) -> impl Iterator<Item = usize> {
    (0..len).step_by(PAGE).chain(len.checked_sub(1))
}

/// Stores a byte on every page of `v`'s spare capacity, so that filling it later does not
/// fault on the audio thread: the allocator hands out fresh memory the kernel maps only at
/// its first store, and a page fault is a trip into the kernel (the guard counts it).
pub(crate) fn prefault_spare<T>(v: &mut Vec<T>) {
    let spare = v.spare_capacity_mut();
    let len = std::mem::size_of_val(spare);
    let base = spare.as_mut_ptr().cast::<std::mem::MaybeUninit<u8>>();
    for offset in page_offsets(len) {
        // SAFETY: `offset < len`, inside the spare capacity the vector owns; it holds no
        // value yet, so storing an uninitialised-typed byte there changes nothing anyone
        // reads. Volatile, so the store is not dropped as dead.
        unsafe {
            base.add(offset)
                .write_volatile(std::mem::MaybeUninit::new(0))
        };
    }
}

/// The URIDs atom buffers are written with.
#[derive(Clone, Copy, Debug)]
pub struct AtomUrids {
    sequence: u32,
    chunk: u32,
    midi: u32,
}

impl AtomUrids {
    /// Maps the URIs (off the audio thread).
    pub fn new() -> Self {
        let get = |uri: &CStr| urid(uri);
        AtomUrids {
            sequence: get(c"http://lv2plug.in/ns/ext/atom#Sequence"),
            chunk: get(c"http://lv2plug.in/ns/ext/atom#Chunk"),
            midi: get(c"http://lv2plug.in/ns/ext/midi#MidiEvent"),
        }
    }
}

impl Default for AtomUrids {
    fn default() -> Self {
        Self::new()
    }
}

/// Two 32-bit fields in one word, in the machine's byte order (as a C struct lays them).
pub(crate) fn pair(a: u32, b: u32) -> u64 {
    let mut bytes = [0; 8];
    bytes[..4].copy_from_slice(&a.to_ne_bytes());
    bytes[4..].copy_from_slice(&b.to_ne_bytes());
    u64::from_ne_bytes(bytes)
}

/// One atom port's buffer.
pub struct AtomBuffer {
    words: Box<[u64]>,
}

impl AtomBuffer {
    /// A zeroed buffer of [`ATOM_BUFFER_BYTES`], every page of it already mapped.
    pub fn new() -> Self {
        let mut words = vec![0u64; ATOM_BUFFER_BYTES / 8].into_boxed_slice();
        // A zeroed allocation comes from calloc, whose fresh pages are mapped only at their
        // first store: without these, a block with many events (or a plugin writing a long
        // output) would take that fault on the audio thread.
        for offset in page_offsets(ATOM_BUFFER_BYTES) {
            let word: *mut u64 = &mut words[offset / 8];
            // SAFETY: a live element of `words`; it already holds 0. Volatile, because a
            // store of zero into calloc'd memory is otherwise removed as having no effect.
            unsafe { word.write_volatile(0) };
        }
        AtomBuffer { words }
    }

    /// Where the plugin reads or writes.
    pub fn as_mut_ptr(&mut self) -> *mut u64 {
        self.words.as_mut_ptr()
    }

    /// Writes a sequence holding `events` (frame, MIDI bytes) in order, as many as fit.
    /// Real-time safe. Returns how many were written.
    pub fn write_sequence<'a>(
        &mut self,
        urids: &AtomUrids,
        events: impl Iterator<Item = &'a Midi>,
    ) -> usize {
        self.write_sequence_after(urids, &[], events)
    }

    /// Like [`write_sequence`](AtomBuffer::write_sequence), with `first` (the words of whole
    /// events at frame 0, such as a `time:Position` object) before the MIDI events.
    /// Real-time safe.
    pub fn write_sequence_after<'a>(
        &mut self,
        urids: &AtomUrids,
        first: &[u64],
        events: impl Iterator<Item = &'a Midi>,
    ) -> usize {
        // Header (atom size and type; sequence unit 0 = frames, pad), then 3 words per
        // event: time, body atom header, up to 8 bytes of MIDI.
        let mut w = 2;
        if w + first.len() <= self.words.len() {
            self.words[w..w + first.len()].copy_from_slice(first);
            w += first.len();
        }
        let mut n = 0;
        for e in events {
            if w + 3 > self.words.len() {
                break;
            }
            self.words[w] = e.frame as u64;
            self.words[w + 1] = pair(u32::from(e.len), urids.midi);
            let mut data = [0u8; 8];
            data[..3].copy_from_slice(&e.bytes);
            self.words[w + 2] = u64::from_ne_bytes(data);
            w += 3;
            n += 1;
        }
        let body = (w * 8 - 8) as u32;
        self.words[0] = pair(body, urids.sequence);
        self.words[1] = pair(0, 0);
        n
    }

    /// Readies the buffer for a plugin's output: an empty chunk announcing the capacity.
    pub fn prepare_output(&mut self, urids: &AtomUrids) {
        self.words[0] = pair((self.words.len() * 8 - 8) as u32, urids.chunk);
    }
}

impl Default for AtomBuffer {
    fn default() -> Self {
        Self::new()
    }
}

/// A MIDI message for a coming frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Midi {
    /// Frame, counted from the start of the next block the node processes.
    pub frame: usize,
    /// Status and data bytes.
    pub bytes: [u8; 3],
    /// How many of `bytes` are used.
    pub len: u8,
}

/// The MIDI messages for `event`, handed one by one to `out` (at most 16, for all notes
/// off on every channel). Notes round to the nearest key: MIDI has no fractions.
///
/// ```
/// use downbeat_graph::NoteEvent;
/// use downbeat_plugin::lv2::atom::to_midi;
///
/// let mut msgs = Vec::new();
/// to_midi(NoteEvent::On { channel: 1, note: 60.0, velocity: 1.0 }, |m| { msgs.push(m); Ok(()) })
///     .unwrap();
/// assert_eq!(msgs, vec![[0x91, 60, 127]]);
/// ```
///
/// # Errors
/// The event's own validation error, or whatever `out` returns.
pub fn to_midi(
    event: NoteEvent,
    mut out: impl FnMut([u8; 3]) -> Result<(), NoteError>,
) -> Result<(), NoteError> {
    event.validate()?;
    match event.normalized() {
        NoteEvent::On {
            channel,
            note,
            velocity,
        } => out([
            0x90 | channel,
            note.round() as u8,
            ((velocity * 127.0).round() as u8).clamp(1, 127),
        ]),
        NoteEvent::Off { channel, note } => out([0x80 | channel, note.round() as u8, 64]),
        NoteEvent::AllNotesOff { channel: Some(c) } => out([0xB0 | c, 123, 0]),
        NoteEvent::AllNotesOff { channel: None } => {
            (0..16).try_for_each(|c| out([0xB0 | c, 123, 0]))
        }
        NoteEvent::PitchBend { channel, value } => {
            let v = ((value + 1.0) * 8192.0).round().clamp(0.0, 16383.0) as u16;
            out([0xE0 | channel, (v & 0x7f) as u8, (v >> 7) as u8])
        }
        NoteEvent::Sustain { channel, on } => out([0xB0 | channel, 64, if on { 127 } else { 0 }]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sequence_is_laid_out_as_lv2_atom_sequence() {
        let urids = AtomUrids::new();
        let mut buf = AtomBuffer::new();
        let events = [
            Midi {
                frame: 5,
                bytes: [0x90, 60, 100],
                len: 3,
            },
            Midi {
                frame: 9,
                bytes: [0x80, 60, 64],
                len: 3,
            },
        ];
        assert_eq!(buf.write_sequence(&urids, events.iter()), 2);
        // SAFETY: the buffer holds 16 KiB; reading its first 64 bytes as bytes is in bounds
        // and u8 has no alignment or validity requirement.
        let bytes = unsafe { std::slice::from_raw_parts(buf.as_mut_ptr().cast::<u8>(), 64) };
        let u32_at = |o: usize| u32::from_ne_bytes(bytes[o..o + 4].try_into().unwrap());
        assert_eq!(
            u32_at(0),
            8 + 2 * 24,
            "body size: sequence body + two events"
        );
        assert_eq!(u32_at(4), urids.sequence);
        assert_eq!(u32_at(8), 0, "unit 0: frame times");
        assert_eq!(i64::from_ne_bytes(bytes[16..24].try_into().unwrap()), 5);
        assert_eq!(u32_at(24), 3);
        assert_eq!(u32_at(28), urids.midi);
        assert_eq!(&bytes[32..35], &[0x90, 60, 100]);
        assert_eq!(i64::from_ne_bytes(bytes[40..48].try_into().unwrap()), 9);
    }

    #[test]
    fn notes_become_midi() {
        let mut got = Vec::new();
        let mut push = |e| {
            to_midi(e, |m| {
                got.push(m);
                Ok(())
            })
        };
        push(NoteEvent::On {
            channel: 0,
            note: 69.4,
            velocity: 0.0,
        })
        .unwrap();
        push(NoteEvent::PitchBend {
            channel: 2,
            value: 0.0,
        })
        .unwrap();
        push(NoteEvent::AllNotesOff { channel: None }).unwrap();
        assert!(push(NoteEvent::On {
            channel: 16,
            note: 1.0,
            velocity: 1.0
        })
        .is_err());
        assert_eq!(got[0], [0x80, 69, 64]);
        assert_eq!(got[1], [0xE2, 0, 64]);
        assert_eq!(got.len(), 2 + 16);
    }
}
