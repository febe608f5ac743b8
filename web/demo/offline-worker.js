// Producer of the offline check: pushes the test sequence into a small Float32 ring as fast as the
// render drains it, in chunks of pseudo-random size so that writes straddle the wrap in every way.
// It spins when the ring is full (it owns its core; the offline render is on another thread).

import { RingBuffer } from "/ringbuf/index.js";
import { sequence } from "./offline-sequence.js";

onmessage = (e) => {
  const { sab, frames, seed, timeoutMs = 60000 } = e.data;
  try {
    const ring = new RingBuffer(sab, Float32Array);
    const next = sequence(seed);
    const fill = (s, o1, n1, o2, n2) => {
      for (let k = 0; k < n1; k++) s[o1 + k] = next();
      for (let k = 0; k < n2; k++) s[o2 + k] = next();
      return n1 + n2;
    };
    let chunk = 0x2545f491;
    let pushed = 0;
    let pushes = 0;
    let fullSpins = 0;
    const t0 = performance.now();
    postMessage({ type: "started" });
    while (pushed < frames) {
      chunk ^= chunk << 13;
      chunk ^= chunk >>> 17;
      chunk ^= chunk << 5;
      const want = Math.min(1 + ((chunk >>> 0) % 1000), frames - pushed);
      const n = ring.writeCallbackWithOffset(want, fill);
      if (n > 0) {
        pushed += n;
        pushes++;
      } else if ((++fullSpins & 0xffff) === 0 && performance.now() - t0 > timeoutMs) {
        throw new Error(`timed out after ${timeoutMs} ms with ${pushed} of ${frames} samples pushed`);
      }
    }
    postMessage({ type: "done", pushed, pushes, fullSpins, ms: performance.now() - t0 });
  } catch (err) {
    postMessage({ type: "error", message: String(err && err.message ? err.message : err) });
  }
};
