//! The song's transport following one outside the engine: JACK's, on the JACK device
//! (`downbeat run --transport jack` or `jack-master`).
//!
//! * [`TransportSync`] says whose transport the song plays by.
//! * [`follow`] turns where the outside transport stands at the start of a cycle
//!   ([`ExternalPosition`]) into the commands that make the song's transport match it.
//! * [`timebase_bbt`] is the bar, beat and tick a timebase master publishes for a frame,
//!   from the song's tempo map.
//! * [`TransportRequests`] carries play, stop and locate from a control thread (OSC's
//!   `/transport/...`) to the device, which sends them on to the outside transport instead
//!   of the song's own: every client of the outside transport then moves together.
//!
//! Nothing here needs JACK or allocates: the device calls [`follow`], [`timebase_bbt`] and
//! [`TransportRequests::take`] on its real-time thread, and the guard tests run them there.

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use downbeat_graph::time::{TempoMap, Transport, TransportCommand, TICKS_PER_BEAT};

use crate::control::When;

/// Whose transport the song plays by: its own, or JACK's (on the JACK device only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TransportSync {
    /// The song's own transport: the project's `[transport]`, OSC's `/transport/...`.
    #[default]
    Internal,
    /// JACK's transport. At the start of every cycle the song's transport plays while
    /// JACK's rolls and stops while it stands (or is starting), goes to JACK's frame when
    /// that is not where the song's would be (a locate in JACK), and, when a timebase master
    /// gives bar/beat/tick, takes its tempo from where the song is. Loops are dropped (JACK's
    /// transport has none).
    Jack,
    /// As [`Jack`](Self::Jack) for rolling and frame, and Downbeat is JACK's timebase master:
    /// it gives every client bar, beat, tick, signature and tempo from the song's tempo map
    /// (so its own tempo, live changes included, is the one everybody reads).
    JackMaster,
}

impl TransportSync {
    /// Its name, as `--transport` takes it.
    pub fn name(self) -> &'static str {
        match self {
            TransportSync::Internal => "internal",
            TransportSync::Jack => "jack",
            TransportSync::JackMaster => "jack-master",
        }
    }

    /// Whether the song follows an outside transport.
    pub fn follows(self) -> bool {
        self != TransportSync::Internal
    }
}

/// Where an outside transport stands at the start of a cycle: what [`follow`] makes the
/// song's transport match.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExternalPosition {
    /// Whether it rolls (JACK's `JackTransportStarting`, waiting for slow clients, counts as
    /// standing).
    pub rolling: bool,
    /// Its frame at the start of the cycle.
    pub frame: u64,
    /// The tempo its timebase master gives, in beats per minute read as quarter notes, when
    /// there is a master that is not Downbeat itself.
    pub bpm: Option<f64>,
}

/// Tempos closer than this to the song's are taken as the same: what a master writes as an
/// `f64` comes through unchanged, so this only absorbs a master's own rounding.
const BPM_TOLERANCE: f64 = 1e-6;

/// The commands [`follow`] found, at most four, in the order to apply them. Fixed room, no
/// allocation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FollowCommands {
    commands: [Option<TransportCommand>; 4],
}

impl FollowCommands {
    fn push(&mut self, command: TransportCommand) {
        if let Some(slot) = self.commands.iter_mut().find(|c| c.is_none()) {
            *slot = Some(command);
        }
    }

    /// The commands, in order.
    pub fn iter(&self) -> impl Iterator<Item = TransportCommand> + '_ {
        self.commands.iter().flatten().copied()
    }

    /// Whether the song's transport already matches.
    pub fn is_empty(&self) -> bool {
        self.commands[0].is_none()
    }
}

/// The commands that make `transport` stand where `outside` does, to apply in order at the
/// start of a cycle, before it is processed (see [`TransportSync::Jack`]):
///
/// 1. [`Unloop`](TransportCommand::Unloop) when the song loops: the outside transport does
///    not, and a loop wrap would put the song off its frame;
/// 2. [`Play`](TransportCommand::Play) or [`Stop`](TransportCommand::Stop) when the song
///    plays and the outside transport stands, or the other way round;
/// 3. [`LocateFrame`](TransportCommand::LocateFrame) to the outside frame when the song's
///    is elsewhere: while both play, each moves on by the cycle's frames, so they differ
///    only after a locate outside (or a command of the song's own, which this undoes);
/// 4. a [`Tempo`](TransportCommand::Tempo) change, at once, to the master's tempo when there
///    is one and the song's tempo at that frame differs (each takes one of the 512 live
///    tempo changes a transport has room for: a master ramping its tempo uses them up, and
///    the song then keeps the last it took).
///
/// Does not allocate.
///
/// ```
/// use downbeat::device::{follow, ExternalPosition};
/// use downbeat_graph::time::{Transport, TransportCommand};
///
/// let mut t = Transport::default(); // 120 bpm, playing from frame 0
/// t.advance(1000);
/// let jack = ExternalPosition { rolling: false, frame: 48_000, bpm: Some(90.0) };
/// let commands: Vec<_> = follow(&t, &jack).iter().collect();
/// assert_eq!(commands, [
///     TransportCommand::Stop,
///     TransportCommand::LocateFrame(48_000),
///     TransportCommand::Tempo { bpm: 90.0, ramp: 0.0 },
/// ]);
/// for c in commands {
///     t.apply(c).unwrap();
/// }
/// assert!(follow(&t, &jack).is_empty(), "in step now");
/// ```
pub fn follow(transport: &Transport, outside: &ExternalPosition) -> FollowCommands {
    let mut commands = FollowCommands::default();
    if transport.looping().is_some() {
        commands.push(TransportCommand::Unloop);
    }
    if outside.rolling != transport.is_playing() {
        commands.push(if outside.rolling {
            TransportCommand::Play
        } else {
            TransportCommand::Stop
        });
    }
    if outside.frame != transport.song_frame() {
        commands.push(TransportCommand::LocateFrame(outside.frame));
    }
    if let Some(bpm) = outside.bpm.filter(|b| *b > 0.0 && *b <= 999.0) {
        let map = transport.map();
        let ours = map.bpm_at(map.beat_at_frame(outside.frame));
        if (bpm - ours).abs() > BPM_TOLERANCE {
            commands.push(TransportCommand::Tempo { bpm, ramp: 0.0 });
        }
    }
    commands
}

/// Bar, beat and tick as JACK's `jack_position_t` carries them (its `JackPositionBBT`
/// fields): what a timebase master publishes for a frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimebaseBbt {
    /// The bar, from 1.
    pub bar: i32,
    /// The signature's beat within the bar, from 1 (eighths in 6/8).
    pub beat: i32,
    /// The tick within the beat, `0..ticks_per_beat`.
    pub tick: i32,
    /// Ticks from the song's start to the bar's first beat, each bar counting its
    /// signature's beats.
    pub bar_start_tick: f64,
    /// The signature's numerator.
    pub beats_per_bar: f32,
    /// The signature's denominator.
    pub beat_type: f32,
    /// Ticks in a beat: [`TICKS_PER_BEAT`].
    pub ticks_per_beat: f64,
    /// The tempo at the frame, in quarter notes per minute (the song's own unit, whatever
    /// the signature).
    pub beats_per_minute: f64,
}

/// What a timebase master publishes for `frame` of the song whose tempo map is `map`: the
/// bar, beat and tick of [`TempoMap::bbt`] counted from 1 as JACK counts them, the
/// signature and the tempo there. Does not allocate; the cost grows with the signature
/// changes before the frame (a few operations each).
///
/// ```
/// use downbeat::device::timebase_bbt;
/// use downbeat_graph::time::TempoMap;
///
/// let map = TempoMap::constant(120.0, 48000).unwrap(); // 4/4, a beat every 24,000 frames
/// let at = timebase_bbt(&map, 5 * 24_000 + 12_000); // beat 5.5: bar 2, its second beat
/// assert_eq!((at.bar, at.beat, at.tick), (2, 2, 480));
/// assert_eq!((at.beats_per_bar, at.beat_type, at.beats_per_minute), (4.0, 4.0, 120.0));
/// assert_eq!(at.bar_start_tick, 4.0 * 960.0);
/// ```
pub fn timebase_bbt(map: &TempoMap, frame: u64) -> TimebaseBbt {
    let beat = map.beat_at_frame(frame);
    let bbt = map.bbt(beat);
    let bar_start = map.beat_of_bar(bbt.bar);
    let signature = map.signature_at(bar_start);
    // Ticks per quarter note in a signature: 960 per beat of 4 / d quarters.
    let per_quarter = |s: downbeat_graph::time::Signature| {
        f64::from(TICKS_PER_BEAT) * f64::from(s.denominator) / 4.0
    };
    let mut from = 0.0;
    let mut ticks = 0.0;
    let mut current = map.signature_at(0.0);
    while let Some(change) = map.next_signature_change(from).filter(|&c| c < bar_start) {
        ticks += (change - from) * per_quarter(current);
        from = change;
        current = map.signature_at(change);
    }
    ticks += (bar_start - from) * per_quarter(current);
    TimebaseBbt {
        bar: i32::try_from(bbt.bar.saturating_add(1)).unwrap_or(i32::MAX),
        beat: bbt.beat as i32 + 1,
        tick: bbt.tick as i32,
        bar_start_tick: ticks.round(),
        beats_per_bar: f32::from(signature.numerator),
        beat_type: f32::from(signature.denominator),
        ticks_per_beat: f64::from(TICKS_PER_BEAT),
        beats_per_minute: map.bpm_at(beat),
    }
}

/// Play, stop and locate for an outside transport the song follows, from a control thread
/// to the device that talks to it.
///
/// With [`TransportSync::Jack`] or [`JackMaster`](TransportSync::JackMaster) the song's
/// own transport is set to JACK's at every cycle, so a command to it would last one cycle
/// at most: these requests go to JACK's instead (`jack_transport_start`, `_stop`,
/// `_locate`), which every JACK client follows, the song included, from JACK's next cycle
/// on. The device takes them at the start of each cycle (a locate to a beat becomes the
/// frame of that beat in the song's tempo map then). Requests made between two cycles
/// coalesce: the latest play or stop, and the latest locate, are sent.
///
/// Wait-free and allocation-free on both sides; clones share the same requests.
///
/// ```
/// use downbeat::control::When;
/// use downbeat::device::{RequestError, TransportRequests};
/// use downbeat_graph::time::TransportCommand;
///
/// let requests = TransportRequests::new();
/// requests.send(When::Now, TransportCommand::Stop).unwrap();
/// requests.send(When::Now, TransportCommand::LocateBeat(8.0)).unwrap();
/// requests.send(When::Now, TransportCommand::Play).unwrap();
/// assert_eq!(
///     requests.send(When::NextBar, TransportCommand::Stop),
///     Err(RequestError::Timed)
/// );
/// // The device, at the start of its next cycle:
/// let taken = requests.take();
/// assert_eq!(taken.locate, Some(TransportCommand::LocateBeat(8.0)));
/// assert_eq!(taken.run, Some(TransportCommand::Play), "the latest of stop and play");
/// assert_eq!(requests.take().run, None, "taken once");
/// ```
#[derive(Clone, Debug, Default)]
pub struct TransportRequests(Arc<Slots>);

/// The latest requests not yet taken.
#[derive(Debug)]
struct Slots {
    /// [`NOTHING`], [`PLAY`] or [`STOP`].
    run: AtomicU8,
    /// [`NO_LOCATE`], a beat's bits (sign bit clear: beats are from +0 up), or a frame with
    /// [`FRAME`] set.
    locate: AtomicU64,
}

impl Default for Slots {
    fn default() -> Self {
        Self {
            run: AtomicU8::new(NOTHING),
            locate: AtomicU64::new(NO_LOCATE),
        }
    }
}

const NOTHING: u8 = 0;
const PLAY: u8 = 1;
const STOP: u8 = 2;
const NO_LOCATE: u64 = u64::MAX;
const FRAME: u64 = 1 << 63;

/// What [`TransportRequests::take`] found: the latest locate and the latest play or stop,
/// to send in that order (a transport located, then started, starts from there).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Requested {
    /// [`LocateBeat`](TransportCommand::LocateBeat) or
    /// [`LocateFrame`](TransportCommand::LocateFrame).
    pub locate: Option<TransportCommand>,
    /// [`Play`](TransportCommand::Play) or [`Stop`](TransportCommand::Stop).
    pub run: Option<TransportCommand>,
}

impl Requested {
    /// The song frame the locate asks for, a beat's through `map`. Real-time safe.
    ///
    /// ```
    /// use downbeat::device::Requested;
    /// use downbeat_graph::time::{TempoMap, TransportCommand};
    ///
    /// let r = Requested { locate: Some(TransportCommand::LocateBeat(2.0)), run: None };
    /// assert_eq!(r.locate_frame(&TempoMap::default()), Some(48_000)); // 120 bpm, 48 kHz
    /// ```
    pub fn locate_frame(&self, map: &TempoMap) -> Option<u64> {
        match self.locate {
            Some(TransportCommand::LocateBeat(b)) => Some(map.frame_of(b)),
            Some(TransportCommand::LocateFrame(f)) => Some(f),
            _ => None,
        }
    }

    /// Whether the outside transport is asked to roll (`Some(true)`), to stand
    /// (`Some(false)`), or neither.
    pub fn rolling(&self) -> Option<bool> {
        match self.run {
            Some(TransportCommand::Play) => Some(true),
            Some(TransportCommand::Stop) => Some(false),
            _ => None,
        }
    }
}

/// Why [`TransportRequests`] refused a command.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RequestError {
    /// The command was for a beat or an instant; the outside transport carries requests out
    /// at its next cycle, so they go at once or not at all.
    Timed,
    /// A loop or unloop: JACK's transport does not loop.
    NoLoop,
    /// A tempo change: it is the song's own (see [`TransportSync`]), not a request.
    Tempo,
    /// A beat that is negative or not a number.
    BadBeat(f64),
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::Timed => f.write_str(
                "the song follows JACK's transport, which takes play, stop and locate at its \
                 next cycle: send them without a beat or a time",
            ),
            RequestError::NoLoop => {
                f.write_str("the song follows JACK's transport, which does not loop")
            }
            RequestError::Tempo => {
                f.write_str("a tempo change goes to the song's transport, not to JACK's")
            }
            RequestError::BadBeat(b) => write!(f, "beat {b} must be a number of beats from 0 up"),
        }
    }
}

impl std::error::Error for RequestError {}

impl TransportRequests {
    /// No request yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether [`send`](Self::send) would take `command` at `when`, without sending it.
    ///
    /// # Errors
    /// As [`send`](Self::send).
    pub fn check(&self, when: When, command: TransportCommand) -> Result<(), RequestError> {
        if when != When::Now {
            return Err(RequestError::Timed);
        }
        match command {
            TransportCommand::Play | TransportCommand::Stop | TransportCommand::LocateFrame(_) => {
                Ok(())
            }
            TransportCommand::LocateBeat(b) if b.is_finite() && b >= 0.0 => Ok(()),
            TransportCommand::LocateBeat(b) => Err(RequestError::BadBeat(b)),
            TransportCommand::Loop(..) | TransportCommand::Unloop => Err(RequestError::NoLoop),
            TransportCommand::Tempo { .. } => Err(RequestError::Tempo),
        }
    }

    /// Asks the outside transport to play, stop or locate, at its next cycle.
    ///
    /// # Errors
    /// [`RequestError::Timed`] for any `when` but [`When::Now`], [`RequestError::NoLoop`]
    /// for a loop or unloop, [`RequestError::Tempo`] for a tempo change,
    /// [`RequestError::BadBeat`] for a locate to a beat below 0 or not a number.
    pub fn send(&self, when: When, command: TransportCommand) -> Result<(), RequestError> {
        self.check(when, command)?;
        let slots = &self.0;
        match command {
            TransportCommand::Play => slots.run.store(PLAY, Ordering::Release),
            TransportCommand::Stop => slots.run.store(STOP, Ordering::Release),
            // `+ 0.0` turns -0 into +0, whose sign bit is clear.
            TransportCommand::LocateBeat(b) => {
                slots.locate.store((b + 0.0).to_bits(), Ordering::Release)
            }
            TransportCommand::LocateFrame(f) => slots
                .locate
                .store(FRAME | f.min(!FRAME - 1), Ordering::Release),
            _ => {}
        }
        Ok(())
    }

    /// Takes the requests made since the last call. Wait-free, allocation-free: for the
    /// device's real-time thread.
    pub fn take(&self) -> Requested {
        let run = match self.0.run.swap(NOTHING, Ordering::Acquire) {
            PLAY => Some(TransportCommand::Play),
            STOP => Some(TransportCommand::Stop),
            _ => None,
        };
        let locate = match self.0.locate.swap(NO_LOCATE, Ordering::Acquire) {
            NO_LOCATE => None,
            bits if bits & FRAME != 0 => Some(TransportCommand::LocateFrame(bits & !FRAME)),
            bits => Some(TransportCommand::LocateBeat(f64::from_bits(bits))),
        };
        Requested { locate, run }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use downbeat_graph::time::{Signature, SignatureChange, TempoPoint};

    #[test]
    fn requests_keep_the_latest_of_each_kind() {
        let r = TransportRequests::new();
        assert_eq!(r.take(), Requested::default());
        r.send(When::Now, TransportCommand::LocateBeat(3.0))
            .unwrap();
        r.send(When::Now, TransportCommand::LocateFrame(1234))
            .unwrap();
        r.send(When::Now, TransportCommand::Play).unwrap();
        r.send(When::Now, TransportCommand::Stop).unwrap();
        assert_eq!(
            r.take(),
            Requested {
                locate: Some(TransportCommand::LocateFrame(1234)),
                run: Some(TransportCommand::Stop),
            }
        );
        r.send(When::Now, TransportCommand::LocateBeat(-0.0))
            .unwrap();
        assert_eq!(r.take().locate, Some(TransportCommand::LocateBeat(0.0)));
        assert_eq!(r.take(), Requested::default());
    }

    #[test]
    fn requests_refuse_what_the_outside_transport_cannot_do() {
        let r = TransportRequests::new();
        for (when, command, error) in [
            (When::Beat(4.0), TransportCommand::Play, RequestError::Timed),
            (
                When::Now,
                TransportCommand::Loop(0.0, 4.0),
                RequestError::NoLoop,
            ),
            (When::Now, TransportCommand::Unloop, RequestError::NoLoop),
            (
                When::Now,
                TransportCommand::Tempo {
                    bpm: 100.0,
                    ramp: 0.0,
                },
                RequestError::Tempo,
            ),
            (
                When::Now,
                TransportCommand::LocateBeat(f64::NAN),
                RequestError::BadBeat(f64::NAN),
            ),
        ] {
            let got = r.send(when, command);
            match (got, error) {
                (Err(RequestError::BadBeat(b)), RequestError::BadBeat(_)) => assert!(b.is_nan()),
                (got, error) => assert_eq!(got, Err(error), "{command:?} at {when:?}"),
            }
        }
        assert_eq!(r.take(), Requested::default(), "nothing refused was kept");
    }

    #[test]
    fn following_locates_plays_stops_and_unloops() {
        let mut t = Transport::default();
        t.apply(TransportCommand::Loop(0.0, 8.0)).unwrap();
        let jack = ExternalPosition {
            rolling: true,
            frame: 0,
            bpm: None,
        };
        let c: Vec<_> = follow(&t, &jack).iter().collect();
        assert_eq!(c, [TransportCommand::Unloop]);
        t.apply(TransportCommand::Unloop).unwrap();
        // Both roll on by a cycle: in step.
        t.advance(256);
        let jack = ExternalPosition { frame: 256, ..jack };
        assert!(follow(&t, &jack).is_empty());
        // A locate outside while rolling.
        let jack = ExternalPosition {
            frame: 96_000,
            ..jack
        };
        let c: Vec<_> = follow(&t, &jack).iter().collect();
        assert_eq!(c, [TransportCommand::LocateFrame(96_000)]);
    }

    #[test]
    fn a_masters_tempo_is_taken_once() {
        let mut t = Transport::default();
        let jack = ExternalPosition {
            rolling: true,
            frame: 0,
            bpm: Some(140.0),
        };
        for c in follow(&t, &jack).iter() {
            t.apply(c).unwrap();
        }
        assert_eq!(t.position().bpm, 140.0);
        assert!(follow(&t, &jack).is_empty());
        // A tempo no transport takes is not passed on.
        let bad = ExternalPosition {
            bpm: Some(0.0),
            ..jack
        };
        assert!(follow(&t, &bad).is_empty());
    }

    #[test]
    fn timebase_counts_bars_and_ticks_across_signature_changes() {
        // Two bars of 4/4 (8 beats), then 6/8 (3 quarters a bar, six eighths).
        let change = SignatureChange {
            beat: 8.0,
            signature: "6/8".parse().unwrap(),
        };
        let ramp = TempoPoint {
            beat: 8.0,
            bpm: 60.0,
            ramp: 0.0,
        };
        let map = TempoMap::new(120.0, Signature::default(), &[ramp], &[change], 48000).unwrap();
        // Beat 12.25: bar 3 of 6/8 (index 3, from beat 11), 1.25 quarters in: its
        // third eighth, half-way.
        let at = timebase_bbt(&map, map.frame_of(12.25));
        assert_eq!((at.bar, at.beat, at.tick), (4, 3, 480));
        assert_eq!((at.beats_per_bar, at.beat_type), (6.0, 8.0));
        // Two bars of 4 quarter beats, then one of 6 eighths.
        assert_eq!(at.bar_start_tick, f64::from((8 + 6) * 960));
        assert_eq!(at.beats_per_minute, 60.0);
        assert_eq!(at.ticks_per_beat, 960.0);
        let first = timebase_bbt(&map, 0);
        assert_eq!((first.bar, first.beat, first.tick), (1, 1, 0));
        assert_eq!(first.bar_start_tick, 0.0);
    }
}
