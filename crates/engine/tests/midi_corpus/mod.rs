//! Standard MIDI Files written byte by byte by the tests (so the reader is checked against
//! the format, not against another library's writer), and a corpus of malformed files,
//! each with the byte offset of its defect and words the error must contain.

#![allow(dead_code)]

/// A variable-length quantity.
pub fn vlq(mut n: u32) -> Vec<u8> {
    let mut out = vec![(n & 0x7F) as u8];
    n >>= 7;
    while n > 0 {
        out.insert(0, 0x80 | (n & 0x7F) as u8);
        n >>= 7;
    }
    out
}

/// A track's event bytes under construction.
#[derive(Default, Clone)]
pub struct Track(pub Vec<u8>);

impl Track {
    /// An event `bytes` after `delta` ticks (bytes as they go in the file: a channel
    /// message without its status byte uses running status).
    pub fn event(mut self, delta: u32, bytes: &[u8]) -> Self {
        self.0.extend(vlq(delta));
        self.0.extend_from_slice(bytes);
        self
    }

    /// A tempo change to `micros` per quarter note.
    pub fn tempo(self, delta: u32, micros: u32) -> Self {
        let b = micros.to_be_bytes();
        self.event(delta, &[0xFF, 0x51, 0x03, b[1], b[2], b[3]])
    }

    /// End of Track, which closes every track.
    pub fn end(self, delta: u32) -> Vec<u8> {
        self.event(delta, &[0xFF, 0x2F, 0x00]).0
    }
}

/// A file: header with `format` and `division`, then one `MTrk` chunk per track.
pub fn smf(format: u16, division: u16, tracks: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"MThd".to_vec();
    out.extend(6u32.to_be_bytes());
    out.extend(format.to_be_bytes());
    out.extend((tracks.len() as u16).to_be_bytes());
    out.extend(division.to_be_bytes());
    for t in tracks {
        out.extend(b"MTrk");
        out.extend((t.len() as u32).to_be_bytes());
        out.extend(t);
    }
    out
}

/// A malformed file and what its error must say.
pub struct Bad {
    /// A short name, used for the file name in command-line tests.
    pub name: &'static str,
    pub bytes: Vec<u8>,
    /// Offset of the defect.
    pub offset: usize,
    /// Words the error message must contain (what was expected there).
    pub expected: &'static str,
}

/// Offset of the first track's event data in a file made by [`smf`].
pub const TRACK_DATA: usize = 22;

/// A valid one-track file: a note on and off, 96 ticks per quarter.
pub fn good() -> Vec<u8> {
    smf(
        0,
        96,
        &[Track::default()
            .event(0, &[0x90, 60, 100])
            .event(96, &[0x80, 60, 0])
            .end(0)],
    )
}

/// At least ten malformed files, each broken in a different place.
pub fn corpus() -> Vec<Bad> {
    let good = good();
    let mut v = Vec::new();
    v.push(Bad {
        name: "empty",
        bytes: Vec::new(),
        offset: 0,
        expected: "expected the chunk id `MThd`",
    });
    v.push(Bad {
        name: "not-midi",
        bytes: b"RIFF\x00\x00\x00\x04WAVE".to_vec(),
        offset: 0,
        expected: "expected the chunk id `MThd`",
    });
    v.push(Bad {
        name: "short-header",
        bytes: good[..11].to_vec(),
        offset: 11,
        expected: "expected the number of tracks",
    });
    let mut b = good.clone();
    b[7] = 5;
    v.push(Bad {
        name: "header-length-5",
        bytes: b,
        offset: 4,
        expected: "a header length of at least 6",
    });
    let mut b = good.clone();
    b[9] = 2;
    v.push(Bad {
        name: "format-2",
        bytes: b,
        offset: 8,
        expected: "format 2 (independent sequences) is not supported",
    });
    let mut b = good.clone();
    b[11] = 2;
    v.push(Bad {
        name: "format-0-two-tracks",
        bytes: b,
        offset: 10,
        expected: "exactly one track in a format 0 file",
    });
    let mut b = good.clone();
    b[12] = 0;
    b[13] = 0;
    v.push(Bad {
        name: "zero-division",
        bytes: b,
        offset: 12,
        expected: "non-zero number of ticks per quarter note",
    });
    let mut b = good.clone();
    b[12] = 0xE1; // -31 frames per second
    b[13] = 4;
    v.push(Bad {
        name: "smpte-31-fps",
        bytes: b,
        offset: 12,
        expected: "SMPTE frames per second",
    });
    v.push(Bad {
        name: "truncated-track",
        bytes: good[..good.len() - 5].to_vec(),
        offset: good.len() - 5,
        expected: "5 more bytes of the chunk at byte 14",
    });
    let two = smf(1, 96, &[Track::default().end(0)]);
    let mut b = two.clone();
    b[11] = 2; // declares two tracks, holds one
    v.push(Bad {
        name: "missing-track",
        bytes: b,
        offset: two.len(),
        expected: "track chunk 2 of the 2 the header declares",
    });
    v.push(Bad {
        name: "running-status-without-status",
        bytes: smf(0, 96, &[Track::default().event(0, &[60, 100]).end(0)]),
        offset: TRACK_DATA + 1,
        expected: "a status byte (no running status is in effect",
    });
    v.push(Bad {
        name: "running-status-after-meta",
        bytes: smf(
            0,
            96,
            &[Track::default()
                .event(0, &[0x90, 60, 100])
                .tempo(0, 400_000)
                .event(10, &[60, 0])
                .end(0)],
        ),
        offset: TRACK_DATA + 4 + 7 + 1,
        expected: "a status byte (no running status",
    });
    v.push(Bad {
        name: "status-byte-as-data",
        bytes: smf(
            0,
            96,
            &[Track::default().event(0, &[0x90, 60, 0x90]).end(0)],
        ),
        offset: TRACK_DATA + 3,
        expected: "a data byte (below 0x80)",
    });
    v.push(Bad {
        name: "delta-five-bytes",
        bytes: smf(
            0,
            96,
            &[Track::default()
                .event(0, &[0x90, 60, 100])
                .0
                .into_iter()
                .chain([
                    0x81, 0x81, 0x81, 0x81, 0x01, 0x80, 60, 0, 0x00, 0xFF, 0x2F, 0x00,
                ])
                .collect()],
        ),
        offset: TRACK_DATA + 4,
        expected: "a variable-length number of at most 4 bytes",
    });
    v.push(Bad {
        name: "tempo-length-2",
        bytes: smf(
            0,
            96,
            &[Track::default()
                .event(0, &[0xFF, 0x51, 0x02, 0x07, 0xA1])
                .end(0)],
        ),
        offset: TRACK_DATA + 3,
        expected: "length 3 for meta event type 0x51",
    });
    v.push(Bad {
        name: "tempo-zero",
        bytes: smf(0, 96, &[Track::default().tempo(0, 0).end(0)]),
        offset: TRACK_DATA + 4,
        expected: "a tempo above 0",
    });
    v.push(Bad {
        name: "no-end-of-track",
        bytes: smf(0, 96, &[Track::default().event(0, &[0x90, 60, 100]).0]),
        offset: TRACK_DATA + 4,
        expected: "an End of Track event (FF 2F 00)",
    });
    v.push(Bad {
        name: "data-after-end-of-track",
        bytes: smf(
            0,
            96,
            &[Track::default()
                .end(0)
                .into_iter()
                .chain([0, 0x90])
                .collect()],
        ),
        offset: TRACK_DATA + 4,
        expected: "the end of the track chunk after End of Track",
    });
    v.push(Bad {
        name: "realtime-byte",
        bytes: smf(0, 96, &[Track::default().event(0, &[0xF8]).end(0)]),
        offset: TRACK_DATA + 1,
        expected: "status 0xF8, which a MIDI file may not hold",
    });
    v.push(Bad {
        name: "meta-longer-than-track",
        bytes: smf(
            0,
            96,
            &[Track::default().event(0, &[0xFF, 0x01, 0x10, b'h', b'i']).0],
        ),
        offset: TRACK_DATA + 6,
        expected: "the meta event's data (14 more bytes), found the end of the track chunk",
    });
    let mut b = good.clone();
    b[14] = 0x00;
    v.push(Bad {
        name: "garbage-chunk-id",
        bytes: b,
        offset: 14,
        expected: "a chunk id (`MTrk`)",
    });
    v
}
