//! The song's transport for plugins that follow it: the `time:Position` atom.
//!
//! A plugin whose atom input `atom:supports time:Position` (Ardour's `a-delay` syncing its
//! delay to the tempo, arpeggiators, LFOs in time) gets an object with the frame, the speed,
//! the bar and beat, the beat unit, beats per bar and beats per minute, all read from the
//! engine's transport ([`ProcessContext::musical`](downbeat_graph::ProcessContext::musical)):
//! the song's frame, 1 playing or 0 stopped, the bar from 0, the beat into the bar counted in
//! the signature's beats (eighths in 6/8), the signature, the tempo at the block's start.
//! The node sends it at frame 0 of its first block, and again at the start of a block
//! whenever the tempo, the signature or playing changed, or the song jumped (a locate, a
//! loop wrap: the block does not start where the last one ended). Through a tempo ramp
//! that is every block, each with the tempo at its start. Writing it is a few stores into
//! the port's preallocated buffer: real-time safe.

use downbeat_graph::time::{MusicalPosition, Signature};

use super::atom::pair;
use super::features::urid;

/// Words of one `time:Position` event: time, atom header, object body header, and seven
/// properties of three words each (key and context, value header, value padded to 8 bytes).
pub const POSITION_WORDS: usize = 3 + 7 * 3;

/// The URIDs the position object is written with.
#[derive(Clone, Copy, Debug)]
pub struct TimeUrids {
    object: u32,
    position: u32,
    frame: u32,
    speed: u32,
    bar: u32,
    bar_beat: u32,
    beat_unit: u32,
    beats_per_bar: u32,
    bpm: u32,
    long: u32,
    float: u32,
    int: u32,
}

impl TimeUrids {
    /// Maps the URIs (off the audio thread).
    pub fn new() -> Self {
        TimeUrids {
            object: urid(c"http://lv2plug.in/ns/ext/atom#Object"),
            position: urid(c"http://lv2plug.in/ns/ext/time#Position"),
            frame: urid(c"http://lv2plug.in/ns/ext/time#frame"),
            speed: urid(c"http://lv2plug.in/ns/ext/time#speed"),
            bar: urid(c"http://lv2plug.in/ns/ext/time#bar"),
            bar_beat: urid(c"http://lv2plug.in/ns/ext/time#barBeat"),
            beat_unit: urid(c"http://lv2plug.in/ns/ext/time#beatUnit"),
            beats_per_bar: urid(c"http://lv2plug.in/ns/ext/time#beatsPerBar"),
            bpm: urid(c"http://lv2plug.in/ns/ext/time#beatsPerMinute"),
            long: urid(c"http://lv2plug.in/ns/ext/atom#Long"),
            float: urid(c"http://lv2plug.in/ns/ext/atom#Float"),
            int: urid(c"http://lv2plug.in/ns/ext/atom#Int"),
        }
    }
}

impl Default for TimeUrids {
    fn default() -> Self {
        Self::new()
    }
}

/// When a plugin is sent a position: what it was last told, and where the song would be
/// next had it played on.
///
/// ```
/// use downbeat_graph::time::{MusicalPosition, TempoMap};
/// use downbeat_plugin::lv2::time::TimeFollower;
///
/// let map = TempoMap::constant(120.0, 48000).unwrap();
/// let mut t = TimeFollower::new();
/// let start = MusicalPosition::of(&map, 0, true, None);
/// assert!(t.due(&start), "the first block gets a position");
/// t.ran(&start, 256);
/// assert!(!t.due(&start.at(256)), "playing on at one tempo: nothing to say");
/// assert!(t.due(&MusicalPosition::of(&map, 96_000, true, None)), "a jump is sent");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct TimeFollower {
    /// What the last position sent said: the tempo, the signature, playing.
    told: Option<(f64, Signature, bool)>,
    /// The song frame the next block starts at if the song plays on (or stands, stopped).
    next: Option<u64>,
}

impl TimeFollower {
    /// Nothing sent yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a block starting at `m` must send a position: the first block, and one
    /// where the tempo, the signature or playing differ from what was last sent, or the
    /// song is not where the last block left it. Real-time safe.
    pub fn due(&self, m: &MusicalPosition) -> bool {
        self.told != Some((m.bpm, m.signature, m.playing)) || self.next != Some(m.song_frame)
    }

    /// After a block of `frames` starting at `m` ran (with a position when [`due`] said
    /// so): notes what the plugin now knows. Real-time safe.
    ///
    /// [`due`]: TimeFollower::due
    pub fn ran(&mut self, m: &MusicalPosition, frames: usize) {
        // Not due, these are what the plugin was told already.
        self.told = Some((m.bpm, m.signature, m.playing));
        self.next = Some(m.at(frames).song_frame);
    }
}

/// The `time:Position` event at frame 0 of a block starting at `m`, as the words of an atom
/// sequence's event: `time:frame` the song's frame, `time:speed` 1 playing or 0 stopped,
/// `time:bar` from 0, `time:barBeat` the beats into the bar in units of the signature's beat
/// (`(beat - bar_beat) / (4 / denominator)`), `time:beatUnit` the denominator,
/// `time:beatsPerBar` the numerator, `time:beatsPerMinute` the tempo (quarter notes per
/// minute, as the engine counts it). Real-time safe.
pub fn position(urids: &TimeUrids, m: &MusicalPosition) -> [u64; POSITION_WORDS] {
    let signature = m.signature;
    // A position a hair before its bar line (rounding) is counted on it, never negative.
    let bar_beat = ((m.beat - m.bar_beat).max(0.0) / signature.beat_length()) as f32;
    let mut w = [0u64; POSITION_WORDS];
    let body_bytes = (8 + 7 * 24) as u32;
    w[0] = 0; // the event's time: frame 0 of the block
    w[1] = pair(body_bytes, urids.object);
    w[2] = pair(0, urids.position); // object id (blank), object type
    let float = |v: f32| pair(v.to_bits(), 0);
    let speed = if m.playing { 1.0 } else { 0.0 };
    let props: [(u32, u32, u32, u64); 7] = [
        (urids.frame, 8, urids.long, m.song_frame),
        (urids.speed, 4, urids.float, float(speed)),
        (urids.bar, 8, urids.long, m.bar as u64),
        (urids.bar_beat, 4, urids.float, float(bar_beat)),
        (
            urids.beat_unit,
            4,
            urids.int,
            pair(u32::from(signature.denominator), 0),
        ),
        (
            urids.beats_per_bar,
            4,
            urids.float,
            float(f32::from(signature.numerator)),
        ),
        (urids.bpm, 4, urids.float, float(m.bpm as f32)),
    ];
    for (k, (key, size, type_, value)) in props.into_iter().enumerate() {
        w[3 + 3 * k] = pair(key, 0);
        w[4 + 3 * k] = pair(size, type_);
        w[5 + 3 * k] = value;
    }
    w
}

#[cfg(test)]
mod tests {
    use downbeat_graph::time::{
        SignatureChange, TempoMap, TempoPoint, Transport, TransportCommand,
    };

    use super::*;

    fn lo(x: u64) -> u32 {
        u32::from_ne_bytes(x.to_ne_bytes()[..4].try_into().unwrap())
    }

    fn hi(x: u64) -> u32 {
        u32::from_ne_bytes(x.to_ne_bytes()[4..].try_into().unwrap())
    }

    /// 120 bpm in 4/4, 6/8 from beat 8 (bar 2), a ramp down to 60 bpm over beats 14 to 20.
    fn song() -> TempoMap {
        let ramp = TempoPoint {
            beat: 14.0,
            bpm: 60.0,
            ramp: 6.0,
        };
        let six_eight = SignatureChange {
            beat: 8.0,
            signature: "6/8".parse().unwrap(),
        };
        TempoMap::new(120.0, Signature::default(), &[ramp], &[six_eight], 48000).unwrap()
    }

    #[test]
    fn the_position_object_is_laid_out_as_lv2_atom_object_from_the_songs_position() {
        let urids = TimeUrids::new();
        // Beat 12.25 at 120 bpm: 6.125 s. Bar 3 of the song (the second of 6/8, from beat
        // 11), 1.25 quarter notes in: 2.5 eighths.
        let m = MusicalPosition::of(&song(), 294_000, true, None);
        let w = position(&urids, &m);
        assert_eq!(lo(w[1]), 176, "object body: 8 + 7 properties of 24 bytes");
        assert_eq!(hi(w[1]), urids.object);
        assert_eq!(hi(w[2]), urids.position);
        let props = [
            (urids.frame, 8, urids.long),
            (urids.speed, 4, urids.float),
            (urids.bar, 8, urids.long),
            (urids.bar_beat, 4, urids.float),
            (urids.beat_unit, 4, urids.int),
            (urids.beats_per_bar, 4, urids.float),
            (urids.bpm, 4, urids.float),
        ];
        for (k, (key, size, type_)) in props.into_iter().enumerate() {
            assert_eq!(lo(w[3 + 3 * k]), key, "property {k}'s key");
            assert_eq!(
                (lo(w[4 + 3 * k]), hi(w[4 + 3 * k])),
                (size, type_),
                "property {k}"
            );
        }
        let float = |k: usize| f32::from_bits(lo(w[5 + 3 * k]));
        assert_eq!(w[5], 294_000, "time:frame");
        assert_eq!(float(1), 1.0, "time:speed");
        assert_eq!(w[11], 3, "time:bar");
        assert_eq!(float(3), 2.5, "time:barBeat, in eighths");
        assert_eq!(lo(w[17]), 8, "time:beatUnit");
        assert_eq!(float(5), 6.0, "time:beatsPerBar");
        assert_eq!(float(6), 120.0, "time:beatsPerMinute");

        let stopped = position(&urids, &MusicalPosition::of(&song(), 294_000, false, None));
        assert_eq!(f32::from_bits(lo(stopped[8])), 0.0, "time:speed, stopped");
        assert_eq!(stopped[11], 3, "the same bar");
    }

    /// Which of the blocks of `frames`, played as the engine plays them, get a position.
    fn sent(transport: &mut Transport, follower: &mut TimeFollower, blocks: usize) -> Vec<bool> {
        (0..blocks)
            .map(|_| {
                let frames = transport.piece(256);
                let m = transport.position();
                let due = follower.due(&m);
                follower.ran(&m, frames);
                transport.advance(frames);
                due
            })
            .collect()
    }

    #[test]
    fn a_position_is_sent_first_then_on_every_change_and_jump_only() {
        let mut transport = Transport::new(song());
        let mut follower = TimeFollower::new();
        // The first block, then nothing while the song plays on at 120 bpm in 4/4.
        let first = sent(&mut transport, &mut follower, 10);
        assert_eq!(
            first,
            [true, false, false, false, false, false, false, false, false, false]
        );
        // Beat 8, 6/8: sent once, at the block that starts on the change.
        transport.apply(TransportCommand::LocateBeat(7.9)).unwrap();
        let across = sent(&mut transport, &mut follower, 12);
        assert_eq!(
            across.iter().filter(|&&s| s).count(),
            2,
            "the jump and the signature"
        );
        assert!(across[0]);
        let change = across.iter().skip(1).position(|&s| s).unwrap() + 1;
        transport.apply(TransportCommand::LocateBeat(13.9)).unwrap();
        // Through the ramp (beats 14 to 20): every block has a new tempo.
        let ramp = sent(&mut transport, &mut follower, 40);
        assert!(ramp[0], "the jump");
        let into = ramp.iter().skip(1).position(|&s| s).unwrap() + 1;
        assert!(ramp[into..].iter().all(|&s| s), "{ramp:?}");
        assert!(change > 1 && into > 1);
        // Stopped: sent once; standing still, nothing more; played again: sent.
        transport.apply(TransportCommand::LocateBeat(30.0)).unwrap();
        sent(&mut transport, &mut follower, 2);
        transport.apply(TransportCommand::Stop).unwrap();
        assert_eq!(sent(&mut transport, &mut follower, 3), [true, false, false]);
        transport.apply(TransportCommand::Play).unwrap();
        assert_eq!(sent(&mut transport, &mut follower, 3), [true, false, false]);
        // A loop wrap is a jump: sent at the block after the wrap only. One beat at 60 bpm
        // is 48,000 frames, 187.5 blocks of 256.
        transport.apply(TransportCommand::Loop(30.0, 31.0)).unwrap();
        transport.apply(TransportCommand::LocateBeat(30.0)).unwrap();
        let looped = sent(&mut transport, &mut follower, 400);
        let at: Vec<usize> = (0..400).filter(|&k| looped[k]).collect();
        assert_eq!(at, [0, 188, 376], "the locate and two wraps");
    }
}
