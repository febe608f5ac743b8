//! From MIDI ticks to sample frames, exactly.
//!
//! A file counts time in ticks; what a tick lasts depends on the division in its header
//! and, for tick-per-quarter-note files, on the tempo in force. Converting by accumulating
//! seconds in floating point drifts: after ten minutes and a few hundred tempo changes the
//! error is audible as notes that land a few samples off, and worse, it depends on how the
//! sum was grouped. Here every conversion is one integer division of exact integers: the
//! frame of tick `t` is the floor of `sample_rate · µs(t) / (ticks_per_quarter · 10⁶)`,
//! where `µs(t) · ticks_per_quarter` is summed over the tempo segments in `u128`. The same
//! tick always gives the same frame, independently of any other tick asked for.

/// How the file's header divides time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Division {
    /// Ticks per quarter note; the tempo map says how long a quarter note lasts.
    TicksPerQuarter(u16),
    /// SMPTE time code: frames per second (24, 25, 29 for 30 drop-frame i.e. 29.97, or 30)
    /// and ticks per frame. Tempo changes do not affect it.
    Smpte {
        /// 24, 25, 29 (30 drop-frame, 30000/1001 per second) or 30.
        fps: u8,
        /// Ticks per SMPTE frame.
        ticks_per_frame: u8,
    },
}

/// Microseconds per quarter note until a file sets its first tempo (120 beats per minute).
pub const DEFAULT_TEMPO: u32 = 500_000;

/// One tempo segment: from `tick` on, a quarter note lasts `micros` µs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
    tick: u64,
    micros: u32,
    /// Σ over the earlier segments of (their length in ticks × their µs per quarter): the
    /// segment's start time in µs, times ticks per quarter.
    before: u128,
}

/// The tempo changes of a file, ready to turn ticks into frames.
///
/// ```
/// use downbeat::midi::{Division, TempoMap};
///
/// // 480 ticks per quarter; 120 bpm, then 60 bpm from tick 960 (after one second).
/// let map = TempoMap::new(Division::TicksPerQuarter(480), [(960, 1_000_000)]);
/// assert_eq!(map.frame(960, 48000), 48000);
/// assert_eq!(map.frame(960 + 480, 48000), 96000); // one slow quarter later
/// assert_eq!(map.frame(1, 48000), 50); // 1/480 of half a second
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TempoMap {
    division: Division,
    segments: Vec<Segment>,
}

impl TempoMap {
    /// The map for `division` with tempo changes `(tick, µs per quarter note)`, in any order;
    /// of several changes at one tick the last given wins. Before the first change the tempo
    /// is [`DEFAULT_TEMPO`]. Changes of zero µs are ignored (the reader refuses them).
    pub fn new(division: Division, changes: impl IntoIterator<Item = (u64, u32)>) -> Self {
        let mut changes: Vec<(u64, u32)> = changes.into_iter().filter(|c| c.1 > 0).collect();
        // Stable: equal ticks keep their order, and the last of them is kept below.
        changes.sort_by_key(|c| c.0);
        let mut segments = vec![Segment {
            tick: 0,
            micros: DEFAULT_TEMPO,
            before: 0,
        }];
        for (tick, micros) in changes {
            let last = *segments.last().expect("starts with one segment");
            if tick == last.tick {
                segments.last_mut().expect("non-empty").micros = micros;
            } else {
                let before = last.before + u128::from(tick - last.tick) * u128::from(last.micros);
                segments.push(Segment {
                    tick,
                    micros,
                    before,
                });
            }
        }
        Self { division, segments }
    }

    /// The division the map counts in.
    pub fn division(&self) -> Division {
        self.division
    }

    /// Tempo changes in the map, the initial tempo included.
    pub fn segments(&self) -> usize {
        self.segments.len()
    }

    /// The tempo segments as `(tick, µs per quarter note)`, the initial one included.
    pub fn changes(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.segments.iter().map(|s| (s.tick, s.micros))
    }

    /// The first sample frame at or after tick `tick`, at `sample_rate`: exact, with no
    /// accumulated rounding.
    pub fn frame(&self, tick: u64, sample_rate: u32) -> u64 {
        let (num, den) = self.rational(tick);
        let frames = num * u128::from(sample_rate) / den;
        u64::try_from(frames).unwrap_or(u64::MAX)
    }

    /// The time of `tick` in seconds (for display; frames come from [`TempoMap::frame`]).
    pub fn seconds(&self, tick: u64) -> f64 {
        let (num, den) = self.rational(tick);
        num as f64 / den as f64
    }

    /// The time of `tick` in seconds as an exact fraction `num / den`.
    fn rational(&self, tick: u64) -> (u128, u128) {
        match self.division {
            Division::TicksPerQuarter(ppq) => {
                let i = self.segments.partition_point(|s| s.tick <= tick) - 1;
                let s = self.segments[i];
                let micros_ticks = s.before + u128::from(tick - s.tick) * u128::from(s.micros);
                (micros_ticks, u128::from(ppq) * 1_000_000)
            }
            Division::Smpte {
                fps,
                ticks_per_frame,
            } => {
                // Frames per second as a fraction: 29 stands for 30 drop-frame, 29.97.
                let (rate, per) = match fps {
                    29 => (30_000u128, 1001u128),
                    other => (u128::from(other), 1),
                };
                (
                    u128::from(tick) * per,
                    rate * u128::from(ticks_per_frame.max(1)),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smpte_ignores_tempo_and_handles_drop_frame() {
        let map = TempoMap::new(
            Division::Smpte {
                fps: 25,
                ticks_per_frame: 40,
            },
            [(0, 1)],
        );
        assert_eq!(map.frame(1000, 48000), 48000);
        let ntsc = TempoMap::new(
            Division::Smpte {
                fps: 29,
                ticks_per_frame: 100,
            },
            [],
        );
        // 30000 frames of 29.97 fps last 1001 s.
        assert_eq!(ntsc.frame(3_000_000, 48000), 1001 * 48000);
    }

    #[test]
    fn changes_at_one_tick_keep_the_last() {
        let map = TempoMap::new(
            Division::TicksPerQuarter(96),
            [(96, 250_000), (0, 1_000_000), (96, 2_000_000)],
        );
        assert_eq!(map.segments(), 2);
        // One quarter at 1 s, then one at 2 s.
        assert_eq!(map.frame(192, 1000), 3000);
    }
}
