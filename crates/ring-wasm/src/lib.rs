//! `downbeat-ring` as a WebAssembly module over a shared `WebAssembly.Memory`, so that tests can
//! pass data between Rust and `@downbeat/ringbuf` through the same rings (`web/interop/`).
//!
//! Plain `extern "C"` exports, no wasm-bindgen. JavaScript lays rings out anywhere in the
//! module's memory (usually in the [`scratch`](scratch_ptr) region), or asks Rust to with
//! [`ring_init`]; Rust attaches producers, consumers, parameter queues and audio queues to them,
//! each kept in one of [`SLOTS`] static slots and named by its index, the *handle*. The
//! `produce_*` exports write the deterministic sequences of [`pattern`], the `consume_*` exports
//! read and check them.
//!
//! | export | does |
//! |---|---|
//! | [`scratch_ptr`], [`scratch_len`] | the static region JavaScript places rings in |
//! | [`ring_bytes`], [`ring_init`] | size and lay out a ring of any kind and record length |
//! | [`attach_f32_producer`], [`attach_f32_consumer`] | `Producer<f32>` / `Consumer<f32>` |
//! | [`attach_param_writer`], [`attach_param_reader`] | `ParamWriter` / `ParamReader` |
//! | [`attach_audio_writer`], [`attach_audio_reader`] | `AudioWriter` / `AudioReader` |
//! | [`detach`], [`available`] | drop an endpoint; what it could move now |
//! | [`produce_f32`], [`consume_f32`] | the samples of [`pattern::sample`] |
//! | [`produce_params`], [`consume_params`] | the records of [`pattern::param`] |
//! | [`produce_audio`], [`consume_audio`] | the frames of [`pattern::audio`], interleaved |
//! | [`produce_audio_planar`], [`consume_audio_planar`] | the same, through planar blocks |
//! | [`mismatch_field`] | where the last `consume_*` mismatch was, and the values |
//!
//! Every export that can fail returns a negative code: [`ERR_MISMATCH`] and the other `ERR_*`
//! constants, or a [`LayoutError`] mapped by [`layout_error_code`].
//!
//! # Memory and threads
//!
//! * The module never allocates except for the small `Arc` that `from_raw` puts around the
//!   borrowed memory of each endpoint; on wasm32 those come from a fixed set of static blocks
//!   (`endpoint_blocks.rs`), there is no general allocator.
//! * The slot table and the endpoint blocks are statics, so every instance of the module on one shared
//!   memory sees the same handles; each slot is claimed atomically for the duration of a call,
//!   and a call on a handle that another thread is using returns [`ERR_BUSY`].
//! * Each instance also needs a stack of its own. The linker puts one at the bottom of memory,
//!   which suits one instance; a second instance on the same memory must move its
//!   `__stack_pointer` elsewhere before calling anything. The tests run one instance.
//!
//! Natively the crate builds too (with `std`), so the same functions are unit-tested on ordinary
//! memory.
#![cfg_attr(target_arch = "wasm32", no_std)]
#![warn(missing_docs, missing_debug_implementations)]

#[cfg(target_arch = "wasm32")]
mod endpoint_blocks;
pub mod pattern;

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU32, Ordering};

use downbeat_ring::layout::RingLayout;
use downbeat_ring::{
    AudioReader, AudioWriter, Consumer, ElementKind, LayoutError, ParamReader, ParamWriter,
    Producer,
};

use crate::pattern::{audio, param, sample};

/// Number of endpoints that can be attached at once.
pub const SLOTS: usize = 16;
/// Size of the [`scratch`](scratch_ptr) region in bytes.
pub const SCRATCH_BYTES: usize = 256 * 1024;
/// Most channels an audio endpoint can have: the audio exports move frames through a stack
/// buffer of [`AUDIO_BLOCK`] samples, which must hold at least one frame.
pub const MAX_CHANNELS: u32 = 64;
/// Samples in the stack buffer of the audio exports (whole frames of it are used per round).
pub const AUDIO_BLOCK: usize = 1024;

/// A received element differs from the sequence; [`mismatch_field`] says where and how.
pub const ERR_MISMATCH: i32 = -1;
/// No endpoint has this handle.
pub const ERR_HANDLE: i32 = -2;
/// Another thread is inside a call on this handle.
pub const ERR_BUSY: i32 = -3;
/// All [`SLOTS`] are in use.
pub const ERR_NO_SLOT: i32 = -4;
/// The handle's endpoint is not the kind this export works on (e.g. `consume_f32` on a producer).
pub const ERR_ROLE: i32 = -5;
/// [`ring_init`] or [`ring_bytes`] got an element kind code it cannot lay out (unknown or opaque).
pub const ERR_KIND: i32 = -6;
/// An audio attach got more than [`MAX_CHANNELS`] channels (0 channels is the library's
/// `RecordMismatch`, -17).
pub const ERR_CHANNELS: i32 = -7;

/// Maps a [`LayoutError`] to the negative code the exports return: `-10 - variant`, in the order
/// of `docs/ring-layout.md`.
///
/// | code | error |
/// |---|---|
/// | -10 | `Null` |
/// | -11 | `Misaligned` |
/// | -12 | `TooSmall` |
/// | -13 | `BadMagic` |
/// | -14 | `UnsupportedVersion` |
/// | -15 | `ElementMismatch` |
/// | -16 | `BadCapacity` |
/// | -17 | `RecordMismatch` |
/// | -18 | `CorruptIndex` |
/// | -19 | a variant added after this crate was written |
///
/// ```
/// use downbeat_ring::LayoutError;
/// assert_eq!(downbeat_ring_wasm::layout_error_code(LayoutError::BadMagic { found: 0 }), -13);
/// ```
pub fn layout_error_code(error: LayoutError) -> i32 {
    match error {
        LayoutError::Null => -10,
        LayoutError::Misaligned { .. } => -11,
        LayoutError::TooSmall { .. } => -12,
        LayoutError::BadMagic { .. } => -13,
        LayoutError::UnsupportedVersion { .. } => -14,
        LayoutError::ElementMismatch { .. } => -15,
        LayoutError::BadCapacity { .. } => -16,
        LayoutError::RecordMismatch { .. } => -17,
        LayoutError::CorruptIndex { .. } => -18,
        _ => -19,
    }
}

// ---------------------------------------------------------------------------------------------
// Scratch memory

/// Static memory for JavaScript to place rings in, aligned to the ring's 128-byte line.
#[repr(C, align(128))]
struct Scratch(UnsafeCell<[u8; SCRATCH_BYTES]>);

// SAFETY: Rust never reads or writes the scratch bytes itself; they are handed out as a raw
// pointer, and whoever lays rings out there follows the ring protocol.
unsafe impl Sync for Scratch {}

static SCRATCH: Scratch = Scratch(UnsafeCell::new([0; SCRATCH_BYTES]));

/// Address of the scratch region: [`SCRATCH_BYTES`] bytes, 128-byte aligned, zero at start,
/// never touched by Rust except through rings placed there.
#[no_mangle]
pub extern "C" fn scratch_ptr() -> *mut u8 {
    SCRATCH.0.get().cast()
}

/// Size of the scratch region in bytes ([`SCRATCH_BYTES`]).
#[no_mangle]
pub extern "C" fn scratch_len() -> usize {
    SCRATCH_BYTES
}

// ---------------------------------------------------------------------------------------------
// Laying rings out

/// Builds the layout of `records` records of `record_len` elements of the kind with code
/// `kind` (`docs/ring-layout.md`, "Element kinds").
fn layout_for(kind: u32, records: u32, record_len: u32) -> Result<RingLayout, i32> {
    let (records, record_len) = (records as usize, record_len as usize);
    let layout = match ElementKind::from_code(kind) {
        Some(ElementKind::U8) => RingLayout::records::<u8>(records, record_len),
        Some(ElementKind::I8) => RingLayout::records::<i8>(records, record_len),
        Some(ElementKind::U16) => RingLayout::records::<u16>(records, record_len),
        Some(ElementKind::I16) => RingLayout::records::<i16>(records, record_len),
        Some(ElementKind::U32) => RingLayout::records::<u32>(records, record_len),
        Some(ElementKind::I32) => RingLayout::records::<i32>(records, record_len),
        Some(ElementKind::U64) => RingLayout::records::<u64>(records, record_len),
        Some(ElementKind::I64) => RingLayout::records::<i64>(records, record_len),
        Some(ElementKind::F32) => RingLayout::records::<f32>(records, record_len),
        Some(ElementKind::F64) => RingLayout::records::<f64>(records, record_len),
        Some(ElementKind::Opaque) | None => return Err(ERR_KIND),
    };
    layout.map_err(layout_error_code)
}

/// Bytes a ring of `records` records of `record_len` elements of kind code `kind` needs, or a
/// negative code ([`ERR_KIND`], a [`layout_error_code`], or `i32::MIN` above 2 GiB).
#[no_mangle]
pub extern "C" fn ring_bytes(kind: u32, records: u32, record_len: u32) -> i32 {
    match layout_for(kind, records, record_len) {
        Ok(layout) => i32::try_from(layout.bytes()).unwrap_or(i32::MIN),
        Err(code) => code,
    }
}

/// Lays out a ring at `ptr` with `RingLayout::init`: `records` records of `record_len`
/// elements of kind code `kind` (a plain f32 ring is `(9, capacity, 1)`, a parameter queue
/// `(5, records, 3)`, an audio queue `(9, frames, channels)`). Returns 0, or a negative code as
/// [`ring_bytes`] does.
///
/// # Safety
///
/// `ptr` must be valid for writes of `len` bytes, and no one may use that memory during the call.
#[no_mangle]
pub unsafe extern "C" fn ring_init(
    ptr: *mut u8,
    len: usize,
    kind: u32,
    records: u32,
    record_len: u32,
) -> i32 {
    let layout = match layout_for(kind, records, record_len) {
        Ok(layout) => layout,
        Err(code) => return code,
    };
    // SAFETY: forwarded from the caller.
    match unsafe { layout.init(ptr, len) } {
        Ok(()) => 0,
        Err(error) => layout_error_code(error),
    }
}

// ---------------------------------------------------------------------------------------------
// The slot table

/// What a handle names.
#[derive(Debug)]
enum Endpoint {
    F32Producer(Producer<f32>),
    F32Consumer(Consumer<f32>),
    ParamWriter(ParamWriter),
    ParamReader(ParamReader),
    AudioWriter(AudioWriter),
    AudioReader(AudioReader),
}

/// Slot states.
const FREE: u32 = 0;
/// Someone is inside a call on the slot, or filling or emptying it, and has it to themselves.
const CLAIMED: u32 = 1;
const READY: u32 = 2;

/// One entry of the table.
struct Slot {
    state: AtomicU32,
    endpoint: UnsafeCell<Option<Endpoint>>,
    /// The last mismatch a `consume_*` call found: sequence index (frame for audio), expected
    /// word, found word, word within the record (channel for audio).
    mismatch: UnsafeCell<[u32; 4]>,
}

// SAFETY: `endpoint` and `mismatch` are only accessed by the one thread that moved `state` to
// `CLAIMED` (acquire), until it moves it away again (release); the endpoints are `Send`.
unsafe impl Sync for Slot {}

static TABLE: [Slot; SLOTS] = [const {
    Slot {
        state: AtomicU32::new(FREE),
        endpoint: UnsafeCell::new(None),
        mismatch: UnsafeCell::new([0; 4]),
    }
}; SLOTS];

/// Claims a free slot, builds its endpoint and publishes it; returns the handle or the error.
fn attach(build: impl FnOnce() -> Result<Endpoint, LayoutError>) -> i32 {
    let Some(handle) = TABLE.iter().position(|slot| {
        slot.state
            .compare_exchange(FREE, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }) else {
        return ERR_NO_SLOT;
    };
    let slot = &TABLE[handle];
    match build() {
        Ok(endpoint) => {
            // SAFETY: we moved the slot to `CLAIMED`, so it is ours alone.
            unsafe {
                *slot.endpoint.get() = Some(endpoint);
                *slot.mismatch.get() = [0; 4];
            }
            slot.state.store(READY, Ordering::Release);
            handle as i32
        }
        Err(error) => {
            slot.state.store(FREE, Ordering::Release);
            layout_error_code(error)
        }
    }
}

/// Runs `f` on the endpoint of `handle` with the slot claimed; the error code otherwise.
fn with_slot(handle: i32, f: impl FnOnce(&mut Endpoint, &mut [u32; 4]) -> i32) -> i32 {
    let Some(slot) = usize::try_from(handle).ok().and_then(|h| TABLE.get(h)) else {
        return ERR_HANDLE;
    };
    match slot
        .state
        .compare_exchange(READY, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
    {
        Ok(_) => {}
        Err(CLAIMED) => return ERR_BUSY,
        Err(_) => return ERR_HANDLE,
    }
    // SAFETY: we moved the slot from `READY` to `CLAIMED`: it holds an endpoint and is ours alone
    // until we store `READY` again.
    let (endpoint, mismatch) = unsafe { (&mut *slot.endpoint.get(), &mut *slot.mismatch.get()) };
    let result = match endpoint {
        Some(endpoint) => f(endpoint, mismatch),
        None => ERR_HANDLE,
    };
    slot.state.store(READY, Ordering::Release);
    result
}

/// Attaches an f32 [`Producer`] to the ring at `ptr`; returns its handle, or a negative code
/// ([`ERR_NO_SLOT`] or a [`layout_error_code`]: `-15` for a ring of another element kind).
///
/// # Safety
///
/// As `Producer::from_raw`: `ptr` valid for reads and writes of `len` bytes for as long as the
/// handle is attached, and no other producer on that ring meanwhile.
#[no_mangle]
pub unsafe extern "C" fn attach_f32_producer(ptr: *mut u8, len: usize) -> i32 {
    // SAFETY: forwarded from the caller.
    attach(|| unsafe { Producer::from_raw(ptr, len) }.map(Endpoint::F32Producer))
}

/// Attaches an f32 [`Consumer`]; as [`attach_f32_producer`].
///
/// # Safety
///
/// As `Consumer::from_raw`, for as long as the handle is attached.
#[no_mangle]
pub unsafe extern "C" fn attach_f32_consumer(ptr: *mut u8, len: usize) -> i32 {
    // SAFETY: forwarded from the caller.
    attach(|| unsafe { Consumer::from_raw(ptr, len) }.map(Endpoint::F32Consumer))
}

/// Attaches a [`ParamWriter`] (u32 ring, record length 3); as [`attach_f32_producer`].
///
/// # Safety
///
/// As `ParamWriter::from_raw`, for as long as the handle is attached.
#[no_mangle]
pub unsafe extern "C" fn attach_param_writer(ptr: *mut u8, len: usize) -> i32 {
    // SAFETY: forwarded from the caller.
    attach(|| unsafe { ParamWriter::from_raw(ptr, len) }.map(Endpoint::ParamWriter))
}

/// Attaches a [`ParamReader`]; as [`attach_f32_producer`].
///
/// # Safety
///
/// As `ParamReader::from_raw`, for as long as the handle is attached.
#[no_mangle]
pub unsafe extern "C" fn attach_param_reader(ptr: *mut u8, len: usize) -> i32 {
    // SAFETY: forwarded from the caller.
    attach(|| unsafe { ParamReader::from_raw(ptr, len) }.map(Endpoint::ParamReader))
}

/// Attaches an [`AudioWriter`] for `channels` channels to the audio ring at `ptr` (f32, record
/// length `channels`); returns its handle, or a negative code: [`ERR_CHANNELS`] above
/// [`MAX_CHANNELS`], `-17` (`RecordMismatch`) for a ring of another record length or for 0
/// channels, otherwise as [`attach_f32_producer`].
///
/// # Safety
///
/// As `AudioWriter::from_raw`, for as long as the handle is attached.
#[no_mangle]
pub unsafe extern "C" fn attach_audio_writer(ptr: *mut u8, len: usize, channels: u32) -> i32 {
    if channels > MAX_CHANNELS {
        return ERR_CHANNELS;
    }
    attach(|| {
        // SAFETY: forwarded from the caller.
        unsafe { AudioWriter::from_raw(ptr, len, channels as usize) }.map(Endpoint::AudioWriter)
    })
}

/// Attaches an [`AudioReader`] for `channels` channels; as [`attach_audio_writer`].
///
/// # Safety
///
/// As `AudioReader::from_raw`, for as long as the handle is attached.
#[no_mangle]
pub unsafe extern "C" fn attach_audio_reader(ptr: *mut u8, len: usize, channels: u32) -> i32 {
    if channels > MAX_CHANNELS {
        return ERR_CHANNELS;
    }
    attach(|| {
        // SAFETY: forwarded from the caller.
        unsafe { AudioReader::from_raw(ptr, len, channels as usize) }.map(Endpoint::AudioReader)
    })
}

/// Drops the endpoint of `handle` and frees its slot; returns 0, [`ERR_HANDLE`] or
/// [`ERR_BUSY`]. The ring's indices stay where they are, so a new endpoint carries on.
#[no_mangle]
pub extern "C" fn detach(handle: i32) -> i32 {
    let Some(slot) = usize::try_from(handle).ok().and_then(|h| TABLE.get(h)) else {
        return ERR_HANDLE;
    };
    match slot
        .state
        .compare_exchange(READY, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
    {
        Ok(_) => {}
        Err(CLAIMED) => return ERR_BUSY,
        Err(_) => return ERR_HANDLE,
    }
    // SAFETY: claimed from `READY`, so the slot is ours alone.
    drop(unsafe { (*slot.endpoint.get()).take() });
    slot.state.store(FREE, Ordering::Release);
    0
}

/// Elements (f32 endpoints), records (parameter endpoints) or whole frames (audio endpoints) the
/// endpoint of `handle` could push or pop now, or a negative code.
#[no_mangle]
pub extern "C" fn available(handle: i32) -> i32 {
    with_slot(handle, |endpoint, _| {
        let n = match endpoint {
            Endpoint::F32Producer(p) => p.available_write(),
            Endpoint::F32Consumer(c) => c.available_read(),
            Endpoint::ParamWriter(w) => w.available_write(),
            Endpoint::ParamReader(r) => r.available_read(),
            Endpoint::AudioWriter(w) => w.available_write(),
            Endpoint::AudioReader(r) => r.available_read(),
        };
        count(n)
    })
}

/// Clamps a count to the `i32` the exports return.
fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

// ---------------------------------------------------------------------------------------------
// Sending and checking sequences

/// Pushes samples `start, start + 1, ..` of [`pattern::sample`] (indices wrap at 2^32), at most
/// `n` and as many as fit, in one chunk; returns how many, or a negative code.
#[no_mangle]
pub extern "C" fn produce_f32(handle: i32, start: u32, n: u32) -> i32 {
    with_slot(handle, |endpoint, _| {
        let Endpoint::F32Producer(producer) = endpoint else {
            return ERR_ROLE;
        };
        let n = producer
            .available_write()
            .min(n as usize)
            .min(i32::MAX as usize);
        let Ok(mut chunk) = producer.write_chunk(n) else {
            // Unreachable: only the consumer changes the free space, and only upwards.
            return 0;
        };
        let (first, second) = chunk.as_mut_slices();
        for (k, slot) in first.iter_mut().chain(second).enumerate() {
            *slot = sample(start.wrapping_add(k as u32));
        }
        chunk.commit_all();
        n as i32
    })
}

/// Pops at most `max` samples and checks that they are samples `expected_start, ..` of
/// [`pattern::sample`], bit for bit. Returns how many it popped, or [`ERR_MISMATCH`] (popping
/// nothing) with the details in [`mismatch_field`], or another negative code.
#[no_mangle]
pub extern "C" fn consume_f32(handle: i32, expected_start: u32, max: u32) -> i32 {
    with_slot(handle, |endpoint, mismatch| {
        let Endpoint::F32Consumer(consumer) = endpoint else {
            return ERR_ROLE;
        };
        let n = consumer
            .available_read()
            .min(max as usize)
            .min(i32::MAX as usize);
        let Ok(chunk) = consumer.read_chunk(n) else {
            // Unreachable: only the producer changes the ready count, and only upwards.
            return 0;
        };
        let (first, second) = chunk.as_slices();
        for (k, value) in first.iter().chain(second).enumerate() {
            let index = expected_start.wrapping_add(k as u32);
            let (expected, found) = (sample(index).to_bits(), value.to_bits());
            if expected != found {
                *mismatch = [index, expected, found, 0];
                return ERR_MISMATCH;
            }
        }
        chunk.commit_all();
        n as i32
    })
}

/// Pushes records `start, ..` of [`pattern::param`], at most `n` and as many as fit; returns how
/// many, or a negative code.
#[no_mangle]
pub extern "C" fn produce_params(handle: i32, start: u32, n: u32) -> i32 {
    with_slot(handle, |endpoint, _| {
        let Endpoint::ParamWriter(writer) = endpoint else {
            return ERR_ROLE;
        };
        let mut pushed = 0;
        while pushed < n.min(i32::MAX as u32)
            && writer.push(param(start.wrapping_add(pushed))).is_ok()
        {
            pushed += 1;
        }
        pushed as i32
    })
}

/// Pops at most `max` records and checks them against records `expected_start, ..` of
/// [`pattern::param`], word for word. Returns how many it popped, or [`ERR_MISMATCH`] (the
/// records up to and including the bad one are gone from the ring) with the details in
/// [`mismatch_field`], or another negative code.
#[no_mangle]
pub extern "C" fn consume_params(handle: i32, expected_start: u32, max: u32) -> i32 {
    with_slot(handle, |endpoint, mismatch| {
        let Endpoint::ParamReader(reader) = endpoint else {
            return ERR_ROLE;
        };
        let mut popped = 0;
        while popped < max.min(i32::MAX as u32) {
            let Some(change) = reader.pop() else { break };
            let index = expected_start.wrapping_add(popped);
            let expected = param(index).to_words();
            let found = change.to_words();
            if let Some(word) = (0..expected.len()).find(|&w| expected[w] != found[w]) {
                *mismatch = [index, expected[word], found[word], word as u32];
                return ERR_MISMATCH;
            }
            popped += 1;
        }
        popped as i32
    })
}

/// Pushes frames `start, start + 1, ..` of [`pattern::audio`] (frame indices wrap at 2^32), at
/// most `n` and as many as fit, with `AudioWriter::push_interleaved` from a stack buffer of
/// [`AUDIO_BLOCK`] samples; returns how many frames, or a negative code.
#[no_mangle]
pub extern "C" fn produce_audio(handle: i32, start: u32, n: u32) -> i32 {
    produce_frames(handle, start, n, false)
}

/// [`produce_audio`] through `AudioWriter::push_planar`: each round fills one planar block per
/// channel and lets the writer interleave it into the ring.
#[no_mangle]
pub extern "C" fn produce_audio_planar(handle: i32, start: u32, n: u32) -> i32 {
    produce_frames(handle, start, n, true)
}

/// Pops at most `max` whole frames with `AudioReader::pop_interleaved` and checks that they are
/// frames `expected_start, ..` of [`pattern::audio`], every sample bit for bit. Returns how many
/// frames it popped, or [`ERR_MISMATCH`] (the frames of the stack buffer round that held the bad
/// one are gone from the ring) with the frame, both values and the channel in
/// [`mismatch_field`], or another negative code.
#[no_mangle]
pub extern "C" fn consume_audio(handle: i32, expected_start: u32, max: u32) -> i32 {
    consume_frames(handle, expected_start, max, false)
}

/// [`consume_audio`] through `AudioReader::pop_planar`: the reader deinterleaves each round into
/// one planar block per channel, which is then checked.
#[no_mangle]
pub extern "C" fn consume_audio_planar(handle: i32, expected_start: u32, max: u32) -> i32 {
    consume_frames(handle, expected_start, max, true)
}

/// The body of [`produce_audio`] (`planar` false) and [`produce_audio_planar`].
fn produce_frames(handle: i32, start: u32, n: u32, planar: bool) -> i32 {
    with_slot(handle, |endpoint, _| {
        let Endpoint::AudioWriter(writer) = endpoint else {
            return ERR_ROLE;
        };
        let ch = writer.channels();
        // At least 1: attaching refuses more than `MAX_CHANNELS` channels, and 0.
        let per_round = AUDIO_BLOCK / ch;
        let n = n.min(i32::MAX as u32) as usize;
        let mut block = [0.0f32; AUDIO_BLOCK];
        let mut pushed = 0;
        while pushed < n {
            let frames = per_round.min(n - pushed);
            let first = start.wrapping_add(pushed as u32);
            let done = if planar {
                // Channel `c` in `block[c * frames..][..frames]`.
                let mut planes: [&[f32]; MAX_CHANNELS as usize] = [&[]; MAX_CHANNELS as usize];
                for (c, (plane, samples)) in planes
                    .iter_mut()
                    .zip(block.chunks_exact_mut(frames))
                    .take(ch)
                    .enumerate()
                {
                    for (f, sample) in samples.iter_mut().enumerate() {
                        *sample = audio(first.wrapping_add(f as u32), c as u32);
                    }
                    *plane = samples;
                }
                writer.push_planar(&planes[..ch])
            } else {
                for (k, sample) in block[..frames * ch].iter_mut().enumerate() {
                    *sample = audio(first.wrapping_add((k / ch) as u32), (k % ch) as u32);
                }
                writer.push_interleaved(&block[..frames * ch])
            };
            pushed += done;
            if done < frames {
                break;
            }
        }
        pushed as i32
    })
}

/// The body of [`consume_audio`] (`planar` false) and [`consume_audio_planar`].
fn consume_frames(handle: i32, expected_start: u32, max: u32, planar: bool) -> i32 {
    with_slot(handle, |endpoint, mismatch| {
        let Endpoint::AudioReader(reader) = endpoint else {
            return ERR_ROLE;
        };
        let ch = reader.channels();
        // At least 1, as in `produce_frames`.
        let per_round = AUDIO_BLOCK / ch;
        let max = max.min(i32::MAX as u32) as usize;
        let mut block = [0.0f32; AUDIO_BLOCK];
        let mut popped = 0;
        while popped < max {
            let frames = per_round.min(max - popped);
            let got = if planar {
                let mut planes: [&mut [f32]; MAX_CHANNELS as usize] =
                    core::array::from_fn(|_| &mut [][..]);
                for (plane, samples) in planes.iter_mut().zip(block.chunks_exact_mut(frames)) {
                    *plane = samples;
                }
                reader.pop_planar(&mut planes[..ch])
            } else {
                reader.pop_interleaved(&mut block[..frames * ch])
            };
            for f in 0..got {
                let frame = expected_start.wrapping_add((popped + f) as u32);
                for c in 0..ch {
                    let found = if planar {
                        block[c * frames + f]
                    } else {
                        block[f * ch + c]
                    };
                    let (expected, found) = (audio(frame, c as u32).to_bits(), found.to_bits());
                    if expected != found {
                        *mismatch = [frame, expected, found, c as u32];
                        return ERR_MISMATCH;
                    }
                }
            }
            popped += got;
            if got < frames {
                break;
            }
        }
        popped as i32
    })
}

/// One word of the last mismatch a `consume_*` call on `handle` reported: `field` 0 is the
/// sequence index (the frame for audio), 1 the expected word (f32 bits, or the record word), 2
/// the word found, 3 which word of the record (0 id, 1 value bits, 2 frame; 0 for samples; the
/// channel for audio). 0 for a bad handle or field.
#[no_mangle]
pub extern "C" fn mismatch_field(handle: i32, field: u32) -> u32 {
    let mut word = 0;
    with_slot(handle, |_, mismatch| {
        word = mismatch.get(field as usize).copied().unwrap_or(0);
        0
    });
    word
}

/// Traps: a panic in the module is a bug, and there is nothing to unwind to.
#[cfg(target_arch = "wasm32")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}

#[cfg(test)]
mod tests;
