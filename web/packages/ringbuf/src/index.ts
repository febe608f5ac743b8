/**
 * `@downbeat/ringbuf`: a wait-free single-producer single-consumer ring buffer over
 * `SharedArrayBuffer`, for talking to an AudioWorklet (or any Worker) without `postMessage`'s
 * garbage and locks.
 *
 * It is a drop-in for ringbuf.js 0.4 (change the import), laid out in Downbeat's shared layout
 * (`docs/ring-layout.md`) so that `downbeat-ring` compiled to WebAssembly, or running natively
 * over shared memory, can be the other end.
 *
 * ```js
 * import { RingBuffer, AudioWriter, AudioReader } from "@downbeat/ringbuf";
 * const sab = RingBuffer.getStorageForCapacity(2 * 4096, Float32Array, 2);
 * const writer = new AudioWriter(new RingBuffer(sab, Float32Array)); // e.g. in a Worker
 * const reader = new AudioReader(new RingBuffer(sab, Float32Array)); // in the worklet
 * ```
 *
 * @module
 */

export { RingBuffer } from "./ringbuffer.js";
export type { RingBufferCallback, RingBufferOffsetCallback } from "./ringbuffer.js";
export { AudioReader, AudioWriter, deinterleave, interleave } from "./audio.js";
export {
  PARAM_RECORD_LEN,
  ParameterReader,
  ParameterWriter,
  getStorageForParamQueue,
  initializeParamQueue,
} from "./param.js";
export type { ParameterChange } from "./param.js";
export {
  HEADER_BYTES,
  LAYOUT_VERSION,
  MAGIC,
  MAX_CAPACITY,
  READ_INDEX_OFFSET,
  RingLayoutError,
  WRITE_INDEX_OFFSET,
  elementKind,
} from "./layout.js";
export type {
  RingLayoutErrorCode,
  TypedArray,
  TypedArrayConstructor,
} from "./layout.js";
