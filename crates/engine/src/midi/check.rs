//! The validating pass over a Standard MIDI File: walks its structure byte by byte and
//! stops at the first thing that is not what the format says must come there, with the byte
//! offset and what was expected.
//!
//! The parsing itself is `midly`'s; this pass exists because a parser's error says what
//! failed but not where, and a user with a broken file needs both. It checks everything
//! `midly` (with its `strict` feature) would refuse, and a little more (every track ends
//! with End of Track, tempos are not zero), so a file that passes here parses there.

use super::MidiError;

/// What the header says about the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    pub(super) format: u16,
    pub(super) tracks: u16,
}

/// Checks `bytes`; returns the header's format and track count.
pub(super) fn check(bytes: &[u8]) -> Result<Layout, MidiError> {
    let mut r = Reader {
        bytes,
        pos: 0,
        end: "the end of the file",
    };
    r.expect_id(
        b"MThd",
        "the chunk id `MThd` that starts every Standard MIDI File",
    )?;
    let header_len = r.u32("the header length (6)")?;
    if header_len < 6 {
        return Err(r.error_at(4, "a header length of at least 6", format!("{header_len}")));
    }
    let header_end = 8 + header_len as usize;
    let format = r.u16("the file format (0 or 1)")?;
    match format {
        0 | 1 => {}
        2 => {
            return Err(MidiError::Unsupported {
                offset: 8,
                what: "format 2 (independent sequences) is not supported; expected format 0 \
                       or 1"
                    .into(),
            })
        }
        other => return Err(r.error_at(8, "the file format 0 or 1", format!("{other}"))),
    }
    let tracks = r.u16("the number of tracks")?;
    if tracks == 0 {
        return Err(r.error_at(10, "at least one track", "0".into()));
    }
    if format == 0 && tracks != 1 {
        return Err(r.error_at(
            10,
            "exactly one track in a format 0 file",
            format!("{tracks}"),
        ));
    }
    let division = r.u16("the time division")?;
    if division & 0x8000 == 0 {
        if division == 0 {
            return Err(r.error_at(
                12,
                "a non-zero number of ticks per quarter note",
                "0".into(),
            ));
        }
    } else {
        // The high byte is minus the frame rate, in two's complement.
        let fps = -i16::from((division >> 8) as u8 as i8);
        if ![24, 25, 29, 30].contains(&fps) {
            return Err(r.error_at(
                12,
                "SMPTE frames per second of 24, 25, 29 (30 drop-frame) or 30",
                format!("{fps}"),
            ));
        }
        if division & 0xff == 0 {
            return Err(r.error_at(13, "a non-zero number of ticks per SMPTE frame", "0".into()));
        }
    }
    if header_end > bytes.len() {
        return Err(MidiError::Malformed {
            offset: bytes.len(),
            expected: format!(
                "{} more bytes of the header chunk",
                header_end - bytes.len()
            ),
            found: "the end of the file".into(),
        });
    }
    r.pos = header_end;

    let mut found = 0u16;
    while found < tracks {
        if r.remaining() == 0 {
            return Err(MidiError::Malformed {
                offset: r.pos,
                expected: format!(
                    "track chunk {} of the {tracks} the header declares",
                    found + 1
                ),
                found: "the end of the file".into(),
            });
        }
        let chunk_at = r.pos;
        let id: [u8; 4] = r.take(4, "a chunk id")?.try_into().expect("took 4 bytes");
        if !id.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
            return Err(r.error_at(chunk_at, "a chunk id (`MTrk`)", bytes_text(&id)));
        }
        let is_track = &id == b"MTrk";
        let len = r.u32("the chunk length")? as usize;
        let data_at = r.pos;
        if len > r.remaining() {
            return Err(MidiError::Malformed {
                offset: bytes.len(),
                expected: format!(
                    "{} more bytes of the chunk at byte {chunk_at}, which declares {len} bytes",
                    len - r.remaining()
                ),
                found: "the end of the file".into(),
            });
        }
        if is_track {
            check_track(bytes, data_at, data_at + len)?;
            found += 1;
        }
        // Chunks of other types are skipped, as the format asks of readers.
        r.pos = data_at + len;
    }
    Ok(Layout { format, tracks })
}

/// Checks the events of the track whose data is `bytes[start..end]`.
fn check_track(bytes: &[u8], start: usize, end: usize) -> Result<(), MidiError> {
    let mut r = Reader {
        bytes: &bytes[..end],
        pos: start,
        end: "the end of the track chunk",
    };
    let mut running: Option<u8> = None;
    loop {
        if r.remaining() == 0 {
            return Err(MidiError::Malformed {
                offset: end,
                expected: "an End of Track event (FF 2F 00) closing the track".into(),
                found: "the end of the track chunk".into(),
            });
        }
        r.varlen("a delta time")?;
        let status_at = r.pos;
        let first = r.byte("a status byte or, with running status, a data byte")?;
        let status = if first < 0x80 {
            r.pos -= 1;
            running.ok_or_else(|| {
                r.error_at(
                    status_at,
                    "a status byte (no running status is in effect to repeat)",
                    format!("data byte 0x{first:02X}"),
                )
            })?
        } else {
            first
        };
        match status {
            0x80..=0xEF => {
                running = Some(status);
                let count = if matches!(status & 0xF0, 0xC0 | 0xD0) {
                    1
                } else {
                    2
                };
                for _ in 0..count {
                    let at = r.pos;
                    let b = r.byte("a data byte of a channel message")?;
                    if b >= 0x80 {
                        return Err(r.error_at(
                            at,
                            "a data byte (below 0x80) of a channel message",
                            format!("0x{b:02X}"),
                        ));
                    }
                }
            }
            0xFF => {
                running = None;
                let kind = r.byte("a meta event type")?;
                let len_at = r.pos;
                let len = r.varlen("a meta event length")? as usize;
                let need = match kind {
                    0x00 if len != 0 => Some(2),
                    0x20 | 0x21 => Some(1),
                    0x2F => Some(0),
                    0x51 => Some(3),
                    0x54 => Some(5),
                    0x58 => Some(4),
                    0x59 => Some(2),
                    _ => None,
                };
                if let Some(need) = need {
                    if len != need {
                        return Err(r.error_at(
                            len_at,
                            &format!("length {need} for meta event type 0x{kind:02X}"),
                            format!("{len}"),
                        ));
                    }
                }
                let data_at = r.pos;
                let data = r.take(len, "the meta event's data")?;
                if kind == 0x51 && data == [0, 0, 0] {
                    return Err(r.error_at(
                        data_at,
                        "a tempo above 0 microseconds per quarter note",
                        "0".into(),
                    ));
                }
                if kind == 0x2F {
                    if r.remaining() != 0 {
                        return Err(r.error_at(
                            r.pos,
                            "the end of the track chunk after End of Track",
                            format!("{} more bytes", r.remaining()),
                        ));
                    }
                    return Ok(());
                }
            }
            0xF0 | 0xF7 => {
                running = None;
                let len = r.varlen("a system exclusive length")? as usize;
                r.take(len, "the system exclusive data")?;
            }
            other => {
                return Err(r.error_at(
                    status_at,
                    "a channel message, meta event (FF) or system exclusive (F0, F7) status",
                    format!("status 0x{other:02X}, which a MIDI file may not hold"),
                ))
            }
        }
    }
}

fn bytes_text(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02X}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A cursor over the file that names what it was reading when the bytes run out.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// What running out of `bytes` means: the end of the file or of a chunk.
    end: &'static str,
}

impl Reader<'_> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn error_at(&self, offset: usize, expected: &str, found: String) -> MidiError {
        MidiError::Malformed {
            offset,
            expected: expected.to_string(),
            found,
        }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], MidiError> {
        if self.remaining() < n {
            return Err(MidiError::Malformed {
                offset: self.bytes.len(),
                expected: format!("{what} ({} more bytes)", n - self.remaining()),
                found: self.end_name(),
            });
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn end_name(&self) -> String {
        self.end.into()
    }

    fn byte(&mut self, what: &str) -> Result<u8, MidiError> {
        if self.remaining() == 0 {
            return Err(MidiError::Malformed {
                offset: self.pos,
                expected: what.to_string(),
                found: self.end_name(),
            });
        }
        self.pos += 1;
        Ok(self.bytes[self.pos - 1])
    }

    fn u16(&mut self, what: &str) -> Result<u16, MidiError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, what: &str) -> Result<u32, MidiError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn expect_id(&mut self, id: &[u8; 4], what: &str) -> Result<(), MidiError> {
        let at = self.pos;
        let got = self.take(4, what)?;
        if got != id {
            let found = bytes_text(got);
            return Err(self.error_at(at, what, found));
        }
        Ok(())
    }

    /// A variable-length quantity: at most four bytes, seven bits each.
    fn varlen(&mut self, what: &str) -> Result<u32, MidiError> {
        let start = self.pos;
        let mut value = 0u32;
        for _ in 0..4 {
            let b = self.byte(what)?;
            value = (value << 7) | u32::from(b & 0x7F);
            if b < 0x80 {
                return Ok(value);
            }
        }
        Err(self.error_at(
            start,
            &format!("{what}: a variable-length number of at most 4 bytes"),
            "a fifth continuation byte".into(),
        ))
    }
}
