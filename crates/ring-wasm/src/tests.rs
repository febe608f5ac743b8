//! Native tests of the exports, on heap memory instead of wasm memory.

use super::*;

const F32: u32 = ElementKind::F32 as u32;
const U32: u32 = ElementKind::U32 as u32;

/// Serialises the tests: the slot table is global, and a test that checks a detached handle is
/// dead must not see another test take its slot meanwhile.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// 8-aligned zeroed memory for a ring.
fn memory(bytes: usize) -> Vec<u64> {
    vec![0; bytes.div_ceil(8)]
}

/// Lays a ring out in fresh memory; returns the memory and its length in bytes.
fn ring(kind: u32, records: u32, record_len: u32) -> (Vec<u64>, usize) {
    let len = ring_bytes(kind, records, record_len);
    assert!(len > 0, "{len}");
    let mut mem = memory(len as usize);
    assert_eq!(
        // SAFETY: `mem` is ours and `len` bytes long.
        unsafe {
            ring_init(
                mem.as_mut_ptr().cast(),
                len as usize,
                kind,
                records,
                record_len,
            )
        },
        0
    );
    (mem, len as usize)
}

/// Pumps `total` elements, records or frames from `tx` to `rx`, on two threads.
fn pump(
    total: u32,
    produce: extern "C" fn(i32, u32, u32) -> i32,
    consume: extern "C" fn(i32, u32, u32) -> i32,
    tx: i32,
    rx: i32,
) {
    pump_from(0, total, produce, consume, tx, rx);
}

/// [`pump`] of the sequence from index `start` on.
fn pump_from(
    start: u32,
    total: u32,
    produce: extern "C" fn(i32, u32, u32) -> i32,
    consume: extern "C" fn(i32, u32, u32) -> i32,
    tx: i32,
    rx: i32,
) {
    let producer = std::thread::spawn(move || {
        let mut sent = 0;
        while sent < total {
            let n = produce(tx, start + sent, (total - sent).min(97));
            assert!(n >= 0, "produce: {n}");
            sent += n as u32;
            if n == 0 {
                std::thread::yield_now();
            }
        }
    });
    let mut received = 0;
    while received < total {
        let n = consume(rx, start + received, 1000);
        assert!(
            n >= 0,
            "consume: {n} at {}: expected {:#x}, found {:#x} (word {})",
            mismatch_field(rx, 0),
            mismatch_field(rx, 1),
            mismatch_field(rx, 2),
            mismatch_field(rx, 3)
        );
        received += n as u32;
        if n == 0 {
            std::thread::yield_now();
        }
    }
    producer.join().unwrap();
    assert_eq!(consume(rx, start + received, 1000), 0);
}

#[test]
fn f32_sequence_crosses_an_odd_ring_between_threads() {
    let _serial = serial();
    let (mut mem, len) = ring(F32, 257, 1);
    let ptr = mem.as_mut_ptr().cast::<u8>();
    // SAFETY: `mem` outlives both handles, detached below; one producer, one consumer.
    let (tx, rx) = unsafe { (attach_f32_producer(ptr, len), attach_f32_consumer(ptr, len)) };
    assert!(tx >= 0 && rx >= 0, "{tx} {rx}");
    assert_eq!(available(tx), 257);
    pump(200_000, produce_f32, consume_f32, tx, rx);
    assert_eq!((detach(tx), detach(rx)), (0, 0));
}

#[test]
fn param_records_cross_between_threads() {
    let _serial = serial();
    let (mut mem, len) = ring(U32, 85, 3);
    let ptr = mem.as_mut_ptr().cast::<u8>();
    // SAFETY: as above.
    let (tx, rx) = unsafe { (attach_param_writer(ptr, len), attach_param_reader(ptr, len)) };
    assert!(tx >= 0 && rx >= 0, "{tx} {rx}");
    assert_eq!(available(tx), 85);
    pump(50_000, produce_params, consume_params, tx, rx);
    assert_eq!((detach(tx), detach(rx)), (0, 0));
}

#[test]
fn stereo_frames_cross_between_threads() {
    let _serial = serial();
    let (mut mem, len) = ring(F32, 257, 2);
    let ptr = mem.as_mut_ptr().cast::<u8>();
    // SAFETY: `mem` outlives both handles, detached below; one writer, one reader.
    let (tx, rx) = unsafe {
        (
            attach_audio_writer(ptr, len, 2),
            attach_audio_reader(ptr, len, 2),
        )
    };
    assert!(tx >= 0 && rx >= 0, "{tx} {rx}");
    assert_eq!((available(tx), available(rx)), (257, 0));
    // Interleaved in, planar out.
    pump(200_000, produce_audio, consume_audio_planar, tx, rx);
    assert_eq!((detach(tx), detach(rx)), (0, 0));
}

#[test]
fn five_channel_frames_cross_an_odd_ring_between_threads() {
    let _serial = serial();
    // 5 * 251 = 1255 samples: neither the frame count nor the capacity is a power of two.
    let (mut mem, len) = ring(F32, 251, 5);
    let ptr = mem.as_mut_ptr().cast::<u8>();
    // SAFETY: as above.
    let (tx, rx) = unsafe {
        (
            attach_audio_writer(ptr, len, 5),
            attach_audio_reader(ptr, len, 5),
        )
    };
    assert!(tx >= 0 && rx >= 0, "{tx} {rx}");
    assert_eq!(available(tx), 251);
    // Planar in, interleaved out.
    pump(200_000, produce_audio_planar, consume_audio, tx, rx);
    // And the other way round, carrying on from the ring's indices.
    pump_from(
        200_000,
        100_003,
        produce_audio,
        consume_audio_planar,
        tx,
        rx,
    );
    assert_eq!((detach(tx), detach(rx)), (0, 0));
}

#[test]
fn audio_mismatches_are_reported_with_frame_channel_and_values() {
    let _serial = serial();
    let (mut mem, len) = ring(F32, 16, 3);
    let ptr = mem.as_mut_ptr().cast::<u8>();
    // SAFETY: as above.
    let (tx, rx) = unsafe {
        (
            attach_audio_writer(ptr, len, 3),
            attach_audio_reader(ptr, len, 3),
        )
    };
    assert_eq!(produce_audio(tx, 10, 40), 16);
    assert_eq!(available(rx), 16);
    assert_eq!(consume_audio(rx, 10, 2), 2);
    // Expecting frame 13 where frame 12 is.
    assert_eq!(consume_audio(rx, 13, 2), ERR_MISMATCH);
    let fields: Vec<u32> = (0..4).map(|f| mismatch_field(rx, f)).collect();
    assert_eq!(
        fields,
        [13, audio(13, 0).to_bits(), audio(12, 0).to_bits(), 0]
    );
    // The round with the bad frame is gone: frames 12 and 13.
    assert_eq!(consume_audio_planar(rx, 14, 1), 1);

    assert_eq!(consume_audio(rx, 15, 11), 11);

    // One sample corrupted in the ring: channel 2 of the third frame holds channel 1's value.
    let (mut frame, mut position) = (26u32, 16usize);
    for consume in [consume_audio, consume_audio_planar] {
        assert_eq!(produce_audio_planar(tx, frame, 4), 4);
        let bad = frame + 2;
        let sample = ((position + 2) % 16) * 3 + 2;
        // SAFETY: the sample is inside the ring's storage in `mem`, written and not yet read.
        unsafe {
            let slot = ptr
                .add(downbeat_ring::layout::DATA_OFFSET + 4 * sample)
                .cast::<f32>();
            assert_eq!(slot.read(), audio(bad, 2));
            slot.write(audio(bad, 1));
        }
        assert_eq!(consume(rx, frame, 4), ERR_MISMATCH);
        assert_eq!(
            (0..4).map(|f| mismatch_field(rx, f)).collect::<Vec<_>>(),
            [bad, audio(bad, 2).to_bits(), audio(bad, 1).to_bits(), 2]
        );
        // The whole round went.
        assert_eq!(available(rx), 0);
        (frame, position) = (frame + 4, position + 4);
    }
    assert_eq!((detach(tx), detach(rx)), (0, 0));
}

#[test]
fn mismatches_are_reported_with_their_index_and_values() {
    let _serial = serial();
    let (mut mem, len) = ring(F32, 16, 1);
    let ptr = mem.as_mut_ptr().cast::<u8>();
    // SAFETY: as above.
    let (tx, rx) = unsafe { (attach_f32_producer(ptr, len), attach_f32_consumer(ptr, len)) };
    assert_eq!(produce_f32(tx, 10, 4), 4);
    assert_eq!(consume_f32(rx, 10, 2), 2);
    assert_eq!(consume_f32(rx, 13, 2), ERR_MISMATCH);
    let fields: Vec<u32> = (0..4).map(|f| mismatch_field(rx, f)).collect();
    assert_eq!(fields, [13, sample(13).to_bits(), sample(12).to_bits(), 0]);
    // Nothing was popped: the right expectation still reads both.
    assert_eq!(consume_f32(rx, 12, 2), 2);
    assert_eq!((detach(tx), detach(rx)), (0, 0));

    let (mut mem, len) = ring(U32, 4, 3);
    let ptr = mem.as_mut_ptr().cast::<u8>();
    // SAFETY: as above.
    let (tx, rx) = unsafe { (attach_param_writer(ptr, len), attach_param_reader(ptr, len)) };
    assert_eq!(produce_params(tx, 0, 9), 4);
    assert_eq!(consume_params(rx, 0, 1), 1);
    assert_eq!(consume_params(rx, 2, 1), ERR_MISMATCH);
    assert_eq!(
        (0..4).map(|f| mismatch_field(rx, f)).collect::<Vec<_>>(),
        [2, param(2).id, param(1).id, 0]
    );
    assert_eq!((detach(tx), detach(rx)), (0, 0));
}

#[test]
fn attaching_checks_the_layout() {
    let _serial = serial();
    let (mut words, len) = ring(U32, 10, 1);
    let ptr = words.as_mut_ptr().cast::<u8>();
    // SAFETY: the memory is ours, each length at most its own, and failed attaches keep nothing.
    unsafe {
        assert_eq!(attach_f32_producer(ptr, len), -15);
        assert_eq!(attach_f32_consumer(ptr, len), -15);
        assert_eq!(attach_param_writer(ptr, len), -17);
        assert_eq!(attach_param_reader(ptr, len), -17);
        assert_eq!(attach_f32_consumer(ptr, 100), -12);
        assert_eq!(attach_f32_consumer(ptr.add(4), len - 4), -11);
        assert_eq!(attach_f32_consumer(core::ptr::null_mut(), len), -10);
    }
    let (mut floats, len) = ring(F32, 12, 1);
    let ptr = floats.as_mut_ptr().cast::<u8>();
    // SAFETY: as above.
    unsafe {
        assert_eq!(attach_param_reader(ptr, len), -15);
    }
    let mut zero = memory(1024);
    // SAFETY: as above.
    unsafe {
        assert_eq!(attach_f32_consumer(zero.as_mut_ptr().cast(), 1024), -13);
    }
    assert_eq!(ring_bytes(0, 1, 1), ERR_KIND);
    assert_eq!(ring_bytes(99, 1, 1), ERR_KIND);
    assert_eq!(ring_bytes(F32, 10, 3), 384 + 120);
    assert_eq!(ring_bytes(F32, 1 << 30, 2), -16);
}

#[test]
fn audio_attach_checks_record_length_and_channels() {
    let _serial = serial();
    let (mut stereo, len) = ring(F32, 64, 2);
    let ptr = stereo.as_mut_ptr().cast::<u8>();
    assert_eq!(len, ring_bytes(F32, 128, 1) as usize);
    // SAFETY: the memory is ours, and failed attaches keep nothing; the successful ones are
    // detached at once.
    unsafe {
        for channels in [1, 3, 5, 0] {
            assert_eq!(attach_audio_writer(ptr, len, channels), -17, "{channels}");
            assert_eq!(attach_audio_reader(ptr, len, channels), -17, "{channels}");
        }
        assert_eq!(
            attach_audio_reader(ptr, len, MAX_CHANNELS + 1),
            ERR_CHANNELS
        );
        assert_eq!(attach_audio_writer(ptr, len, u32::MAX), ERR_CHANNELS);
        // The plain f32 endpoints want record length 1.
        assert_eq!(attach_f32_consumer(ptr, len), -17);
        let rx = attach_audio_reader(ptr, len, 2);
        assert_eq!((available(rx), detach(rx)), (0, 0));
    }
    let (mut mono, len) = ring(F32, 128, 1);
    let (mut words, words_len) = ring(U32, 128, 2);
    // SAFETY: as above.
    unsafe {
        assert_eq!(attach_audio_reader(mono.as_mut_ptr().cast(), len, 2), -17);
        assert_eq!(
            attach_audio_writer(words.as_mut_ptr().cast(), words_len, 2),
            -15
        );
        let tx = attach_audio_writer(mono.as_mut_ptr().cast(), len, 1);
        assert_eq!(available(tx), 128);
        assert_eq!(consume_audio(tx, 0, 1), ERR_ROLE);
        assert_eq!(produce_f32(tx, 0, 1), ERR_ROLE);
        assert_eq!(detach(tx), 0);
    }
    let (mut wide, len) = ring(F32, 4, MAX_CHANNELS);
    let ptr = wide.as_mut_ptr().cast::<u8>();
    // SAFETY: as above; both detached below.
    let (tx, rx) = unsafe {
        (
            attach_audio_writer(ptr, len, MAX_CHANNELS),
            attach_audio_reader(ptr, len, MAX_CHANNELS),
        )
    };
    assert_eq!(produce_audio_planar(rx, 0, 1), ERR_ROLE);
    // The widest frames still go through the stack buffer, several per round.
    pump(1000, produce_audio_planar, consume_audio_planar, tx, rx);
    assert_eq!((detach(tx), detach(rx)), (0, 0));
}

#[test]
fn handles_are_checked() {
    let _serial = serial();
    let (mut mem, len) = ring(F32, 8, 1);
    let ptr = mem.as_mut_ptr().cast::<u8>();
    // SAFETY: as above.
    let tx = unsafe { attach_f32_producer(ptr, len) };
    assert_eq!(consume_f32(tx, 0, 1), ERR_ROLE);
    assert_eq!(produce_params(tx, 0, 1), ERR_ROLE);
    assert_eq!(produce_f32(-1, 0, 1), ERR_HANDLE);
    assert_eq!(produce_f32(SLOTS as i32, 0, 1), ERR_HANDLE);
    assert_eq!(detach(tx), 0);
    assert_eq!(produce_f32(tx, 0, 1), ERR_HANDLE);
    assert_eq!(detach(tx), ERR_HANDLE);
}

#[test]
fn scratch_is_aligned() {
    let _serial = serial();
    assert_eq!(scratch_ptr() as usize % 128, 0);
    assert_eq!(scratch_len(), SCRATCH_BYTES);
}
