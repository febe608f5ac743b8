// Compiled (never run) by `npm run typecheck`: code written for ringbuf.js' types, and our
// additions, must type-check against the shipped declarations without casts.
import {
  AudioReader,
  AudioWriter,
  ParameterReader,
  ParameterWriter,
  RingBuffer,
  RingLayoutError,
  deinterleave,
  getStorageForParamQueue,
  interleave,
  type ParameterChange,
} from "@downbeat/ringbuf";

const sab: SharedArrayBuffer = RingBuffer.getStorageForCapacity(1024, Float32Array);
const ring = new RingBuffer(sab, Float32Array);
const block = new Float32Array(128);
const pushed: number = ring.push(block, 64, 32);
const popped: number = ring.pop(block);
ring.writeCallback(10, (a, b) => a.length + b.length);
ring.writeCallbackWithOffset(10, (storage, o1, n1, o2, n2) => {
  storage.fill(0, o1, o1 + n1);
  storage.fill(0, o2, o2 + n2);
});
ring.readCallbackWithOffset(10, (_storage, _o1, n1, _o2, n2) => n1 + n2);
const flags: boolean[] = [ring.empty(), ring.full()];
const counts: number[] = [ring.capacity(), ring.availableRead(), ring.available_write()];
const name: string = ring.type();

const big = new RingBuffer(RingBuffer.getStorageForCapacity(8, BigInt64Array), BigInt64Array);
big.push(new BigInt64Array([1n, 2n]));

const writer = new AudioWriter(ring);
const reader = new AudioReader(ring);
writer.enqueue(block);
reader.dequeuePlanar([new Float32Array(64), new Float32Array(64)]);
interleave([block, block], new Float32Array(256));
deinterleave(new Float32Array(256), [block, block]);

const params = new ParameterWriter(new RingBuffer(getStorageForParamQueue(16), Uint32Array));
params.enqueueChange(3, 0.5, 10);
const change: ParameterChange = { index: 0, value: 0 };
new ParameterReader(params.ringbuf).dequeueChange(change);

try {
  new RingBuffer(new SharedArrayBuffer(8), Float32Array);
} catch (e) {
  if (e instanceof RingLayoutError && e.code === "TooSmall") {
    // expected
  }
}

export { pushed, popped, flags, counts, name };
