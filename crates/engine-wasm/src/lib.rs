//! The Downbeat engine for WebAssembly: the native engine, project files and MIDI files
//! behind a small C ABI (the exports' docs here are its reference), for an AudioWorklet or
//! Node.
//!
//! Built for `wasm32-unknown-unknown` (`web/packages/engine/scripts/build-wasm.sh`), it
//! imports nothing and exports `memory` and the `db_*` functions. One engine per module
//! instance: the state lives in a static, so no handle is passed. Every export that can
//! fail returns an `i32`, `>= 0` on success, a negative [`Code`] on failure, and leaves the
//! message at [`db_error_ptr`] / [`db_error_len`]: for a project, the text `downbeat run`
//! prints after `error: `.
//!
//! The exports are thin: [`Session`] does the work, through the same code as native
//! (`Project::parse`/`build`, `Engine::process`, the `Controller`'s checks and queue, the
//! MIDI-file reader, the `LiveEditor` for live edits with [`db_edit`]), so a render equals
//! `downbeat run --device offline`. It builds natively
//! too, where it is unit-tested (each test thread has its own state).
//!
//! Frames are `u64`s passed as two `u32`s (`lo`, `hi`); `lo = hi = 0xFFFF_FFFF` means "now".
//! An event timed by the song's beats instead has [`BEAT`] added to its op: the two words
//! are then the low and high halves of an `f64` beat, or [`NEXT_BEAT`] / [`NEXT_BAR`] (see
//! [`db_event`]).
//!
//! ```
//! use downbeat_engine_wasm::*;
//! let text = b"edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n";
//! let name = b"x.toml";
//! // SAFETY: both slices are valid for the given lengths.
//! let rc = unsafe { db_load(text.as_ptr(), text.len() as u32, name.as_ptr(), name.len() as u32) };
//! assert_eq!(rc, 0);
//! assert_eq!(db_render(db_block_size()), 256);
//! assert!(db_peak(0) > 0.0);
//! ```
#![warn(missing_docs)]

mod edit;
mod error;
mod refused;
mod session;
mod table;

use std::cell::RefCell;
use std::fmt::Write as _;

pub use error::{Code, Error};
pub use refused::REFUSED;
pub use session::{Op, Session, ALL, EVENT_CAPACITY};

/// When an event takes effect ([`Session::event_when`]): the native engine's own type.
pub use downbeat::control::When;

/// The module's state: the session, and the last error's message.
struct State {
    session: Option<Session>,
    error: String,
}

thread_local! {
    // One per thread: on wasm32 the module's one, natively one per test thread.
    static STATE: RefCell<State> = const {
        RefCell::new(State { session: None, error: String::new() })
    };
}

/// Runs `f` on the session, turning its error (or a missing session) into the code, with
/// the message kept for [`db_error_ptr`].
fn with_session<T>(f: impl FnOnce(&mut Session) -> Result<T, Error>) -> Result<T, i32> {
    STATE.with(|s| {
        let mut state = s.borrow_mut();
        let result = match state.session.as_mut() {
            Some(session) => f(session),
            None => Err(Error::new(Code::NoProject, NO_PROJECT)),
        };
        result.map_err(|e| fail(&mut state, e))
    })
}

/// Runs a per-block call on the session, which says why it refuses in the module's message
/// itself: in the room [`install`] made for it, so that refusing allocates nothing.
fn with_session_to<T>(
    f: impl FnOnce(&mut Session, &mut String) -> Result<T, Code>,
) -> Result<T, i32> {
    STATE.with(|s| {
        let state = &mut *s.borrow_mut();
        match state.session.as_mut() {
            Some(session) => f(session, &mut state.error).map_err(|code| code as i32),
            None => {
                state.error.clear();
                state.error.push_str(NO_PROJECT);
                Err(Code::NoProject as i32)
            }
        }
    })
}

const NO_PROJECT: &str = "no project is loaded: call db_load first";

/// Keeps `e`'s message (in the room the previous one left, so a short one allocates
/// nothing) and gives its code.
fn fail(state: &mut State, e: Error) -> i32 {
    state.error.clear();
    state.error.push_str(&e.message);
    e.code as i32
}

fn fail_now(e: Error) -> i32 {
    STATE.with(|s| fail(&mut s.borrow_mut(), e))
}

/// `frame_lo`/`frame_hi` as a frame, `None` for "now".
fn frame(lo: u32, hi: u32) -> Option<u64> {
    (lo != u32::MAX || hi != u32::MAX).then(|| u64::from(hi) << 32 | u64::from(lo))
}

/// Added to [`db_event`]'s `op`: the event is timed by the song's beats, its `frame_lo` and
/// `frame_hi` the low and high 32 bits of an `f64` beat (quarter notes from the song's
/// start), or [`NEXT_BEAT`] or [`NEXT_BAR`].
pub const BEAT: u32 = 0x1_0000;

/// With [`BEAT`]: `frame_lo = frame_hi = NEXT_BEAT` (a NaN's bits, as "now" is) times the
/// event on the next beat line of the time signature after where the song is when the
/// engine takes it.
pub const NEXT_BEAT: u32 = 0xFFFF_FFFF;

/// With [`BEAT`]: `frame_lo = NEXT_BAR`, `frame_hi = 0xFFFF_FFFF` (a NaN's bits) times the
/// event on the next bar line.
pub const NEXT_BAR: u32 = 0xFFFF_FFFE;

/// When an event with op word `op` and frame words `lo`, `hi` takes effect.
fn when(op: u32, lo: u32, hi: u32) -> When {
    if op & BEAT == 0 {
        return frame(lo, hi).map_or(When::Now, When::Frame);
    }
    match (lo, hi) {
        (NEXT_BEAT, u32::MAX) => When::NextBeat,
        (NEXT_BAR, u32::MAX) => When::NextBar,
        // Any other NaN is refused as a beat that is not a number.
        _ => When::Beat(f64::from_bits(u64::from(hi) << 32 | u64::from(lo))),
    }
}

/// A slice from a pointer and length handed over by JavaScript.
///
/// # Safety
/// `ptr` must point to `len` readable bytes (or `len` be 0).
unsafe fn bytes<'a>(ptr: *const u8, len: u32) -> &'a [u8] {
    if len == 0 {
        return &[];
    }
    // SAFETY: the caller promises `len` readable bytes at `ptr`.
    unsafe { std::slice::from_raw_parts(ptr, len as usize) }
}

/// A UTF-8 string handed over by JavaScript, or the error naming `what`.
///
/// # Safety
/// As [`bytes`].
unsafe fn text<'a>(ptr: *const u8, len: u32, what: &str) -> Result<&'a str, Error> {
    // SAFETY: passed on from the caller.
    let b = unsafe { bytes(ptr, len) };
    std::str::from_utf8(b).map_err(|e| {
        Error::new(
            Code::BadInput,
            format!("the {what} is not UTF-8 (byte {})", e.valid_up_to()),
        )
    })
}

/// Allocates `len` zeroed bytes for JavaScript to write input into; give them back with
/// [`db_dealloc`]. Null if `len` cannot be allocated.
#[no_mangle]
pub extern "C" fn db_alloc(len: u32) -> *mut u8 {
    let mut v: Vec<u8> = Vec::new();
    if v.try_reserve_exact(len as usize).is_err() {
        return std::ptr::null_mut();
    }
    v.resize(len as usize, 0);
    Box::into_raw(v.into_boxed_slice()).cast()
}

/// Gives back bytes from [`db_alloc`].
///
/// # Safety
/// `ptr` and `len` must be exactly what one [`db_alloc`] call gave and took, not yet given
/// back.
#[no_mangle]
pub unsafe extern "C" fn db_dealloc(ptr: *mut u8, len: u32) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: `ptr` is a boxed slice of `len` bytes from `db_alloc`, given back once.
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len as usize)) });
}

/// Hands over the bytes of the file the project names as `path` (exactly as written in the
/// project, e.g. `../samples/kick.wav`), before [`db_load`]: a `sampler` decodes and
/// resamples them by the same code as native. Returns 0.
///
/// # Safety
/// Each pointer must point to its length of readable bytes.
#[no_mangle]
pub unsafe extern "C" fn db_add_file(
    path_ptr: *const u8,
    path_len: u32,
    bytes_ptr: *const u8,
    bytes_len: u32,
) -> i32 {
    // SAFETY: passed on from the caller.
    let path = match unsafe { text(path_ptr, path_len, "file's path") } {
        Ok(p) => p,
        Err(e) => return fail_now(e),
    };
    // SAFETY: passed on from the caller.
    let data = unsafe { bytes(bytes_ptr, bytes_len) };
    downbeat_file::memory::add_file(path, data);
    0
}

/// Parses and builds project `text` (`name` is used in messages, e.g. `drums.toml`),
/// replacing any loaded one. Returns 0, or -2 with the CLI's message, or -6 for a node type
/// that needs the operating system (`player`, `echoes`, `lv2`, `clap`, `input`), naming the
/// node and its line.
///
/// # Safety
/// Each pointer must point to its length of readable bytes.
#[no_mangle]
pub unsafe extern "C" fn db_load(
    text_ptr: *const u8,
    text_len: u32,
    name_ptr: *const u8,
    name_len: u32,
) -> i32 {
    // SAFETY: passed on from the caller.
    let loaded = unsafe { text(text_ptr, text_len, "project text") }.and_then(|t| {
        // SAFETY: passed on from the caller.
        let name = unsafe { text(name_ptr, name_len, "project name") }?;
        Session::load(t, name)
    });
    match loaded {
        Ok(session) => {
            drop(install(Some(session)));
            0
        }
        Err(e) => {
            drop(install(None));
            fail_now(e)
        }
    }
}

/// Puts Standard MIDI File `bytes` on the timeline exactly as `downbeat run --midi` does.
/// Returns 0, -1 or -2 (the byte offset and what was expected there).
///
/// # Safety
/// `bytes_ptr` must point to `bytes_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn db_load_midi(bytes_ptr: *const u8, bytes_len: u32) -> i32 {
    // SAFETY: passed on from the caller.
    let data = unsafe { bytes(bytes_ptr, bytes_len) };
    with_session(|s| s.load_midi(data)).map_or_else(|code| code, |_| 0)
}

/// Frames a run playing the MIDI file lasts (last event plus the longest release), as the
/// CLI computes it; 0 without one.
#[no_mangle]
pub extern "C" fn db_midi_frames() -> f64 {
    with_session(|s| Ok(s.midi_frames() as f64)).unwrap_or(0.0)
}

/// The project's sample rate (0 without a project).
#[no_mangle]
pub extern "C" fn db_sample_rate() -> u32 {
    with_session(|s| Ok(s.sample_rate())).unwrap_or(0)
}

/// The project's block size (0 without a project).
#[no_mangle]
pub extern "C" fn db_block_size() -> u32 {
    with_session(|s| Ok(s.block_size() as u32)).unwrap_or(0)
}

/// Output channels (0 without a project).
#[no_mangle]
pub extern "C" fn db_channels() -> u32 {
    with_session(|s| Ok(s.channels() as u32)).unwrap_or(0)
}

/// The JSON table of what the event exports address (see [`db_table_len`]); null without a
/// project. Valid until the next [`db_load`] or [`db_unload`].
#[no_mangle]
pub extern "C" fn db_table_ptr() -> *const u8 {
    with_session(|s| Ok(s.table_json().as_ptr())).unwrap_or(std::ptr::null())
}

/// Length in bytes of the table at [`db_table_ptr`].
#[no_mangle]
pub extern "C" fn db_table_len() -> u32 {
    with_session(|s| Ok(s.table_json().len() as u32)).unwrap_or(0)
}

/// Drops the engine.
#[no_mangle]
pub extern "C" fn db_unload() {
    drop(install(None));
}

/// Makes `session` this thread's loaded project, as [`db_load`] does with the one it
/// builds, and gives back the one it replaces (`None` unloads). Moves only: it allocates
/// and frees nothing, so a native host can load a [`Session`] on another thread, install
/// it on its audio thread and drop the old one elsewhere (the guard test drives the
/// exports so).
pub fn install(mut session: Option<Session>) -> Option<Session> {
    STATE.with(|s| {
        let state = &mut *s.borrow_mut();
        if let Some(room) = session.as_mut().map(Session::room) {
            if state.error.capacity() < room.capacity() {
                // The message keeps its text in the larger room; the smaller one goes with
                // the session, so nothing is freed here.
                std::mem::swap(&mut state.error, room);
                state.error.push_str(room);
            }
        }
        std::mem::replace(&mut state.session, session)
    })
}

/// Edits the running graph, as a native `LiveEditor` does: one batch, JSON (UTF-8), made all
/// or none, taken over at the start of the next [`db_render`]: every node the batch leaves
/// alone goes on with its state. Returns 0, or -2 (not JSON of this shape), -6 (a node type
/// the browser cannot run), -7 (refused: the message names the step and the culprit) or
/// -8 (the engine has not rendered since the last 8 edits); a refused batch changes
/// nothing. Allocates (it builds nodes and compiles): call it between renders, never from
/// the per-block path.
///
/// ```json
/// { "add": { "echo": { "type": "karplus", "interval": 0.3 },
///            "quiet": { "type": "gain", "gain": 0.5 } },
///   "remove": ["old"],
///   "connect": ["echo -> quiet -> mix @ -6 dB", "kick -> comp:sidechain"],
///   "disconnect": ["pad -> mix"],
///   "output": "out" }
/// ```
///
/// Every key is optional. A node to add is its `[nodes.NAME]` table of a project file (its
/// `type` and parameters; files it names handed over first with [`db_add_file`]), an edge a
/// project's `edges` entry (a chain, `node:port`, `@ LEVEL dB`). The steps run in the order
/// `disconnect`, `remove`, `add`, `connect`, `output` (so the output cannot be removed in
/// the batch that moves it). Afterwards the table ([`db_table_ptr`]) lists what the graph
/// has: added parameters and instruments take new ids after the old ones, and the ids of
/// removed nodes are left out and refused from then on (-3), so an event queued before the
/// edit never reaches another node. The old schedule is freed at the next `db_edit` or
/// [`db_reclaim`], never in a render.
///
/// # Safety
/// `ptr` must point to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn db_edit(ptr: *const u8, len: u32) -> i32 {
    // SAFETY: passed on from the caller.
    let batch = match unsafe { text(ptr, len, "edit") } {
        Ok(b) => b,
        Err(e) => return fail_now(e),
    };
    with_session(|s| s.edit(batch)).map_or_else(|code| code, |()| 0)
}

/// Frees the schedules the engine handed back since the last [`db_edit`] (each holding the
/// nodes an edit removed); returns how many. Call it between renders, after the render that
/// took an edit over, to free the removed nodes' memory before the next edit.
#[no_mangle]
pub extern "C" fn db_reclaim() -> u32 {
    with_session(|s| Ok(s.reclaim() as u32)).unwrap_or(0)
}

/// Queues one event, applied at its frame (or beat) as the native `Controller` applies it.
///
/// `op`: 1 set, 2 step, 3 ramp (`extra` seconds), 4 note on (`id` an instrument or
/// `0xFFFF_FFFF` for all, `value` the note, `extra` the velocity 0..1, `channel` 0..15), 5
/// note off, 6 all notes off (`channel` or `0xFFFF_FFFF`); the transport (`id` and `channel`
/// ignored): 7 play, 8 stop, 9 locate (`value` the beat), 10 loop (from beat `value` to beat
/// `extra`), 11 unloop, 12 tempo (`value` bpm, reached linearly over `extra` beats, 0 for a
/// step, from the beat where it lands; the map's later changes are dropped). Beats and tempos
/// travel as `f32`s here: exact for a beat that is a whole number of 1/1024 beats below
/// 16,384.
///
/// When: `frame_lo`/`frame_hi` are an engine frame, or "now" (both `0xFFFF_FFFF`: the start
/// of the next render). With [`BEAT`] added to `op` they are the low and high words of an
/// `f64` beat: the event waits for the playing song to reach that beat and lands on its
/// exact frame (one for a beat already passed applies at once, counted late); both
/// [`NEXT_BEAT`], or [`NEXT_BAR`] and `0xFFFF_FFFF`, time it on the next beat or bar line
/// after where the song is when the next render takes it. Every op takes every timing.
///
/// Returns 0 or -1, -2 (no such op), -3, -4 (a value, note, velocity or channel out of
/// range; a beat that is negative or not a number; a loop that does not end after it starts;
/// a tempo not above 0 or above 999; a negative ramp), -5 (counted in [`db_dropped`]).
/// Allocates nothing, also when it refuses, except for a value outside the parameter's
/// range or a bad ramp duration: the native `Controller`'s check that refuses those builds
/// its error with the node's name.
#[no_mangle]
pub extern "C" fn db_event(
    op: u32,
    id: u32,
    frame_lo: u32,
    frame_hi: u32,
    value: f32,
    extra: f32,
    channel: u32,
) -> i32 {
    with_session_to(|s, message| {
        let number = if op & !(BEAT | 0xFFFF) == 0 {
            op & 0xFFFF
        } else {
            op
        };
        let Some(kind) = Op::from_number(number) else {
            message.clear();
            let _ = write!(
                message,
                "no event op {op}: give 1 to 12, plus {BEAT} to time it by a beat"
            );
            return Err(Code::BadInput);
        };
        s.event_to(
            kind,
            id,
            when(op, frame_lo, frame_hi),
            value,
            extra,
            channel,
            message,
        )
    })
    .map_or_else(|code| code, |()| 0)
}

/// Renders the next `frames` frames (1 to the block size) as the native engine's `process`
/// does; returns `frames`, or -1 or -2. Allocates nothing.
#[no_mangle]
pub extern "C" fn db_render(frames: u32) -> i32 {
    with_session_to(|s, message| s.render_to(frames as usize, message))
        .map_or_else(|code| code, |n| n as i32)
}

/// Channel `channel` of the last render, planar (valid until the next call into the
/// module); null for no such channel or no project.
#[no_mangle]
pub extern "C" fn db_output_ptr(channel: u32) -> *const f32 {
    with_session(|s| {
        Ok(if channel < s.channels() as u32 {
            s.output(channel as usize).as_ptr()
        } else {
            std::ptr::null()
        })
    })
    .unwrap_or(std::ptr::null())
}

/// 1 while the song plays, 0 while it is stopped (after the last render; 0 without a
/// project).
#[no_mangle]
pub extern "C" fn db_transport_playing() -> u32 {
    with_session(|s| Ok(u32::from(s.transport_position().playing))).unwrap_or(0)
}

/// The song's beat after the last render: quarter notes from its start.
#[no_mangle]
pub extern "C" fn db_transport_beat() -> f64 {
    with_session(|s| Ok(s.transport_position().beat)).unwrap_or(0.0)
}

/// The song's bar after the last render, counted from 0.
#[no_mangle]
pub extern "C" fn db_transport_bar() -> f64 {
    with_session(|s| Ok(s.transport_position().bar as f64)).unwrap_or(0.0)
}

/// The beat the song's current bar started on (the beat within the bar is
/// [`db_transport_beat`] minus this).
#[no_mangle]
pub extern "C" fn db_transport_bar_beat() -> f64 {
    with_session(|s| Ok(s.transport_position().bar_beat)).unwrap_or(0.0)
}

/// The song's tempo after the last render, in quarter notes per minute.
#[no_mangle]
pub extern "C" fn db_transport_bpm() -> f64 {
    with_session(|s| Ok(s.transport_position().bpm)).unwrap_or(0.0)
}

/// Frames rendered since load.
#[no_mangle]
pub extern "C" fn db_position() -> f64 {
    with_session(|s| Ok(s.position() as f64)).unwrap_or(0.0)
}

/// Peak of `channel` in the last render.
#[no_mangle]
pub extern "C" fn db_peak(channel: u32) -> f32 {
    with_session(|s| Ok(s.peak(channel as usize))).unwrap_or(0.0)
}

/// RMS of `channel` in the last render.
#[no_mangle]
pub extern "C" fn db_rms(channel: u32) -> f32 {
    with_session(|s| Ok(s.rms(channel as usize))).unwrap_or(0.0)
}

/// The current value of parameter or output `id` (NaN, with the error kept, for an
/// unknown id).
#[no_mangle]
pub extern "C" fn db_value(id: u32) -> f32 {
    with_session_to(|s, message| s.value_to(id, message)).unwrap_or(f32::NAN)
}

/// How many more events [`db_event`] takes before the next [`db_render`] (0 without a
/// project). The worklet pops at most this many records from its control ring per block and
/// leaves the rest there, so a burst larger than the engine's list waits for the next
/// block instead of being refused.
#[no_mangle]
pub extern "C" fn db_event_room() -> u32 {
    with_session(|s| Ok(s.event_room() as u32)).unwrap_or(0)
}

/// Events refused so far because the event list was full.
#[no_mangle]
pub extern "C" fn db_dropped() -> f64 {
    with_session(|s| Ok(s.dropped() as f64)).unwrap_or(0.0)
}

/// The last error's message, UTF-8 (see [`db_error_len`]); valid until the next failure.
#[no_mangle]
pub extern "C" fn db_error_ptr() -> *const u8 {
    STATE.with(|s| s.borrow().error.as_ptr())
}

/// Length in bytes of the message at [`db_error_ptr`].
#[no_mangle]
pub extern "C" fn db_error_len() -> u32 {
    STATE.with(|s| s.borrow().error.len() as u32)
}

/// The last error's message, for Rust callers and tests.
pub fn last_error() -> String {
    STATE.with(|s| s.borrow().error.clone())
}
