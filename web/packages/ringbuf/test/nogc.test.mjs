// The audio-thread paths must not allocate: a garbage collection in an AudioWorklet is a
// glitch waiting to happen. A million operations that each created even a small object would
// fill V8's young generation many times over, so "no GC event during the loop" is a test that
// fails as soon as one of these paths allocates.
import { test } from "node:test";
import assert from "node:assert/strict";
import { PerformanceObserver } from "node:perf_hooks";
import {
  AudioReader,
  AudioWriter,
  ParameterReader,
  ParameterWriter,
  RingBuffer,
  getStorageForParamQueue,
} from "@downbeat/ringbuf";

// Only collections that start while the measured loop runs are counted. The test runner, its
// reporter and the timers run between tests and in the waits below; they allocate too, and a
// scavenge they trigger says nothing about the path (the likely source of the single event
// CI saw now and then when every event delivered in the window was counted).
async function gcEventsDuring(fn) {
  const starts = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) starts.push(entry.startTime);
  });
  observer.observe({ entryTypes: ["gc"] });
  fn(10_000); // warm up: let the JIT settle, its allocations happen here
  await new Promise((r) => setTimeout(r, 50));
  const from = performance.now();
  fn(1_000_000);
  const to = performance.now();
  await new Promise((r) => setTimeout(r, 50)); // GC entries are delivered asynchronously
  observer.disconnect();
  return starts.filter((t) => t >= from && t <= to).length;
}

const f32 = (cap, rec = 1) =>
  new RingBuffer(RingBuffer.getStorageForCapacity(cap, Float32Array, rec), Float32Array);

const paths = {
  "push/pop one element": () => {
    const ring = f32(1000);
    const one = new Float32Array(1);
    return (n) => {
      for (let i = 0; i < n; i++) {
        one[0] = i;
        ring.push(one);
        ring.pop(one);
      }
    };
  },
  "push/pop 16-element chunks across the wrap": () => {
    const ring = f32(1000);
    const chunk = new Float32Array(16);
    return (n) => {
      for (let i = 0; i < n; i++) {
        ring.push(chunk, 13, 1);
        ring.pop(chunk, 13, 2);
      }
    };
  },
  "whole-array push of a 256-sample block": () => {
    const ring = f32(1024);
    const block = new Float32Array(256);
    // One callback for the whole run: a closure created per iteration is the test's garbage.
    const discard = () => {};
    return (n) => {
      for (let i = 0; i < n; i++) {
        ring.push(block);
        ring.readCallbackWithOffset(256, discard);
      }
    };
  },
  "bulk push/pop of whole 128-sample blocks (TypedArray.set, cached views)": () => {
    const ring = f32(4096);
    const block = new Float32Array(128);
    const out = new Float32Array(128);
    return (n) => {
      for (let i = 0; i < n; i++) {
        ring.push(block);
        ring.pop(out);
      }
    };
  },
  "zero-copy callbacks": () => {
    const ring = f32(1000);
    // A number kept in a closure would be boxed on every change; a typed array cell is not.
    const acc = new Float64Array(1);
    const fill = (s, o1, n1, o2, n2) => {
      for (let i = 0; i < n1; i++) s[o1 + i] = i;
      for (let i = 0; i < n2; i++) s[o2 + i] = i;
    };
    const drain = (s, o1, n1, o2, n2) => {
      for (let i = 0; i < n1; i++) acc[0] += s[o1 + i];
      for (let i = 0; i < n2; i++) acc[0] += s[o2 + i];
    };
    return (n) => {
      for (let i = 0; i < n; i++) {
        ring.writeCallbackWithOffset(128, fill);
        ring.readCallbackWithOffset(128, drain);
      }
    };
  },
  "planar audio, stereo 128-frame blocks": () => {
    const sab = RingBuffer.getStorageForCapacity(2 * 300, Float32Array, 2);
    const writer = new AudioWriter(new RingBuffer(sab, Float32Array));
    const reader = new AudioReader(new RingBuffer(sab, Float32Array));
    const block = [new Float32Array(128), new Float32Array(128)];
    return (n) => {
      for (let i = 0; i < n; i++) {
        writer.enqueuePlanar(block);
        reader.dequeuePlanar(block);
      }
    };
  },
  "parameter changes, both formats": () => {
    const pq = getStorageForParamQueue(64);
    const w1 = new ParameterWriter(new RingBuffer(pq, Uint32Array));
    const r1 = new ParameterReader(new RingBuffer(pq, Uint32Array));
    const bytes = RingBuffer.getStorageForCapacity(5 * 64, Uint8Array);
    const w2 = new ParameterWriter(new RingBuffer(bytes, Uint8Array));
    const r2 = new ParameterReader(new RingBuffer(bytes, Uint8Array));
    const o = { index: 0, value: 0.5, frame: 0 };
    // Values are small integers here: a fresh fractional number passed to a call that is not
    // inlined is boxed by the caller, which would measure the test, not the queue.
    return (n) => {
      for (let i = 0; i < n; i++) {
        w1.enqueueChange(i & 0xffff, i & 0xfff, i & 127);
        r1.dequeueChange(o);
        w2.enqueueChange(i & 0xff, i & 0xfff);
        r2.dequeueChange(o);
      }
    };
  },
};

for (const [name, make] of Object.entries(paths)) {
  test(`${name}: a million operations, no garbage collection`, async () => {
    assert.equal(await gcEventsDuring(make()), 0);
  });
}

test("the detector works: a path that allocates is caught", async () => {
  const ring = f32(1000);
  const events = await gcEventsDuring((n) => {
    for (let i = 0; i < n; i++) ring.push(new Float32Array(4));
    ring.readCallbackWithOffset(1000, () => {});
  });
  assert.ok(events > 0, "allocating a Float32Array per push must trigger a scavenge");
});

test("the detector works on the smallest garbage: one small object per operation", async () => {
  const ring = f32(1000);
  const one = new Float32Array(1);
  const keep = [null]; // stored, so escape analysis cannot remove the object
  const events = await gcEventsDuring((n) => {
    for (let i = 0; i < n; i++) {
      keep[0] = { i };
      ring.push(one);
      ring.pop(one);
    }
  });
  assert.ok(events > 0, "a million small objects must trigger a scavenge inside the loop");
});
