//! [`Session`]: one loaded project, its engine and the buffers the exports hand out.
//!
//! Everything the exports do is here, as safe Rust with typed errors, so that it is tested
//! natively; `lib.rs` only moves bytes across the wasm boundary.

use std::fmt::{self, Write as _};
use std::sync::Arc;

use downbeat::control::{Controller, When};
use downbeat::edit::{CommitError, LiveEditor};
use downbeat::midi::{play, MidiFile};
use downbeat::project::Project;
use downbeat::Engine;
use downbeat_graph::time::{checked_beat, MusicalPosition, TransportCommand};
use downbeat_graph::{
    Change, ControlError, NodeConfig, NodeKey, NoteEvent, ParamId, ParamTable, Ramp, Shape,
};

use crate::edit::{self, Batch};
use crate::error::{Code, Error};
use crate::refused;

/// Events the engine's list holds between two renders (the controller's queue): far more
/// than a block's worth of control traffic.
pub const EVENT_CAPACITY: usize = 4096;

/// The id meaning "every instrument" (for notes) or "every channel" (all notes off).
pub const ALL: u32 = u32::MAX;

/// Room kept for an error message, so that the per-block exports' errors do not allocate.
const MESSAGE_ROOM: usize = 1024;

/// One event, as [`Session::event`] takes it (the ABI's `db_event` arguments).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// Moves a parameter to `value`, smoothed as natively.
    Set,
    /// Jumps a parameter to `value`.
    Step,
    /// Ramps a parameter linearly to `value` over `extra` seconds.
    Ramp,
    /// Starts note `value` with velocity `extra` (0..=1) on `channel`.
    NoteOn,
    /// Releases note `value` on `channel`.
    NoteOff,
    /// Releases every note on `channel` ([`ALL`]: on every channel).
    AllNotesOff,
    /// The transport plays from where it stands.
    Play,
    /// The transport stops where it is (the song's position stays).
    Stop,
    /// The song goes to beat `value` (playing or not).
    Locate,
    /// The song loops from beat `value` to beat `extra`.
    Loop,
    /// No more looping.
    Unloop,
    /// The tempo goes to `value` bpm, linearly over `extra` beats (0: at once), from the beat
    /// the song is at when it lands.
    Tempo,
}

impl Op {
    /// The op of ABI number `n` (1 to 12).
    pub fn from_number(n: u32) -> Option<Op> {
        Some(match n {
            1 => Op::Set,
            2 => Op::Step,
            3 => Op::Ramp,
            4 => Op::NoteOn,
            5 => Op::NoteOff,
            6 => Op::AllNotesOff,
            7 => Op::Play,
            8 => Op::Stop,
            9 => Op::Locate,
            10 => Op::Loop,
            11 => Op::Unloop,
            12 => Op::Tempo,
            _ => return None,
        })
    }
}

/// A loaded project running in an [`Engine`], driven block by block, and edited live
/// ([`edit`](Session::edit)) as a native [`LiveEditor`] edits it.
///
/// ```
/// use downbeat_engine_wasm::{Op, Session};
/// let text = "edges = [\"s -> g -> out\"]\n[nodes.s]\ntype = \"sine\"\n\
///             [nodes.g]\ntype = \"gain\"\n[nodes.out]\ntype = \"output\"\n";
/// let mut s = Session::load(text, "x.toml").unwrap();
/// let gain = s.param_id("g", "gain").unwrap();
/// s.event(Op::Step, gain, Some(0), 0.0, 0.0, 0).unwrap();
/// s.render(256).unwrap();
/// assert!(s.output(0).iter().all(|&x| x == 0.0));
/// ```
pub struct Session {
    project: Project,
    engine: Engine,
    controller: Controller,
    /// Edits the running graph: commits go to the engine, which takes them over at its next
    /// block; what it hands back is freed here, off the block.
    editor: LiveEditor,
    /// The names of the graph as last committed.
    table: Arc<ParamTable>,
    /// Parameters and outputs by ABI id. Only grows: an edit gives the parameters it adds
    /// the next ids, and the ids of the nodes it removes stay theirs (refused from then on),
    /// so a record in flight never reaches another parameter than the one it was made for.
    params: Vec<ParamId>,
    /// Each parameter's value when its id was given (at load, or by the edit that added it):
    /// the table's `initial` (a committed table's kept nodes are stand-ins, which have none).
    initial: Vec<f32>,
    /// Instruments by ABI id; grows as `params` does.
    instruments: Vec<NodeKey>,
    /// Edits committed since load.
    edits: u64,
    table_json: String,
    interleaved: Vec<f32>,
    /// The last block, channel after channel, `block_size` frames each.
    planar: Vec<f32>,
    peak: Vec<f32>,
    rms: Vec<f32>,
    frames: usize,
    position: u64,
    dropped: u64,
    midi_frames: Option<u64>,
    /// The song's position after the last render (or at load), for the transport readers.
    musical: MusicalPosition,
    /// [`MESSAGE_ROOM`] bytes made at load, for the exports' message when the session is
    /// installed on a thread whose message has less (see `install` in `lib.rs`).
    room: String,
}

impl Session {
    /// Parses and builds project `text` (`name` is used in messages), as `downbeat run`
    /// does, and makes every buffer the exports use.
    ///
    /// # Errors
    /// [`Code::BadInput`] with the CLI's message for a project it refuses;
    /// [`Code::Unsupported`] naming the node, located at its `type`, for a node type that
    /// needs the operating system.
    pub fn load(text: &str, name: &str) -> Result<Session, Error> {
        refused::register();
        let project =
            Project::parse(text, name).map_err(|e| Error::new(Code::BadInput, e.to_string()))?;
        for (i, node) in project.nodes.iter().enumerate() {
            if let Some(why) = refused::refusal(&node.kind) {
                let message = refused::message(&node.name, &node.kind, why);
                return Err(Error::new(
                    Code::Unsupported,
                    project.node_error(i, message).to_string(),
                ));
            }
        }
        // Built as `Project::build` builds it (the same schedule), with an editor for it.
        let (editor, schedule) = project
            .editor()
            .map_err(|e| Error::new(Code::BadInput, e.to_string()))?;
        let mut engine = Engine::new(schedule);
        let controller = engine.controller(EVENT_CAPACITY);
        let editor = engine.live_editor(editor);
        // A block of no frames publishes the instrument count to the controller, so that
        // notes sent before the first render are accepted; it renders nothing.
        engine.process(&mut []);
        let table = editor.table();
        let params: Vec<ParamId> = table.watched().collect();
        let initial: Vec<f32> = params.iter().map(|&p| table.initial(p)).collect();
        let instruments: Vec<NodeKey> = table.note_nodes().collect();
        let channels = engine.channels();
        let block = engine.block_size();
        let table_json = crate::table::json(&engine, &table, &params, &initial, &instruments);
        let musical = engine.schedule().transport().position();
        Ok(Session {
            project,
            controller,
            editor,
            table,
            params,
            initial,
            instruments,
            edits: 0,
            table_json,
            interleaved: vec![0.0; block * channels],
            planar: vec![0.0; block * channels],
            peak: vec![0.0; channels],
            rms: vec![0.0; channels],
            frames: 0,
            position: 0,
            dropped: 0,
            midi_frames: None,
            musical,
            room: String::with_capacity(MESSAGE_ROOM),
            engine,
        })
    }

    /// Puts Standard MIDI File `bytes` on the timeline as `downbeat run --midi` does;
    /// returns the frames a run playing it lasts (as [`midi_frames`](Session::midi_frames)).
    ///
    /// # Errors
    /// [`Code::BadInput`]: a malformed file (the byte offset and what was expected there),
    /// or a `[midi.cc]` entry of the project that names no live parameter.
    pub fn load_midi(&mut self, bytes: &[u8]) -> Result<u64, Error> {
        let bad = |e: &dyn std::fmt::Display| Error::new(Code::BadInput, format!("--midi: {e}"));
        let file = MidiFile::parse(bytes).map_err(|e| bad(&e))?;
        let cc = self
            .project
            .cc_mappings(&self.table)
            .map_err(|e| Error::new(Code::BadInput, e.to_string()))?;
        let has_tempo = self.project.tempo.is_some();
        let frames = play::place(&file, self.engine.schedule_mut(), &cc, has_tempo)
            .map_err(|e| bad(&e))?
            .frames;
        self.midi_frames = Some(frames);
        Ok(frames)
    }

    /// The frames a run playing the MIDI file lasts, as the CLI computes its length (at
    /// least 1); 0 before [`load_midi`](Session::load_midi).
    pub fn midi_frames(&self) -> u64 {
        self.midi_frames.map_or(0, |f| f.max(1))
    }

    /// The id of live parameter (or output) `param` of node `node` in the table.
    pub fn param_id(&self, node: &str, param: &str) -> Option<u32> {
        let id = self.table.resolve_watched(node, param).ok()?;
        self.params.iter().position(|&p| p == id).map(|i| i as u32)
    }

    /// The id of instrument `node` in the table.
    pub fn instrument_id(&self, node: &str) -> Option<u32> {
        let key = self.table.node_key(node)?;
        self.instruments
            .iter()
            .position(|&k| k == key)
            .map(|i| i as u32)
    }

    /// Queues one event at timeline frame `frame` (`None`: the start of the next block),
    /// checked and sent exactly as the native [`Controller`] does. Allocates nothing
    /// unless it fails.
    ///
    /// # Errors
    /// As [`event_when`](Session::event_when).
    pub fn event(
        &mut self,
        op: Op,
        id: u32,
        frame: Option<u64>,
        value: f32,
        extra: f32,
        channel: u32,
    ) -> Result<(), Error> {
        let when = frame.map_or(When::Now, When::Frame);
        self.event_when(op, id, when, value, extra, channel)
    }

    /// Queues one event at `when`: a frame of the timeline, "now" (the start of the next
    /// block), or a musical time ([`When::Beat`], [`When::NextBeat`], [`When::NextBar`]: the
    /// event waits for the song to reach it, after whatever tempo changes, locates and loops
    /// come first). The transport ops ([`Op::Play`] to [`Op::Tempo`]) ignore `id` and
    /// `channel`. Checked and sent exactly as the native [`Controller`] does (its
    /// [`transport`](Controller::transport) for the transport ops). Allocates nothing
    /// unless it fails.
    ///
    /// ```
    /// use downbeat_engine_wasm::{Op, Session, When};
    /// let text = "edges = [\"m -> out\"]\n[nodes.m]\ntype = \"metronome\"\n\
    ///             [nodes.out]\ntype = \"output\"\n";
    /// let mut s = Session::load(text, "x.toml").unwrap();
    /// s.event_when(Op::Stop, 0, When::Beat(1.0), 0.0, 0.0, 0).unwrap();
    /// let e = s.event_when(Op::Loop, 0, When::Now, 4.0, 2.0, 0).unwrap_err();
    /// assert_eq!(e.message, "transport: a loop from beat 4 to beat 2 must end at least one frame after it starts");
    /// for _ in 0..200 {
    ///     s.render(256).unwrap(); // 120 bpm: beat 1 is 24,000 frames in
    /// }
    /// assert!(!s.transport_position().playing);
    /// assert_eq!(s.transport_position().beat, 1.0);
    /// ```
    ///
    /// # Errors
    /// [`Code::UnknownId`], [`Code::OutOfRange`] (the message names the range: a value, a
    /// beat that is negative or not a number, a loop that does not end after it starts, a
    /// tempo not above 0 or above 999, a negative ramp), [`Code::Full`] (counted in
    /// [`dropped`](Session::dropped)).
    pub fn event_when(
        &mut self,
        op: Op,
        id: u32,
        when: When,
        value: f32,
        extra: f32,
        channel: u32,
    ) -> Result<(), Error> {
        let mut message = String::new();
        self.event_to(op, id, when, value, extra, channel, &mut message)
            .map_err(|code| Error::new(code, message))
    }

    /// [`event_when`](Session::event_when) for the exports: a refusal's message is written
    /// into `message` (whose room the module keeps), so that refusing allocates nothing.
    // The ABI's event record is six words; the seventh argument is where a refusal says why.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn event_to(
        &mut self,
        op: Op,
        id: u32,
        when: When,
        value: f32,
        extra: f32,
        channel: u32,
        message: &mut String,
    ) -> Result<(), Code> {
        if let When::Beat(b) = when {
            if let Err(e) = checked_beat(b) {
                return Err(say(message, Code::OutOfRange, format_args!("{e}")));
            }
        }
        let result = match op {
            Op::Set | Op::Step | Op::Ramp => {
                let Some(&param) = self.params.get(id as usize) else {
                    return Err(unknown(message, "parameter", id, self.params.len()));
                };
                if self.table.node_name(param.node()).is_none() {
                    return Err(removed(message, "parameter", id));
                }
                if self.table.is_output(param) {
                    let (node, name) = self.table.names(param);
                    return Err(say(
                        message,
                        Code::UnknownId,
                        format_args!(
                            "id {id} is `{node}.{name}`, an output: it can be read, not set"
                        ),
                    ));
                }
                let change = match op {
                    Op::Set => Change::Set(value),
                    Op::Step => Change::Step(value),
                    _ => {
                        let frames = self
                            .table
                            .ramp_frames(param, f64::from(extra))
                            .map_err(|e| say(message, Code::OutOfRange, format_args!("{e}")))?;
                        Change::Ramp(Ramp {
                            shape: Shape::Linear,
                            from: None,
                            to: value,
                            frames,
                        })
                    }
                };
                self.controller.send(when, param, change)
            }
            Op::NoteOn | Op::NoteOff | Op::AllNotesOff => {
                let note = note(op, value, extra, channel, message)?;
                if id == ALL {
                    self.controller.send_note(when, note)
                } else {
                    let Some(&key) = self.instruments.get(id as usize) else {
                        return Err(unknown(message, "instrument", id, self.instruments.len()));
                    };
                    if self.table.node_name(key).is_none() {
                        return Err(removed(message, "instrument", id));
                    }
                    self.controller.send_note_to(when, key, note)
                }
            }
            Op::Play => self.controller.transport(when, TransportCommand::Play),
            Op::Stop => self.controller.transport(when, TransportCommand::Stop),
            Op::Locate => {
                let beat = f64::from(value);
                self.controller
                    .transport(when, TransportCommand::LocateBeat(beat))
            }
            Op::Loop => {
                let (start, end) = (f64::from(value), f64::from(extra));
                self.controller
                    .transport(when, TransportCommand::Loop(start, end))
            }
            Op::Unloop => self.controller.transport(when, TransportCommand::Unloop),
            Op::Tempo => {
                let (bpm, ramp) = (f64::from(value), f64::from(extra));
                self.controller
                    .transport(when, TransportCommand::Tempo { bpm, ramp })
            }
        };
        result.map_err(|e| self.refused(e, message))
    }

    /// A controller's refusal as an ABI error; a full queue counts as dropped. The two
    /// refusals that can come without allocating are worded here, because
    /// `ControlError::message` builds a `String`; the others own the node's name (the check
    /// that made them has allocated already) or cannot come here (`note` checks first).
    fn refused(&mut self, e: ControlError, message: &mut String) -> Code {
        match e {
            ControlError::QueueFull { capacity } => {
                self.dropped += 1;
                say(
                    message,
                    Code::Full,
                    format_args!(
                        "the engine's event list is full ({capacity} events): the event is \
                         dropped and counted in db_dropped; db_event_room says how many more \
                         fit before the next db_render"
                    ),
                )
            }
            ControlError::NoInstrument => say(
                message,
                Code::UnknownId,
                format_args!("no node of this project plays notes"),
            ),
            // Worded as `ControlError::message` words it, without its `String`.
            ControlError::Transport(e) => {
                say(message, Code::OutOfRange, format_args!("transport: {e}"))
            }
            e => say(message, Code::OutOfRange, format_args!("{}", e.message())),
        }
    }

    /// Renders the next `frames` frames (1 to the block size) as the native engine's
    /// `process` does. Allocates nothing.
    ///
    /// # Errors
    /// [`Code::BadInput`] for a count of 0 or above the block size.
    pub fn render(&mut self, frames: usize) -> Result<usize, Error> {
        let mut message = String::new();
        self.render_to(frames, &mut message)
            .map_err(|code| Error::new(code, message))
    }

    /// [`render`](Session::render) for the exports, a refusal said in `message` (see
    /// [`event_to`](Session::event_to)).
    pub(crate) fn render_to(&mut self, frames: usize, message: &mut String) -> Result<usize, Code> {
        let block = self.engine.block_size();
        if frames == 0 || frames > block {
            return Err(say(
                message,
                Code::BadInput,
                format_args!(
                    "render {frames} frames: give 1 to {block} (the project's block_size)"
                ),
            ));
        }
        let ch = self.engine.channels();
        let out = &mut self.interleaved[..frames * ch];
        self.engine.process(out);
        for c in 0..ch {
            let plane = &mut self.planar[c * block..c * block + frames];
            let (mut peak, mut sum) = (0.0f32, 0.0f64);
            for (dst, frame) in plane.iter_mut().zip(out.chunks_exact(ch)) {
                let x = frame[c];
                *dst = x;
                peak = peak.max(x.abs());
                sum += f64::from(x) * f64::from(x);
            }
            self.peak[c] = peak;
            self.rms[c] = (sum / frames as f64).sqrt() as f32;
        }
        self.frames = frames;
        self.position += frames as u64;
        self.musical = self.engine.schedule().transport().position();
        Ok(frames)
    }

    /// Where the song stands after the last render (at load: where it starts): playing or
    /// not, beat, bar, tempo, signature, loop. Read by the `db_transport_*` exports, for a
    /// position display; worked out by the render, without allocating.
    pub fn transport_position(&self) -> MusicalPosition {
        self.musical
    }

    /// Channel `channel` of the last rendered block (empty for a channel the project does
    /// not have).
    pub fn output(&self, channel: usize) -> &[f32] {
        let block = self.engine.block_size();
        if channel >= self.engine.channels() {
            return &[];
        }
        &self.planar[channel * block..channel * block + self.frames]
    }

    /// Peak of channel `channel` in the last rendered block (0 for no such channel).
    pub fn peak(&self, channel: usize) -> f32 {
        self.peak.get(channel).copied().unwrap_or(0.0)
    }

    /// RMS of channel `channel` in the last rendered block (0 for no such channel).
    pub fn rms(&self, channel: usize) -> f32 {
        self.rms.get(channel).copied().unwrap_or(0.0)
    }

    /// The current value of parameter (or output) `id`.
    ///
    /// # Errors
    /// [`Code::UnknownId`].
    pub fn value(&self, id: u32) -> Result<f32, Error> {
        let mut message = String::new();
        self.value_to(id, &mut message)
            .map_err(|code| Error::new(code, message))
    }

    /// [`value`](Session::value) for the exports, a refusal said in `message` (see
    /// [`event_to`](Session::event_to)).
    pub(crate) fn value_to(&self, id: u32, message: &mut String) -> Result<f32, Code> {
        let Some(&param) = self.params.get(id as usize) else {
            return Err(unknown(message, "parameter", id, self.params.len()));
        };
        // None for a node an edit removed (or one it adds, until the edit is taken over).
        let value = self.engine.schedule().param_value(param);
        value.ok_or_else(|| {
            say(
                message,
                Code::UnknownId,
                format_args!(
                    "parameter id {id} is of a node that is not running (an edit removed it, \
                     or adds it at the next render)"
                ),
            )
        })
    }

    /// Edits the running graph: one batch (JSON, as [`db_edit`](crate::db_edit) takes it),
    /// made all or none. Its new nodes are built here, the edited graph
    /// compiled here with only them in it, and the schedule handed to the engine, which
    /// takes it over at the start of the next [`render`](Session::render): every node the
    /// batch leaves alone goes on with its state (a voice's release, a string's delay line,
    /// a filter's memory, its parameters' values and ramps), and the nodes it removes leave
    /// with the old schedule, which is freed here at the next `edit` or
    /// [`reclaim`](Session::reclaim), never in a render. Afterwards the
    /// [table](Session::table_json) names the nodes the batch added, with new ids after the
    /// old ones; the ids of removed nodes are refused. Allocates: call it between renders.
    ///
    /// ```
    /// use downbeat_engine_wasm::Session;
    /// let text = "edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n\
    ///             [nodes.out]\ntype = \"output\"\n";
    /// let mut s = Session::load(text, "x.toml").unwrap();
    /// s.render(256).unwrap();
    /// s.edit(r#"{"add": {"g": {"type": "gain", "gain": 0.5}},
    ///           "disconnect": ["s -> out"], "connect": ["s -> g -> out"]}"#).unwrap();
    /// s.render(256).unwrap(); // the sine goes on, at half the level, from this block on
    /// assert!(s.param_id("g", "gain").is_some());
    /// let e = s.edit(r#"{"connect": ["g -> s"]}"#).unwrap_err();
    /// assert_eq!(e.message, "connect \"g -> s\": edge `g` -> `s`: `s` is a source and takes no input");
    /// ```
    ///
    /// # Errors
    /// [`Code::BadInput`] for a batch that is not JSON of that shape; [`Code::Refused`]
    /// naming the step and the culprit (an unknown node, type, parameter or port, a name
    /// taken, a cycle, channel counts that differ, removing the output); and
    /// [`Code::Unsupported`] for a node type the browser cannot run;
    /// [`Code::Busy`] when the engine has not rendered since the last
    /// [`EDITS_IN_FLIGHT`](downbeat::edit::EDITS_IN_FLIGHT) edits. In every case nothing
    /// changes: the graph runs on as it was.
    pub fn edit(&mut self, batch: &str) -> Result<(), Error> {
        let batch = Batch::parse(batch)?;
        let cfg = NodeConfig {
            sample_rate: self.engine.sample_rate(),
            max_block: self.engine.block_size(),
        };
        edit::apply(&mut self.editor, batch, &cfg)?;
        if let Err(e) = self.editor.commit() {
            // A refused commit has dropped the batch already; a busy one keeps it.
            self.editor.discard();
            let code = match e {
                CommitError::Edit(_) => Code::Refused,
                CommitError::Busy => Code::Busy,
            };
            return Err(Error::new(code, e.to_string()));
        }
        self.edits += 1;
        self.refresh_table();
        Ok(())
    }

    /// Frees the schedules the engine has handed back since the last edit (each holding the
    /// nodes its successor removed); [`edit`](Session::edit) does it too. Returns how many.
    pub fn reclaim(&mut self) -> usize {
        self.editor.reclaim()
    }

    /// Edits committed since load; each is taken over at the start of the render after it.
    pub fn edits(&self) -> u64 {
        self.edits
    }

    /// Edits the engine has taken over so far.
    pub fn edits_applied(&self) -> u64 {
        self.engine.swaps()
    }

    /// After a commit: the committed graph's names for the controller and the table, the
    /// ids of what it added after the others.
    fn refresh_table(&mut self) {
        let table = self.editor.table();
        for id in table.watched() {
            // A node the last table lacks is one this edit built (its own values are in the
            // new table); a kept node's stand-in has none.
            let built = self.table.node_name(id.node()).is_none();
            match self.params.iter().position(|&p| p == id) {
                None => {
                    self.params.push(id);
                    self.initial.push(table.initial(id));
                }
                // Removed, then added again by this edit with the same parameters.
                Some(k) if built => self.initial[k] = table.initial(id),
                Some(_) => {}
            }
        }
        for key in table.note_nodes() {
            if !self.instruments.contains(&key) {
                self.instruments.push(key);
            }
        }
        self.controller.set_table(Arc::clone(&table));
        self.table_json = crate::table::json(
            &self.engine,
            &table,
            &self.params,
            &self.initial,
            &self.instruments,
        );
        self.table = table;
    }

    /// Frames rendered since load.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// How many more events [`event`](Self::event) takes now: the room left in the
    /// controller's queue, which the next render empties into the schedule.
    pub fn event_room(&self) -> usize {
        self.controller.available()
    }

    /// Events refused because the event list was full.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The JSON table of parameters and instruments (see the ABI).
    pub fn table_json(&self) -> &str {
        &self.table_json
    }

    /// The project's sample rate.
    pub fn sample_rate(&self) -> u32 {
        self.engine.sample_rate()
    }

    /// The project's block size.
    pub fn block_size(&self) -> usize {
        self.engine.block_size()
    }

    /// Output channels.
    pub fn channels(&self) -> usize {
        self.engine.channels()
    }

    /// The room made at load for the exports' message.
    pub(crate) fn room(&mut self) -> &mut String {
        &mut self.room
    }
}

/// Writes `args` over `message` and gives `code`: a refusal said without allocating while
/// it fits in the room `message` has.
fn say(message: &mut String, code: Code, args: fmt::Arguments<'_>) -> Code {
    message.clear();
    let _ = message.write_fmt(args);
    code
}

/// The note event of a note op, its numbers checked as the OSC note messages check theirs.
fn note(
    op: Op,
    value: f32,
    extra: f32,
    channel: u32,
    message: &mut String,
) -> Result<NoteEvent, Code> {
    let channel = match (op, channel) {
        (Op::AllNotesOff, ALL) => None,
        (_, c) if c <= u32::from(downbeat_graph::MAX_CHANNEL) => Some(c as u8),
        (_, c) => {
            return Err(say(
                message,
                Code::OutOfRange,
                format_args!("channel {c} is outside 0 to 15 (MIDI channels 1 to 16)"),
            ))
        }
    };
    let note_ok = (0.0..=downbeat_graph::MAX_NOTE).contains(&value);
    if op != Op::AllNotesOff && !note_ok {
        return Err(say(
            message,
            Code::OutOfRange,
            format_args!("note {value} is outside 0 to 127 (MIDI note numbers; 69 is A4)"),
        ));
    }
    let channel_of = |c: Option<u8>| c.unwrap_or(0);
    Ok(match op {
        Op::NoteOn => {
            if !(0.0..=1.0).contains(&extra) {
                return Err(say(
                    message,
                    Code::OutOfRange,
                    format_args!("velocity {extra} is outside 0 to 1 (0 is a note off)"),
                ));
            }
            NoteEvent::On {
                channel: channel_of(channel),
                note: value,
                velocity: extra,
            }
        }
        Op::NoteOff => NoteEvent::Off {
            channel: channel_of(channel),
            note: value,
        },
        _ => NoteEvent::AllNotesOff { channel },
    })
}

/// The id of a `what` of a node an edit removed, said in `message`.
fn removed(message: &mut String, what: &str, id: u32) -> Code {
    say(
        message,
        Code::UnknownId,
        format_args!("{what} id {id} is of a node the graph does not have (an edit removed it)"),
    )
}

/// An unknown id of a `what` (there are `count`), said in `message`.
fn unknown(message: &mut String, what: &str, id: u32, count: usize) -> Code {
    match count {
        0 => say(
            message,
            Code::UnknownId,
            format_args!("no {what} has id {id}: the project has none"),
        ),
        n => say(
            message,
            Code::UnknownId,
            format_args!("no {what} has id {id}: ids go from 0 to {}", n - 1),
        ),
    }
}
