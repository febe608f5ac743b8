//! The wasm ABI's control records: `db_event` and `db_render`, the exports the worklet calls
//! each block, called natively on a project loaded with `db_load`. The input is a list of
//! 25-byte records: op (one byte; 0 renders `id` frames, 1 to 6 are `db_event`'s ops, any
//! other is passed on as an unknown op), then id, frame lo, frame hi, value, extra and
//! channel, four little-endian bytes each. As in a page, the session runs on from one input
//! to the next (loading it per input cost 20 times the rest); it is loaded again every
//! `FRESH_AFTER` inputs and whenever its event list is half full.
#![no_main]

use std::cell::Cell;

use downbeat_engine_wasm::{
    db_block_size, db_dropped, db_event, db_event_room, db_load, db_render, db_value,
    EVENT_CAPACITY,
};
use libfuzzer_sys::fuzz_target;

const FRESH_AFTER: u32 = 1000;

thread_local! {
    /// Inputs since the last load (the session lives in the crate's thread-local state).
    static INPUTS: Cell<Option<u32>> = const { Cell::new(None) };
}

fn load() {
    let text = downbeat_fuzz::INSTRUMENTS_PROJECT.as_bytes();
    let name = b"fuzz.toml";
    // SAFETY: both slices are valid for the lengths given.
    let rc = unsafe {
        db_load(
            text.as_ptr(),
            text.len() as u32,
            name.as_ptr(),
            name.len() as u32,
        )
    };
    assert_eq!(rc, 0, "the fixed project loads");
}

fuzz_target!(
    init: {
        load();
        INPUTS.set(Some(0));
    },
    |data: &[u8]| {
        let inputs = match INPUTS.get() {
            Some(n) if n < FRESH_AFTER && db_event_room() as usize >= EVENT_CAPACITY / 2 => n + 1,
            _ => {
                load();
                1
            }
        };
        INPUTS.set(Some(inputs));
        for record in data.chunks_exact(25) {
            let word = |i: usize| {
                u32::from_le_bytes(record[1 + 4 * i..5 + 4 * i].try_into().unwrap())
            };
            let (op, id) = (u32::from(record[0]), word(0));
            if op == 0 {
                let _ = db_render(id);
            } else {
                let _ = db_event(
                    op,
                    id,
                    word(1),
                    word(2),
                    f32::from_bits(word(3)),
                    f32::from_bits(word(4)),
                    word(5),
                );
            }
            let _ = (db_value(id), db_event_room(), db_dropped());
        }
        let _ = db_render(db_block_size());
    }
);
