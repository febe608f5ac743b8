//! What the tests of the ABI share: loading a project, the parameter table, an event timed by
//! an engine frame, all through the exports as the worklet calls them.
// Each test binary includes this module and uses a part of it.
#![allow(dead_code)]

use downbeat_engine_wasm::*;

/// `db_load` of `text`, named `name` in error messages: 0, or the refusal's code.
pub fn load(text: &str, name: &str) -> i32 {
    // SAFETY: both slices are valid for their lengths.
    unsafe {
        db_load(
            text.as_ptr(),
            text.len() as u32,
            name.as_ptr(),
            name.len() as u32,
        )
    }
}

/// The loaded project's parameter table, as the module publishes it.
pub fn table() -> serde_json::Value {
    let len = db_table_len() as usize;
    // SAFETY: the table is `len` bytes at `db_table_ptr` while the project is loaded.
    let bytes = unsafe { std::slice::from_raw_parts(db_table_ptr(), len) };
    serde_json::from_slice(bytes).unwrap()
}

/// The id of `node`'s parameter `name` in `table`.
pub fn param(table: &serde_json::Value, node: &str, name: &str) -> u32 {
    table["params"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["node"] == node && p["name"] == name)
        .unwrap_or_else(|| panic!("{node}.{name} in {table}"))["id"]
        .as_u64()
        .unwrap() as u32
}

/// `db_event` timed by an engine frame.
pub fn event(op: u32, id: u32, frame: u64, value: f32, extra: f32, channel: u32) -> i32 {
    db_event(
        op,
        id,
        frame as u32,
        (frame >> 32) as u32,
        value,
        extra,
        channel,
    )
}
