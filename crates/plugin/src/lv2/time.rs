//! The host's transport for plugins that follow it: the `time:Position` atom.
//!
//! A plugin whose atom input `atom:supports time:Position` (Ardour's `a-delay` syncing its
//! delay to the tempo, arpeggiators, LFOs in time) gets an object with the frame, the speed,
//! the bar and beat, the beat unit, beats per bar and beats per minute. The node sends it at
//! frame 0 of its first block, and again at the start of a block whenever the tempo, the
//! metre or the speed changed (the node's `host_bpm`, `host_beats_per_bar` and `host_speed`
//! parameters, moved like any other by a controller, OSC or automation) or the frames jumped.
//! Writing it is a few stores into the port's preallocated buffer: real-time safe.

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

/// The tempo, metre and speed the host plays at, and where it is.
///
/// ```
/// use downbeat_plugin::lv2::time::Transport;
///
/// let mut t = Transport::new(48000.0);
/// t.set_bpm(120.0);
/// assert!(t.due(0), "the first block gets a position");
/// t.advance(0, 48000); // one second at 120 bpm: two beats
/// assert!(!t.due(48000), "nothing changed, no position");
/// assert_eq!(t.beats(), 2.0);
/// t.set_bpm(90.0);
/// assert!(t.due(48000), "a new tempo is sent");
/// ```
#[derive(Clone, Debug)]
pub struct Transport {
    sample_rate: f64,
    /// Beats per minute.
    bpm: f32,
    beats_per_bar: f32,
    /// The note value of a beat (4: a quarter note).
    beat_unit: i32,
    /// 1 rolling, 0 stopped.
    speed: f32,
    /// Beats since frame 0.
    beats: f64,
    /// The frame the next block is expected to start at (a jump sends a position).
    next: Option<u64>,
    changed: bool,
}

/// Tempo when the project gives none: 120 beats per minute.
pub const DEFAULT_BPM: f32 = 120.0;
/// Beats per bar when the project gives none.
pub const DEFAULT_BEATS_PER_BAR: f32 = 4.0;

impl Transport {
    /// At 120 bpm in 4/4, rolling, at beat 0.
    pub fn new(sample_rate: f32) -> Self {
        Transport {
            sample_rate: f64::from(sample_rate.max(1.0)),
            bpm: DEFAULT_BPM,
            beats_per_bar: DEFAULT_BEATS_PER_BAR,
            beat_unit: 4,
            speed: 1.0,
            beats: 0.0,
            next: None,
            changed: true,
        }
    }

    /// The tempo, in beats per minute (at least 1).
    pub fn bpm(&self) -> f32 {
        self.bpm
    }

    /// Beats per bar.
    pub fn beats_per_bar(&self) -> f32 {
        self.beats_per_bar
    }

    /// The speed (0 stopped, 1 rolling).
    pub fn speed(&self) -> f32 {
        self.speed
    }

    /// Beats played since frame 0.
    pub fn beats(&self) -> f64 {
        self.beats
    }

    /// Sets the tempo from the next block on. Real-time safe.
    pub fn set_bpm(&mut self, bpm: f32) {
        let bpm = bpm.max(1.0);
        self.changed |= bpm != self.bpm;
        self.bpm = bpm;
    }

    /// Sets the beats per bar. Real-time safe.
    pub fn set_beats_per_bar(&mut self, beats: f32) {
        let beats = beats.max(1.0);
        self.changed |= beats != self.beats_per_bar;
        self.beats_per_bar = beats;
    }

    /// Sets the speed (0 stopped, 1 rolling). Real-time safe.
    pub fn set_speed(&mut self, speed: f32) {
        self.changed |= speed != self.speed;
        self.speed = speed;
    }

    /// Whether a block starting at `frame` must send a position: the first, one after a
    /// change, one after a jump.
    pub fn due(&self, frame: u64) -> bool {
        self.changed || self.next != Some(frame)
    }

    /// After a block of `frames` starting at `frame`: moves the beat on at the tempo and
    /// speed, and forgets the change.
    pub fn advance(&mut self, frame: u64, frames: usize) {
        self.beats +=
            frames as f64 * f64::from(self.speed) * f64::from(self.bpm) / 60.0 / self.sample_rate;
        self.next = Some(frame + frames as u64);
        self.changed = false;
    }

    /// The `time:Position` event at frame 0 for a block starting at `frame`, as the words of
    /// an atom sequence's event.
    pub fn position(&self, urids: &TimeUrids, frame: u64) -> [u64; POSITION_WORDS] {
        let bar = (self.beats / f64::from(self.beats_per_bar)).floor();
        let bar_beat = (self.beats - bar * f64::from(self.beats_per_bar)) as f32;
        let mut w = [0u64; POSITION_WORDS];
        let body_bytes = (8 + 7 * 24) as u32;
        w[0] = 0; // the event's time: frame 0 of the block
        w[1] = pair(body_bytes, urids.object);
        w[2] = pair(0, urids.position); // object id (blank), object type
        let float = |v: f32| pair(v.to_bits(), 0);
        let props: [(u32, u32, u32, u64); 7] = [
            (urids.frame, 8, urids.long, frame),
            (urids.speed, 4, urids.float, float(self.speed)),
            (urids.bar, 8, urids.long, bar as i64 as u64),
            (urids.bar_beat, 4, urids.float, float(bar_beat)),
            (
                urids.beat_unit,
                4,
                urids.int,
                pair(self.beat_unit as u32, 0),
            ),
            (
                urids.beats_per_bar,
                4,
                urids.float,
                float(self.beats_per_bar),
            ),
            (urids.bpm, 4, urids.float, float(self.bpm)),
        ];
        for (k, (key, size, type_, value)) in props.into_iter().enumerate() {
            w[3 + 3 * k] = pair(key, 0);
            w[4 + 3 * k] = pair(size, type_);
            w[5 + 3 * k] = value;
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_position_object_is_laid_out_as_lv2_atom_object() {
        let urids = TimeUrids::new();
        let mut t = Transport::new(48000.0);
        t.set_bpm(90.0);
        t.advance(0, 48000 * 4); // four seconds at 90 bpm: six beats, bar 1 beat 2
        let w = t.position(&urids, 192000);
        let lo = |x: u64| {
            x.to_ne_bytes()[..4]
                .try_into()
                .map(u32::from_ne_bytes)
                .unwrap()
        };
        let hi = |x: u64| {
            x.to_ne_bytes()[4..]
                .try_into()
                .map(u32::from_ne_bytes)
                .unwrap()
        };
        assert_eq!(lo(w[1]), 176, "object body: 8 + 7 properties of 24 bytes");
        assert_eq!(hi(w[2]), urids.position);
        assert_eq!(w[5], 192000, "time:frame");
        assert_eq!(w[11], 1, "time:bar");
        assert_eq!(f32::from_bits(lo(w[14])), 2.0, "time:barBeat");
        assert_eq!(hi(w[22]), urids.float);
        assert_eq!(f32::from_bits(lo(w[23])), 90.0, "time:beatsPerMinute");
    }
}
