/**
 * The wasm module's exports (the ABI in `crates/engine-wasm`) and the set-up calls both threads
 * make: hand over files, load the project and the MIDI file, read the last error. Set-up only:
 * these allocate, so the worklet calls them in its constructor, never in `process()`.
 *
 * @module
 */

import { EngineError } from "./errors.js";

/** The exports of `downbeat_engine.wasm`, as ABI.md lists them. */
export interface EngineExports {
  memory: WebAssembly.Memory;
  db_alloc(len: number): number;
  db_dealloc(ptr: number, len: number): void;
  db_add_file(pathPtr: number, pathLen: number, bytesPtr: number, bytesLen: number): number;
  db_load(textPtr: number, textLen: number, namePtr: number, nameLen: number): number;
  db_load_midi(bytesPtr: number, bytesLen: number): number;
  db_midi_frames(): number;
  db_sample_rate(): number;
  db_block_size(): number;
  db_channels(): number;
  db_table_ptr(): number;
  db_table_len(): number;
  db_unload(): void;
  db_event(
    op: number,
    id: number,
    frameLo: number,
    frameHi: number,
    value: number,
    extra: number,
    channel: number,
  ): number;
  db_render(frames: number): number;
  db_output_ptr(channel: number): number;
  db_position(): number;
  db_transport_playing(): number;
  db_transport_beat(): number;
  db_transport_bar(): number;
  db_transport_bar_beat(): number;
  db_transport_bpm(): number;
  db_peak(channel: number): number;
  db_rms(channel: number): number;
  db_value(id: number): number;
  db_event_room(): number;
  db_dropped(): number;
  db_error_ptr(): number;
  db_error_len(): number;
  db_edit(ptr: number, len: number): number;
  db_reclaim(): number;
}

const REQUIRED: (keyof EngineExports)[] = [
  "memory",
  "db_alloc",
  "db_dealloc",
  "db_add_file",
  "db_load",
  "db_load_midi",
  "db_midi_frames",
  "db_sample_rate",
  "db_block_size",
  "db_channels",
  "db_table_ptr",
  "db_table_len",
  "db_unload",
  "db_event",
  "db_render",
  "db_output_ptr",
  "db_position",
  "db_transport_playing",
  "db_transport_beat",
  "db_transport_bar",
  "db_transport_bar_beat",
  "db_transport_bpm",
  "db_peak",
  "db_rms",
  "db_value",
  "db_event_room",
  "db_dropped",
  "db_error_ptr",
  "db_error_len",
  "db_edit",
  "db_reclaim",
];

/**
 * The exports of an instance, checked against the ABI.
 *
 * @throws EngineError (code -2) naming the missing exports, when the module is not Downbeat's
 * engine or is of another version.
 */
export function engineExports(instance: WebAssembly.Instance): EngineExports {
  const e = instance.exports as Record<string, unknown>;
  const missing = REQUIRED.filter((name) => !(name in e));
  if (missing.length > 0) {
    throw new EngineError(-2, `not Downbeat's engine module: it lacks ${missing.join(", ")}`);
  }
  return e as unknown as EngineExports;
}

/** What to load: the project and what it refers to, as bytes. */
export interface LoadInput {
  project: Uint8Array;
  name: Uint8Array;
  files: { path: Uint8Array; bytes: Uint8Array }[];
  midi: Uint8Array | null;
}

/**
 * Hands over the files, loads the project, then the MIDI file, exactly in the order the CLI
 * does. Allocates: constructor or main thread only.
 *
 * @throws EngineError with the engine's own message (the CLI's text) on the first failure.
 */
export function loadProject(e: EngineExports, input: LoadInput): void {
  for (const file of input.files) {
    withBytes(e, file.path, (pp, pl) =>
      withBytes(e, file.bytes, (bp, bl) => check(e, e.db_add_file(pp, pl, bp, bl))),
    );
  }
  withBytes(e, input.project, (tp, tl) =>
    withBytes(e, input.name, (np, nl) => check(e, e.db_load(tp, tl, np, nl))),
  );
  if (input.midi) {
    const midi = input.midi;
    withBytes(e, midi, (p, l) => check(e, e.db_load_midi(p, l)));
  }
}

/**
 * Hands over the files, then applies one batch of live edits (`batch`: JSON, see `db_edit`),
 * taken over by the engine at its next `db_render`. Allocates: never from `process()`.
 *
 * @throws EngineError with the engine's message: -2 (not a batch), -6 (a node the browser
 * cannot run), -7 (refused: the message names the culprit), -8 (busy). Nothing changed then.
 */
export function editEngine(e: EngineExports, batch: Uint8Array, files: { path: Uint8Array; bytes: Uint8Array }[]): void {
  for (const file of files) {
    withBytes(e, file.path, (pp, pl) =>
      withBytes(e, file.bytes, (bp, bl) => check(e, e.db_add_file(pp, pl, bp, bl))),
    );
  }
  withBytes(e, batch, (p, l) => check(e, e.db_edit(p, l)));
}

/** Copies `bytes` into the module's memory for the length of `use`. */
function withBytes<T>(e: EngineExports, bytes: Uint8Array, use: (ptr: number, len: number) => T): T {
  const len = bytes.length;
  // A zero-length allocation may legitimately return a dangling pointer; ask for one byte.
  const size = len === 0 ? 1 : len;
  const ptr = e.db_alloc(size);
  if (ptr === 0) throw new EngineError(-2, `the engine could not allocate ${len} bytes`);
  try {
    new Uint8Array(e.memory.buffer, ptr, len).set(bytes);
    return use(ptr, len);
  } finally {
    e.db_dealloc(ptr, size);
  }
}

/** Throws the engine's last error when `code` is one. */
function check(e: EngineExports, code: number): void {
  if (code < 0) throw new EngineError(code, lastError(e));
}

/** The message of the engine's last error (UTF-8 in its memory). */
export function lastError(e: EngineExports): string {
  const len = e.db_error_len();
  if (len === 0) return "";
  return utf8Decode(new Uint8Array(e.memory.buffer, e.db_error_ptr(), len));
}

/**
 * UTF-8 to a string. `TextDecoder` where the global scope has it; a plain decoder otherwise,
 * since an AudioWorkletGlobalScope need not expose one.
 */
export function utf8Decode(bytes: Uint8Array): string {
  if (typeof TextDecoder === "function") return new TextDecoder().decode(bytes.slice());
  let out = "";
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i++];
    let cp: number;
    if (b < 0x80) cp = b;
    else if (b < 0xe0) cp = ((b & 0x1f) << 6) | (bytes[i++] & 0x3f);
    else if (b < 0xf0) cp = ((b & 0x0f) << 12) | ((bytes[i++] & 0x3f) << 6) | (bytes[i++] & 0x3f);
    else
      cp =
        ((b & 0x07) << 18) |
        ((bytes[i++] & 0x3f) << 12) |
        ((bytes[i++] & 0x3f) << 6) |
        (bytes[i++] & 0x3f);
    out += String.fromCodePoint(cp);
  }
  return out;
}

/** A string as UTF-8. */
export function utf8Encode(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

/** One parameter the engine can address, from `db_table`. */
export interface ParamInfo {
  /** What the event ops take. */
  id: number;
  /** The node's name in the project. */
  node: string;
  /** The parameter's name. */
  name: string;
  /** The range a value is set in; null for an output value without bounds. */
  min: number | null;
  max: number | null;
  initial: number;
  /** True for a node's output value: readable, not settable. */
  output: boolean;
}

/** A node that plays notes, from `db_table`. */
export interface InstrumentInfo {
  id: number;
  node: string;
}

/**
 * What the loaded project lets you address (`db_table`), and its format. After a live edit, the
 * ids of the nodes it removed are left out, so ids may have gaps (see {@link paramSlots}).
 */
export interface EngineTable {
  params: ParamInfo[];
  instruments: InstrumentInfo[];
  sample_rate: number;
  block_size: number;
  channels: number;
}

/** Parameter ids the status board has a value for: one more than the largest id in `table`. */
export function paramSlots(table: EngineTable): number {
  let slots = 0;
  for (const p of table.params) if (p.id >= slots) slots = p.id + 1;
  return slots;
}

/** Reads and parses `db_table` (main thread, or the worklet after an edit: never from `process()`). */
export function readTable(e: EngineExports): EngineTable {
  const bytes = new Uint8Array(e.memory.buffer, e.db_table_ptr(), e.db_table_len());
  return JSON.parse(utf8Decode(bytes)) as EngineTable;
}
