import { RingBuffer } from "./ringbuffer.js";
import { writeHeader } from "./layout.js";

/** Words per parameter record in Rust's `ParamQueue` format: `[id, f32 bits, frame offset]`. */
export const PARAM_RECORD_LEN = 3;

/** Bytes per record in ringbuf.js' format over a `Uint8Array` ring: `[u8 index][f32]`. */
const COMPAT_RECORD_BYTES = 5;

/** A dequeued parameter change. `frame` is filled in only by `ParamQueue` rings. */
export interface ParameterChange {
  /** Parameter index (id). */
  index: number;
  /** New value. */
  value: number;
  /** Where in the next audio block the value applies (frames from its start). */
  frame?: number;
}

/**
 * Allocates a `SharedArrayBuffer` holding an empty parameter queue of `records` changes in
 * Rust's `ParamQueue` format (a `Uint32Array` ring, record length 3): full 32-bit ids and a frame
 * offset per change, readable by `downbeat_ring::ParamReader` in WebAssembly or native code.
 *
 * ```js
 * import { ParameterWriter, RingBuffer, getStorageForParamQueue } from "@downbeat/ringbuf";
 * const sab = getStorageForParamQueue(256);
 * const params = new ParameterWriter(new RingBuffer(sab, Uint32Array));
 * params.enqueueChange(1000, 0.25, 64); // id 1000 becomes 0.25 at frame 64 of the next block
 * ```
 */
export function getStorageForParamQueue(records: number): SharedArrayBuffer {
  return RingBuffer.getStorageForCapacity(records * PARAM_RECORD_LEN, Uint32Array, PARAM_RECORD_LEN);
}

/**
 * Lays out an empty `ParamQueue` of `records` changes at `byteOffset` in memory you own, such as
 * a shared `WebAssembly.Memory`.
 *
 * @throws RingLayoutError if it does not fit or the offset is not a multiple of 8.
 */
export function initializeParamQueue(
  buffer: ArrayBufferLike,
  byteOffset: number,
  records: number,
): void {
  writeHeader(buffer, byteOffset, records * PARAM_RECORD_LEN, Uint32Array, PARAM_RECORD_LEN);
}

/**
 * One record of the ring's format: its scratch memory and its byte layout, in one place so that
 * the writer and the reader cannot disagree. The format follows from the ring: a `Uint8Array`
 * ring carries ringbuf.js' 5-byte records, a `Uint32Array` ring of record length 3 Rust's
 * `ParamQueue` records.
 */
class RecordCodec {
  /** True for ringbuf.js' 5-byte records. */
  readonly compat: boolean;
  /** The record as the ring moves it. */
  readonly record: Uint8Array | Uint32Array;
  private readonly bits: DataView;

  constructor(ring: RingBuffer, who: string) {
    const type = ring.type();
    if (type === "Uint8Array" || type === "Uint8ClampedArray") {
      this.compat = true;
      this.record = new Uint8Array(COMPAT_RECORD_BYTES);
    } else if (type === "Uint32Array" && ring.recordLength() === PARAM_RECORD_LEN) {
      this.compat = false;
      this.record = new Uint32Array(PARAM_RECORD_LEN);
    } else {
      throw new TypeError(
        `${who} requires a ring of Uint8Array (ringbuf.js records) or a ParamQueue ring ` +
          `(Uint32Array, record length ${PARAM_RECORD_LEN}); got ${type} with record length ` +
          `${ring.recordLength()}`,
      );
    }
    this.bits = new DataView(this.record.buffer);
  }

  /** Lays a change out in `record` (the frame is dropped by the 5-byte format). */
  encode(index: number, value: number, frame: number): void {
    if (this.compat) {
      this.bits.setUint8(0, index);
      this.bits.setFloat32(1, value, true);
    } else {
      this.bits.setUint32(0, index, true);
      this.bits.setFloat32(4, value, true);
      this.bits.setUint32(8, frame, true);
    }
  }

  /** Reads the change in `record` into `o` (`frame` only for `ParamQueue` records). */
  decode(o: ParameterChange): void {
    if (this.compat) {
      o.index = this.bits.getUint8(0);
      o.value = this.bits.getFloat32(1, true);
    } else {
      o.index = this.bits.getUint32(0, true);
      o.value = this.bits.getFloat32(4, true);
      o.frame = this.bits.getUint32(8, true);
    }
  }
}

/**
 * Producer side of a parameter-change queue. Two formats, chosen by the ring:
 *
 * * a `Uint8Array` ring carries ringbuf.js' 5-byte records (index 0..255, f32 value), for code
 *   written against ringbuf.js (the float is little-endian here, big-endian there: both ends
 *   must come from the same package);
 * * a ring from {@link getStorageForParamQueue} carries Rust's `ParamQueue` records: 32-bit ids
 *   and a frame offset for sample-accurate automation.
 *
 * ```js
 * import { ParameterWriter, RingBuffer } from "@downbeat/ringbuf";
 * const sab = RingBuffer.getStorageForCapacity(5 * 64, Uint8Array);
 * const writer = new ParameterWriter(new RingBuffer(sab, Uint8Array));
 * writer.enqueueChange(0, 440); // true
 * ```
 */
export class ParameterWriter {
  /** The ring written to. */
  readonly ringbuf: RingBuffer;
  private readonly _codec: RecordCodec;

  /** @throws TypeError unless the ring holds one of the two record formats. */
  constructor(ringbuf: RingBuffer) {
    this._codec = new RecordCodec(ringbuf, "ParameterWriter");
    this.ringbuf = ringbuf;
  }

  /**
   * Queues "parameter `index` becomes `value`" (at `frame` of the next block, for `ParamQueue`
   * rings; ignored by the 5-byte format). Never blocks and allocates nothing.
   *
   * @returns true if queued, false if the queue is full (nothing was written).
   * @throws RangeError if `index` does not fit the format (0..255, or a u32) or `frame` is not a u32.
   */
  enqueueChange(index: number, value: number, frame = 0): boolean {
    const codec = this._codec;
    if (codec.compat) {
      if (!(index >= 0 && index <= 255 && Number.isInteger(index))) {
        throw new RangeError(
          `parameter index ${index} does not fit ringbuf.js' one-byte records; ` +
            `use getStorageForParamQueue for 32-bit ids`,
        );
      }
      // The ring's record length is 1 here: check the room so a record is never split.
      if (this.ringbuf.availableWrite() < COMPAT_RECORD_BYTES) return false;
    } else {
      if (!(index >= 0 && index <= 0xffffffff && Number.isInteger(index))) {
        throw new RangeError(`parameter id ${index} is not a 32-bit unsigned integer`);
      }
      if (!(frame >= 0 && frame <= 0xffffffff && Number.isInteger(frame))) {
        throw new RangeError(`frame offset ${frame} is not a 32-bit unsigned integer`);
      }
    }
    codec.encode(index, value, frame);
    return this.ringbuf.push(codec.record) === codec.record.length;
  }

  /** ringbuf.js' old name for {@link ParameterWriter.enqueueChange}. @deprecated */
  enqueue_change(index: number, value: number, frame = 0): boolean {
    return this.enqueueChange(index, value, frame);
  }
}

/**
 * Consumer side of a parameter-change queue (see {@link ParameterWriter} for the formats).
 *
 * ```js
 * import { ParameterReader, RingBuffer, getStorageForParamQueue } from "@downbeat/ringbuf";
 * const sab = getStorageForParamQueue(64); // made by the main thread
 * // In an AudioWorkletProcessor:
 * const reader = new ParameterReader(new RingBuffer(sab, Uint32Array));
 * const change = { index: 0, value: 0, frame: 0 }; // reused: no garbage per change
 * const params = new Float32Array(16);
 * // process():
 * while (reader.dequeueChange(change)) params[change.index] = change.value;
 * ```
 */
export class ParameterReader {
  /** The ring read from. */
  readonly ringbuf: RingBuffer;
  private readonly _codec: RecordCodec;

  /** @throws TypeError unless the ring holds one of the two record formats. */
  constructor(ringbuf: RingBuffer) {
    this._codec = new RecordCodec(ringbuf, "ParameterReader");
    this.ringbuf = ringbuf;
  }

  /**
   * Takes the oldest change into `o` (`index`, `value`, and `frame` for `ParamQueue` rings).
   * Never blocks and allocates nothing.
   *
   * @returns true if a change was read, false if the queue is empty (`o` untouched).
   */
  dequeueChange(o: ParameterChange): boolean {
    const codec = this._codec;
    // A 5-byte record in a plain byte ring: pop only once all of it is there.
    if (codec.compat && this.ringbuf.availableRead() < COMPAT_RECORD_BYTES) return false;
    if (this.ringbuf.pop(codec.record) !== codec.record.length) return false;
    codec.decode(o);
    return true;
  }

  /** ringbuf.js' old name for {@link ParameterReader.dequeueChange}. @deprecated */
  dequeue_change(o: ParameterChange): boolean {
    return this.dequeueChange(o);
  }
}
