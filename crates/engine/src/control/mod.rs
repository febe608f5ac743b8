//! Live control of a running engine: [`Controller`]s send parameter and note events from
//! control threads, each through a wait-free queue of its own into the audio thread, which
//! applies them at exact frames (see [`downbeat_graph::Event`]). [`osc`] serves them over UDP,
//! [`automation`] compiles a project's `[[automation]]` into them, and [`record`] writes and
//! replays what a run applied.
//!
//! # One inbox
//!
//! Every event reaches the running schedule through the [`Engine`](crate::Engine), on the
//! audio thread, at the start of a block and after the engine has taken any schedule
//! swapped in: a device's MIDI ([`Engine::midi`](crate::Engine::midi)), then every
//! controller's queue (OSC goes through a controller). A note "to every instrument" is one
//! entry in a controller's queue and is fanned out there, to the instruments of the
//! schedule that runs then. Preloaded events (automation, a MIDI file, a replay) are the
//! schedule's own timeline. Events that do not fit in the schedule's event list wait in
//! their queue for the next block; events that cannot be delivered at all are counted
//! ([`Engine::undelivered_events`](crate::Engine::undelivered_events)).
//!
//! # Hot swap
//!
//! Events address nodes by [`NodeKey`], which a node keeps in every schedule that keeps it
//! (the same name and the same parameter list), wherever it lands in processing order. A
//! schedule swapped in with [`Engine::swap_channel`](crate::Engine::swap_channel) [takes
//! over](downbeat_graph::Schedule::take_over) from the old one at the block boundary:
//!
//! * The timeline goes on: frames count from the start of the run, and the new schedule
//!   starts at the old one's position ([`When::Frame`] means the same frame before and
//!   after).
//! * A schedule a [`LiveEditor`](crate::edit::LiveEditor) committed carries on the old
//!   schedule's preloaded timeline (automation, `--midi`, a replay) where it was. Any other
//!   schedule brings its own (its automation), starting at the swap: its frame 0 is the
//!   frame the swap happened at, and the rest of the old schedule's goes with it.
//! * Events the old schedule had taken for later frames move to the same node of the new
//!   one, and events still in a controller's queue reach it there. Events for a node the
//!   new schedule lacks (or no longer has live) are refused and counted in
//!   [`Engine::stale_events`](crate::Engine::stale_events); those its event list has no
//!   room for are counted as undelivered. The move is bounded by the old list's capacity
//!   and allocates nothing.
//! * A schedule a [`LiveEditor`](crate::edit::LiveEditor) committed keeps its nodes' running
//!   instances, with their parameter values and ramps. A schedule rebuilt from a project has
//!   fresh instances: a node kept by name starts from the new schedule's values (a project
//!   edited on disk sets the parameters it says); only its queued events carry over.
//!
//! ```
//! use downbeat::{control::When, project::Project, Engine};
//!
//! let p = Project::parse(
//!     "edges = [\"s -> g -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.g]\ntype = \"gain\"\n\
//!      [nodes.out]\ntype = \"output\"\n",
//!     "x.toml",
//! ).unwrap();
//! let mut engine = Engine::new(p.build().unwrap());
//! let mut control = engine.controller(64);
//! // From any thread: silence the gain at frame 100, exactly.
//! std::thread::spawn(move || {
//!     control.step(When::Frame(100), "g", "gain", 0.0).unwrap();
//!     assert!(control.set("g", "bogus", 1.0).is_err());
//! }).join().unwrap();
//! let mut block = vec![0.0f32; 256 * 2];
//! engine.process(&mut block);
//! assert!(block[200..].iter().all(|&x| x == 0.0));
//! ```

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
#[cfg(not(target_arch = "wasm32"))]
use std::time::Instant;

use crate::clock::now_ns;
use downbeat_graph::time::{checked_beat, TransportCommand};
use downbeat_graph::{
    Change, ControlError, Event, NodeKey, NoteEvent, OnBeat, ParamId, ParamTable, Ramp, Schedule,
    Shape, Target,
};
use downbeat_ring::{Consumer, Producer, RingBuffer};

pub mod automation;
#[cfg(not(target_arch = "wasm32"))]
pub mod osc;
pub mod record;

/// Controllers an engine holds at once: their queues are polled at every block start, so
/// the list is fixed before the run (and the audio thread never grows it). The slot of a
/// dropped controller is reused once the audio thread has taken every event it sent.
pub const MAX_CONTROLLERS: usize = 16;

/// When an event takes effect: at a frame of the engine's timeline, or when the playing
/// song reaches a beat (placed on that beat's exact frame, after whatever tempo changes,
/// locates and loops come first).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum When {
    /// At the start of the next block the engine computes.
    Now,
    /// At this frame of the engine's timeline (frames since the run began; a hot swap does
    /// not restart it).
    Frame(u64),
    /// At this instant, mapped onto the timeline through the latest block's start time at
    /// the nominal sample rate (the virtual device's frames follow the clock; the offline
    /// device renders as fast as it can, so there an instant is frames from the latest
    /// block, not wall time; a sound card's drift between two blocks is not modelled).
    /// Native only: wasm32 has no clock.
    #[cfg(not(target_arch = "wasm32"))]
    At(Instant),
    /// When the song reaches this quarter-note beat while playing. A beat the song has
    /// passed when the audio thread takes the event takes effect at once, counted late.
    Beat(f64),
    /// On the next line of the time signature's beats.
    NextBeat,
    /// On the next bar line.
    NextBar,
}

/// Where the timeline was at the start of the latest block: written by the audio thread,
/// read by controllers to map instants to frames.
#[derive(Debug, Default)]
pub(crate) struct Anchor {
    /// Sequence counter: odd while the audio thread writes.
    seq: AtomicU64,
    frame: AtomicU64,
    ns: AtomicU64,
    /// Nodes that play notes in the running schedule (outside the seqlock: read alone).
    pub(crate) instruments: AtomicUsize,
}

impl Anchor {
    /// Publishes `frame` starting at `ns`. Wait-free: a seqlock write.
    pub(crate) fn publish(&self, frame: u64, ns: u64) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s + 1, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
        self.frame.store(frame, Ordering::Relaxed);
        self.ns.store(ns, Ordering::Relaxed);
        self.seq.store(s + 2, Ordering::Release);
    }

    /// The latest `(frame, ns)` pair, consistent; `(0, 0)` before the first block.
    fn read(&self) -> (u64, u64) {
        loop {
            let s1 = self.seq.load(Ordering::Acquire);
            let frame = self.frame.load(Ordering::Relaxed);
            let ns = self.ns.load(Ordering::Relaxed);
            std::sync::atomic::fence(Ordering::Acquire);
            if s1 % 2 == 0 && self.seq.load(Ordering::Relaxed) == s1 {
                return (frame, ns);
            }
            std::hint::spin_loop();
        }
    }
}

/// The audio-thread side of the engine's controllers.
pub(crate) struct ControlInputs {
    queues: Vec<Consumer<Event>>,
    pub(crate) anchor: Arc<Anchor>,
    /// Events that could not reach any node (a note to the instruments of a schedule
    /// without any, or one that needs more entries than the schedule's whole queue).
    pub(crate) undelivered: u64,
}

impl ControlInputs {
    pub(crate) fn new() -> Self {
        Self {
            queues: Vec::with_capacity(MAX_CONTROLLERS),
            anchor: Arc::new(Anchor::default()),
            undelivered: 0,
        }
    }

    /// Moves every controller's queued events into the schedule, oldest first, until the
    /// schedule's queue is full; what does not fit stays in the controllers' queues for the
    /// next block. A note to the instruments fans out to the running schedule's. Events
    /// for nodes the schedule lacks are counted there ([`downbeat_graph::EventStats::stale`]),
    /// the others that cannot be delivered here. Publishes the block's start. Real-time
    /// safe.
    pub(crate) fn drain(&mut self, schedule: &mut Schedule) {
        self.anchor.publish(schedule.position(), now_ns());
        self.anchor
            .instruments
            .store(schedule.instrument_count(), Ordering::Relaxed);
        'queues: for q in &mut self.queues {
            while let Some(event) = q.peek().copied() {
                match schedule.push_event(event) {
                    Ok(()) | Err(ControlError::Stale) => {}
                    // Waits for room, unless it needs more than the whole queue.
                    // This controller's later events wait behind it, in order; another's
                    // may need no room there (a transport command, an event for a beat).
                    Err(ControlError::QueueFull { capacity })
                        if event.target != Target::Instruments
                            || schedule.instrument_count() <= capacity =>
                    {
                        continue 'queues
                    }
                    Err(_) => self.undelivered += 1,
                }
                q.pop();
            }
        }
    }

    /// Events waiting in the controllers' queues.
    pub(crate) fn waiting(&self) -> usize {
        self.queues.iter().map(Consumer::available_read).sum()
    }

    /// Frees the slots of controllers that are gone and whose events the audio thread has
    /// all taken. Off the audio thread (it frees their queues).
    fn free_dropped(&mut self) {
        self.queues.retain(|q| !q.is_abandoned() || !q.is_empty());
    }

    /// Controllers that can still be made (dropped ones freed first). Off the audio thread.
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn room(&mut self) -> usize {
        self.free_dropped();
        MAX_CONTROLLERS - self.queues.len()
    }
}

/// A control handle for a running engine, for a control thread: resolves `node.param`
/// names off the audio thread, checks values, and sends events through a wait-free queue
/// of its own. Made by [`Engine::controller`](crate::Engine::controller).
///
/// Every refusal is a [`ControlError`] worded as the project file's errors; a full queue
/// is reported ([`ControlError::QueueFull`]), never dropped.
///
/// Names resolve against the schedule that ran when the controller was made; the ids it
/// hands out address nodes by [`NodeKey`], so they stay good across hot swaps that keep
/// the node. To address a node a swap added, give the controller the new schedule's table
/// ([`set_table`](Controller::set_table)).
pub struct Controller {
    table: Arc<ParamTable>,
    queue: Producer<Event>,
    anchor: Arc<Anchor>,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("schedule", &self.table.schedule_id())
            .field("capacity", &self.queue.capacity())
            .finish()
    }
}

impl Controller {
    pub(crate) fn new(table: Arc<ParamTable>, inputs: &mut ControlInputs, capacity: usize) -> Self {
        inputs.free_dropped();
        assert!(
            inputs.queues.len() < MAX_CONTROLLERS,
            "an engine holds at most {MAX_CONTROLLERS} controllers at once"
        );
        let (queue, consumer) = RingBuffer::<Event>::new(capacity);
        inputs.queues.push(consumer);
        Self {
            table,
            queue,
            anchor: Arc::clone(&inputs.anchor),
        }
    }

    /// The names and ranges of the engine's parameters.
    pub fn table(&self) -> &ParamTable {
        &self.table
    }

    /// Resolves names against `table` from now on: the table of a schedule swapped in since
    /// (a [`LiveEditor`](crate::edit::LiveEditor)'s, after an edit that added nodes). Ids
    /// resolved before stay good for every node the new schedule keeps.
    pub fn set_table(&mut self, table: Arc<ParamTable>) {
        self.table = table;
    }

    /// The id of live parameter `param` of node `node`.
    ///
    /// # Errors
    /// An unknown node or parameter, or one that cannot change while running.
    pub fn resolve(&self, node: &str, param: &str) -> Result<ParamId, ControlError> {
        self.table.resolve(node, param)
    }

    /// `event` timed by `when`: a frame, or a musical time it waits for.
    pub fn timed(&self, when: When, event: Event) -> Event {
        let at = |frame| Event { frame, ..event };
        match when {
            When::Now => at(None),
            When::Frame(f) => at(Some(f)),
            #[cfg(not(target_arch = "wasm32"))]
            When::At(instant) => at(Some(self.frame_at(instant))),
            When::Beat(b) => at(None).on_beat(OnBeat::Beat(b)),
            When::NextBeat => at(None).on_beat(OnBeat::NextBeat),
            When::NextBar => at(None).on_beat(OnBeat::NextBar),
        }
    }

    /// Sends a transport command: play, stop, locate, loop.
    ///
    /// ```
    /// use downbeat::control::When;
    /// use downbeat::{project::Project, Engine};
    /// use downbeat_graph::time::TransportCommand;
    ///
    /// let p = Project::parse("edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n", "x.toml").unwrap();
    /// let mut engine = Engine::new(p.build().unwrap());
    /// let mut control = engine.controller(16);
    /// control.transport(When::NextBar, TransportCommand::Stop).unwrap();
    /// let mut block = vec![0.0; 2 * 24_000]; // half a second: beat 1 of a 120 bpm song
    /// for _ in 0..5 {
    ///     engine.process(&mut block);
    /// }
    /// let t = engine.schedule().transport();
    /// assert!(!t.is_playing());
    /// assert_eq!(t.position().beat, 4.0, "stopped on the bar line");
    /// ```
    ///
    /// # Errors
    /// A beat that is negative or not a number, a loop that does not end after it starts,
    /// a time that is not a number, or [`ControlError::QueueFull`].
    pub fn transport(&mut self, when: When, command: TransportCommand) -> Result<(), ControlError> {
        command.check().map_err(ControlError::Transport)?;
        if let When::Beat(b) = when {
            checked_beat(b).map_err(ControlError::Transport)?;
        }
        let event = self.timed(when, Event::transport(None, command));
        self.queue.push(event).map_err(|_| ControlError::QueueFull {
            capacity: self.queue.capacity(),
        })
    }

    /// The timeline frame at `instant`, extrapolated from the latest block's start.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn frame_at(&self, instant: Instant) -> u64 {
        let (frame, ns) = self.anchor.read();
        let (now, now_ns) = (Instant::now(), now_ns());
        let at_ns = if instant >= now {
            now_ns.saturating_add((instant - now).as_nanos() as u64)
        } else {
            now_ns.saturating_sub((now - instant).as_nanos() as u64)
        };
        let rate = f64::from(self.table.sample_rate());
        let offset = (at_ns as f64 - ns as f64) * 1e-9 * rate;
        (frame as f64 + offset).round().max(0.0) as u64
    }

    /// The frame the latest block started at (0 before the first).
    pub fn position(&self) -> u64 {
        self.anchor.read().0
    }

    /// Sends `change` for parameter `id`, after checking it.
    ///
    /// # Errors
    /// A value out of range, or [`ControlError::QueueFull`].
    pub fn send(&mut self, when: When, id: ParamId, change: Change) -> Result<(), ControlError> {
        self.table.check(id, &change)?;
        let event = self.timed(when, Event::param(None, id, change));
        self.queue.push(event).map_err(|_| ControlError::QueueFull {
            capacity: self.queue.capacity(),
        })
    }

    /// Moves `node.param` to `value` now, smoothed.
    ///
    /// # Errors
    /// As [`resolve`](Self::resolve) and [`send`](Self::send).
    pub fn set(&mut self, node: &str, param: &str, value: f32) -> Result<(), ControlError> {
        let id = self.resolve(node, param)?;
        self.send(When::Now, id, Change::Set(value))
    }

    /// Jumps `node.param` to `value` at `when`, unsmoothed.
    ///
    /// # Errors
    /// As [`resolve`](Self::resolve) and [`send`](Self::send).
    pub fn step(
        &mut self,
        when: When,
        node: &str,
        param: &str,
        value: f32,
    ) -> Result<(), ControlError> {
        let id = self.resolve(node, param)?;
        self.send(when, id, Change::Step(value))
    }

    /// Ramps `node.param` from the value it has reached at `when` to `target` over
    /// `seconds`.
    ///
    /// # Errors
    /// As [`resolve`](Self::resolve) and [`send`](Self::send), and a bad duration.
    pub fn ramp(
        &mut self,
        when: When,
        node: &str,
        param: &str,
        shape: Shape,
        target: f32,
        seconds: f64,
    ) -> Result<(), ControlError> {
        let id = self.resolve(node, param)?;
        let frames = self.table.ramp_frames(id, seconds)?;
        let ramp = Ramp {
            shape,
            from: None,
            to: target,
            frames,
        };
        self.send(when, id, Change::Ramp(ramp))
    }

    /// Room left in the queue, in events.
    pub fn available(&self) -> usize {
        self.queue.available_write()
    }

    /// Sends a note event at `when` to every node that plays notes
    /// ([`ParamTable::note_nodes`]), whatever its channel: one queue entry, fanned out on the
    /// audio thread to the instruments of the schedule running when it arrives (so a swap
    /// that adds or removes an instrument is honoured).
    ///
    /// ```
    /// use downbeat::{control::When, project::Project, Engine};
    /// use downbeat_graph::NoteEvent;
    ///
    /// let p = Project::parse(
    ///     "edges = [\"s -> out\"]\n[nodes.s]\ntype = \"synth\"\n[nodes.out]\ntype = \"output\"\n",
    ///     "x.toml",
    /// ).unwrap();
    /// let mut engine = Engine::new(p.build().unwrap());
    /// let mut control = engine.controller(64);
    /// control.note_on(When::Frame(100), 0, 69.0, 0.8).unwrap();
    /// assert!(control.note_on(When::Now, 16, 69.0, 0.8).is_err());
    /// let mut block = vec![0.0f32; 256 * 2];
    /// engine.process(&mut block);
    /// assert!(block[..200].iter().all(|&x| x == 0.0));
    /// assert!(block[200..].iter().any(|&x| x != 0.0));
    /// ```
    ///
    /// # Errors
    /// [`ControlError::BadNote`] for a value out of range, [`ControlError::NoInstrument`]
    /// when no node of the running schedule plays notes (as of the latest block),
    /// [`ControlError::QueueFull`] when the queue is full.
    pub fn send_note(&mut self, when: When, event: NoteEvent) -> Result<(), ControlError> {
        event.validate().map_err(ControlError::BadNote)?;
        if self.anchor.instruments.load(Ordering::Relaxed) == 0 {
            return Err(ControlError::NoInstrument);
        }
        let event = self.timed(when, Event::note_to_instruments(None, event.normalized()));
        self.queue.push(event).map_err(|_| ControlError::QueueFull {
            capacity: self.queue.capacity(),
        })
    }

    /// The key of node `node`, which must play notes, for
    /// [`send_note_to`](Self::send_note_to).
    ///
    /// # Errors
    /// [`ControlError::UnknownNode`] for a node the controller's table does not have,
    /// [`ControlError::NotAnInstrument`] for one that does not play notes.
    pub fn resolve_instrument(&self, node: &str) -> Result<NodeKey, ControlError> {
        let key = self
            .table
            .node_key(node)
            .ok_or_else(|| ControlError::UnknownNode {
                name: node.to_string(),
                known: self.table.node_names().map(str::to_string).collect(),
            })?;
        if !self.table.note_nodes().any(|k| k == key) {
            return Err(ControlError::NotAnInstrument {
                node: node.to_string(),
            });
        }
        Ok(key)
    }

    /// Sends a note event at `when` to node `node` alone (the one of that key in the
    /// running schedule; counted as stale if a swap removed it).
    ///
    /// ```
    /// use downbeat::{control::When, project::Project, Engine};
    /// use downbeat_graph::NoteEvent;
    ///
    /// let p = Project::parse(
    ///     "edges = [\"a -> out\", \"b -> out\"]\n[nodes.a]\ntype = \"synth\"\n\
    ///      [nodes.b]\ntype = \"karplus\"\n[nodes.out]\ntype = \"output\"\n",
    ///     "x.toml",
    /// ).unwrap();
    /// let mut engine = Engine::new(p.build().unwrap());
    /// let mut control = engine.controller(64);
    /// let a = control.resolve_instrument("a").unwrap();
    /// let on = NoteEvent::On { channel: 0, note: 60.0, velocity: 1.0 };
    /// control.send_note_to(When::Frame(10), a, on).unwrap();
    /// assert!(control.resolve_instrument("out").is_err()); // plays no notes
    /// ```
    ///
    /// # Errors
    /// [`ControlError::BadNote`] for a value out of range, [`ControlError::QueueFull`].
    pub fn send_note_to(
        &mut self,
        when: When,
        node: NodeKey,
        event: NoteEvent,
    ) -> Result<(), ControlError> {
        event.validate().map_err(ControlError::BadNote)?;
        let event = self.timed(when, Event::note(None, node, event.normalized()));
        self.queue.push(event).map_err(|_| ControlError::QueueFull {
            capacity: self.queue.capacity(),
        })
    }

    /// Starts note `note` (`0..=127`, fractions are microtones) on MIDI channel `channel`
    /// (`0..=15`) with `velocity` (`0..=1`; 0 is a note off, as in MIDI).
    ///
    /// # Errors
    /// As [`send_note`](Self::send_note).
    pub fn note_on(
        &mut self,
        when: When,
        channel: u8,
        note: f32,
        velocity: f32,
    ) -> Result<(), ControlError> {
        self.send_note(
            when,
            NoteEvent::On {
                channel,
                note,
                velocity,
            },
        )
    }

    /// Releases note `note` on `channel`.
    ///
    /// # Errors
    /// As [`send_note`](Self::send_note).
    pub fn note_off(&mut self, when: When, channel: u8, note: f32) -> Result<(), ControlError> {
        self.send_note(when, NoteEvent::Off { channel, note })
    }

    /// Releases every note on `channel` (`None`: on every channel).
    ///
    /// # Errors
    /// As [`send_note`](Self::send_note).
    pub fn all_notes_off(&mut self, when: When, channel: Option<u8>) -> Result<(), ControlError> {
        self.send_note(when, NoteEvent::AllNotesOff { channel })
    }

    /// Bends every note on `channel` by `value` (`-1..=1` of the receiver's bend range).
    ///
    /// # Errors
    /// As [`send_note`](Self::send_note).
    pub fn pitch_bend(&mut self, when: When, channel: u8, value: f32) -> Result<(), ControlError> {
        self.send_note(when, NoteEvent::PitchBend { channel, value })
    }

    /// Presses (`on`) or lifts the sustain pedal of `channel`.
    ///
    /// # Errors
    /// As [`send_note`](Self::send_note).
    pub fn sustain(&mut self, when: When, channel: u8, on: bool) -> Result<(), ControlError> {
        self.send_note(when, NoteEvent::Sustain { channel, on })
    }
}
