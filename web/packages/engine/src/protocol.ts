/**
 * What the main thread (or a Worker) and the worklet agree on: the control ring's records, the
 * status ring's records, the ops. Both sides import this file, so they cannot disagree.
 *
 * @module
 */

/** u32 words per control record: `[op, id, frame_lo, frame_hi, value bits, extra bits, channel, 0]`. */
export const CONTROL_RECORD = 8;

/** `frame_lo = frame_hi = NOW`: "at the start of the next block rendered". Also "every" for ids and channels. */
export const NOW = 0xffff_ffff;

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
  /** Words before the meters. */
  Header: 8,
} as const;

/** Float64 words of one status record: the header, peak and RMS per channel, one value per parameter. */
export function statusRecordLength(channels: number, params: number): number {
  return Status.Header + 2 * channels + params;
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
  /** The status ring (Float64, records of {@link statusRecordLength}). */
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
