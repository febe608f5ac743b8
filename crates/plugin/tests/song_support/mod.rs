//! What the transport tests of both plugin formats check against: the tempo map read at a
//! song frame from its public API, apart from the engine's own position code.

use downbeat_graph::time::{Segment, TempoMap};

/// The map's segment, beat and tempo at the song's frame `frame`, the frame of a tempo
/// point counting in the segment the point starts (a change lands on the frame nearest its
/// beat, which may be a hair before the beat: the frame is the new tempo's all the same).
pub fn at_frame(map: &TempoMap, frame: u64) -> (Segment, f64, f64) {
    let segments = map.segments();
    let k = segments.partition_point(|s| map.frame_of(s.start_beat) <= frame);
    let segment = segments[k.saturating_sub(1)];
    let beat = segment.beat_at_seconds(frame as f64 / f64::from(map.sample_rate()));
    (segment, beat, segment.bpm_at(beat))
}
