// Drop-in: the same random program run against ringbuf.js 0.4 and against us must observe the
// same counts and the same data, for every call a ringbuf.js user makes. (The documented
// differences, such as a callback returning 0, are left out of the program.)
import { test } from "node:test";
import assert from "node:assert/strict";
import * as theirs from "ringbuf.js";
import * as ours from "@downbeat/ringbuf";
import { Prng } from "./util.mjs";

function run(lib, seed, capacity, Type) {
  const rng = new Prng(seed);
  const rb = new lib.RingBuffer(lib.RingBuffer.getStorageForCapacity(capacity, Type), Type);
  const log = [rb.capacity(), rb.type()];
  let next = 1;
  const buf = new Type(capacity + 10);
  for (let step = 0; step < 3000; step++) {
    const op = rng.int(6);
    const len = rng.int(capacity + 4);
    const off = rng.int(10);
    const room = buf.length - off;
    const n = Math.min(len, room);
    if (op === 0) {
      for (let i = 0; i < n; i++) buf[off + i] = next++;
      log.push("push", rb.push(buf, n, off));
    } else if (op === 1) {
      buf.fill(0);
      const got = rb.pop(buf, n, off);
      log.push("pop", got, Array.from(buf.subarray(off, off + got)));
    } else if (op === 2) {
      const wrote = rb.writeCallback(len, (a, b) => {
        for (let i = 0; i < a.length; i++) a[i] = next++;
        for (let i = 0; i < b.length; i++) b[i] = next++;
      });
      log.push("writeCallback", wrote);
    } else if (op === 3) {
      const keep = 1 + rng.int(len);
      const wrote = rb.writeCallbackWithOffset(len, (s, o1, n1, o2, n2) => {
        const k = Math.min(keep, n1 + n2);
        for (let i = 0; i < k; i++) s[i < n1 ? o1 + i : o2 + i - n1] = next + i;
        return k;
      });
      next += wrote;
      log.push("writeCallbackWithOffset", wrote);
    } else {
      log.push(rb.availableRead(), rb.available_read(), rb.availableWrite(), rb.available_write());
      log.push(rb.empty(), rb.full());
    }
  }
  return log;
}

test("ringbuf.js and @downbeat/ringbuf observe the same counts and data", () => {
  for (const [Type, capacities] of [
    [Float32Array, [1, 2, 7, 128, 1000]],
    [Int16Array, [3, 64, 513]],
    [Uint8Array, [5, 255]],
  ]) {
    for (const capacity of capacities) {
      for (const seed of [1, 2, 3]) {
        const a = run(theirs, seed, capacity, Type);
        const b = run(ours, seed, capacity, Type);
        assert.deepEqual(b, a, `${Type.name} capacity ${capacity} seed ${seed}`);
      }
    }
  }
});

test("the ringbuf.js helpers give the same results for 128-frame blocks", () => {
  for (let channels = 1; channels <= 8; channels++) {
    const planar = Array.from({ length: channels }, (_, c) =>
      Float32Array.from({ length: 128 }, (_, i) => i * 8 + c),
    );
    const a = new Float32Array(128 * channels);
    const b = new Float32Array(128 * channels);
    theirs.interleave(planar, a);
    ours.interleave(planar, b);
    assert.deepEqual(b, a);
    const pa = planar.map(() => new Float32Array(128));
    const pb = planar.map(() => new Float32Array(128));
    theirs.deinterleave(a, pa);
    ours.deinterleave(b, pb);
    assert.deepEqual(pb, pa);
  }
});
