// Interleaved audio: interleave/deinterleave for any channel count and block length, and the
// AudioWriter/AudioReader adapters, including the planar paths that skip the temporary buffer.
import { test } from "node:test";
import assert from "node:assert/strict";
import { AudioReader, AudioWriter, RingBuffer, deinterleave, interleave } from "@downbeat/ringbuf";

test("interleave/deinterleave round trip for 1..8 channels and any block length", () => {
  for (let channels = 1; channels <= 8; channels++) {
    for (const frames of [1, 37, 128, 1000]) {
      const input = Float32Array.from({ length: channels * frames }, (_, i) => i);
      const planar = Array.from({ length: channels }, () => new Float32Array(frames));
      deinterleave(input, planar);
      for (let f = 0; f < frames; f++) {
        for (let c = 0; c < channels; c++) {
          assert.equal(planar[c][f], f * channels + c);
        }
      }
      const back = new Float32Array(channels * frames);
      interleave(planar, back);
      assert.deepEqual(back, input);
    }
  }
});

test("interleave/deinterleave refuse shapes that do not fit", () => {
  assert.throws(() => interleave([new Float32Array(4), new Float32Array(4)], new Float32Array(7)), RangeError);
  assert.throws(() => interleave([new Float32Array(3), new Float32Array(4)], new Float32Array(8)), RangeError);
  assert.throws(() => deinterleave(new Float32Array(9), [new Float32Array(5), new Float32Array(5)]), RangeError);
  assert.throws(() => deinterleave(new Float32Array(8), [new Float32Array(3), new Float32Array(4)]), RangeError);
});

test("AudioWriter/AudioReader require a Float32Array ring", () => {
  const ints = new RingBuffer(RingBuffer.getStorageForCapacity(8, Int32Array), Int32Array);
  assert.throws(() => new AudioWriter(ints), TypeError);
  assert.throws(() => new AudioReader(ints), TypeError);
});

test("enqueue/dequeue move whole frames when the ring knows the channel count", () => {
  const sab = RingBuffer.getStorageForCapacity(3 * 10, Float32Array, 3);
  const writer = new AudioWriter(new RingBuffer(sab, Float32Array));
  const reader = new AudioReader(new RingBuffer(sab, Float32Array));
  assert.equal(writer.enqueue(new Float32Array(8)), 6, "two frames of three, not 8 samples");
  assert.equal(writer.availableWrite(), 24);
  assert.equal(reader.availableRead(), 6);
  assert.equal(reader.dequeue(new Float32Array(5)), 3);
  assert.equal(reader.available_read(), 3);
  assert.equal(writer.available_write(), 27);
});

test("planar enqueue and dequeue carry every sample across wrap-arounds", () => {
  for (const channels of [1, 2, 5]) {
    const capacityFrames = 333; // not a multiple of the block: blocks straddle the end
    const sab = RingBuffer.getStorageForCapacity(channels * capacityFrames, Float32Array, channels);
    const writer = new AudioWriter(new RingBuffer(sab, Float32Array));
    const reader = new AudioReader(new RingBuffer(sab, Float32Array));
    const block = 128;
    const inBlock = Array.from({ length: channels }, () => new Float32Array(block));
    const outBlock = Array.from({ length: channels }, () => new Float32Array(block));
    let written = 0;
    let read = 0;
    for (let round = 0; round < 200; round++) {
      for (let c = 0; c < channels; c++) {
        for (let f = 0; f < block; f++) inBlock[c][f] = (written + f) * 10 + c;
      }
      const free = capacityFrames - (written - read);
      const wrote = writer.enqueuePlanar(inBlock);
      assert.equal(wrote, Math.min(block, free));
      written += wrote;
      const got = reader.dequeuePlanar(outBlock, round % 3 === 0 ? 50 : block);
      for (let c = 0; c < channels; c++) {
        for (let f = 0; f < got; f++) assert.equal(outBlock[c][f], (read + f) * 10 + c);
      }
      read += got;
    }
    assert.ok(read > 10_000, `only ${read} frames went through`);
  }
});

test("planar enqueue into a ring without a record length still writes whole frames", () => {
  const sab = RingBuffer.getStorageForCapacity(5, Float32Array);
  const writer = new AudioWriter(new RingBuffer(sab, Float32Array));
  const reader = new AudioReader(new RingBuffer(sab, Float32Array));
  const l = new Float32Array([1, 2, 3]);
  const r = new Float32Array([-1, -2, -3]);
  assert.equal(writer.enqueuePlanar([l, r]), 2, "five slots hold two stereo frames");
  const out = new Float32Array(6);
  assert.equal(reader.dequeue(out), 4);
  assert.deepEqual(Array.from(out.subarray(0, 4)), [1, -1, 2, -2]);
});
