/**
 * What the main thread (or a Worker) and the worklet agree on: the control ring's records, the
 * status board's record, the ops, the messages of a live edit. Both sides import this file, so
 * they cannot disagree.
 *
 * @module
 */

import type { EngineTable } from "./abi.js";

/**
 * u32 words per control record: `[op, id, frame_lo, frame_hi, value bits, extra bits, channel, 0]`.
 * With {@link BEAT} added to `op`, `frame_lo`/`frame_hi` are the low and high words of an f64
 * beat instead of a frame (or {@link NEXT_BEAT} / {@link NEXT_BAR}).
 */
export const CONTROL_RECORD = 8;

/** `frame_lo = frame_hi = NOW`: "at the start of the next block rendered". Also "every" for ids and channels. */
export const NOW = 0xffff_ffff;

/**
 * Added to a record's op: the event is timed by the song's beats. `frame_lo`/`frame_hi` are the
 * low and high 32 bits of an f64 beat (quarter notes from the song's start), or the words of
 * {@link NEXT_BEAT} or {@link NEXT_BAR}.
 */
export const BEAT = 0x1_0000;

/** With {@link BEAT}: `frame_lo = frame_hi = NEXT_BEAT` (a NaN's bits): on the next beat line. */
export const NEXT_BEAT = 0xffff_ffff;

/** With {@link BEAT}: `frame_lo = NEXT_BAR`, `frame_hi = 0xffff_ffff` (a NaN's bits): on the next bar line. */
export const NEXT_BAR = 0xffff_fffe;

/** The engine's event ops (ABI.md), passed to `db_event` as they are. */
export const Op = {
  /** Set a parameter; its smoothing applies. */
  Set: 1,
  /** Set a parameter without smoothing. */
  Step: 2,
  /** Ramp a parameter to `value` over `extra` seconds. */
  Ramp: 3,
  /** Note on: id = instrument (or NOW = every one), value = note, extra = velocity. */
  NoteOn: 4,
  /** Note off: id = instrument (or every one), value = note. */
  NoteOff: 5,
  /** All notes off on `channel` (or NOW = every channel). */
  AllNotesOff: 6,
  /** The transport plays from where it stands (id and channel ignored, as for every transport op). */
  Play: 7,
  /** The transport stops where it is; the song's position stays. */
  Stop: 8,
  /** The song goes to beat `value` (as an f32). */
  Locate: 9,
  /** The song loops from beat `value` to beat `extra`. */
  Loop: 10,
  /** No more looping. */
  Unloop: 11,
  /** The tempo goes to `value` bpm over `extra` beats (0: a step) from where it lands. */
  Tempo: 12,
  /**
   * Worklet-only (never reaches the engine): start copying the rendered audio into the record
   * ring at the record's frame.
   */
  RecordStart: 0x100,
  /** Worklet-only: stop recording at the record's frame. */
  RecordStop: 0x101,
} as const;

/**
 * Float64 words at the start of every status record, before the per-channel meters and the
 * parameter values. Indices into a status record:
 */
export const Status = {
  /** Frames the engine has rendered (`db_position`) after the block this record describes. */
  Position: 0,
  /** Events the engine refused because its event list was full (`db_dropped`). */
  Dropped: 1,
  /** Events `db_event` refused for another reason (unknown id, out of range). */
  EventErrors: 2,
  /** The last such error code (0 if none). */
  LastEventError: 3,
  /** 0 idle, 1 recording (or armed), 2 stopped. */
  RecordState: 4,
  /** Frames copied into the record ring so far. */
  RecordedFrames: 5,
  /** Frames the recording lost because its ring was full (a stop then fails). */
  RecordLost: 6,
  /** Engine frame of the recording's first frame. */
  RecordStart: 7,
  /** 1 while the song plays, 0 while it is stopped (`db_transport_playing`). */
  Playing: 8,
  /** The song's beat after the block: quarter notes from its start (`db_transport_beat`). */
  Beat: 9,
  /** The song's bar, from 0 (`db_transport_bar`). */
  Bar: 10,
  /** The beat the bar started on (`db_transport_bar_beat`). */
  BarBeat: 11,
  /** The song's tempo in quarter notes per minute (`db_transport_bpm`). */
  Bpm: 12,
  /** Words before the meters. */
  Header: 13,
} as const;

/**
 * Float64 words of one status record: the header, peak and RMS per channel, one value per
 * parameter id (`paramSlots(table)`; an edit that adds parameters moves the worklet to a larger
 * board, see {@link EditReply}).
 */
export function statusRecordLength(channels: number, params: number): number {
  return Status.Header + 2 * channels + params;
}

/**
 * Bytes of the status board: a sequence word (Int32 at byte 0, odd while the worklet writes),
 * then the status record as Float64 from byte 8.
 *
 * The newest status is all a reader wants, so this is a seqlock rather than a ring: a ring that
 * fills while nobody reads keeps its oldest records, and the first read after a pause would be
 * as old as the pause. The worklet never waits (it bumps the word, writes, bumps it again); a
 * reader that sees the word change under it reads again.
 */
export function statusBoardBytes(channels: number, params: number): number {
  return 8 * (1 + statusRecordLength(channels, params));
}

/** Where `db_peak(c)` is in a status record. */
export function peakIndex(channel: number): number {
  return Status.Header + channel;
}

/** Where `db_rms(c)` is in a status record. */
export function rmsIndex(channels: number, channel: number): number {
  return Status.Header + channels + channel;
}

/** Where `db_value(id)` is in a status record. */
export function valueIndex(channels: number, id: number): number {
  return Status.Header + 2 * channels + id;
}

/** The processor's registered name. */
export const PROCESSOR_NAME = "downbeat-engine";

/**
 * What the main thread hands the worklet once, at construction (`processorOptions`): the
 * compiled module, the project's bytes, and the shared memory of the rings.
 */
export interface ProcessorOptions {
  /** The compiled engine. */
  module: WebAssembly.Module;
  /** The project file, UTF-8. */
  project: Uint8Array;
  /** Its name for messages, UTF-8. */
  name: Uint8Array;
  /** Files the project refers to, by the path as written in it, UTF-8. */
  files: { path: Uint8Array; bytes: Uint8Array }[];
  /** A Standard MIDI File to put on the timeline, or null. */
  midi: Uint8Array | null;
  /** The control ring (Uint32, records of {@link CONTROL_RECORD}). */
  control: SharedArrayBuffer;
  /** The status board ({@link statusBoardBytes}). */
  status: SharedArrayBuffer;
  /** The record ring (Float32, interleaved, one frame per record). */
  record: SharedArrayBuffer;
  /** Parameters in the table (values reported per block). */
  params: number;
  /**
   * Frames to render in all, or -1 to run until stopped. With a length, the last block is the
   * remainder, as `downbeat run --device offline` renders it.
   */
  length: number;
}

/**
 * The one kind of message that goes through the node's port once the engine runs: a live edit
 * and its reply. The worklet handles it between two `process()` calls (it builds nodes and
 * compiles, which allocates), never inside one; the engine takes the edit over at the start of
 * the next block it renders.
 */
export interface EditRequest {
  type: "edit";
  /** Matches the reply to its request. */
  id: number;
  /** The batch, JSON (`db_edit`). */
  batch: Uint8Array;
  /** Files the nodes to add refer to, by the path as written, UTF-8. */
  files: { path: Uint8Array; bytes: Uint8Array }[];
}

/**
 * After an applied edit: frees the old schedule (with the nodes the edit removed) in the
 * worklet, between two `process()` calls.
 */
export interface ReclaimRequest {
  type: "reclaim";
}

/** A message to the worklet. */
export type WorkletMessage = EditRequest | ReclaimRequest;

/**
 * The worklet's answer to an {@link EditRequest}: committed (the engine takes it over at the
 * start of the block at `frame`), with the new table and, when the edit added parameter ids
 * beyond the status board, the larger board the worklet reports on from now on; or refused,
 * with the engine's code and message (nothing changed).
 */
export type EditReply =
  | { type: "edit"; id: number; ok: true; frame: number; table: EngineTable; status: SharedArrayBuffer | null }
  | { type: "edit"; id: number; ok: false; code: number; message: string };
