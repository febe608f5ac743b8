// Parameter changes in both record formats: ringbuf.js' 5-byte records over a Uint8Array ring,
// and Rust's ParamQueue records (id, f32 bits, frame offset) over a Uint32Array ring.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  PARAM_RECORD_LEN,
  ParameterReader,
  ParameterWriter,
  RingBuffer,
  getStorageForParamQueue,
  initializeParamQueue,
} from "@downbeat/ringbuf";

test("ringbuf.js-format changes round trip in order, and a full queue says so", () => {
  const sab = RingBuffer.getStorageForCapacity(5 * 4 + 3, Uint8Array);
  const writer = new ParameterWriter(new RingBuffer(sab, Uint8Array));
  const reader = new ParameterReader(new RingBuffer(sab, Uint8Array));
  for (let i = 0; i < 4; i++) assert.equal(writer.enqueueChange(i * 60, i + 0.5), true);
  assert.equal(writer.enqueueChange(1, 1), false, "23 bytes hold four records, not five");
  const o = { index: -1, value: -1 };
  for (let i = 0; i < 4; i++) {
    assert.equal(reader.dequeueChange(o), true);
    assert.deepEqual(o, { index: i * 60, value: i + 0.5 });
  }
  assert.equal(reader.dequeue_change(o), false);
  assert.equal(writer.enqueue_change(255, -3), true);
  assert.equal(reader.dequeueChange(o), true);
  assert.deepEqual(o, { index: 255, value: -3 });
});

test("ringbuf.js-format ids above 255 are an error, not a silent wrap", () => {
  const writer = new ParameterWriter(
    new RingBuffer(RingBuffer.getStorageForCapacity(50, Uint8Array), Uint8Array),
  );
  assert.throws(() => writer.enqueueChange(256, 1), RangeError);
  assert.throws(() => writer.enqueueChange(1.5, 1), RangeError);
});

test("ParamQueue records carry 32-bit ids, f32 values and frame offsets", () => {
  const sab = getStorageForParamQueue(8);
  const ring = new RingBuffer(sab, Uint32Array);
  assert.equal(ring.capacity(), 8 * PARAM_RECORD_LEN);
  assert.equal(ring.recordLength(), PARAM_RECORD_LEN);
  const writer = new ParameterWriter(ring);
  const reader = new ParameterReader(new RingBuffer(sab, Uint32Array));
  const o = { index: 0, value: 0, frame: 0 };
  for (let round = 0; round < 50; round++) {
    for (let i = 0; i < 8; i++) {
      assert.equal(writer.enqueueChange(0xffffff00 + i, round + i / 3, (round * 7 + i) % 512), true);
    }
    assert.equal(writer.enqueueChange(1, 1, 1), false, "full after 8 records");
    for (let i = 0; i < 8; i++) {
      assert.equal(reader.dequeueChange(o), true);
      assert.deepEqual(o, {
        index: 0xffffff00 + i,
        value: Math.fround(round + i / 3),
        frame: (round * 7 + i) % 512,
      });
    }
    assert.equal(reader.dequeueChange(o), false);
  }
});

test("ParamQueue words are laid out as downbeat_ring::ParamQueue reads them", () => {
  const buffer = new SharedArrayBuffer(4096);
  initializeParamQueue(buffer, 512, 4);
  const writer = new ParameterWriter(new RingBuffer(buffer, Uint32Array, 512));
  writer.enqueueChange(7, 0.5, 100);
  const view = new DataView(buffer, 512 + 384);
  assert.deepEqual([view.getUint32(0, true), view.getFloat32(4, true), view.getUint32(8, true)], [7, 0.5, 100]);
});

test("parameter adapters refuse rings of other shapes", () => {
  const floats = new RingBuffer(RingBuffer.getStorageForCapacity(12, Float32Array), Float32Array);
  assert.throws(() => new ParameterWriter(floats), TypeError);
  const plainU32 = new RingBuffer(RingBuffer.getStorageForCapacity(12, Uint32Array), Uint32Array);
  assert.throws(() => new ParameterReader(plainU32), /record length 3/);
  const writer = new ParameterWriter(new RingBuffer(getStorageForParamQueue(2), Uint32Array));
  assert.throws(() => writer.enqueueChange(-1, 0), RangeError);
  assert.throws(() => writer.enqueueChange(1, 0, 2 ** 32), RangeError);
});
