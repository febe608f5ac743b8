// The core ring: what a ringbuf.js user relies on (symmetric, asymmetric, offsets with canaries,
// callbacks), then what is ours (exact capacity, records, read callbacks, 64-bit types, the
// shared layout and its checks).
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  HEADER_BYTES,
  MAGIC,
  READ_INDEX_OFFSET,
  RingBuffer,
  RingLayoutError,
  WRITE_INDEX_OFFSET,
} from "@downbeat/ringbuf";
import { Prng, SequenceChecker, SequenceWriter } from "./util.mjs";

function ring(capacity, type = Uint32Array, recordLength = 1) {
  return new RingBuffer(RingBuffer.getStorageForCapacity(capacity, type, recordLength), type);
}

test("symmetric push/pop round trips with sizes from a seeded PRNG", () => {
  const rng = new Prng(11);
  for (let iteration = 0; iteration < 150; iteration++) {
    const capacity = 1 + rng.int(48000);
    const size = 1 + rng.int(capacity - 1);
    const rb = ring(capacity);
    const toPush = new Uint32Array(size);
    const toPop = new Uint32Array(size);
    const writer = new SequenceWriter();
    const checker = new SequenceChecker();
    // Go around the ring about 20 times.
    for (let step = Math.ceil((capacity * 20) / size); step > 0; step--) {
      writer.fill(toPush);
      assert.equal(rb.push(toPush), size);
      assert.equal(rb.availableRead(), size);
      assert.equal(rb.availableWrite(), capacity - size);
      assert.equal(rb.pop(toPop), size);
      assert.equal(rb.availableRead(), 0);
      assert.equal(rb.availableWrite(), capacity);
      checker.check(toPop, size, 0, `capacity ${capacity} size ${size}`);
    }
  }
});

test("offsets and lengths never touch elements outside the range (canaries)", () => {
  const rng = new Prng(12);
  for (let iteration = 0; iteration < 150; iteration++) {
    const capacity = 1 + rng.int(20000);
    const size = 1 + rng.int(capacity - 1);
    const rb = ring(capacity, Float32Array);
    // Two canaries on each side: Infinity in the source must never arrive, NaN in the
    // destination must never be overwritten.
    const toPush = new Float32Array(size + 4).fill(Infinity);
    const toPop = new Float32Array(size + 4).fill(NaN);
    const writer = new SequenceWriter();
    const checker = new SequenceChecker();
    for (let step = Math.ceil((capacity * 10) / size); step > 0; step--) {
      writer.fill(toPush, size, 2);
      assert.equal(rb.push(toPush, size, 2), size);
      assert.equal(rb.pop(toPop, size, 2), size);
      for (const i of [0, 1, size + 2, size + 3]) {
        assert.ok(Number.isNaN(toPop[i]), `canary at ${i} overwritten`);
      }
      checker.check(toPop, size, 2);
    }
  }
});

test("asymmetric push/pop, plain and through both write callbacks", () => {
  const rng = new Prng(13);
  for (const how of ["push", "writeCallback", "writeCallbackWithOffset"]) {
    for (let iteration = 0; iteration < 100; iteration++) {
      const capacity = 1 + rng.int(30000);
      const pushSize = 1 + rng.int(capacity);
      const popSize = 1 + rng.int(capacity);
      const rb = ring(capacity);
      assert.ok(rb.empty() && !rb.full());
      const toPush = new Uint32Array(pushSize);
      const toPop = new Uint32Array(popSize);
      const writer = new SequenceWriter();
      const checker = new SequenceChecker();
      let held = 0;
      for (let step = Math.ceil((capacity * 10) / pushSize); step > 0; step--) {
        const n = Math.min(rb.availableWrite(), pushSize);
        let wrote;
        if (how === "push") {
          writer.fill(toPush, n);
          wrote = rb.push(toPush, n);
        } else if (how === "writeCallback") {
          wrote = rb.writeCallback(n, (a, b) => {
            writer.fill(a);
            writer.fill(b);
          });
        } else {
          wrote = rb.writeCallbackWithOffset(n, (s, o1, n1, o2, n2) => {
            writer.fill(s, n1, o1);
            writer.fill(s, n2, o2);
          });
        }
        assert.equal(wrote, n);
        held += n;
        assert.equal(rb.availableRead(), held);
        assert.equal(rb.availableWrite(), capacity - held);
        assert.equal(rb.full(), held === capacity);
        const popped = rb.pop(toPop);
        assert.equal(popped, Math.min(held, popSize));
        held -= popped;
        assert.equal(rb.availableRead(), held);
        checker.check(toPop, popped, 0, how);
      }
    }
  }
});

test("random push/pop sizes against a model queue", () => {
  const rng = new Prng(14);
  for (let iteration = 0; iteration < 50; iteration++) {
    const capacity = rng.int(300);
    const rb = ring(capacity, Int32Array);
    const model = [];
    let next = 0;
    const buf = new Int32Array(400);
    for (let step = 0; step < 2000; step++) {
      if (rng.next() < 0.5) {
        const n = rng.int(350);
        for (let i = 0; i < n; i++) buf[i] = next + i;
        const pushed = rb.push(buf, n);
        assert.equal(pushed, Math.min(n, capacity - model.length));
        for (let i = 0; i < pushed; i++) model.push(next++);
      } else {
        const n = rng.int(350);
        const popped = rb.pop(buf, n);
        assert.equal(popped, Math.min(n, model.length));
        for (let i = 0; i < popped; i++) assert.equal(buf[i], model.shift());
      }
      assert.equal(rb.availableRead(), model.length);
      assert.equal(rb.availableWrite(), capacity - model.length);
      assert.equal(rb.empty(), model.length === 0);
      assert.equal(rb.full(), model.length === capacity);
    }
  }
});

test("capacity is exact: no slot is wasted, any size works", () => {
  for (const capacity of [0, 1, 2, 3, 7, 128, 1000, 4097]) {
    const rb = ring(capacity, Float64Array);
    assert.equal(rb.capacity(), capacity);
    const data = new Float64Array(capacity + 5).map((_, i) => i + 0.5);
    assert.equal(rb.push(data), capacity);
    assert.equal(rb.full(), true);
    assert.equal(rb.push(data), 0);
    const out = new Float64Array(capacity + 5);
    assert.equal(rb.pop(out), capacity);
    assert.deepEqual(out.subarray(0, capacity), data.subarray(0, capacity));
    assert.equal(rb.pop(out), 0);
  }
});

test("64-bit element types carry full-width values", () => {
  const big = ring(5, BigInt64Array);
  const values = new BigInt64Array([-(2n ** 63n), -1n, 0n, 2n ** 62n + 3n, 2n ** 63n - 1n]);
  assert.equal(big.push(values), 5);
  const out = new BigInt64Array(5);
  assert.equal(big.pop(out), 5);
  assert.deepEqual(out, values);

  const ubig = ring(300, BigUint64Array);
  const many = new BigUint64Array(256).map((_, i) => 2n ** 64n - 1n - BigInt(i));
  for (let round = 0; round < 5; round++) {
    assert.equal(ubig.push(many), 256);
    const got = new BigUint64Array(256);
    assert.equal(ubig.pop(got), 256);
    assert.deepEqual(got, many);
  }
});

test("read callbacks lend the data in order and release what they report", () => {
  const rb = ring(10, Float32Array);
  rb.push(new Float32Array([1, 2, 3, 4, 5, 6, 7, 8]));
  rb.pop(new Float32Array(6)); // read index now at 6: the next 8 elements wrap
  rb.push(new Float32Array([9, 10, 11, 12, 13, 14, 15, 16]));
  const seen = [];
  const got = rb.readCallback(5, (a, b) => {
    seen.push(...a, "|", ...b);
    return 3; // consume only 3 of the 5 offered
  });
  assert.equal(got, 3);
  assert.deepEqual(seen, [7, 8, 9, 10, "|", 11]);
  assert.equal(rb.availableRead(), 7);
  const spans = [];
  assert.equal(
    rb.readCallbackWithOffset(100, (s, o1, n1, o2, n2) => {
      spans.push([o1, n1, o2, n2], Array.from(s.subarray(o1, o1 + n1)), Array.from(s.subarray(o2, o2 + n2)));
    }),
    7,
  );
  assert.deepEqual(spans, [[9, 1, 0, 6], [10], [11, 12, 13, 14, 15, 16]]);
  assert.ok(rb.empty());
});

test("callback return values: nothing means all, 0 means none, more is clamped", () => {
  const rb = ring(8, Uint8Array);
  assert.equal(rb.writeCallback(3, () => {}), 3);
  assert.equal(rb.writeCallback(3, () => 0), 0, "unlike ringbuf.js, 0 means zero written");
  assert.equal(rb.availableRead(), 3);
  assert.equal(rb.writeCallbackWithOffset(2, () => 99), 2);
  assert.equal(rb.writeCallbackWithOffset(100, () => undefined), 3, "only the free space");
  assert.equal(rb.writeCallback(1, () => 1), 0, "full: the callback is not even called");
  assert.equal(rb.readCallback(4, () => -5), 0);
  assert.equal(rb.readCallback(4, () => 2.9), 2);
  assert.equal(rb.availableRead(), 6);
});

test("record rings move whole records only", () => {
  const rb = ring(12, Float32Array, 3);
  assert.equal(rb.recordLength(), 3);
  assert.equal(rb.push(new Float32Array(5)), 3);
  assert.equal(rb.push(new Float32Array(100)), 9);
  const out = new Float32Array(7);
  assert.equal(rb.pop(out), 6);
  assert.equal(rb.writeCallbackWithOffset(5, () => {}), 3);
  assert.equal(rb.readCallbackWithOffset(100, () => 4), 3, "a partial record is not released");
  assert.throws(() => RingBuffer.getStorageForCapacity(10, Float32Array, 3), RingLayoutError);
});

test("the header is the one docs/ring-layout.md describes", () => {
  const sab = RingBuffer.getStorageForCapacity(1000, Float32Array, 2);
  assert.equal(sab.byteLength, HEADER_BYTES + 4000);
  const bytes = new Uint8Array(sab);
  assert.equal(String.fromCharCode(...bytes.subarray(0, 4)), "DBRG");
  const view = new DataView(sab);
  assert.equal(view.getUint32(0, true), MAGIC);
  assert.deepEqual(
    [4, 8, 12, 16, 20].map((o) => view.getUint32(o, true)),
    [1, 4, 9, 1000, 2], // version, element size, kind f32, capacity, record length
  );
  const rb = new RingBuffer(sab, Float32Array);
  rb.push(new Float32Array([1.5, 2.5]));
  assert.equal(view.getUint32(WRITE_INDEX_OFFSET, true), 2);
  assert.equal(view.getFloat32(HEADER_BYTES, true), 1.5);
  assert.equal(view.getFloat32(HEADER_BYTES + 4, true), 2.5);
  rb.pop(new Float32Array(2));
  assert.equal(view.getUint32(READ_INDEX_OFFSET, true), 2);
});

test("indices run modulo twice the capacity", () => {
  const sab = RingBuffer.getStorageForCapacity(3, Uint16Array);
  const rb = new RingBuffer(sab, Uint16Array);
  const view = new DataView(sab);
  const one = new Uint16Array(1);
  const seen = [];
  for (let i = 0; i < 7; i++) {
    rb.push(one);
    rb.pop(one);
    seen.push(view.getUint32(WRITE_INDEX_OFFSET, true));
  }
  assert.deepEqual(seen, [1, 2, 3, 4, 5, 0, 1]);
});

test("rings at an offset inside a larger buffer leave the rest alone", () => {
  const buffer = new SharedArrayBuffer(8192);
  const whole = new Uint8Array(buffer).fill(0xee);
  RingBuffer.initialize(buffer, 1024, 16, Int16Array);
  RingBuffer.initialize(buffer, 2048, 4, Float64Array);
  const a = new RingBuffer(buffer, Int16Array, 1024);
  const b = new RingBuffer(buffer, Float64Array, 2048);
  assert.equal(a.byteOffset(), 1024);
  a.push(new Int16Array([-1, -2, -3]));
  b.push(new Float64Array([Math.PI]));
  const out = new Int16Array(3);
  a.pop(out);
  assert.deepEqual(Array.from(out), [-1, -2, -3]);
  const pi = new Float64Array(1);
  b.pop(pi);
  assert.equal(pi[0], Math.PI);
  assert.ok(whole.subarray(0, 1024).every((x) => x === 0xee));
  assert.ok(whole.subarray(1024 + RingBuffer.bytesForCapacity(16, Int16Array), 2048).every((x) => x === 0xee));
  assert.ok(whole.subarray(2048 + RingBuffer.bytesForCapacity(4, Float64Array)).every((x) => x === 0xee));
});

test("bad memory is refused with the layout's error codes", () => {
  const code = (fn) => {
    try {
      fn();
    } catch (e) {
      assert.ok(e instanceof RingLayoutError, `${e}`);
      return e.code;
    }
    assert.fail("no error");
  };
  assert.equal(code(() => new RingBuffer(new SharedArrayBuffer(1024), Float32Array)), "BadMagic");
  assert.equal(code(() => new RingBuffer(new SharedArrayBuffer(100), Float32Array)), "TooSmall");
  const sab = RingBuffer.getStorageForCapacity(16, Float32Array);
  assert.equal(code(() => new RingBuffer(sab, Uint32Array)), "ElementMismatch");
  assert.equal(code(() => new RingBuffer(sab, Float32Array, 4)), "Misaligned");
  assert.equal(code(() => RingBuffer.initialize(sab, 0, 1000, Float32Array)), "TooSmall");
  assert.equal(code(() => RingBuffer.initialize(sab, 0, -1, Float32Array)), "BadCapacity");
  const words = new DataView(sab);
  words.setUint32(4, 2, true);
  assert.equal(code(() => new RingBuffer(sab, Float32Array)), "UnsupportedVersion");
  words.setUint32(4, 1, true);
  words.setUint32(WRITE_INDEX_OFFSET, 33, true);
  assert.equal(code(() => new RingBuffer(sab, Float32Array)), "CorruptIndex");
  assert.throws(() => RingBuffer.getStorageForCapacity(4, Array), TypeError);
  assert.throws(() => new RingBuffer(sab, {}), TypeError);
});

test("a peer scribbling on the indices cannot make us read or write outside the storage", () => {
  const sab = RingBuffer.getStorageForCapacity(8, Int32Array);
  const rb = new RingBuffer(sab, Int32Array);
  rb.push(new Int32Array([1, 2, 3]));
  const view = new DataView(sab);
  view.setInt32(WRITE_INDEX_OFFSET, 1_000_000, true);
  const out = new Int32Array(8);
  assert.equal(rb.pop(out), 0, "a wild write index reads as empty... ");
  view.setInt32(WRITE_INDEX_OFFSET, 3, true);
  view.setInt32(READ_INDEX_OFFSET, -7, true);
  // More than the cached free space, so the producer must look at the read index.
  assert.equal(rb.push(new Int32Array(6)), 0, "... and a wild read index as full");
  assert.equal(rb.availableWrite(), 0);
});

test("snake_case aliases and type() behave as in ringbuf.js", () => {
  const rb = ring(4, Float32Array);
  rb.push(new Float32Array([1]));
  assert.equal(rb.available_read(), 1);
  assert.equal(rb.available_write(), 3);
  assert.equal(rb.type(), "Float32Array");
});

test("plain arrays and mixed element types convert as by assignment", () => {
  const rb = ring(8, Int16Array);
  assert.equal(rb.push([1.9, -2.9, 70000]), 3);
  const out = [0, 0, 0];
  assert.equal(rb.pop(out), 3);
  assert.deepEqual(out, [1, -2, 70000 - 65536]);
  const f = ring(200, Float32Array);
  assert.equal(f.push(new Float64Array(150).fill(0.1)), 150); // bulk path, converts too
  const back = new Float64Array(150);
  assert.equal(f.pop(back), 150);
  assert.equal(back[149], Math.fround(0.1));
});
