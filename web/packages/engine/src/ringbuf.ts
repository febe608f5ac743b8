/**
 * The ring buffer, re-exported from one place: the build points this file at the copy of
 * `@downbeat/ringbuf` it puts in `dist/ringbuf/`, so that the worklet and the recorder Worker
 * load without a bundler or an import map (worklets support neither).
 *
 * @module
 */
export { RingBuffer, AudioReader } from "@downbeat/ringbuf";
