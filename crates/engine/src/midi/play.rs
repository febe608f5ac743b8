//! Playing a [`MidiFile`] into a schedule: its note messages become note events for every
//! node that plays notes, and its control changes mapped by a project's `[midi.cc]` become
//! parameter changes.
//!
//! The events go onto the schedule's preloaded timeline
//! ([`Schedule::add_to_timeline`](downbeat_graph::Schedule::add_to_timeline)), the list
//! automation uses: it holds any number of events, so a long file never fills the bounded
//! queue that live controllers share, no event is dropped, and an offline render is
//! bit-identical between runs. [`place`] decides the time they keep: the song's, when the
//! project has a tempo of its own (the file's ticks are then beats, and the events follow
//! loops, locates and stops), else the file's own, which then becomes the song's tempo.

use downbeat_graph::time::{Signature, TempoMap, TempoPoint};
use downbeat_graph::{Change, ControlError, Event, NodeKey, OnBeat, ParamId, ParamTable};

use super::{Division, MidiFile, MidiMessage};

/// A MIDI control change mapped to a live parameter: the CC's `0..=127` spans the
/// parameter's range linearly (`min` at 0, `max` at 127).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CcMapping {
    /// The controller number, `0..=127`.
    pub controller: u8,
    /// The parameter it moves.
    pub param: ParamId,
    /// The parameter's value at CC value 0.
    pub min: f32,
    /// The parameter's value at CC value 127.
    pub max: f32,
}

impl CcMapping {
    /// The parameter value for CC value `value` (`0..=127`).
    pub fn value(&self, value: u8) -> f32 {
        let t = f64::from(value.min(127)) / 127.0;
        (f64::from(self.min) + (f64::from(self.max) - f64::from(self.min)) * t) as f32
    }
}

/// The events of `file` for the schedule `table` describes, at `sample_rate`: one note event
/// per note-playing node for each note message, and a [`Change::Set`] for each control
/// change that `cc` maps (others are ignored).
///
/// # Errors
/// [`ControlError::NoInstrument`] when the file has notes and no node plays notes.
pub fn events(
    file: &MidiFile,
    table: &ParamTable,
    cc: &[CcMapping],
    sample_rate: u32,
) -> Result<Vec<Event>, ControlError> {
    let targets: Vec<NodeKey> = table.note_nodes().collect();
    let mut out = Vec::new();
    for (frame, message) in file.frames(sample_rate) {
        match message {
            MidiMessage::Note(note) => {
                if targets.is_empty() {
                    return Err(ControlError::NoInstrument);
                }
                out.extend(
                    targets
                        .iter()
                        .map(|&n| Event::note(Some(frame), n, note.normalized())),
                );
            }
            MidiMessage::Control {
                controller, value, ..
            } => out.extend(
                cc.iter()
                    .filter(|m| m.controller == controller)
                    .map(|m| Event::param(Some(frame), m.param, Change::Set(m.value(value)))),
            ),
        }
    }
    Ok(out)
}

/// How [`place`] put a file on a schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    /// Frames a run lasts to play the file from the start of the song and let its last
    /// notes ring out.
    pub frames: u64,
    /// Whether its events follow the song (its ticks read as beats of the song's map, on
    /// the song's timeline) rather than the engine's frames.
    pub in_beats: bool,
    /// Tempo changes of the file that the song's own map overrode (a project's `[tempo]`).
    pub tempo_ignored: usize,
    /// Whether the file's tempo map became the song's.
    pub tempo_taken: bool,
}

impl Placed {
    /// The warning a run prints when the song's own tempo overrode the file's tempo changes
    /// (a project with a `[tempo]` table), naming the file as the run knows it; `None` when
    /// nothing was overridden.
    ///
    /// ```
    /// use downbeat::midi::play::Placed;
    ///
    /// let placed = Placed { frames: 0, in_beats: true, tempo_ignored: 2, tempo_taken: false };
    /// assert!(placed.tempo_warning("song.mid").unwrap().contains("2 tempo change(s)"));
    /// ```
    pub fn tempo_warning(&self, file: &str) -> Option<String> {
        (self.tempo_ignored > 0).then(|| {
            format!(
                "{file}: the project's [tempo] sets the song's tempo; the file's {} tempo \
                 change(s) are ignored and its ticks are played as beats of the project's map",
                self.tempo_ignored
            )
        })
    }
}

/// Puts `file`'s events on `schedule`'s timeline, and settles whose tempo the song follows:
///
/// * `song_has_tempo` (a project with a `[tempo]` table): the file's ticks are read as
///   quarter-note beats of the song's map and its tempo changes are ignored (counted in
///   [`Placed::tempo_ignored`], for a warning); its events go on the song's timeline, so a
///   loop plays them again and a stopped song holds them back;
/// * otherwise the file's tempo map becomes the song's (its changes as steps, 4/4), so that
///   nodes and plugins see its tempo, and its events go at the exact frames its ticks fall
///   on from the start of the run;
/// * a file that counts SMPTE time has no beats: its events go at their frames and the song
///   keeps its map.
///
/// Allocates: before the run.
///
/// # Errors
/// [`ControlError::NoInstrument`] when the file has notes and no node plays notes.
pub fn place(
    file: &MidiFile,
    schedule: &mut downbeat_graph::Schedule,
    cc: &[CcMapping],
    song_has_tempo: bool,
) -> Result<Placed, ControlError> {
    let rate = schedule.config().sample_rate;
    let table = schedule.param_table();
    let release = (table.longest_release() * f64::from(rate)).ceil() as u64;
    // A file in SMPTE time has no beats: frames, and the song keeps its map. A file in
    // beats sets the song's tempo unless the project has one.
    let ppq = match file.tempo_map().division() {
        Division::TicksPerQuarter(ppq) if song_has_tempo => ppq,
        division => {
            let taken = match division {
                Division::TicksPerQuarter(ppq) => song_map(file, ppq, rate)
                    .map(|map| schedule.set_tempo(map))
                    .is_some(),
                Division::Smpte { .. } => false,
            };
            schedule
                .add_to_timeline(events(file, &table, cc, rate)?)
                .expect("the events name live nodes of this schedule");
            return Ok(Placed {
                frames: run_frames(file, &table, rate),
                in_beats: false,
                tempo_ignored: 0,
                tempo_taken: taken,
            });
        }
    };
    let beat = |tick: u64| tick as f64 / f64::from(ppq);
    let timed: Vec<(f64, MidiMessage)> = file
        .messages()
        .iter()
        .map(|m| (beat(m.tick), m.message))
        .collect();
    schedule
        .add_to_timeline(song_events(&timed, &table, cc)?)
        .expect("the events name live nodes of this schedule");
    let tempo_ignored = file
        .tempo_map()
        .changes()
        .filter(|&(tick, micros)| tick > 0 || micros != super::DEFAULT_TEMPO)
        .count();
    let end = schedule.transport().map().frame_of(beat(file.end_tick()));
    Ok(Placed {
        frames: end + release,
        in_beats: true,
        tempo_ignored,
        tempo_taken: false,
    })
}

/// The file's tempo changes as the song's map (steps at their beats, 4/4), if every tempo
/// is one a song can have.
fn song_map(file: &MidiFile, ppq: u16, sample_rate: u32) -> Option<TempoMap> {
    let mut changes = file.tempo_map().changes();
    let (_, first) = changes.next()?;
    let bpm = |micros: u32| 60_000_000.0 / f64::from(micros);
    let points: Vec<TempoPoint> = changes
        .map(|(tick, micros)| TempoPoint {
            beat: tick as f64 / f64::from(ppq),
            bpm: bpm(micros),
            ramp: 0.0,
        })
        .collect();
    TempoMap::new(bpm(first), Signature::default(), &points, &[], sample_rate).ok()
}

/// Note and mapped control events timed by beat, for the song's timeline.
fn song_events(
    timed: &[(f64, MidiMessage)],
    table: &ParamTable,
    cc: &[CcMapping],
) -> Result<Vec<Event>, ControlError> {
    let targets: Vec<NodeKey> = table.note_nodes().collect();
    let mut out = Vec::new();
    for &(beat, message) in timed {
        let on = OnBeat::Beat(beat);
        match message {
            MidiMessage::Note(note) => {
                if targets.is_empty() {
                    return Err(ControlError::NoInstrument);
                }
                out.extend(
                    targets
                        .iter()
                        .map(|&n| Event::note(None, n, note.normalized()).on_beat(on)),
                );
            }
            MidiMessage::Control {
                controller, value, ..
            } => out.extend(
                cc.iter()
                    .filter(|m| m.controller == controller)
                    .map(|m| Event::param(None, m.param, Change::Set(m.value(value))).on_beat(on)),
            ),
        }
    }
    Ok(out)
}

/// How many frames a run playing `file` lasts at `sample_rate`: to the file's last event,
/// plus the longest release of the schedule's instruments so that the last notes ring out.
pub fn run_frames(file: &MidiFile, table: &ParamTable, sample_rate: u32) -> u64 {
    let release = (table.longest_release() * f64::from(sample_rate)).ceil() as u64;
    file.end_frame(sample_rate) + release
}
