// Two threads, one ring, every element checked: a worker produces the sequence in random
// chunks while this thread consumes in random chunks. Scale with DOWNBEAT_WEB_STRESS_ITEMS.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Worker } from "node:worker_threads";
import { ParameterReader, RingBuffer, getStorageForParamQueue } from "@downbeat/ringbuf";
import { Prng, SequenceChecker, seq } from "./util.mjs";

const TOTAL = Number(process.env.DOWNBEAT_WEB_STRESS_ITEMS ?? 10_000_000);
const STALL_MS = 20_000;

function start(workerData) {
  const worker = new Worker(new URL("./stress-worker.mjs", import.meta.url), { workerData });
  const state = { done: false, error: null };
  worker.on("message", () => (state.done = true));
  worker.on("error", (e) => (state.error = e));
  return { worker, state };
}

for (const [type, capacity, seed] of [
  ["Float32Array", 1031, 1],
  ["Uint32Array", 127, 2],
  ["Float64Array", 4096, 3],
]) {
  test(`${type}: ${TOTAL} elements through a ${capacity}-slot ring between two threads`, async () => {
    const sab = RingBuffer.getStorageForCapacity(capacity, globalThis[type]);
    const ring = new RingBuffer(sab, globalThis[type]);
    const { worker, state } = start({ sab, type, total: TOTAL, seed, maxChunk: 300 });
    const rng = new Prng(seed + 100);
    const checker = new SequenceChecker();
    const buf = new globalThis[type](300);
    let received = 0;
    let lastProgress = Date.now();
    while (received < TOTAL) {
      const want = 1 + rng.int(299);
      let n;
      if (rng.next() < 0.5) {
        n = ring.pop(buf, want);
        checker.check(buf, n);
      } else {
        n = ring.readCallbackWithOffset(want, (s, o1, n1, o2, n2) => {
          checker.check(s, n1, o1);
          checker.check(s, n2, o2);
        });
      }
      received += n;
      if (n > 0) {
        lastProgress = Date.now();
      } else {
        if (state.error) throw state.error;
        if (Date.now() - lastProgress > STALL_MS) assert.fail(`stalled after ${received}`);
        await new Promise((r) => setImmediate(r)); // let the worker's messages through
      }
    }
    assert.equal(ring.availableRead(), 0);
    await worker.terminate();
  });
}

test(`parameter records: ${TOTAL / 10} changes through a 17-record queue between two threads`, async () => {
  const total = TOTAL / 10;
  const sab = getStorageForParamQueue(17);
  const reader = new ParameterReader(new RingBuffer(sab, Uint32Array));
  const { worker, state } = start({ sab, type: "params", total, seed: 4, maxChunk: 1 });
  const o = { index: 0, value: 0, frame: 0 };
  let lastProgress = Date.now();
  for (let i = 0; i < total; ) {
    if (reader.dequeueChange(o)) {
      if (o.index !== i || o.value !== Math.fround(seq(i) / 8) || o.frame !== i % 4096) {
        assert.fail(`record ${i}: got ${JSON.stringify(o)}`);
      }
      i++;
      lastProgress = Date.now();
    } else {
      if (state.error) throw state.error;
      if (Date.now() - lastProgress > STALL_MS) assert.fail(`stalled after ${i}`);
      await new Promise((r) => setImmediate(r));
    }
  }
  await worker.terminate();
});
